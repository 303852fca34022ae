//===- Remat.cpp - Recompute values so the arena fits a budget ------------===//
//
// Option arena-budget=BYTES: while the packed arena is over it, pick a value
// that is live across the peak step without being used there, and compute
// it again (a copy of its producer) just before its first use after the
// peak instead of keeping it; then plan the arena again and keep the change
// only if the plan got better. The budget is checked against the packed
// arena plan-memory would make, never against a bound.
//
// One decision, at the peak step p of the current plan (the step whose live
// bytes are the lower bound):
//  - candidates are the buffers live across p (defined before it, needed
//    after it) that node p does not read or write, holding before p one
//    computed value and possibly views of it (a buffer that in-place or
//    concat sharing built before p is left alone: its bytes hold more than
//    one computation), none of them a graph output;
//  - the copy of the producer goes right before the first node after p
//    that reads the value (or one of its views, whose view nodes are
//    copied behind it); every read after p is pointed at the copies, so the
//    original dies at its last read before p (or at once, when nothing read
//    it before p: the original is not erased, since erasing shifts the
//    steps and the shifted schedule can pack worse than the plan judged);
//  - the copy reads the producer's operands again, so those that died
//    before p now live across it: the estimated saving is the buffer's
//    bytes minus theirs;
//  - candidates are tried by recompute cost per byte saved, the cost being
//    the cost model's roofline time of the copied nodes (FLOPs and bytes,
//    on the default device; views cost nothing), cheapest first. The
//    first whose re-planned arena is better (a smaller arena, else a smaller
//    bound, else fewer steps at the bound) is kept; if none of the first
//    max-tries is, remat stops where it is.
// Every candidate keeps the module's results bitwise: the copy is the same
// op with the same attributes on the same operand values, and snug's ops
// are deterministic (an op with the SideEffects trait is never copied).
//
// Order. The schedule pass runs first (reordering is free, recomputing is
// not); remat then leaves the order of the original nodes alone. Because
// decisions are taken one by one against the plan and only kept when they
// lower it, a smaller budget runs the same decisions and then more, so it
// never ends at a larger arena than a bigger budget does.
//
// What it records on the module, for the report and --print-remat:
//   remat_arena_before  the arena before any decision (int)
//   remat_flops_before  the module's FLOPs before (int)
//   remat_values        nodes computed a second time (int)
//   remat_decisions     one line per decision kept (strings)
// and it leaves the plan of the module as it is now (plan-memory plans
// again after it with the full time limit).
//
// Options: arena-budget (bytes, required), max-decisions (default 1000),
// max-tries per decision (default 16), remat-time-limit (seconds, default
// 60: a safety net; the decision count normally ends it), and every
// plan-memory option (alignment, target, cublas-workspace, planner,
// time-limit per plan, ...), which must match plan-memory's so that the
// plans compared are the plans made.
//
// References: Chen et al., "Training deep nets with sublinear memory cost"
// (2016), for recomputing instead of storing; Jain et al., "Checkmate"
// (MLSys 2020), whose greedy baselines score by cost per byte; the exact
// formulation is theirs too (not built here).
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/BudgetSearch.h"
#include "passes/CostModel.h"
#include "passes/PlanMemory.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>

namespace snug {
namespace {

class Remat : public Pass {
public:
  Remat() {
    // Plans inside the loop are many: the planner gets a short limit (its
    // work budget, not the clock, ends it, so plans stay deterministic).
    options.planner.timeLimitSeconds = 0.05;
    options.verify = false;
  }
  llvm::StringRef getName() const override { return "remat"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  PlanMemoryOptions options;
  uint64_t arenaBudget = 0;
  bool haveBudget = false;
  unsigned maxDecisions = 1000;
  unsigned maxTries = 16;
  double timeLimitSeconds = 60;
};

/// A value to recompute and what it would take: the nodes to copy (its
/// producer and the ancestors whose results died before the peak, in
/// schedule order), their cost, and the bytes saved at the peak.
struct Candidate {
  const ArenaBuffer *buffer = nullptr;
  ir::Value *root = nullptr;
  std::vector<ir::Node *> chain;
  double seconds = 0;
  int64_t saving = 0;
};

/// At most this many nodes are copied for one value.
constexpr size_t kMaxChain = 16;

/// A change made on the module, to keep or undo.
struct Change {
  std::vector<ir::Node *> copies;
  struct Redirect {
    ir::Node *user;
    unsigned operand;
    ir::Value *original;
  };
  std::vector<Redirect> redirects;
  /// The first node after the peak that reads the value (the copies run
  /// just before it).
  const ir::Node *firstUser = nullptr;
};

class Decider {
public:
  Decider(ir::Module &module, const ModuleMemoryPlan &plan)
      : module(module), plan(plan) {
    auto nodes = module.getNodes();
    for (size_t i = 0; i < nodes.size(); ++i)
      stepOf[nodes[i].get()] = i;
  }

