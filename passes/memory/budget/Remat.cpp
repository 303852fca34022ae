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
//    so is every later read of an earlier computation of a copied node (an
//    earlier copy, or the original of an ancestor copied along), so that
//    one copy serves them all;
//  - the copy reads the producer's operands again, so those that died
//    before p now live across it: each is either recomputed as well (the
//    chain, up to kMaxChain nodes) or kept alive, which costs its bytes;
//    every depth of the chain is a candidate of its own, since a small
//    value kept can save a long chain;
//  - two values can be recomputed in one decision, each by its own chain
//    before its own first read after p, where their chains keep alive a
//    value in common: it is paid for once, so the pair saves more than
//    either alone (which can save nothing: a chain that keeps a value as
//    large as the one it frees). Such a pair is a candidate where it saves
//    more than each of its two alone; per two buffers only the best-ranked
//    pair is kept, and pairs are formed among at most 16 chains keeping one
//    value, cheapest first. Its relief counts the pair's saving where both
//    values are gone and each one's own elsewhere. On the 60-node random
//    DAG of seed 2 at 97 % the optimum (CBC's) recomputes a cheap chain
//    before one reader and its first two nodes again before another, one
//    value kept for both; with single decisions the pass paid 8.9 times
//    its FLOPs for one chain through a MatMul. A copy of the common prefix
//    shared by both readers is not tried (the pass places copies only
//    right before a reader);
//  - candidates are ranked by FLOPs recomputed per byte-step of relief:
//    the bytes saved, at each step between the value's last read before p
//    and its first read after it, capped by that step's excess over the
//    budget (over the bound minus one, once only the packing is over the
//    budget), summed. A value that relieves every step over the budget
//    beats a cheaper one that relieves only p, which would need another
//    decision for the others (greedy set cover's rule). Ties go to the
//    larger relief, then to the cost model's roofline time per byte. The
//    first whose re-planned arena is better (a smaller arena, else a
//    smaller bound, else fewer steps at the bound) is kept.
// Lookahead. When none of the first max-tries is, two decisions are tried
// together: each of the first lookahead-width candidates is applied, and
// the first lookahead-width candidates at the peak of its plan are tried
// after it; the first pair whose plan is better is kept (as two decisions,
// the first marked "kept with the next"); if none is, remat stops where it
// is. This costs at most lookahead-width * (lookahead-width + 1) more
// plans, and only where the greedy would otherwise stop. It is what the
// chains of RematOracleTest needed at two budgets, where the optimum
// recomputes a value at two places whose copies lower the arena only
// together (each alone moves the peak to the other's step).
// Ranking option: besides FLOPs per byte-step (the default), FLOPs per
// byte saved and plain FLOPs, for comparisons; on the random DAGs of
// bench/remat/OracleBench.cpp at 20-60 nodes they gave the same extra
// FLOPs on all 27 instances but one (where the per-byte one was worse),
// so no portfolio of rankings runs.
// Redundancy. A decision whose reads a later one took over entirely only
// computes copies nothing reads; it is undone unless the plan gets worse
// without it. Once the budget is met, every decision but the last, latest
// first, is undone if the arena still meets the budget without it (a
// cheap early decision can be made unnecessary by a later one; an undo
// that does not pass is made again exactly as it was). These rules came
// from comparing remat with the exact oracle (RematOracle.h): on the
// training-like chains of tests/unit/RematOracleTest.cpp it meets all 28
// feasible budgets (with the lookahead) at the optimum's FLOPs.
// Every candidate keeps the module's results bitwise: the copy is the same
// op with the same attributes on the same operand values, and snug's ops
// are deterministic (an op with the SideEffects trait is never copied).
//
// Order. The schedule pass runs first (reordering is free, recomputing is
// not); remat then leaves the order of the original nodes alone. Decisions
// are taken one by one against the plan and only kept when they lower it.
// Monotonicity (a smaller budget never ends at a larger arena) is no longer
// a consequence of the construction: the ranking looks at the excess over
// the budget and the final undos at whether the budget is still met, so
// two budgets can take different decisions. It is checked instead, on
// random DAGs (PlanMemoryTest.RematKeepsResultsAndNeverRaisesTheArena) and
// on every zoo model's sweep (bench/remat/run.py). A budget-blind ranking
// (the excess over the bound less the largest saving) keeps the old
// argument up to the undos but misses the optimum on one chain budget of
// RematOracleTest; the budget is what says how much relief is worth
// paying for.
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
// max-tries per decision (default 16), lookahead-width (default 4; 0 turns
// the lookahead off), ranking (flops-per-byte-step, flops-per-byte,
// flops), remat-time-limit (seconds, default
// 60: a safety net; the decision count normally ends it), and every
// plan-memory option (alignment, target, cublas-workspace, planner,
// time-limit per plan, ...), which must match plan-memory's so that the
// plans compared are the plans made.
//
// Collecting and applying candidates is passes/memory/budget/RematCandidates.cpp; this
// file is the loop that keeps, looks ahead and undoes.
//
// References: Chen et al., "Training deep nets with sublinear memory cost"
// (2016), for recomputing instead of storing; Jain et al., "Checkmate"
// (MLSys 2020), whose greedy baselines score by cost per byte; the exact
// formulation is theirs too (tests/support/RematOracle.h, for tests and benches).
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/memory/budget/BudgetSearch.h"
#include "passes/analysis/CostModel.h"
#include "passes/Passes.h"
#include "passes/memory/PlanMemory.h"
#include "passes/memory/budget/RematCandidates.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>
#include <optional>

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
  unsigned lookaheadWidth = 4;
  RematRanking ranking = RematRanking::PerByteStep;
  double timeLimitSeconds = 60;
};

