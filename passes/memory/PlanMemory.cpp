//===- PlanMemory.cpp - The plan-memory pass ------------------------------===//
//
// Packs every intermediate value (graph inputs and outputs included: by
// default they live in the arena) and every scratch buffer the target asks
// for (ScratchRequest.h: the cuBLAS workspace of a GEMM) into one arena.
// Liveness decides which values share a buffer; each scratch buffer lives
// at its node's step only; MemoryPlanner places them all; on the CUDA
// target a module with run-time checks (snug.check_labels) gets the check
// record its kernels write (core/DevicePlan.h) after all of them, live the
// whole step (the module attribute check_record = OFFSET; the host reports
// a failed check itself and needs none); this file writes
// the result back onto the IR (see PlanMemory.h for what is recorded and
// how readers get it back) and checks the plan with verifyMemoryPlan.
//
// Options (pipeline string): alignment=N (bytes, power of two, default 256),
// planner=none|greedy-size|greedy-breadth|search|best, time-limit=SECONDS
// (the packer's budget; the planning pipeline, compiler/Pipeline.h, gives it
// what the schedule pass's share leaves of --time-limit), seed=N, views=0|1, in-place=0|1, concat=0|1, verify=0|1,
// target=cuda|host (whose scratch to plan; default cuda),
// cublas-workspace=BYTES (the most one GEMM's workspace may take, a
// multiple of 256, at least cuBLAS's 16 KiB minimum; default 4 MiB).
//
//===----------------------------------------------------------------------===//
#include "passes/memory/PlanMemory.h"
#include "core/DevicePlan.h"
#include "passes/Passes.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cassert>

