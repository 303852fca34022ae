//===- Offload.cpp - Park values in pinned host memory across the peak ----===//
//
// Option arena-budget=BYTES: while the packed arena is over it, pick a value
// that is live across the peak step without being used there and that
// would cost more to recompute than to move, copy it to the pinned host
// region after its last read before the peak (snug.offload), and copy it
// back just before its first read after the peak (snug.reload); then plan
// the arena again and keep the change only if the plan got better (the
// same test remat uses: passes/memory/budget/BudgetSearch.h). The budget is checked
// against the packed device arena; the pinned host region is planned apart
// (plan-memory's `host_arena`) and reported, not counted in it.
//
// One decision, at the peak step p of the current plan:
//  - candidates are the buffers live across p that hold one value before
//    p (no views or in-place results over it then: those would need their
//    own copies back; what joins it after p reads the copy back instead),
//    that node p does not read or write, that are
//    not graph outputs (their bytes are handed back from the arena) and not
//    already a snug.reload result (a value goes out once);
//  - moving it costs two copies over the host link, 2 x bytes / bandwidth
//    (option host-bandwidth, GB/s); recomputing it costs at least its
//    producer's roofline time (passes/analysis/CostModel.h; a graph input cannot be
//    recomputed at all). A candidate is offloaded only when moving is
//    cheaper than that lower bound of recomputing, so where the two compete
//    offload never takes a value remat would recompute more cheaply; what
//    remains over the budget is remat's (it runs after this pass);
//  - candidates are tried largest first (the time per byte saved is the
//    same for every one: the link's), at most max-tries per decision.
// The copies move bytes and nothing else, so the module's results stay
// bitwise what they were. The copies are planned steps like any node:
// the host executor runs them as byte copies between its arena and its
// pinned host buffer, the CUDA plan as copy steps (device to host, host to
// device) on the one stream, so their time adds to the step's.
//
// What it records on the module, for the report and --print-remat:
//   offload_arena_before  the arena before any decision (int)
//   offload_values        values offloaded (int)
//   offload_bytes         bytes copied out (and back) in all (int)
//   offload_decisions     one line per decision kept (strings)
//
// Options: arena-budget (bytes, required), host-bandwidth (GB/s, default
// 25: PCIe 4.0 x16 as measured, not its 32 GB/s line rate), max-decisions
// (default 1000), max-tries per decision (default 16), and every
// plan-memory option, which must match plan-memory's.
//
// References: Rhu et al., "vDNN: virtualized deep neural networks for
// scalable, memory-efficient neural network design" (MICRO 2016), for
// offloading activations over PCIe; Peng et al., "Capuchin" (ASPLOS 2020),
// for choosing between swapping and recomputing per tensor by cost.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/memory/budget/BudgetSearch.h"
#include "passes/analysis/CostModel.h"
#include "passes/memory/Liveness.h"
#include "passes/memory/PlanMemory.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>

