//===- BatchNormBatchStats.cpp - BatchNormalization with batch statistics -===//
//
// `batchnorm-batch-stats` rewrites every BatchNormalization into its
// training-mode form (Ioffe & Szegedy 2015, alg. 1): with mean and var the
// batch's, over every dim but the channels (var biased, as ONNX's and
// PyTorch's normalization use it),
//   y = (x - mean) / sqrt(var + epsilon) * scale + bias,
// built of ReduceMean, Sub, Mul, Add, Sqrt and Div in the node's place in
// the schedule. Run before autodiff, the existing rules of those ops give
// the gradient through the statistics; the running mean and variance
// operands are no longer read (DCE and the bundle drop them). autodiff's
// batch-stats=1 runs the same rewrite after it chose wrt, so the running
// statistics and the epsilon constants are not differentiated for.
//
// The running statistics are updated as PyTorch's training mode does:
//   running_mean' = momentum running_mean + (1 - momentum) mean
//   running_var'  = momentum running_var  + (1 - momentum) var n / (n - 1)
// (ONNX's momentum, the old value's weight; the variance unbiased over the
// n elements of a channel, where normalizing takes it biased). Each new
// value is a graph output "<running weight>.updated", and the running
// weight becomes persistent state of role statistic (ir/State.h), so a
// runtime writes it back after every step. The update is built after the
// whole graph (it reads only the tiny [1, C, 1, 1] statistics, so keeping
// them live costs nothing): it is not on the loss's path, and autodiff
// leaves it alone. A running statistic that is no weight (computed, or
// already state) or is shared by two nodes is refused, as is a channel of
// one element (no unbiased variance). A node whose running-statistics
// results (ONNX's optional results 1 and 2) are used is refused too: the
// importer refuses training_mode, so no imported node has them.
//
//===----------------------------------------------------------------------===//
#include "passes/training/BatchNormBatchStats.h"
#include "ir/State.h"
#include "passes/training/GradientRules.h"
#include "passes/Passes.h"
#include "ir/ShapeFunctions.h"

#include "llvm/ADT/DenseSet.h"

#include <vector>