void undo(ir::Module &module, const RematChange &change) {
  for (const RematChange::Redirect &read : change.redirects)
    read.user->setOperand(read.operand, read.original);
  llvm::DenseSet<const ir::Node *> copies(change.copies.begin(),
                                          change.copies.end());
  module.eraseNodesIf(
      [&](const ir::Node &node) { return copies.count(&node); });
}

/// Whether undoing `change` now leaves every other change intact: each
/// read it redirected still reads its copy, and nothing else reads its
/// copies.
bool isUndoable(const ir::Module &module, const RematChange &change) {
  llvm::DenseSet<const ir::Node *> copies(change.copies.begin(),
                                          change.copies.end());
  llvm::DenseSet<std::pair<const ir::Node *, unsigned>> redirected;
  for (const RematChange::Redirect &read : change.redirects) {
    if (read.user->getOperand(read.operand) != read.copy)
      return false;
    redirected.insert({read.user, read.operand});
  }
  for (const ir::Node *copy : change.copies)
    for (unsigned i = 0; i < copy->getNumResults(); ++i) {
      if (module.isOutput(copy->getResult(i)))
        return false;
      for (const ir::Value::Use &use : copy->getResult(i)->getUses())
        if (!copies.count(use.user) &&
            !redirected.count({use.user, use.operandIndex}))
          return false;
    }
  return true;
}

/// Where a change's copies are and what they read now, taken before an
/// undo so that redo can put the module back exactly as it was (later
/// changes may have pointed the copies' operands elsewhere since).
struct Snapshot {
  std::vector<size_t> positions;
  std::vector<llvm::SmallVector<ir::Value *, 4>> operands;
  /// The copies' results: after the undo only names, the values are gone.
  std::vector<llvm::SmallVector<ir::Value *, 2>> results;
};

Snapshot takeSnapshot(const ir::Module &module, const RematChange &change) {
  Snapshot snapshot;
  llvm::DenseMap<const ir::Node *, size_t> positionOf;
  auto nodes = module.getNodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    positionOf[nodes[i].get()] = i;
  for (const ir::Node *copy : change.copies) {
    snapshot.positions.push_back(positionOf.lookup(copy));
    snapshot.operands.emplace_back(copy->getOperands().begin(),
                                   copy->getOperands().end());
    snapshot.results.push_back(copy->getResults());
  }
  return snapshot;
}