namespace snug {
namespace {

class Offload : public Pass {
public:
  Offload() {
    // As remat: many plans, each with a short, work-bounded limit.
    options.planner.timeLimitSeconds = 0.05;
    options.verify = false;
  }
  llvm::StringRef getName() const override { return "offload"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  PlanMemoryOptions options;
  uint64_t arenaBudget = 0;
  bool haveBudget = false;
  double bandwidthGBs = 25;
  unsigned maxDecisions = 1000;
  unsigned maxTries = 16;
};

struct Candidate {
  const ArenaBuffer *buffer = nullptr;
  ir::Value *value = nullptr;
};

/// The change made for one candidate, to keep or undo.
struct Change {
  ir::Node *out = nullptr, *back = nullptr;
  struct Redirect {
    ir::Node *user;
    unsigned operand;
  };
  std::vector<Redirect> redirects;
  const ir::Node *lastBefore = nullptr, *firstAfter = nullptr;
};

std::vector<Candidate> collect(const ir::Module &module,
                               const ModuleMemoryPlan &plan,
                               double bandwidth) {
  std::vector<Candidate> candidates;
  int64_t peak = plan.peakStep;
  if (peak < 0)
    return candidates;
  const ir::Node &atPeak = *module.getNodes()[peak];
  llvm::DenseSet<const ir::Value *> touched(atPeak.getOperands().begin(),
                                            atPeak.getOperands().end());
  for (unsigned i = 0; i < atPeak.getNumResults(); ++i)
    touched.insert(atPeak.getResult(i));
  const DeviceSpec &device = getDefaultDevice();
  for (const ArenaBuffer &buffer : plan.buffers) {
    if (buffer.kind != ArenaBuffer::Kind::Values ||
        buffer.firstStep >= peak || buffer.lastStep <= peak)
      continue;
    const ir::Value *value = buffer.values.front();
    // What joined the buffer after the peak (a result in place over the
    // value, say) reads it there and will read the copy back instead.
    bool alone = true;
    for (size_t k = 1; k < buffer.values.size() && alone; ++k)
      alone = plan.intervals.lookup(buffer.values[k]).first > peak;
    if (!alone)
      continue;
    if (module.isOutput(value) || touched.count(value))
      continue;
    const ir::Node *producer = value->getDefiningNode();
    if (producer && producer->is(ir::OpCode::SnugReload))
      continue;
    double move = 2.0 * double(value->getType().getByteSize()) / bandwidth;
    double recompute = producer
                           ? estimateSeconds(costOfNode(*producer), device)
                           : std::numeric_limits<double>::infinity();
    if (!(move < recompute))
      continue;
    candidates.push_back({&buffer, const_cast<ir::Value *>(value)});
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate &a, const Candidate &b) {
                     return a.buffer->bytes > b.buffer->bytes;
                   });
  return candidates;
}

size_t positionOf(const ir::Module &module, const ir::Node *node) {
  auto nodes = module.getNodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].get() == node)
      return i;
  return nodes.size();
}

Change apply(ir::Module &module, const ModuleMemoryPlan &plan,
             const Candidate &candidate) {
  Change change;
  int64_t peak = plan.peakStep;
  llvm::DenseMap<const ir::Node *, int64_t> stepOf;
  auto nodes = module.getNodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    stepOf[nodes[i].get()] = int64_t(i);
  ir::Value *value = candidate.value;
  // Out after the value's definition and its reads before the peak; back
  // before its first read after it.
  int64_t lastBefore = value->isResult()
                           ? stepOf.lookup(value->getDefiningNode())
                           : -1;
  int64_t firstAfter = std::numeric_limits<int64_t>::max();
  for (const ir::Value::Use &use : value->getUses()) {
    int64_t step = stepOf.lookup(use.user);
    if (step < peak) {
      lastBefore = std::max(lastBefore, step);
    } else {
      change.redirects.push_back({use.user, use.operandIndex});
      if (step < firstAfter) {
        firstAfter = step;
        change.firstAfter = use.user;
      }
    }
  }
  change.lastBefore = lastBefore >= 0 ? nodes[lastBefore].get() : nullptr;
  change.out = module.insertNode(size_t(lastBefore + 1),
                                 ir::OpCode::SnugOffload, {value},
                                 {value->getType()});
  change.back = module.insertNode(positionOf(module, change.firstAfter),
                                  ir::OpCode::SnugReload,
                                  {change.out->getResult(0)},
                                  {value->getType()});
  for (const Change::Redirect &read : change.redirects)
    read.user->setOperand(read.operand, change.back->getResult(0));
  return change;
}

void undo(ir::Module &module, ir::Value *value, const Change &change) {
  for (const Change::Redirect &read : change.redirects)
    read.user->setOperand(read.operand, value);
  module.eraseNodesIf([&](const ir::Node &node) {
    return &node == change.out || &node == change.back;
  });
}

} // namespace

