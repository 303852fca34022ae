//===- StepPhases.cpp - A training step's nodes by phase ------------------===//
//
// See StepPhases.h: two backward walks over operands, one from the forward
// outputs and one from the gradients.
//
//===----------------------------------------------------------------------===//
#include "passes/analysis/StepPhases.h"

#include "ir/State.h"

namespace snug {

bool isWeightGradient(const ir::Value *value) {
  return value->getName().startswith("grad.");
}

/// The nodes some value of `roots` depends on (their producers included).
static llvm::DenseSet<const ir::Node *>
getAncestors(llvm::ArrayRef<const ir::Value *> roots) {
  llvm::DenseSet<const ir::Node *> seen;
  llvm::SmallVector<const ir::Node *, 32> work;
  auto visit = [&](const ir::Value *value) {
    if (const ir::Node *node = value ? value->getDefiningNode() : nullptr)
      if (seen.insert(node).second)
        work.push_back(node);
  };
  for (const ir::Value *value : roots)
    visit(value);
  while (!work.empty())
    for (const ir::Value *operand : work.pop_back_val()->getOperands())
      visit(operand);
  return seen;
}

StepPhases classifyStepPhases(const ir::Module &module) {
  StepPhases phases;
  llvm::Expected<std::vector<ir::StateEntry>> state = ir::getState(module);
  if (!state) {
    // A broken state attribute is the verifier's to report.
    llvm::consumeError(state.takeError());
    return phases;
  }
  if (state->empty())
    return phases;
  phases.isStep = true;
  llvm::DenseSet<const ir::Value *> updates;
  for (const ir::StateEntry &entry : *state)
    updates.insert(entry.next);
  std::vector<const ir::Value *> forwardOutputs, gradients;
  for (const ir::Value *output : module.getOutputs())
    if (!updates.count(output) && !isWeightGradient(output))
      forwardOutputs.push_back(output);
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      if (isWeightGradient(node->getResult(i)))
        gradients.push_back(node->getResult(i));
  phases.forward = getAncestors(forwardOutputs);
  for (const ir::Node *node : getAncestors(gradients))
    if (!phases.forward.count(node))
      phases.backward.insert(node);
  // A node nothing reads: the original of a backward value remat took every
  // read of (it still runs); not the optimizer's.
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    if (!phases.forward.count(node.get()) &&
        llvm::none_of(node->getResults(), [&](const ir::Value *value) {
          return value->hasUses() || module.isOutput(value);
        }))
      phases.backward.insert(node.get());
  return phases;
}

} // namespace snug
