//===- KeepF32.h - Nodes that compute in f32 under any precision -*- C++ -*-===//
//
// A training step in mixed precision computes its forward and backward in
// f16 or bf16 but its optimizer update in f32, on f32 master weights: an
// update rounded to 16 bits loses the small steps (lr * g is far below a
// weight's bf16 spacing, 2^-8 of it) and the state would drift. The passes
// that build such nodes name each one and
// list the names in the module attribute
//   keep_f32 = ["optimizer.update.0", "optimizer.update.1", ...]
// and lower-precision keeps every listed node in f32 the way its keep=
// rules do: it reads f32 (a lowered gradient is cast back once) and its
// results stay f32. Marked: the loss add-loss appends (torch's autocast
// computes mse_loss and cross_entropy in f32 too), the backward autodiff
// builds for a marked node, and the optimizer's update with its loss
// scaling. A module attribute by name, like ir/State.h's pairs,
// because the verifier admits only the op table's attributes on a node,
// and names survive every pass that keeps them.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_PRECISION_KEEPF32_H
#define SNUG_PASSES_PRECISION_KEEPF32_H

#include "ir/Module.h"

#include "llvm/ADT/StringSet.h"

namespace snug {

/// Names each node at schedule position `first` and after (the nodes a
/// pass appended) `prefix`.<n>, n counting on from the names the module
/// lists already, and appends the names to its keep_f32 attribute.
void markKeepF32From(ir::Module &module, size_t first, llvm::StringRef prefix);

/// The node names the module's keep_f32 attribute lists (none without it).
llvm::StringSet<> getKeepF32Names(const ir::Module &module);

/// A keep= option (--keep-fp32): comma-separated node names and op types,
/// blanks trimmed, added to `into`.
void addKeepList(llvm::StringRef list, llvm::StringSet<> &into);

/// Whether `keep` names `node`, by its name or its op type.
bool keepNames(const llvm::StringSet<> &keep, const ir::Node &node);

} // namespace snug

#endif // SNUG_PASSES_PRECISION_KEEPF32_H