namespace snug {

static std::vector<PlanBuffer>
getPlanBuffers(const std::vector<LiveBuffer> &live, uint64_t alignment);

std::vector<PlanBuffer> getPlanBuffers(const LivenessInfo &liveness,
                                       uint64_t alignment) {
  return getPlanBuffers(liveness.buffers, alignment);
}

static std::vector<PlanBuffer>
getPlanBuffers(const std::vector<LiveBuffer> &lives, uint64_t alignment) {
  std::vector<PlanBuffer> buffers;
  buffers.reserve(lives.size());
  for (size_t i = 0; i < lives.size(); ++i) {
    const LiveBuffer &live = lives[i];
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

/// A scratch buffer's alignment in an arena aligned to `alignment`.
static uint64_t getScratchAlignment(uint64_t alignment) {
  return std::max(alignment, kScratchAlignment);
}

std::vector<PlanBuffer> getArenaPlanBuffers(const ModuleMemoryPlan &plan) {
  std::vector<PlanBuffer> buffers;
  buffers.reserve(plan.buffers.size());
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const ArenaBuffer &arena = plan.buffers[i];
    PlanBuffer buffer;
    buffer.id = i;
    buffer.bytes = arena.bytes;
    buffer.alignment = arena.kind == ArenaBuffer::Kind::Scratch
                           ? getScratchAlignment(plan.alignment)
                           : plan.alignment;
    buffer.firstStep = arena.firstStep;
    buffer.lastStep = arena.lastStep;
    buffers.push_back(buffer);
  }
  return buffers;
}

/// Whether two packing problems are the same buffers in the same order.
[[maybe_unused]] static bool isSameProblem(llvm::ArrayRef<PlanBuffer> a,
                                           llvm::ArrayRef<PlanBuffer> b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(),
                    [](const PlanBuffer &x, const PlanBuffer &y) {
                      return x.id == y.id && x.bytes == y.bytes &&
                             x.alignment == y.alignment &&
                             x.firstStep == y.firstStep &&
                             x.lastStep == y.lastStep;
                    });
}

static llvm::Error planError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

const ArenaBuffer *ModuleMemoryPlan::getScratch(int64_t step) const {
  for (const ArenaBuffer &buffer : buffers)
    if (buffer.kind == ArenaBuffer::Kind::Scratch && buffer.firstStep == step)
      return &buffer;
  return nullptr;
}

uint64_t ModuleMemoryPlan::getLargestScratchBytes() const {
  uint64_t largest = 0;
  for (const ArenaBuffer &buffer : buffers)
    if (buffer.kind == ArenaBuffer::Kind::Scratch)
      largest = std::max(largest, buffer.bytes);
  return largest;
}

size_t ModuleMemoryPlan::getNumScratchBuffers() const {
  return llvm::count_if(buffers, [](const ArenaBuffer &buffer) {
    return buffer.kind == ArenaBuffer::Kind::Scratch;
  });
}

std::vector<uint64_t> ModuleMemoryPlan::getLiveBytesPerStep() const {
  std::vector<uint64_t> live(size_t(std::max<int64_t>(numSteps, 0)), 0);
  for (const ArenaBuffer &buffer : buffers)
    for (int64_t step = std::max<int64_t>(0, buffer.firstStep);
         step <= buffer.lastStep && step < int64_t(live.size()); ++step)
      live[size_t(step)] += llvm::alignTo(buffer.bytes, alignment);
  return live;
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

llvm::Expected<std::vector<RecordedScratch>>
getRecordedScratch(const ir::Module &module) {
  std::vector<RecordedScratch> scratch;
  const ir::Attribute *attr = module.getAttribute("scratch");
  if (!attr)
    return scratch;
  auto malformed = [](const llvm::Twine &why) {
    return planError("the module attribute 'scratch' (triples step, offset, "
                     "bytes) " + why);
  };
  if (attr->getKind() != ir::Attribute::Kind::Ints ||
      attr->getInts().size() % 3)
    return malformed("must be a list of ints, three per scratch buffer");
  llvm::ArrayRef<int64_t> ints = attr->getInts();
  int64_t steps = module.getNodes().size();
  for (size_t i = 0; i < ints.size(); i += 3) {
    if (ints[i] < 0 || ints[i] >= steps || ints[i + 1] < 0 || ints[i + 2] < 0)
      return malformed("has entry [" + llvm::Twine(ints[i]) + ", " +
                       llvm::Twine(ints[i + 1]) + ", " +
                       llvm::Twine(ints[i + 2]) + "]: the step must name one "
                       "of the " + llvm::Twine(steps) +
                       " nodes, offset and bytes must not be negative");
    if (!scratch.empty() && ints[i] <= scratch.back().step)
      return malformed("must list steps in increasing order, once each");
    scratch.push_back({ints[i], uint64_t(ints[i + 1]), uint64_t(ints[i + 2])});
  }
  return scratch;
}

static uint64_t getIntAttribute(const ir::Module &module,
                                llvm::StringRef name) {
  const ir::Attribute *attr = module.getAttribute(name);
  return attr && attr->getKind() == ir::Attribute::Kind::Int ? attr->getInt()
                                                             : 0;
}

/// The plan the module's attributes and offsets record, with `liveness`
/// computed under the recorded sharing rules (`sharing`).
static llvm::Expected<ModuleMemoryPlan>
readRecordedPlan(const ir::Module &module, const LivenessOptions &sharing,
                 LivenessInfo liveness) {
  const ir::Attribute *arena = module.getAttribute("arena");
  if (!arena || arena->getKind() != ir::Attribute::Kind::Int)
    return planError("the module has no memory plan (no 'arena' attribute); "
                     "run plan-memory first");
  llvm::Expected<std::vector<RecordedScratch>> scratch =
      getRecordedScratch(module);
  if (!scratch)
    return scratch.takeError();
  ModuleMemoryPlan plan;
  plan.alignment = sharing.alignment;
  plan.arenaBytes = arena->getInt();
  plan.lowerBoundBytes = getIntAttribute(module, "lower_bound");
  plan.lowerBoundUnsharedBytes = getIntAttribute(module, "lower_bound_unshared");
  plan.noReuseBytes = getIntAttribute(module, "no_reuse");
  const ir::Attribute *peak = module.getAttribute("peak_step");
  plan.peakStep =
      peak && peak->getKind() == ir::Attribute::Kind::Int ? peak->getInt() : -1;
  if (const ir::Attribute *planner = module.getAttribute("planner"))
    if (planner->getKind() == ir::Attribute::Kind::String)
      plan.planner = planner->getString().str();
  plan.sharing = sharing;
  plan.numSteps = liveness.numSteps;
  plan.hostArenaBytes = getIntAttribute(module, "host_arena");
  if (module.getAttribute("check_record"))
    plan.checkRecordOffset = getIntAttribute(module, "check_record");
  auto addBuffers = [&](std::vector<LiveBuffer> &lives,
                        std::vector<ArenaBuffer> &into) -> llvm::Error {
    for (LiveBuffer &live : lives) {
      const ir::Value *root = live.values.front();
      if (!root->getArenaOffset())
        return planError("value " + root->describe() +
                         " has no arena offset; the plan is incomplete");
      ArenaBuffer buffer;
      buffer.offset = *root->getArenaOffset() -
                      liveness.storage.lookup(root).offsetInBuffer;
      buffer.bytes = live.bytes;
      buffer.firstStep = live.firstStep;
      buffer.lastStep = live.lastStep;
      buffer.values = std::move(live.values);
      buffer.reasons = std::move(live.reasons);
      into.push_back(std::move(buffer));
    }
    return llvm::Error::success();
  };
  if (llvm::Error error = addBuffers(liveness.buffers, plan.buffers))
    return error;
  if (llvm::Error error = addBuffers(liveness.hostBuffers, plan.hostBuffers))
    return error;
  auto nodes = module.getNodes();
  for (const RecordedScratch &entry : *scratch) {
    ArenaBuffer buffer;
    buffer.kind = ArenaBuffer::Kind::Scratch;
    buffer.offset = entry.offset;
    buffer.bytes = entry.bytes;
    buffer.firstStep = buffer.lastStep = entry.step;
    buffer.node = nodes[entry.step].get();
    plan.buffers.push_back(std::move(buffer));
  }
  plan.intervals = std::move(liveness.intervals);
  return plan;
}

llvm::Expected<ModuleMemoryPlan>
getModuleMemoryPlan(const ir::Module &module) {
  const ir::Attribute *arena = module.getAttribute("arena");
  if (!arena || arena->getKind() != ir::Attribute::Kind::Int)
    return planError("the module has no memory plan (no 'arena' attribute); "
                     "run plan-memory first");
  llvm::Expected<LivenessOptions> sharing = getRecordedSharing(module);
  if (!sharing)
    return sharing.takeError();
  return readRecordedPlan(module, *sharing, computeLiveness(module, *sharing));
}

llvm::Expected<ModuleMemoryPlan>
planModuleMemory(ir::Module &module, const PlanMemoryOptions &options) {
  if (!llvm::isPowerOf2_64(options.alignment))
    return planError("alignment " + llvm::Twine(options.alignment) +
                     " is not a power of two");
  LivenessOptions sharing = options.sharing;
  sharing.alignment = options.alignment;
  LivenessInfo liveness = computeLiveness(module, sharing);
  std::vector<PlanBuffer> buffers = getPlanBuffers(liveness, options.alignment);

  // Scratch: one buffer per node that asks, live at its step alone, so it
  // shares bytes with whatever is dead while that node runs and never with
  // the node's own operands and results.
  std::vector<std::pair<int64_t, uint64_t>> scratch; // step, bytes
  auto nodes = module.getNodes();
  for (size_t step = 0; step < nodes.size(); ++step) {
    ScratchRequest request = getScratchRequest(*nodes[step], options.scratch);
    if (!request.bytes)
      continue;
    PlanBuffer buffer;
    buffer.id = buffers.size();
    buffer.bytes = request.bytes;
    buffer.alignment = getScratchAlignment(options.alignment);
    buffer.firstStep = buffer.lastStep = step;
    buffers.push_back(buffer);
    scratch.push_back({int64_t(step), request.bytes});
  }

  llvm::Expected<MemoryPlan> plan = planMemory(buffers, options.planner);
  if (!plan)
    return plan.takeError();
  if (options.verify)
    if (llvm::Error error = verifyMemoryPlan(buffers, *plan))
      return planError("the memory plan does not verify (a bug in snug's "
                       "planner; --planner=none avoids it): " +
                       toString(std::move(error)));

  // The pinned host region (offloaded values) is packed apart, by the same
  // planner; its offsets are relative to that region.
  std::vector<PlanBuffer> hostBuffers =
      getPlanBuffers(liveness.hostBuffers, options.alignment);
  llvm::Expected<MemoryPlan> hostPlan = planMemory(hostBuffers, options.planner);
  if (!hostPlan)
    return hostPlan.takeError();
  if (options.verify)
    if (llvm::Error error = verifyMemoryPlan(hostBuffers, *hostPlan))
      return planError("the host memory plan does not verify (a bug in "
                       "snug's planner): " +
                       toString(std::move(error)));

  for (const std::unique_ptr<ir::Value> &argument : module.getArguments())
    argument->setArenaOffset(llvm::None);
  for (const auto &entry : liveness.storage) {
    const MemoryPlan &region = entry.second.host ? *hostPlan : *plan;
    uint64_t offset = region.offsets[entry.second.buffer] +
                      entry.second.offsetInBuffer;
    const_cast<ir::Value *>(entry.first)->setArenaOffset(offset);
  }

  // The unshared bound counts the same scratch: sharing is what it measures.
  LivenessOptions unshared{false, false, false};
  std::vector<PlanBuffer> unsharedBuffers =
      getPlanBuffers(computeLiveness(module, unshared), options.alignment);
  unsharedBuffers.insert(unsharedBuffers.end(),
                         buffers.begin() + liveness.buffers.size(),
                         buffers.end());
  uint64_t unsharedBound = computeLowerBound(unsharedBuffers);
  auto setInt = [&](llvm::StringRef name, uint64_t value) {
    module.setAttribute(name, ir::Attribute::getInt(int64_t(value)));
  };
  // The check record: live at every step, so every bound counts it.
  uint64_t arenaBytes = plan->arenaBytes, record = 0;
  bool checks = options.scratch.cuda &&
                llvm::any_of(nodes, [](const std::unique_ptr<ir::Node> &node) {
                  return node->getOpCode() == ir::OpCode::SnugCheckLabels ||
                         node->getOpCode() == ir::OpCode::SnugFailIf;
                });
  if (checks) {
    uint64_t offset = llvm::alignTo(arenaBytes, bundle::kCheckRecordAlignment);
    setInt("check_record", offset);
    arenaBytes = offset + bundle::kCheckRecordBytes;
    record = bundle::kCheckRecordBytes;
  } else {
    module.removeAttribute("check_record");
  }
  setInt("alignment", options.alignment);
  setInt("arena", arenaBytes);
  setInt("lower_bound", plan->lowerBoundBytes + record);
  setInt("lower_bound_unshared", unsharedBound + record);
  setInt("no_reuse", plan->noReuseBytes + record);
  if (liveness.hostBuffers.empty())
    module.removeAttribute("host_arena");
  else
    setInt("host_arena", hostPlan->arenaBytes);
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
  if (scratch.empty()) {
    module.removeAttribute("scratch");
  } else {
    std::vector<int64_t> triples;
    for (size_t i = 0; i < scratch.size(); ++i) {
      triples.push_back(scratch[i].first);
      triples.push_back(
          int64_t(plan->offsets[liveness.buffers.size() + i]));
      triples.push_back(int64_t(scratch[i].second));
    }
    module.setAttribute("scratch", ir::Attribute::getInts(triples));
  }

  // What readers get back from the attributes just written, from the
  // liveness already computed (the same rules) rather than a second walk.
  llvm::Expected<ModuleMemoryPlan> recorded =
      readRecordedPlan(module, sharing, std::move(liveness));
  if (recorded)
    recorded->planningMs = plan->planningMs;
  // What getArenaPlanBuffers gives readers (snugc --emit=buffers) is the
  // problem just planned, buffer for buffer.
  assert(!recorded || isSameProblem(getArenaPlanBuffers(*recorded), buffers));
  return recorded;
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

llvm::Expected<bool> parsePlanMemoryOption(PlanMemoryOptions &options,
                                          llvm::StringRef pass,
                                          llvm::StringRef key,
                                          llvm::StringRef value) {
  auto fail = [&](const llvm::Twine &what) -> llvm::Expected<bool> {
    return planError(pass + " option '" + key + "': " + what);
  };
  auto badValue = [&]() { return fail("bad value '" + value + "'"); };
  auto parseFlag = [&](bool &flag) -> llvm::Expected<bool> {
    if (value != "0" && value != "1")
      return badValue();
    flag = value == "1";
    return true;
  };
  if (key == "alignment") {
    if (value.getAsInteger(10, options.alignment) ||
        !llvm::isPowerOf2_64(options.alignment))
      return fail("'" + value + "' is not a power of two");
    return true;
  }
  if (key == "planner") {
    llvm::Expected<PlannerStrategy> strategy = parsePlannerStrategy(value);
    if (!strategy)
      return strategy.takeError();
    options.planner.strategy = *strategy;
    return true;
  }
  if (key == "time-limit") {
    double seconds;
    if (value.getAsDouble(seconds) || seconds < 0)
      return badValue();
    options.planner.timeLimitSeconds = seconds;
    return true;
  }
  if (key == "seed") {
    if (value.getAsInteger(10, options.planner.seed))
      return badValue();
    return true;
  }
  if (key == "views")
    return parseFlag(options.sharing.views);
  if (key == "in-place")
    return parseFlag(options.sharing.inPlace);
  if (key == "concat")
    return parseFlag(options.sharing.concatInPlace);
  if (key == "verify")
    return parseFlag(options.verify);
  if (key == "target") {
    if (value != "cuda" && value != "host")
      return fail("'" + value + "' is not cuda or host");
    options.scratch.cuda = value == "cuda";
    return true;
  }
  if (key == "cublas-workspace") {
    if (value.getAsInteger(10, options.scratch.cublasWorkspaceCap) ||
        options.scratch.cublasWorkspaceCap % kScratchAlignment)
      return fail("'" + value + "' is not a multiple of 256 bytes");
    if (options.scratch.cublasWorkspaceCap < kMinCublasWorkspace)
      return fail("'" + value + "' is less than " +
                  std::to_string(kMinCublasWorkspace) +
                  " bytes, the least workspace cuBLAS documents against "
                  "CUBLAS_STATUS_ALLOC_FAILED");
    return true;
  }
  return false;
}

llvm::Error PlanMemoryPass::setOption(llvm::StringRef key,
                                      llvm::StringRef value) {
  llvm::Expected<bool> known =
      parsePlanMemoryOption(options, getName(), key, value);
  if (!known)
    return known.takeError();
  return *known ? llvm::Error::success() : Pass::setOption(key, value);
}

llvm::Expected<bool> PlanMemoryPass::run(ir::Module &module) {
  llvm::Expected<ModuleMemoryPlan> plan = planModuleMemory(module, options);
  if (!plan)
    return plan.takeError();
  addStatistic("buffers", plan->buffers.size());
  addStatistic("scratch-buffers", plan->getNumScratchBuffers());
  addStatistic("arena-bytes", plan->arenaBytes);
  addStatistic("lower-bound-bytes", plan->lowerBoundBytes);
  addStatistic("planning-us", int64_t(plan->planningMs * 1000));
  return true;
}

std::unique_ptr<Pass> createPlanMemoryPass() {
  return std::make_unique<PlanMemoryPass>();
}

} // namespace snug
