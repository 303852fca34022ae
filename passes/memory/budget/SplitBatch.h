//===- SplitBatch.h - Run the graph in micro-batches ------------*- C++ -*-===//
//
// The split-batch pass (SplitBatch.cpp) and the question the driver asks
// before it: can this module run as copies on slices of its batch? Each op's
// part in that answer is its line of BatchRules.def, exposed here for the
// coverage test.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_MEMORY_BUDGET_SPLITBATCH_H
#define SNUG_PASSES_MEMORY_BUDGET_SPLITBATCH_H

#include "ir/Module.h"

#include "llvm/Support/Error.h"

#include <cstdint>

namespace snug {

/// The most copies split-batch{parts=K} makes (--accumulate's bound).
constexpr int64_t kMaxSplitParts = int64_t(1) << 20;

/// The most nodes split-batch's copies may hold together (parts times the
/// nodes that see the batch). Every copy is planned, scheduled and emitted
/// as nodes of its own: --accumulate=8192 on a 12-layer MLP took minutes
/// and gigabytes before failing. Past it split-batch refuses in
/// milliseconds, naming the bound, and --allow-micro-batches tries no more
/// parts.
constexpr int64_t kMaxSplitNodes = int64_t(1) << 15;

/// The most copied nodes --allow-micro-batches plans over all the splits it
/// tries before it settles for the best so far.
constexpr int64_t kMaxSplitSearchNodes = 4 * kMaxSplitNodes;

/// The batch (dim 0 of the first graph input of rank >= 1) when every node
/// that depends on the inputs carrying it computes each sample alone, so
/// that split-batch{parts=K} may run the graph on 1/K of it at a time; an
/// error naming the first node that mixes samples (or the output without
/// the batch) otherwise. With `loss`, the output of that name may be a mean
/// over the batch (split-batch{loss=NAME}, gradient accumulation). With
/// nodesPerCopy, stores there how many nodes each copy repeats.
llvm::Expected<int64_t> findSplittableBatch(const ir::Module &module,
                                            llvm::StringRef loss = "",
                                            int64_t *nodesPerCopy = nullptr);

/// What split-batch checks of a node before running it on a slice of the
/// batch (BatchRules.def describes each).
enum class SplitCheck : uint8_t {
  None, ///< no line in BatchRules.def: an op added to Ops.def without one
  PerSample,
  SeesBatch,
  Axis,
  IndexAxis,
  FoldingAxis,
  GatherAxis,
  BatchDims,
  IndexTuples,
  SliceAxes,
  SqueezeAxes,
  Perm,
  Repeats,
  Pads,
  ReshapeShape,
  ExpandShape,
  ResizeScales,
  MatrixBatch,
  RowBatch,
  ReduceAxes,
};

/// Which operands that do not depend on the batch every copy may read.
enum class SharedOperands : uint8_t {
  Nothing,
  Parameters,
  Table,
  Broadcast,
  BroadcastOrParameters,
  Paired,
};

/// Whether the op keeps the mean of the copies' losses the batch's.
enum class LossTailRule : uint8_t {
  Nonlinear,
  Linear,
  LinearInOneFactor,
  LinearInDividend,
};

/// An op's line of BatchRules.def.
struct BatchRule {
  SplitCheck check = SplitCheck::None;
  SharedOperands shared = SharedOperands::Nothing;
  LossTailRule lossTail = LossTailRule::Nonlinear;
};

/// The line BatchRules.def has for `op` (check None when it has none).
const BatchRule &getBatchRule(ir::OpCode op);

} // namespace snug

#endif // SNUG_PASSES_MEMORY_BUDGET_SPLITBATCH_H