/// Makes an undone change again from its snapshot: the same copies at the
/// same positions reading the same operands, the same reads redirected.
void redo(ir::Module &module, RematChange &change, const Snapshot &snapshot) {
  std::vector<size_t> order(change.copies.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return snapshot.positions[a] < snapshot.positions[b];
  });
  // Inserting in increasing position at the old position restores the
  // order: everything before each copy is as it was. A copy reads only
  // copies before it, so those are back when it is made.
  llvm::DenseMap<ir::Value *, ir::Value *> renewed;
  for (size_t k : order) {
    llvm::SmallVector<ir::Value *, 4> operands;
    for (ir::Value *operand : snapshot.operands[k]) {
      ir::Value *again = operand ? renewed.lookup(operand) : nullptr;
      operands.push_back(again ? again : operand);
    }
    ir::Node *copy = module.insertCopy(snapshot.positions[k],
                                       *change.originals[k], operands);
    for (unsigned i = 0; i < copy->getNumResults(); ++i)
      renewed[snapshot.results[k][i]] = copy->getResult(i);
    change.copies[k] = copy;
  }
  for (RematChange::Redirect &read : change.redirects) {
    read.copy = renewed.lookup(read.copy);
    read.user->setOperand(read.operand, read.copy);
  }
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
  if (key == "ranking") {
    if (value == "flops-per-byte-step")
      ranking = RematRanking::PerByteStep;
    else if (value == "flops-per-byte")
      ranking = RematRanking::PerByte;
    else if (value == "flops")
      ranking = RematRanking::Flops;
    else
      return bad("flops-per-byte-step, flops-per-byte or flops");
    return llvm::Error::success();
  }
  if (key == "lookahead-width") {
    if (value.getAsInteger(10, lookaheadWidth) || lookaheadWidth > 64)
      return bad("a whole number from 0 to 64");
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
  std::vector<RematChange> changes;
  std::vector<unsigned> chainSizes;
  llvm::DenseMap<const ir::Node *, const ir::Node *> originOf;
  auto recordOrigins = [&](const RematChange &change) {
    for (size_t k = 0; k < change.copies.size(); ++k) {
      const ir::Node *origin = originOf.lookup(change.originals[k]);
      originOf[change.copies[k]] = origin ? origin : change.originals[k];
    }
  };
  bool planIsCurrent = true, changed = false;
  PlanScore score = scorePlan(*plan);
  // After decision `index`'s copies `gone` were erased (and, when `remade`,
  // made again as its copies now, in the same order), the other decisions
  // must not hold them: a later decision can have pointed a read inside
  // one of them at its own copy, or copied one of them along its chain.
  // Such a read is gone with the copy, or moves to the copy made again; a
  // copy of a copy copies what that copy computed.
  auto forgetCopies = [&](size_t index, llvm::ArrayRef<ir::Node *> gone,
                          const Snapshot &snapshot, bool remade) {
    const RematChange &source = changes[index];
    llvm::DenseMap<const ir::Node *, size_t> where;
    for (size_t i = 0; i < gone.size(); ++i)
      where[gone[i]] = i;
    // The gone copies' results (keys only: they are freed) -> (copy, result).
    llvm::DenseMap<const ir::Value *, std::pair<size_t, unsigned>> resultOf;
    for (size_t i = 0; i < snapshot.results.size(); ++i)
      for (unsigned r = 0; r < snapshot.results[i].size(); ++r)
        resultOf[snapshot.results[i][r]] = {i, r};
    for (size_t other = 0; other < changes.size(); ++other) {
      if (other == index)
        continue;
      RematChange &change = changes[other];
      for (const ir::Node *&original : change.originals)
        if (auto it = where.find(original); it != where.end())
          original =
              remade ? source.copies[it->second] : source.originals[it->second];
      // A read this change took over from a result of a gone copy goes
      // back, on its undo, to what stands for that copy now (its original
      // when dropped, its new copy when remade): the old value is freed.
      for (RematChange::Redirect &read : change.redirects)
        if (auto it = resultOf.find(read.original); it != resultOf.end())
          read.original = (remade ? source.copies[it->second.first]
                                  : source.originals[it->second.first])
                              ->getResult(it->second.second);
      if (!remade) {
        llvm::erase_if(change.redirects,
                       [&](const RematChange::Redirect &read) {
                         return where.count(read.user);
                       });
        continue;
      }
      for (RematChange::Redirect &read : change.redirects)
        if (auto it = where.find(read.user); it != where.end())
          read.user = source.copies[it->second];
    }
  };
  // Undoes decision `index` for good when `accept` takes the plan without
  // it, else makes it again exactly as it was; true when it is gone.
  auto tryDrop = [&](size_t index,
                     llvm::function_ref<bool(const ModuleMemoryPlan &)> accept)
      -> llvm::Expected<bool> {
    RematChange &change = changes[index];
    // Reads a later decision pointed at its own copies are its business
    // now: undoing this one leaves them alone.
    llvm::erase_if(change.redirects, [](const RematChange::Redirect &read) {
      return read.user->getOperand(read.operand) != read.copy;
    });
    if (!isUndoable(module, change))
      return false;
    Snapshot snapshot = takeSnapshot(module, change);
    for (const ir::Node *copy : change.copies)
      originOf.erase(copy);
    std::vector<ir::Node *> gone = change.copies;
    undo(module, change);
    llvm::Expected<ModuleMemoryPlan> trial = planModuleMemory(module, options);
    if (!trial)
      return trial.takeError();
    if (accept(*trial)) {
      forgetCopies(index, gone, snapshot, /*remade=*/false);
      plan = std::move(trial);
      score = scorePlan(*plan);
      planIsCurrent = true;
      decisions.erase(decisions.begin() + index);
      changes.erase(changes.begin() + index);
      chainSizes.erase(chainSizes.begin() + index);
      return true;
    }
    redo(module, change, snapshot);
    forgetCopies(index, gone, snapshot, /*remade=*/true);
    recordOrigins(change);
    planIsCurrent = false;
    return false;
  };
  // A decision tried and not kept yet: applied to the module, its line
  // written.
  struct Step {
    RematChange change;
    std::string line;
    unsigned chainSize;
  };
  std::vector<Step> pending;
  // Tries the first `width` candidates at the peak of `base` (the plan of
  // the module as it is now). One whose plan beats `score` ends the search:
  // it and the steps before it stay applied in `pending`, and its plan is
  // returned. At depth > 1 one that does not is kept applied while the
  // candidates at the peak of its own plan are searched, `width` of them
  // at depth - 1; else it is undone. Nothing found: the module is as it
  // was, and the result is empty.
  std::function<llvm::Expected<std::optional<ModuleMemoryPlan>>(
      const ModuleMemoryPlan &, unsigned, unsigned)>
      search = [&](const ModuleMemoryPlan &base, unsigned depth, unsigned width)
      -> llvm::Expected<std::optional<ModuleMemoryPlan>> {
    RematDecider decider(module, base, arenaBudget, originOf, ranking);
    std::vector<RematCandidate> candidates = decider.collect();
    for (size_t k = 0; k < candidates.size() && k < width && !outOfTime();
         ++k) {
      const RematCandidate &candidate = candidates[k];
      // What each value of the decision is and where its copies go, read
      // before the change (after it, the views' names can be a copy's).
      std::vector<const RematCandidate *> parts{&candidate};
      for (const RematCandidate &other : candidate.alongside)
        parts.push_back(&other);
      std::vector<std::string> values;
      for (const RematCandidate *part : parts) {
        std::string text;
        llvm::raw_string_ostream os(text);
        os << part->root->describe() << " (" << part->buffer->bytes
           << " B, from " << part->root->getDefiningNode()->describe() << ")";
        values.push_back(os.str());
      }
      RematChange change = decider.apply(candidate);
      llvm::Expected<ModuleMemoryPlan> trial =
          planModuleMemory(module, options);
      if (!trial)
        return trial.takeError();
      std::string line;
      llvm::raw_string_ostream os(line);
      os << "recompute ";
      for (size_t v = 0; v < values.size(); ++v)
        os << (v ? " and " : "") << values[v] << " to just before "
           << change.firstUsers[v]->describe();
      os << ": live across peak step " << base.peakStep << "; arena "
         << describeDecisionBytes(base.arenaBytes) << " -> "
         << describeDecisionBytes(trial->arenaBytes);
      bool better = scorePlan(*trial) < score;
      if (!better && depth == 1) {
        undo(module, change);
        planIsCurrent = false;
        continue;
      }
      recordOrigins(change);
      pending.push_back(
          {std::move(change), os.str(), candidate.getNumCopies()});
      if (better)
        return std::optional<ModuleMemoryPlan>(std::move(*trial));
      llvm::Expected<std::optional<ModuleMemoryPlan>> deeper =
          search(*trial, depth - 1, width);
      if (!deeper || *deeper)
        return deeper;
      for (const ir::Node *copy : pending.back().change.copies)
        originOf.erase(copy);
      undo(module, pending.back().change);
      pending.pop_back();
      planIsCurrent = false;
    }
    return std::nullopt;
  };
  while (plan->arenaBytes > arenaBudget && decisions.size() < maxDecisions &&
         !outOfTime()) {
    // One decision among the first max-tries; where none lowers the plan,
    // two together among the first lookahead-width at each (the second at
    // the peak of the first's plan). On chains the optimum can recompute a
    // value before two uses whose copies only lower the arena together.
    llvm::Expected<std::optional<ModuleMemoryPlan>> found =
        search(*plan, 1, maxTries);
    if (found && !*found && lookaheadWidth > 0)
      found = search(*plan, 2, lookaheadWidth);
    if (!found)
      return found.takeError();
    if (!*found)
      break;
    for (size_t k = 0; k < pending.size(); ++k) {
      decisions.push_back(pending[k].line + (k + 1 < pending.size()
                                                 ? " (kept with the next)"
                                                 : ""));
      changes.push_back(std::move(pending[k].change));
      chainSizes.push_back(pending[k].chainSize);
    }
    pending.clear();
    plan = std::move(**found);
    score = scorePlan(*plan);
    planIsCurrent = true;
    changed = true;
    // An earlier decision whose reads a later one took over entirely only
    // computes copies nothing reads: drop it unless the plan gets worse.
    for (size_t j = changes.size() - 1; j-- > 0;) {
      bool unread = llvm::none_of(
          changes[j].redirects, [](const RematChange::Redirect &read) {
            return read.user->getOperand(read.operand) == read.copy;
          });
      if (!unread)
        continue;
      llvm::Expected<bool> dropped =
          tryDrop(j, [&](const ModuleMemoryPlan &without) {
            return !(score < scorePlan(without));
          });
      if (!dropped)
        return dropped.takeError();
    }
  }
  // Greedy choices can be redundant: a cheap value recomputed first may not
  // be needed once a later one lowered the same steps (set cover's greedy
  // has the same flaw). Once the budget is met, each decision but the last
  // (which was needed to meet it), latest first, is undone for good if the
  // arena still meets the budget without it.
  if (plan->arenaBytes <= arenaBudget)
    for (size_t k = changes.size(); k-- > 1 && !outOfTime();) {
      llvm::Expected<bool> dropped =
          tryDrop(k - 1, [&](const ModuleMemoryPlan &without) {
            return without.arenaBytes <= arenaBudget;
          });
      if (!dropped)
        return dropped.takeError();
    }
  unsigned recomputed =
      std::accumulate(chainSizes.begin(), chainSizes.end(), 0u);
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
