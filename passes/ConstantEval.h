//===- ConstantEval.h - Evaluating nodes on constant operands ---*- C++ -*-===//
//
// Computes the results of one node whose operands are known tensors: the
// engine behind the fold-constants pass and the importer's on-demand folding
// of shape parameters (a Reshape's target shape computed from Shape, Gather,
// Concat, ...). Covers the shape-computation and data-movement ops and the
// elementwise arithmetic exported graphs compute on constants; it is not a
// reference executor (no Conv, MatMul, reductions).
//
// Numbers are computed in double for float element types and int64 for the
// others, then stored in the result's element type (f16/bf16 rounded to
// nearest even); integer division truncates, as in onnxruntime.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_CONSTANTEVAL_H
#define SNUG_PASSES_CONSTANTEVAL_H

#include "ir/Module.h"

#include "llvm/ADT/Optional.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace snug {

/// The data of one operand, None when it is not known.
using OperandData = llvm::Optional<llvm::ArrayRef<uint8_t>>;
using ResultData = std::vector<std::vector<uint8_t>>;

/// True when evaluateNode handles `opName`.
bool canEvaluate(ir::OpCode op);
/// True when the op needs the data of operand `index` (Shape and Size read
/// only its type).
bool needsOperandData(ir::OpCode op, unsigned index);

/// The bytes of every result of `node` (whose result types are set), or None
/// when the op, an element type or a parameter is outside what snug folds.
/// Errors are for operands that break the op's contract (an index out of
/// range), and name the node.
llvm::Expected<llvm::Optional<ResultData>>
evaluateNode(const ir::Node &node, llvm::ArrayRef<OperandData> operands);

/// Integer elements of an integer tensor (i64, i32, ...); None for others.
llvm::Optional<llvm::SmallVector<int64_t, 4>>
readIntegers(const ir::TensorType &type, llvm::ArrayRef<uint8_t> bytes);
/// Element `index` of a tensor as a double.
double readElementAsDouble(ir::DType dtype, const uint8_t *data, int64_t index);

} // namespace snug

#endif // SNUG_PASSES_CONSTANTEVAL_H