  std::vector<Candidate> collect() const;
  Change apply(const Candidate &candidate) const;

private:
  int64_t getStep(const ir::Node *node) const { return stepOf.lookup(node); }
  /// Members of `buffer` defined before the peak: the root, then views.
  llvm::SmallVector<ir::Value *, 4> membersBefore(const ArenaBuffer &buffer,
                                                  int64_t peak) const;

  ir::Module &module;
  const ModuleMemoryPlan &plan;
  llvm::DenseMap<const ir::Node *, int64_t> stepOf;
};

llvm::SmallVector<ir::Value *, 4>
Decider::membersBefore(const ArenaBuffer &buffer, int64_t peak) const {
  llvm::SmallVector<ir::Value *, 4> members;
  for (const ir::Value *value : buffer.values)
    if (getStep(value->getDefiningNode()) < peak)
      members.push_back(const_cast<ir::Value *>(value));
  return members;
}

std::vector<Candidate> Decider::collect() const {
  std::vector<Candidate> candidates;
  int64_t peak = plan.peakStep;
  if (peak < 0)
    return candidates;
  const ir::Node &atPeak = *module.getNodes()[peak];
  llvm::DenseSet<const ir::Value *> touchedAtPeak;
  for (const ir::Value *operand : atPeak.getOperands())
    touchedAtPeak.insert(operand);
  for (unsigned i = 0; i < atPeak.getNumResults(); ++i)
    touchedAtPeak.insert(atPeak.getResult(i));
  const DeviceSpec &device = getDefaultDevice();
  for (const ArenaBuffer &buffer : plan.buffers) {
    if (buffer.kind != ArenaBuffer::Kind::Values ||
        buffer.firstStep >= peak || buffer.lastStep <= peak)
      continue;
    const ir::Value *root = buffer.values.front();
    if (!root->isResult() ||
        root->getDefiningNode()->getOpInfo().hasSideEffects() ||
        root->getDefiningNode()->getOpInfo().isView())
      continue;
    bool usable = true;
    for (size_t k = 0; k < buffer.values.size() && usable; ++k) {
      const ir::Value *value = buffer.values[k];
      // What joined after the peak (in place over the value, say) reads
      // it there and is pointed at the copy like any other reader.
      if (k > 0 && getStep(value->getDefiningNode()) > peak)
        continue;
      usable = !module.isOutput(value) && !touchedAtPeak.count(value) &&
               (k == 0 || llvm::StringRef(buffer.reasons[k]) == "view");
    }
    if (!usable)
      continue;
    Candidate candidate;
    candidate.buffer = &buffer;
    candidate.root = const_cast<ir::Value *>(root);
    candidate.saving = int64_t(alignBytesUp(buffer.bytes, plan.alignment));
    // The copies read what is live at the peak anyway for free; a value
    // that died before it is recomputed too (up to kMaxChain nodes), or,
    // past that, kept alive across the peak, which costs its bytes.
    llvm::SmallVector<ir::Node *, 8> work{root->getDefiningNode()};
    llvm::DenseSet<const ir::Node *> inChain;
    llvm::DenseSet<const ir::Value *> kept;
    while (!work.empty()) {
      ir::Node *node = work.pop_back_val();
      if (!inChain.insert(node).second)
        continue;
      candidate.chain.push_back(node);
      for (const ir::Value *operand : node->getOperands()) {
        if (!operand || operand->isWeight())
          continue;
        auto interval = plan.intervals.find(operand);
        if (interval == plan.intervals.end() ||
            interval->second.second >= peak)
          continue;
        ir::Node *producer = operand->getDefiningNode();
        if (producer && !producer->getOpInfo().hasSideEffects() &&
            inChain.size() + work.size() < kMaxChain) {
          work.push_back(producer);
        } else if (kept.insert(operand).second) {
          candidate.saving -= int64_t(
              alignBytesUp(operand->getType().getByteSize(), plan.alignment));
        }
      }
    }
    if (candidate.saving <= 0)
      continue;
    std::sort(candidate.chain.begin(), candidate.chain.end(),
              [&](const ir::Node *a, const ir::Node *b) {
                return getStep(a) < getStep(b);
              });
    for (const ir::Node *node : candidate.chain)
      candidate.seconds += estimateSeconds(costOfNode(*node), device);
    candidates.push_back(std::move(candidate));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate &a, const Candidate &b) {
                     double ka = a.seconds / double(a.saving);
                     double kb = b.seconds / double(b.saving);
                     if (ka != kb)
                       return ka < kb;
                     return a.saving > b.saving;
                   });
  return candidates;
}

Change Decider::apply(const Candidate &candidate) const {
  Change change;
  int64_t peak = plan.peakStep;
  llvm::SmallVector<ir::Value *, 4> members =
      membersBefore(*candidate.buffer, peak);
  // Reads after the peak, collected before any is changed.
  std::vector<Change::Redirect> reads;
  int64_t firstRead = std::numeric_limits<int64_t>::max();
  for (ir::Value *value : members)
    for (const ir::Value::Use &use : value->getUses())
      if (getStep(use.user) > peak) {
        reads.push_back({use.user, use.operandIndex, value});
        if (getStep(use.user) < firstRead) {
          firstRead = getStep(use.user);
          change.firstUser = use.user;
        }
      }
  // The chain's copies in schedule order, then copies of the views before
  // the peak (the buffer lists them in definition order), each reading the
  // copies of what it reads.
  std::vector<ir::Node *> originals = candidate.chain;
  for (ir::Value *value : members)
    if (value != candidate.root)
      originals.push_back(value->getDefiningNode());
  llvm::DenseMap<const ir::Value *, ir::Value *> copyOf;
  size_t index = size_t(firstRead);
  for (ir::Node *original : originals) {
    llvm::SmallVector<ir::Value *, 4> operands;
    for (ir::Value *operand : original->getOperands()) {
      ir::Value *mapped = operand ? copyOf.lookup(operand) : nullptr;
      operands.push_back(mapped ? mapped : operand);
    }
    ir::Node *copy = module.insertCopy(index++, *original, operands);
    change.copies.push_back(copy);
    for (unsigned i = 0; i < original->getNumResults(); ++i)
      copyOf[original->getResult(i)] = copy->getResult(i);
  }
  for (const Change::Redirect &read : reads)
    read.user->setOperand(read.operand, copyOf.lookup(read.original));
  change.redirects = std::move(reads);
  return change;
}

void undo(ir::Module &module, const Change &change) {
  for (const Change::Redirect &read : change.redirects)
    read.user->setOperand(read.operand, read.original);
  llvm::DenseSet<const ir::Node *> copies(change.copies.begin(),
                                          change.copies.end());
  module.eraseNodesIf(
      [&](const ir::Node &node) { return copies.count(&node); });
}

} // namespace

llvm::Error Remat::setOption(llvm::StringRef key, llvm::StringRef value) {
  auto bad = [&](llvm::StringRef what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "pass 'remat': option '" + key.str() +
                                       "' must be " + what.str() + ", got '" +
                                       value.str() + "'");
  };
  if (key == "arena-budget") {
    if (value.getAsInteger(10, arenaBudget) || arenaBudget == 0)
      return bad("a positive number of bytes");
    haveBudget = true;
    return llvm::Error::success();
  }
  if (key == "max-decisions" || key == "max-tries") {
    unsigned &target = key == "max-decisions" ? maxDecisions : maxTries;
    if (value.getAsInteger(10, target) || target == 0 || target > 1000000)
      return bad("a whole number from 1 to 1000000");
    return llvm::Error::success();
  }
  if (key == "remat-time-limit") {
    if (value.getAsDouble(timeLimitSeconds) || !(timeLimitSeconds >= 0))
      return bad("a non-negative number of seconds");
    return llvm::Error::success();
  }
  llvm::Expected<bool> known =
      parsePlanMemoryOption(options, getName(), key, value);
  if (!known)
    return known.takeError();
  return *known ? llvm::Error::success() : Pass::setOption(key, value);
}

