//===- SplitBatch.h - Run the graph in micro-batches ------------*- C++ -*-===//
//
// The split-batch pass (SplitBatch.cpp) and the question the driver asks
// before it: can this module run as copies on slices of its batch?
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_MEMORY_BUDGET_SPLITBATCH_H
#define SNUG_PASSES_MEMORY_BUDGET_SPLITBATCH_H

#include "ir/Module.h"

#include "llvm/Support/Error.h"

namespace snug {

/// The batch (dim 0 of the first graph input of rank >= 1) when every node
/// that depends on the inputs carrying it computes each sample alone, so
/// that split-batch{parts=K} may run the graph on 1/K of it at a time; an
/// error naming the first node that mixes samples (or the output without
/// the batch) otherwise. With `loss`, the output of that name may be a mean
/// over the batch (split-batch{loss=NAME}, gradient accumulation).
llvm::Expected<int64_t> findSplittableBatch(const ir::Module &module,
                                            llvm::StringRef loss = "");

} // namespace snug

#endif // SNUG_PASSES_MEMORY_BUDGET_SPLITBATCH_H
