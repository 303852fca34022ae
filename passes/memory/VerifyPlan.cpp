//===- VerifyPlan.cpp - Check the arena plan recorded in a module ---------===//
//
// Re-derives liveness from the schedule and checks the offsets that the
// module carries (from plan-memory, or written by hand in textual IR)
// against it with verifyMemoryPlan: every offset aligned, every value inside
// the module's `arena`, and no two values live at the same step overlapping
// in address unless a sharing rule (view, in-place, concat slice) puts them
// there. A value whose offset does not follow its sharing rule is checked as
// a buffer of its own, so a wrong alias shows up as an overlap. Scratch
// buffers (the module's `scratch` triples) are checked as buffers live at
// their node's step, aligned to 256 bytes (cublasSetWorkspace's rule) or the
// arena alignment if larger. Offloaded values (the pinned host region) are
// checked apart against `host_arena`. It reads the recorded offsets and re-derives
// liveness itself rather than through getModuleMemoryPlan, so a bug there
// cannot hide a bad plan from it. Changes nothing. plan-memory verifies its own plans; this pass is for plans that
// come from elsewhere and for `--verify-plan` in release builds.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/memory/Liveness.h"
#include "passes/planner/MemoryPlanner.h"
#include "passes/memory/PlanMemory.h"
#include "passes/Passes.h"

#include "llvm/ADT/StringExtras.h"

namespace snug {
namespace {
class VerifyPlan : public Pass {
public:
  llvm::StringRef getName() const override { return "verify-plan"; }
  llvm::Expected<bool> run(ir::Module &module) override;
};
} // namespace

static llvm::Error planError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<bool> VerifyPlan::run(ir::Module &module) {
  const ir::Attribute *arena = module.getAttribute("arena");
  if (!arena || arena->getKind() != ir::Attribute::Kind::Int)
    return planError("the module has no plan (no 'arena' attribute); run "
                     "plan-memory first");
  llvm::Expected<LivenessOptions> sharing = getRecordedSharing(module);
  if (!sharing)
    return sharing.takeError();
  uint64_t alignment = sharing->alignment;
  LivenessInfo liveness = computeLiveness(module, *sharing);

  std::vector<PlanBuffer> buffers;
  // Who owns each buffer: a value, or the node whose scratch it is. Named
  // only when an error is reported (describe() can walk the schedule).
  struct Owner {
    const ir::Value *value = nullptr;
    const ir::Node *scratchOf = nullptr;
  };
  std::vector<Owner> owners;
  MemoryPlan plan;
  plan.arenaBytes = arena->getInt();
  for (const LiveBuffer &live : liveness.buffers) {
    const ir::Value *root = live.values.front();
    if (!root->getArenaOffset())
      return planError("value " + root->describe() +
                       " has no arena offset");
    uint64_t base = *root->getArenaOffset() -
                    liveness.storage.lookup(root).offsetInBuffer;
    PlanBuffer group;
    group.id = buffers.size();
    group.alignment = alignment;
    group.firstStep = liveness.intervals.lookup(root).first;
    group.lastStep = liveness.intervals.lookup(root).second;
    group.bytes = liveness.storage.lookup(root).offsetInBuffer +
                  root->getType().getByteSize();
    for (const ir::Value *value : live.values) {
      if (!value->getArenaOffset())
        return planError("value " + value->describe() +
                         " has no arena offset");
      uint64_t inBuffer = liveness.storage.lookup(value).offsetInBuffer;
      auto interval = liveness.intervals.lookup(value);
      if (*value->getArenaOffset() == base + inBuffer) {
        group.firstStep = std::min(group.firstStep, interval.first);
        group.lastStep = std::max(group.lastStep, interval.second);
        group.bytes =
            std::max(group.bytes, inBuffer + value->getType().getByteSize());
        continue;
      }
      // Off its sharing rule: its own buffer, aligned only to one byte since
      // slices of a Concat need not be aligned.
      PlanBuffer alone;
      alone.id = buffers.size() + 1;
      alone.bytes = value->getType().getByteSize();
      alone.firstStep = interval.first;
      alone.lastStep = interval.second;
      buffers.push_back(alone);
      owners.push_back({value, nullptr});
      plan.offsets.push_back(*value->getArenaOffset());
    }
    group.id = buffers.size();
    buffers.push_back(group);
    owners.push_back({root, nullptr});
    plan.offsets.push_back(base);
  }
  llvm::Expected<std::vector<RecordedScratch>> scratch =
      getRecordedScratch(module);
  if (!scratch)
    return scratch.takeError();
  for (const RecordedScratch &entry : *scratch) {
    PlanBuffer buffer;
    buffer.bytes = entry.bytes;
    buffer.alignment = std::max(alignment, kScratchAlignment);
    buffer.firstStep = buffer.lastStep = entry.step;
    buffers.push_back(buffer);
    owners.push_back({nullptr, module.getNodes()[entry.step].get()});
    plan.offsets.push_back(entry.offset);
  }
  for (size_t i = 0; i < buffers.size(); ++i)
    buffers[i].id = i;
  if (llvm::Error error = verifyMemoryPlan(buffers, plan)) {
    // Name values, not buffer ids, in what the user sees.
    std::string message = toString(std::move(error));
    std::string named;
    llvm::raw_string_ostream os(named);
    os << message << "\n  buffers:";
    for (size_t i = 0; i < buffers.size(); ++i)
      if (llvm::any_of(
              std::initializer_list<std::string>{"buffer ", "buffers ",
                                                 "and "},
              [&](const std::string &lead) {
                return message.find(lead + std::to_string(i) + " ") !=
                       std::string::npos;
              }))
        os << "\n    buffer " << i << " = "
           << (owners[i].value ? owners[i].value->describe()
                               : "the scratch of " +
                                     owners[i].scratchOf->describe())
           << " at offset " << plan.offsets[i] << ", " << buffers[i].bytes
           << " bytes, live [" << buffers[i].firstStep << ", "
           << buffers[i].lastStep << "]";
    return planError("the memory plan is invalid: " + os.str());
  }
  // The pinned host region: offloaded values, one buffer each, checked the
  // same way against `host_arena`.
  std::vector<PlanBuffer> hostBuffers;
  MemoryPlan hostPlan;
  const ir::Attribute *hostArena = module.getAttribute("host_arena");
  hostPlan.arenaBytes = hostArena && hostArena->getKind() ==
                                         ir::Attribute::Kind::Int
                            ? uint64_t(std::max<int64_t>(0, hostArena->getInt()))
                            : 0;
  for (const LiveBuffer &live : liveness.hostBuffers) {
    const ir::Value *value = live.values.front();
    if (!value->getArenaOffset())
      return planError("value " + value->describe() +
                       " has no host region offset");
    PlanBuffer buffer;
    buffer.id = hostBuffers.size();
    buffer.bytes = live.bytes;
    buffer.alignment = alignment;
    buffer.firstStep = live.firstStep;
    buffer.lastStep = live.lastStep;
    hostBuffers.push_back(buffer);
    hostPlan.offsets.push_back(*value->getArenaOffset());
  }
  if (llvm::Error error = verifyMemoryPlan(hostBuffers, hostPlan))
    return planError("the pinned host plan is invalid: " +
                     toString(std::move(error)));
  addStatistic("buffers-checked", buffers.size() + hostBuffers.size());
  return false;
}

std::unique_ptr<Pass> createVerifyPlanPass() {
  return std::make_unique<VerifyPlan>();
}

} // namespace snug
