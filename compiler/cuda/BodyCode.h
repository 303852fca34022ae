//===- BodyCode.h - An op body as CUDA statements per element ---*- C++ -*-===//
//
// The body of snug.fused or an epilogue (ir/Module.h) as statements that
// compute its yielded values at one element, given how each block argument
// reads there. Each body op is written by ElementwiseExpr.h from its
// scalar definition and its result rounded to its dtype (roundTripExpr),
// so a body keeps the bits of its nodes run one by one. The fused kernel
// (FusedEmitter.cpp) runs it in a grid-stride loop; the convolution
// kernels (ConvEmitters.cpp) where they store a result element.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_BODYCODE_H
#define SNUG_COMPILER_CUDA_BODYCODE_H

#include "ir/Module.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace snug {
namespace cuda {

/// How a block argument reads at the element: `widened`, a name of the
/// element as snug_load gives it (declared by the caller), and `stored`,
/// an expression of the stored element (`in1[o1]`), or "" to have the body
/// materialize one from `widened` where Where needs it.
struct BodyArgument {
  std::string widened;
  std::string stored;
};

struct BodyCode {
  /// Statements to run once before the element loop (op parameters).
  std::string setup;
  /// Statements per element (4-space indented).
  std::string element;
  /// The widened names of the yielded values, one per result.
  std::vector<std::string> yield;
};

/// The code of `body` with block argument k read as `arguments[k]`.
/// Errors (as "why" text for EmitContext::unsupported) for an op the
/// scalar table lacks or a body that uses what it does not define.
llvm::Expected<BodyCode> buildBodyCode(const ir::Region &body,
                                       llvm::ArrayRef<BodyArgument> arguments);

/// `text`'s non-empty lines, each indented by `spaces`.
std::string indentLines(llvm::StringRef text, unsigned spaces);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_BODYCODE_H
