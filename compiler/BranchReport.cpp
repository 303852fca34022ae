//===- BranchReport.cpp - The runs an If on runtime data skips ------------===//
#include "compiler/BranchReport.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

namespace snug {

/// The value a skip_if chain starts from: each skip_if passes its
/// condition through, so that the else side's reads the then side's.
static const ir::Value *conditionOf(const ir::Node &skip) {
  const ir::Value *condition = skip.getOperand(0);
  while (const ir::Node *node = condition->getDefiningNode()) {
    if (!node->is(ir::OpCode::SnugSkipIf))
      break;
    condition = node->getOperand(0);
  }
  return condition;
}

static std::string describeCondition(const ir::Value *value) {
  if (!value->getName().empty())
    return value->getName().str();
  if (value->isResult() && !value->getDefiningNode()->getName().empty())
    return value->getDefiningNode()->getName().str();
  return value->describe();
}

std::vector<BranchRun> buildBranchReport(const ir::Module &module,
                                         const ModuleMemoryPlan &plan) {
  std::vector<BranchRun> runs;
  auto nodes = module.getNodes();
  // Most modules have no branch: they pay for nothing below.
  if (llvm::none_of(nodes, [](const std::unique_ptr<ir::Node> &node) {
        return node->is(ir::OpCode::SnugSkipIf);
      }))
    return runs;
  const std::vector<uint64_t> live = plan.getLiveBytesPerStep();
  // The ends of the runs open at each step, for their nesting depth.
  std::vector<int64_t> open;
  for (size_t step = 0; step < nodes.size(); ++step) {
    while (!open.empty() && open.back() < int64_t(step))
      open.pop_back();
    const ir::Node &node = *nodes[step];
    if (!node.is(ir::OpCode::SnugSkipIf))
      continue;
    const ir::Attribute *count = node.getAttribute("count");
    const ir::Attribute *when = node.getAttribute("when");
    if (!count || !when)
      continue; // the verifier requires both
    BranchRun run;
    run.condition = describeCondition(conditionOf(node));
    // Skipped when the condition is `when`: the steps of the other side.
    run.side = when->getInt() ? "else" : "then";
    run.skipStep = int64_t(step);
    run.steps = count->getInt();
    run.depth = unsigned(open.size());
    int64_t last = std::min<int64_t>(int64_t(step) + run.steps,
                                     int64_t(nodes.size()) - 1);
    for (int64_t s = int64_t(step) + 1; s <= last && s < int64_t(live.size());
         ++s)
      if (live[s] > run.peakLiveBytes || run.peakStep < 0) {
        run.peakLiveBytes = live[s];
        run.peakStep = s;
      }
    open.push_back(last);
    runs.push_back(std::move(run));
  }
  return runs;
}

} // namespace snug
