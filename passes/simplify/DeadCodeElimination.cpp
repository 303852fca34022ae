//===- DeadCodeElimination.cpp - Remove nodes that reach no output --------===//
//
// Removes every node none of whose results reaches a graph output. One
// backward walk over the schedule marks the values the outputs need; nodes
// with no needed result are erased in one sweep, except nodes with side
// effects (snug.skip_if, which guard-branches places): otherwise "reaches
// no output" is exactly "dead". Runs after folding
// and fusion, which leave dead producers behind. Does not touch weights:
// unused weights are dropped by the bundle writer.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseSet.h"

namespace snug {
namespace {
class DeadCodeElimination : public Pass {
public:
  llvm::StringRef getName() const override { return "dce"; }
  llvm::Expected<bool> run(ir::Module &module) override;
};
} // namespace

static llvm::DenseSet<const ir::Node *> findLiveNodes(const ir::Module &module) {
  llvm::DenseSet<const ir::Value *> needed(module.getOutputs().begin(),
                                           module.getOutputs().end());
  llvm::DenseSet<const ir::Node *> live;
  auto nodes = module.getNodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const ir::Node &node = **it;
    // A node with side effects (snug.skip_if) is live whatever it gives.
    bool isLive = node.getOpInfo().hasSideEffects();
    for (unsigned i = 0; i < node.getNumResults() && !isLive; ++i)
      isLive = needed.count(node.getResult(i));
    if (!isLive)
      continue;
    live.insert(&node);
    for (const ir::Value *operand : node.getOperands())
      if (operand)
        needed.insert(operand);
  }
  return live;
}

llvm::Expected<bool> DeadCodeElimination::run(ir::Module &module) {
  llvm::DenseSet<const ir::Node *> live = findLiveNodes(module);
  unsigned erased = module.eraseNodesIf(
      [&](const ir::Node &node) { return !live.count(&node); });
  addStatistic("nodes-erased", erased);
  return erased != 0;
}

std::unique_ptr<Pass> createDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeElimination>();
}

} // namespace snug
