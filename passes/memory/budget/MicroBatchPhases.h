//===- MicroBatchPhases.h - Which micro-batch each node runs for -*- C++ -*-===//
//
// After split-batch{loss=...} and autodiff (gradient accumulation), each
// node belongs to a phase: the micro-batch whose forward and backward it is
// part of. interleave-micro-batches orders the nodes by phase; fuse keeps
// its groups inside one phase, since a producer moved to a root in a later
// phase would keep its operands (a micro-batch's weight gradients) live
// across the phases between. Computed in InterleaveMicroBatches.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_MEMORY_BUDGET_MICROBATCHPHASES_H
#define SNUG_PASSES_MEMORY_BUDGET_MICROBATCHPHASES_H

#include "ir/Module.h"

#include <vector>

namespace snug {

/// The phase of each node, in schedule order: the lowest micro-batch it
/// depends on through split-batch's Slices of the graph inputs, or for a
/// node that depends on none the phase of its earliest-run reader (-1
/// when nothing reads it). Phases run from split_batch - 1 down to 0.
/// Empty when the module has no split_batch attribute or no such Slices.
std::vector<int64_t> findMicroBatchPhases(const ir::Module &module);

} // namespace snug

#endif // SNUG_PASSES_MEMORY_BUDGET_MICROBATCHPHASES_H
