//===- ConstantEval.h - Evaluating nodes on constant operands ---*- C++ -*-===//
//
// Computes the results of one node whose operands are known tensors: the
// engine behind the fold-constants pass and the importer's on-demand folding
// of shape parameters (a Reshape's target shape computed from Shape, Gather,
// Concat, ...). It runs the node's host reference kernel (runtime/host), so
// a folded value is what running the node gives: every op that is foldable
// by the table and has a host kernel folds (views as a byte copy), with the
// semantics of core/ScalarOps.h for elementwise ops and conversions.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_SIMPLIFY_CONSTANTEVAL_H
#define SNUG_PASSES_SIMPLIFY_CONSTANTEVAL_H

#include "ir/Module.h"

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace snug {

/// The fold-constants pass's default limits (passes/simplify/FoldConstants.cpp): no
/// folded result over kDefaultFoldMaxBytes, and none over
/// kDefaultFoldMaxExpandBytes that is larger than the constant data it
/// reads. The default import pipeline (compiler/Pipeline.cpp) spells them
/// out, so a bundle's pipeline string records them.
constexpr uint64_t kDefaultFoldMaxBytes = uint64_t(4) << 20;
constexpr uint64_t kDefaultFoldMaxExpandBytes = 256;

/// The data of one operand, None when it is not known.
using OperandData = llvm::Optional<llvm::ArrayRef<uint8_t>>;
using ResultData = std::vector<std::vector<uint8_t>>;

/// True when evaluateNode handles `op`: foldable per the op table, and a
/// view or an op with a host kernel.
bool canEvaluate(ir::OpCode op);
/// True when the op needs the data of operand `index` (Shape and Size read
/// only its type).
bool needsOperandData(ir::OpCode op, unsigned index);

/// The bytes of every result of `node` (whose result types are set), or None
/// when the op cannot be evaluated (see canEvaluate) or an operand it reads
/// has no data. Errors are the host kernel's (an index out of range, an
/// unsupported parameter), and name the node.
llvm::Expected<llvm::Optional<ResultData>>
evaluateNode(const ir::Node &node, llvm::ArrayRef<OperandData> operands);

/// Runs every node of `module` in schedule order with the host kernels, on
/// `inputs` (the bytes of each graph input, in order): the reference
/// interpreter accuracy checks and tests use, not a fast path. `visit`,
/// when given, sees every node result as it is computed. A value is freed
/// after its last reader. `elidedWeight`, when given, supplies the data of
/// weights parsed without it (tests' IR); otherwise such a weight is an
/// error. Returns the bytes of each graph output; errors name the node (an
/// op with no host kernel, an elided weight, a kernel's own error) or the
/// input of the wrong size.
llvm::Expected<std::vector<std::vector<uint8_t>>> evaluateModule(
    const ir::Module &module, llvm::ArrayRef<std::vector<uint8_t>> inputs,
    llvm::function_ref<void(const ir::Value &, llvm::ArrayRef<uint8_t>)>
        visit = nullptr,
    llvm::function_ref<llvm::ArrayRef<uint8_t>(const ir::Value &)>
        elidedWeight = nullptr);

/// Integer elements of an integer tensor (i64, i32, ...); None for others.
llvm::Optional<llvm::SmallVector<int64_t, 4>>
readIntegers(const ir::TensorType &type, llvm::ArrayRef<uint8_t> bytes);
/// Element `index` of a tensor as a double (the host's loadDouble).
double readElementAsDouble(ir::DType dtype, const uint8_t *data, int64_t index);

} // namespace snug

#endif // SNUG_PASSES_SIMPLIFY_CONSTANTEVAL_H
