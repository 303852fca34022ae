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
// Not here: the running-statistics update (ONNX's optional results 1 and
// 2, running * momentum + batch * (1 - momentum)). The importer refuses
// training_mode and drops momentum, so no node asks for them; a node whose
// running-statistics results are used is refused.
//
//===----------------------------------------------------------------------===//
#include "passes/BatchNormBatchStats.h"
#include "passes/GradientRules.h"
#include "passes/Passes.h"
#include "passes/ShapeFunctions.h"

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

/// The training-mode form of `node`, built at the builder's insertion point.
llvm::Expected<Value *> withBatchStats(GraphBuilder &b, const ir::Node &node) {
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

} // namespace

llvm::Expected<bool> BatchNormBatchStats::run(ir::Module &module) {
  return useBatchStatistics(module);
}

llvm::Expected<bool> useBatchStatistics(ir::Module &module) {
  GraphBuilder b(module, "batchstats.c");
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
    auto y = withBatchStats(b, *node);
    if (!y)
      return y.takeError();
    module.replaceValue(node->getResult(0), *y);
    i += module.getNodes().size() - before;
    changed = true;
  }
  if (changed)
    module.eraseNodesIf([](const ir::Node &node) {
      return node.is(OpCode::BatchNormalization);
    });
  return changed;
}

std::unique_ptr<Pass> createBatchNormBatchStatsPass() {
  return std::make_unique<BatchNormBatchStats>();
}

} // namespace snug
