//===- PlanMemory.cpp - The plan-memory pass ------------------------------===//
//
// Packs every intermediate value (graph inputs and outputs included: by
// default they live in the arena) into one arena. Liveness decides which
// values share a buffer; MemoryPlanner places the buffers; this file writes
// the result back onto the IR, `{offset = N}` on each value and the plan's
// figures on the module, and checks the plan with verifyMemoryPlan.
//
// Options (pipeline string): alignment=N (bytes, power of two, default 256),
// planner=none|greedy-size|greedy-breadth|search|best, time-limit=SECONDS,
// seed=N, views=0|1, in-place=0|1, concat=0|1, verify=0|1.
//
//===----------------------------------------------------------------------===//
#include "passes/PlanMemory.h"
#include "passes/Passes.h"

#include "llvm/Support/MathExtras.h"

namespace snug {

std::vector<PlanBuffer> getPlanBuffers(const LivenessInfo &liveness,
                                       uint64_t alignment) {
  std::vector<PlanBuffer> buffers;
  buffers.reserve(liveness.buffers.size());
  for (size_t i = 0; i < liveness.buffers.size(); ++i) {
    const LiveBuffer &live = liveness.buffers[i];
    PlanBuffer buffer;
    buffer.id = i;
    buffer.bytes = live.bytes;
    buffer.alignment = alignment;
    buffer.firstStep = live.firstStep;
    buffer.lastStep = live.lastStep;
    buffers.push_back(buffer);
  }
  return buffers;
}

static llvm::Error planError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<LivenessOptions>
getRecordedSharing(const ir::Module &module) {
  LivenessOptions sharing;
  if (const ir::Attribute *alignment = module.getAttribute("alignment")) {
    if (alignment->getKind() != ir::Attribute::Kind::Int ||
        !llvm::isPowerOf2_64(alignment->getInt()))
      return planError("the module attribute 'alignment' must be a power of "
                       "two");
    sharing.alignment = alignment->getInt();
  }
  if (const ir::Attribute *rules = module.getAttribute("sharing")) {
    if (rules->getKind() != ir::Attribute::Kind::Strings)
      return planError("the module attribute 'sharing' must be a list of "
                       "strings");
    llvm::ArrayRef<std::string> names = rules->getStrings();
    sharing.views = llvm::is_contained(names, "views");
    sharing.inPlace = llvm::is_contained(names, "in-place");
    sharing.concatInPlace = llvm::is_contained(names, "concat");
  }
  return sharing;
}

llvm::Expected<MemoryPlan> planModuleMemory(ir::Module &module,
                                            const PlanMemoryOptions &options) {
  if (!llvm::isPowerOf2_64(options.alignment))
    return planError("alignment " + llvm::Twine(options.alignment) +
                     " is not a power of two");
  LivenessOptions sharing = options.sharing;
  sharing.alignment = options.alignment;
  LivenessInfo liveness = computeLiveness(module, sharing);
  std::vector<PlanBuffer> buffers = getPlanBuffers(liveness, options.alignment);
  llvm::Expected<MemoryPlan> plan = planMemory(buffers, options.planner);
  if (!plan)
    return plan.takeError();
  if (options.verify)
    if (llvm::Error error = verifyMemoryPlan(buffers, *plan))
      return planError("the memory plan does not verify (a bug in snug's "
                       "planner; --planner=none avoids it): " +
                       toString(std::move(error)));

  for (const std::unique_ptr<ir::Value> &argument : module.getArguments())
    argument->setArenaOffset(llvm::None);
  for (const auto &entry : liveness.storage) {
    uint64_t offset = plan->offsets[entry.second.buffer] +
                      entry.second.offsetInBuffer;
    const_cast<ir::Value *>(entry.first)->setArenaOffset(offset);
  }

  LivenessOptions unshared{false, false, false};
  uint64_t unsharedBound = computeLowerBound(
      getPlanBuffers(computeLiveness(module, unshared), options.alignment));
  auto setInt = [&](llvm::StringRef name, uint64_t value) {
    module.setAttribute(name, ir::Attribute::getInt(int64_t(value)));
  };
  setInt("alignment", options.alignment);
  setInt("arena", plan->arenaBytes);
  setInt("lower_bound", plan->lowerBoundBytes);
  setInt("lower_bound_unshared", unsharedBound);
  setInt("no_reuse", plan->noReuseBytes);
  module.setAttribute("peak_step", ir::Attribute::getInt(plan->peakStep));
  module.setAttribute("planner", ir::Attribute::getString(
                                     getPlannerStrategyName(plan->strategy)));
  // verify-plan must derive the same sharing to check these offsets.
  std::vector<std::string> rules;
  if (sharing.concatInPlace)
    rules.push_back("concat");
  if (sharing.inPlace)
    rules.push_back("in-place");
  if (sharing.views)
    rules.push_back("views");
  module.setAttribute("sharing", ir::Attribute::getStrings(rules));
  return plan;
}

namespace {
class PlanMemoryPass : public Pass {
public:
  llvm::StringRef getName() const override { return "plan-memory"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  PlanMemoryOptions options;
};
} // namespace

llvm::Error PlanMemoryPass::setOption(llvm::StringRef key,
                                      llvm::StringRef value) {
  auto badValue = [&]() {
    return planError("plan-memory option '" + key + "': bad value '" + value +
                     "'");
  };
  auto parseFlag = [&](bool &flag) -> llvm::Error {
    if (value != "0" && value != "1")
      return badValue();
    flag = value == "1";
    return llvm::Error::success();
  };
  if (key == "alignment") {
    if (value.getAsInteger(10, options.alignment) ||
        !llvm::isPowerOf2_64(options.alignment))
      return planError("plan-memory option 'alignment': '" + value +
                       "' is not a power of two");
    return llvm::Error::success();
  }
  if (key == "planner") {
    llvm::Expected<PlannerStrategy> strategy = parsePlannerStrategy(value);
    if (!strategy)
      return strategy.takeError();
    options.planner.strategy = *strategy;
    return llvm::Error::success();
  }
  if (key == "time-limit") {
    double seconds;
    if (value.getAsDouble(seconds) || seconds < 0)
      return badValue();
    options.planner.timeLimitSeconds = seconds;
    return llvm::Error::success();
  }
  if (key == "seed")
    return value.getAsInteger(10, options.planner.seed)
               ? badValue()
               : llvm::Error::success();
  if (key == "views")
    return parseFlag(options.sharing.views);
  if (key == "in-place")
    return parseFlag(options.sharing.inPlace);
  if (key == "concat")
    return parseFlag(options.sharing.concatInPlace);
  if (key == "verify")
    return parseFlag(options.verify);
  return Pass::setOption(key, value);
}

llvm::Expected<bool> PlanMemoryPass::run(ir::Module &module) {
  llvm::Expected<MemoryPlan> plan = planModuleMemory(module, options);
  if (!plan)
    return plan.takeError();
  addStatistic("buffers", plan->offsets.size());
  addStatistic("arena-bytes", plan->arenaBytes);
  addStatistic("lower-bound-bytes", plan->lowerBoundBytes);
  addStatistic("planning-us", int64_t(plan->planningMs * 1000));
  return true;
}

std::unique_ptr<Pass> createPlanMemoryPass() {
  return std::make_unique<PlanMemoryPass>();
}

} // namespace snug
