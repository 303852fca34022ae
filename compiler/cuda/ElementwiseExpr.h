//===- ElementwiseExpr.h - One elementwise op as CUDA statements -*- C++ -*-===//
//
// An elementwise op of the op table as a function from (op, attributes,
// operand expressions, operand dtypes) to CUDA statements that call its
// definition in core/ScalarOps.h (which every translation unit's prelude
// embeds). The statements hold no formula of their own: what an op computes
// is written once, in ScalarOps.h, and the host kernels and constant folding
// run the same text. The op list comes from the table (ScalarOpTable.h), so
// a new elementwise op needs nothing here.
//
// Built for more than one op per kernel: ElementwiseEmitters.cpp makes one
// kernel per node from it, and a fused region (several elementwise nodes,
// one loop) chains calls, feeding one call's result name to the next as an
// operand. To keep a region bit-identical to its nodes run one by one, pass
// every intermediate value through roundTripExpr to its dtype (a store and
// a load: f16 rounds, integers wrap), as the unfused kernels do in memory.
//
// Usage, per node:
//   auto code = buildElementwiseCode(op, node.getAttributes(),
//                                    {"x0", "x1"}, {DType::F16, DType::F16},
//                                    "r");
//   kernel setup  += code->setup;     // once, before the element loop
//   loop body     += code->body;      // declares: const <code->resultType> r
//   store           snug_store(out + i, r);
// Operand expressions are what snug_load gives (the widened element: float
// for f16/bf16) or a compute value of an earlier call; they are converted
// to the op's compute type inside. Absent optional operands (Clip's bounds)
// are "" in `operands`; their dtype is ignored.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_ELEMENTWISEEXPR_H
#define SNUG_COMPILER_CUDA_ELEMENTWISEEXPR_H

#include "ir/Module.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace snug {
namespace cuda {

/// The CUDA code of one elementwise op application.
struct ElementwiseCode {
  /// Statements to run once before the element loop (the op's bound
  /// attributes, as a const snug::scalar::Params named after `result`).
  std::string setup;
  /// Statements per element that declare `const <resultType> <result>`.
  std::string body;
  /// The result's type: the compute type ("float", "double", "int64_t",
  /// "uint64_t"),
  /// "bool" for comparisons, the stored element type for Where.
  std::string resultType;
  /// The compute type the operands were converted to (Where: the element
  /// type).
  std::string computeType;
};

/// True when `op` is an elementwise op of the table (it has a scalar
/// definition and buildElementwiseCode handles it).
bool isScalarOp(ir::OpCode op);

/// The code applying `op` to `operands` (expressions; "" for an absent
/// optional operand) whose element types are `operandTypes`, into a new
/// variable `result` (also the prefix of its helper names). Where's value
/// operands are stored elements (`in1[o1]`), moved as they are; its
/// condition any value (nonzero is true). Every other op's operands are
/// widened elements or compute values, converted to its compute type.
/// A conversion (Cast, snug.cast: the op table's Conversion trait) is one
/// too: its operand in scalar::Cast's compute type for the operand's dtype
/// and attribute `to`'s, left for the caller's store (or roundTripExpr) to
/// convert, as the host's Cast kernel does.
/// Errors for an op outside the table's elementwise ops and conversions or
/// an operand count it does not take.
llvm::Expected<ElementwiseCode>
buildElementwiseCode(ir::OpCode op, const ir::AttributeMap &attributes,
                     llvm::ArrayRef<std::string> operands,
                     llvm::ArrayRef<ir::DType> operandTypes,
                     llvm::StringRef result);

/// The compute type ("float", "double", "int64_t" or "uint64_t") `op` uses over
/// operands of these dtypes: the host kernels' rule (scalar::computeKind).
std::string elementwiseComputeType(ir::OpCode op,
                                   llvm::ArrayRef<ir::DType> operandTypes);

/// `value` (of a compute type) as a `dtype` element would hold it, widened
/// back: what storing it and loading it again gives (f16/bf16 round to
/// nearest even, integers wrap or follow the float -> integer rule). For
/// the intermediate values of a fused region.
std::string roundTripExpr(ir::DType dtype, llvm::StringRef value);

/// The element at `pointer` converted to `computeType`, as the host's
/// loadAs does.
std::string loadAsExpr(llvm::StringRef computeType, llvm::StringRef pointer);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_ELEMENTWISEEXPR_H
