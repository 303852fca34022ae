//===- BudgetSearch.cpp - What remat and offload share --------------------===//
#include "passes/memory/budget/BudgetSearch.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace snug {

std::vector<uint64_t> getLiveBytes(const ModuleMemoryPlan &plan) {
  std::vector<uint64_t> live(plan.numSteps + 1, 0);
  for (const ArenaBuffer &buffer : plan.buffers) {
    uint64_t bytes = alignBytesUp(buffer.bytes, plan.alignment);
    for (int64_t s = buffer.firstStep; s <= buffer.lastStep; ++s)
      live[s] += bytes;
  }
  return live;
}

PlanScore scorePlan(const ModuleMemoryPlan &plan) {
  std::vector<uint64_t> live = getLiveBytes(plan);
  PlanScore score{plan.arenaBytes, plan.lowerBoundBytes, 0};
  uint64_t peak = *std::max_element(live.begin(), live.end());
  for (uint64_t bytes : live)
    score.stepsAtBound += bytes == peak;
  return score;
}

std::string describeDecisionBytes(uint64_t bytes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (bytes >= (uint64_t(1) << 20))
    os << llvm::format("%.2f MiB", double(bytes) / double(1 << 20));
  else
    os << llvm::format("%.1f KiB", double(bytes) / 1024.0);
  return os.str();
}

} // namespace snug
