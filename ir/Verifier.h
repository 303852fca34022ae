//===- Verifier.h - Structural and type checks of a module ------*- C++ -*-===//
//
// Checks what every pass must preserve: SSA (every operand defined once,
// before its use in the schedule, inside this module), the op table's arity,
// the generic type rules of the op families, unique value names, and graph
// outputs that exist; for bodies, that they are closed scopes and what
// snug.fused's per-element lowering needs (Verifier.cpp lists it). Reports
// every problem found, one per line, each naming the node; with
// SourceLocations the lines start `file:line:col: error:`.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_VERIFIER_H
#define SNUG_IR_VERIFIER_H

#include "llvm/Support/Error.h"

namespace snug {
namespace ir {

class Module;
struct SourceLocations;

llvm::Error verifyModule(const Module &module,
                         const SourceLocations *locations = nullptr);

/// Numpy broadcasting of two shapes; None when they do not broadcast.
llvm::Optional<llvm::SmallVector<int64_t, 4>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

} // namespace ir
} // namespace snug

#endif // SNUG_IR_VERIFIER_H