llvm::Expected<bool> Remat::run(ir::Module &module) {
  if (!haveBudget)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "pass 'remat' needs option arena-budget");
  auto start = std::chrono::steady_clock::now();
  auto outOfTime = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
               .count() >= timeLimitSeconds;
  };
  llvm::Expected<ModuleMemoryPlan> plan = planModuleMemory(module, options);
  if (!plan)
    return plan.takeError();
  uint64_t arenaBefore = plan->arenaBytes;
  uint64_t flopsBefore = costOfModule(module).getFlops();
  std::vector<std::string> decisions;
  unsigned recomputed = 0;
  bool planIsCurrent = true, changed = false;
  PlanScore score = scorePlan(*plan);
  while (plan->arenaBytes > arenaBudget && decisions.size() < maxDecisions &&
         !outOfTime()) {
    Decider decider(module, *plan);
    std::vector<Candidate> candidates = decider.collect();
    bool kept = false;
    for (size_t k = 0; k < candidates.size() && k < maxTries && !kept; ++k) {
      const Candidate &candidate = candidates[k];
      std::string what = candidate.root->describe();
      std::string producer = candidate.root->getDefiningNode()->describe();
      uint64_t bytes = candidate.buffer->bytes;
      int64_t peakStep = plan->peakStep;
      Change change = decider.apply(candidate);
      std::string before = change.firstUser->describe();
      llvm::Expected<ModuleMemoryPlan> trial =
          planModuleMemory(module, options);
      if (!trial)
        return trial.takeError();
      PlanScore trialScore = scorePlan(*trial);
      if (!(trialScore < score)) {
        undo(module, change);
        planIsCurrent = false;
        continue;
      }
      // Kept as planned. Originals left without readers (a value not read
      // before the peak) and copies of views nothing reads stay in the
      // module: erasing them shifts the steps, and the packing of the
      // shifted schedule can come out larger than the plan just judged
      // (seen on random DAGs), so the module stays exactly as planned.
      std::string line;
      llvm::raw_string_ostream os(line);
      os << "recompute " << what << " (" << bytes
         << " B, from " << producer << ") to just before " << before
         << ": live across peak step " << peakStep << "; arena "
         << describeDecisionBytes(plan->arenaBytes) << " -> "
         << describeDecisionBytes(trial->arenaBytes);
      decisions.push_back(os.str());
      recomputed += candidate.chain.size();
      plan = std::move(trial);
      score = trialScore;
      planIsCurrent = true;
      changed = kept = true;
    }
    if (!kept)
      break;
  }
  if (!planIsCurrent) {
    plan = planModuleMemory(module, options);
    if (!plan)
      return plan.takeError();
  }
  module.setAttribute("remat_arena_before",
                      ir::Attribute::getInt(int64_t(arenaBefore)));
  module.setAttribute("remat_flops_before",
                      ir::Attribute::getInt(int64_t(flopsBefore)));
  module.setAttribute("remat_values", ir::Attribute::getInt(recomputed));
  module.setAttribute("remat_decisions", ir::Attribute::getStrings(decisions));
  addStatistic("decisions", decisions.size());
  addStatistic("values-recomputed", recomputed);
  addStatistic("arena-before", arenaBefore);
  addStatistic("arena-after", plan->arenaBytes);
  return changed;
}

std::unique_ptr<Pass> createRematPass() { return std::make_unique<Remat>(); }

} // namespace snug