llvm::Error Offload::setOption(llvm::StringRef key, llvm::StringRef value) {
  auto bad = [&](llvm::StringRef what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "pass 'offload': option '" + key.str() +
                                       "' must be " + what.str() + ", got '" +
                                       value.str() + "'");
  };
  if (key == "arena-budget") {
    if (value.getAsInteger(10, arenaBudget) || arenaBudget == 0)
      return bad("a positive number of bytes");
    haveBudget = true;
    return llvm::Error::success();
  }
  if (key == "host-bandwidth") {
    if (value.getAsDouble(bandwidthGBs) || !(bandwidthGBs > 0) ||
        bandwidthGBs > 1e9)
      return bad("a positive number of GB/s");
    return llvm::Error::success();
  }
  if (key == "max-decisions" || key == "max-tries") {
    unsigned &target = key == "max-decisions" ? maxDecisions : maxTries;
    if (value.getAsInteger(10, target) || target == 0 || target > 1000000)
      return bad("a whole number from 1 to 1000000");
    return llvm::Error::success();
  }
  llvm::Expected<bool> known =
      parsePlanMemoryOption(options, getName(), key, value);
  if (!known)
    return known.takeError();
  return *known ? llvm::Error::success() : Pass::setOption(key, value);
}

llvm::Expected<bool> Offload::run(ir::Module &module) {
  if (!haveBudget)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "pass 'offload' needs option arena-budget");
  llvm::Expected<ModuleMemoryPlan> plan = planModuleMemory(module, options);
  if (!plan)
    return plan.takeError();
  uint64_t arenaBefore = plan->arenaBytes;
  std::vector<std::string> decisions;
  uint64_t bytesMoved = 0;
  bool planIsCurrent = true, changed = false;
  PlanScore score = scorePlan(*plan);
  double bandwidth = bandwidthGBs * 1e9;
  while (plan->arenaBytes > arenaBudget && decisions.size() < maxDecisions) {
    std::vector<Candidate> candidates = collect(module, *plan, bandwidth);
    bool kept = false;
    for (size_t k = 0; k < candidates.size() && k < maxTries && !kept; ++k) {
      ir::Value *value = candidates[k].value;
      std::string what = value->describe();
      std::string from = value->isResult()
                             ? value->getDefiningNode()->describe()
                             : std::string("the caller");
      uint64_t bytes = value->getType().getByteSize();
      int64_t peakStep = plan->peakStep;
      Change change = apply(module, *plan, candidates[k]);
      std::string after = change.lastBefore ? change.lastBefore->describe()
                                            : std::string("the start");
      std::string before = change.firstAfter->describe();
      llvm::Expected<ModuleMemoryPlan> trial =
          planModuleMemory(module, options);
      if (!trial)
        return trial.takeError();
      PlanScore trialScore = scorePlan(*trial);
      if (!(trialScore < score)) {
        undo(module, value, change);
        planIsCurrent = false;
        continue;
      }
      std::string line;
      llvm::raw_string_ostream os(line);
      os << "offload " << what << " (" << bytes << " B, from " << from
         << ") to pinned host after " << after << ", back before " << before
         << ": live across peak step " << peakStep << "; arena "
         << describeDecisionBytes(plan->arenaBytes) << " -> "
         << describeDecisionBytes(trial->arenaBytes);
      decisions.push_back(os.str());
      bytesMoved += bytes;
      plan = std::move(trial);
      score = trialScore;
      planIsCurrent = changed = kept = true;
    }
    if (!kept)
      break;
  }
  if (!planIsCurrent) {
    plan = planModuleMemory(module, options);
    if (!plan)
      return plan.takeError();
  }
  module.setAttribute("offload_arena_before",
                      ir::Attribute::getInt(int64_t(arenaBefore)));
  module.setAttribute("offload_values",
                      ir::Attribute::getInt(int64_t(decisions.size())));
  module.setAttribute("offload_bytes",
                      ir::Attribute::getInt(int64_t(bytesMoved)));
  module.setAttribute("offload_decisions",
                      ir::Attribute::getStrings(decisions));
  addStatistic("decisions", decisions.size());
  addStatistic("bytes-offloaded", bytesMoved);
  addStatistic("arena-before", arenaBefore);
  addStatistic("arena-after", plan->arenaBytes);
  addStatistic("host-region-bytes", plan->hostArenaBytes);
  return changed;
}

std::unique_ptr<Pass> createOffloadPass() {
  return std::make_unique<Offload>();
}

} // namespace snug