namespace snug {

using ir::Attribute;
using ir::OpCode;
using ir::Value;

namespace {

class BatchNormBatchStats : public Pass {
public:
  llvm::StringRef getName() const override { return "batchnorm-batch-stats"; }
  llvm::Expected<bool> run(ir::Module &module) override;
};

/// A BatchNormalization's running statistic and the batch statistic its
/// update reads, for the update built after the graph.
struct RunningUpdate {
  const ir::Node *node;
  Value *running, *batch;
  /// The weight of the old value, and the factor that makes the batch's
  /// biased variance unbiased (1 for the mean).
  float momentum;
  double unbias;
};

/// The training-mode form of `node`, built at the builder's insertion point;
/// the running-statistics updates it asks for go into `updates`.
llvm::Expected<Value *> withBatchStats(GraphBuilder &b, const ir::Node &node,
                                       std::vector<RunningUpdate> &updates) {
  Value *x = node.getOperand(0);
  llvm::ArrayRef<int64_t> dims = x->getType().getDims();
  llvm::SmallVector<int64_t, 4> axes{0}, column(dims.size() - 1, 1);
  for (size_t i = 2; i < dims.size(); ++i)
    axes.push_back(int64_t(i));
  column[0] = dims[1];
  auto stats =
      b.moments(x, axes, getFloatAttr(node.getAttributes(), "epsilon", 1e-5f));
  if (!stats)
    return stats.takeError();
  int64_t count = x->getType().getNumElements() / dims[1];
  if (count < 2)
    return gradientError(node.describe() + ": a channel of " +
                         llvm::Twine(count) +
                         " element has no unbiased variance for the running "
                         "statistics (PyTorch refuses it too)");
  float momentum = getFloatAttr(node.getAttributes(), "momentum", 0.9f);
  updates.push_back({&node, node.getOperand(3), stats->mean, momentum, 1.0});
  updates.push_back({&node, node.getOperand(4), stats->variance, momentum,
                     double(count) / double(count - 1)});
  auto normalized = b.emit(OpCode::Div, {stats->centered, stats->deviation});
  if (!normalized)
    return normalized.takeError();
  auto scale = b.reshape(node.getOperand(1), column);
  if (!scale)
    return scale.takeError();
  auto scaled = b.emit(OpCode::Mul, {*normalized, *scale});
  if (!scaled)
    return scaled.takeError();
  auto bias = b.reshape(node.getOperand(2), column);
  if (!bias)
    return bias.takeError();
  return b.emit(OpCode::Add, {*scaled, *bias});
}

/// running momentum + batch unbias (1 - momentum), as a graph output named
/// after the running weight, which becomes state.
llvm::Expected<Value *> buildUpdate(GraphBuilder &b,
                                    const RunningUpdate &update) {
  b.setSubject(update.node);
  ir::DType dtype = update.running->getType().getDType();
  auto batch = b.reshape(update.batch, update.running->getType().getDims());
  if (!batch)
    return batch.takeError();
  auto kept = b.emit(OpCode::Mul,
                     {update.running, b.scalar(update.momentum, dtype)});
  if (!kept)
    return kept.takeError();
  auto added = b.emit(
      OpCode::Mul,
      {*batch, b.scalar((1.0 - double(update.momentum)) * update.unbias,
                        dtype)});
  if (!added)
    return added.takeError();
  auto next = b.emit(OpCode::Add, {*kept, *added});
  if (!next)
    return next.takeError();
  (*next)->setName((update.running->getName() + ".updated").str());
  return next;
}

/// Builds every update after the graph and records the state; an error
/// names a running statistic that cannot be state.
llvm::Error addRunningUpdates(ir::Module &module,
                              llvm::ArrayRef<RunningUpdate> updates) {
  llvm::DenseSet<const Value *> seen;
  for (const RunningUpdate &update : updates) {
    const Value *running = update.running;
    auto refuse = [&](const llvm::Twine &why) {
      return gradientError(update.node->describe() + ": running statistic " +
                           running->describe() + " " + why);
    };
    if (!running->isWeight() || running->getName().empty())
      return refuse("is not a named weight, so it cannot be updated");
    if (ir::isStateWeight(module, running))
      return refuse("is already persistent state");
    if (!seen.insert(running).second)
      return refuse("is read by two BatchNormalizations: which one updates "
                    "it is ambiguous");
  }
  GraphBuilder b(module, "batchstats.u");
  llvm::SmallVector<Value *, 8> outputs(module.getOutputs().begin(),
                                        module.getOutputs().end());
  for (const RunningUpdate &update : updates) {
    auto next = buildUpdate(b, update);
    if (!next)
      return next.takeError();
    outputs.push_back(*next);
  }
  module.setOutputs(outputs);
  for (size_t i = 0; i < updates.size(); ++i)
    ir::addState(module, *updates[i].running, *outputs[outputs.size() -
                                                       updates.size() + i],
                 ir::StateRole::Statistic);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<bool> BatchNormBatchStats::run(ir::Module &module) {
  return useBatchStatistics(module);
}

llvm::Expected<bool> useBatchStatistics(ir::Module &module) {
  GraphBuilder b(module, "batchstats.c");
  std::vector<RunningUpdate> updates;
  bool changed = false;
  // Index-based: each rewrite inserts nodes before the one it replaces.
  for (size_t i = 0; i < module.getNodes().size(); ++i) {
    ir::Node *node = module.getNodes()[i].get();
    if (!node->is(OpCode::BatchNormalization))
      continue;
    for (unsigned r = 1; r < node->getNumResults(); ++r)
      if (node->getResult(r) && (node->getResult(r)->hasUses() ||
                                 module.isOutput(node->getResult(r))))
        return gradientError(node->describe() +
                             ": the running-statistics results are not "
                             "computed in training mode");
    size_t before = module.getNodes().size();
    b.setSubject(node);
    b.setInsertionPoint(i);
    auto y = withBatchStats(b, *node, updates);
    if (!y)
      return y.takeError();
    module.replaceValue(node->getResult(0), *y);
    i += module.getNodes().size() - before;
    changed = true;
  }
  if (!changed)
    return false;
  // Before the erase: the updates name their nodes in errors.
  if (llvm::Error error = addRunningUpdates(module, updates))
    return error;
  module.eraseNodesIf([](const ir::Node &node) {
    return node.is(OpCode::BatchNormalization);
  });
  return true;
}

std::unique_ptr<Pass> createBatchNormBatchStatsPass() {
  return std::make_unique<BatchNormBatchStats>();
}

} // namespace snug
