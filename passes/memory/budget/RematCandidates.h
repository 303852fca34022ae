//===- RematCandidates.h - What remat can recompute at the peak -*- C++ -*-===//
//
// The remat pass's decisions (passes/memory/budget/Remat.cpp, whose banner says how they
// are chosen): the candidates at the peak step of a plan (a value live
// across it, the chain of producers to copy, what that costs and saves)
// and the change that applies one to the module (the copies and the reads
// pointed at them), which the pass keeps or undoes.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_MEMORY_BUDGET_REMATCANDIDATES_H
#define SNUG_PASSES_MEMORY_BUDGET_REMATCANDIDATES_H

#include "ir/Module.h"
#include "passes/memory/PlanMemory.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace snug {

/// What candidates are ranked by (the lower first), among those that
/// relieve some step over the target: FLOPs recomputed per byte-step of
/// relief, per byte saved at the peak, or the FLOPs alone.
enum class RematRanking { PerByteStep, PerByte, Flops };

/// A value to recompute and what it would take: the nodes to copy (its
/// producer and the ancestors whose results died before the peak, in
/// schedule order), their cost, and the bytes saved at the peak.
struct RematCandidate {
  const ArenaBuffer *buffer = nullptr;
  ir::Value *root = nullptr;
  std::vector<ir::Node *> chain;
  double seconds = 0;
  double flops = 0;
  int64_t saving = 0;
  /// The bytes saved summed over the steps between the value's last read
  /// before the peak and its first read after it, each step's capped at
  /// that step's excess over the target (see collect).
  double relief = 0;
  /// The value is not live from after `lastBefore` (its last read before
  /// the peak, or its definition) to before `firstAfter` (its first read
  /// after the peak): the steps of the plan the candidate was found in.
  int64_t lastBefore = 0, firstAfter = 0;
  /// What the chain reads that died before the peak and is not in it: kept
  /// alive to the copies, which costs its bytes.
  llvm::SmallVector<const ir::Value *, 4> kept;
  /// What the chain reads that is live across the peak anyway.
  llvm::SmallVector<const ir::Value *, 4> readAcross;
  /// Other values recomputed in the same decision, each by its own chain
  /// copied before its own first read after the peak, which keep alive a
  /// value this one keeps too (it is paid for once): `seconds`, `flops`,
  /// `saving` and `relief` above are the whole group's.
  std::vector<RematCandidate> alongside;

  /// The nodes the decision copies, the group's together.
  unsigned getNumCopies() const;
};

/// A change made on the module, to keep or undo.
struct RematChange {
  std::vector<ir::Node *> copies;
  struct Redirect {
    ir::Node *user;
    unsigned operand;
    ir::Value *original;
    /// What it reads instead (a result of one of `copies`).
    ir::Value *copy = nullptr;
  };
  std::vector<Redirect> redirects;
  /// Per value recomputed (one, or a group's), the first node after the
  /// peak that reads it (its copies run just before it).
  llvm::SmallVector<const ir::Node *, 2> firstUsers;
  /// Per copy, the node it copies (for redo).
  std::vector<const ir::Node *> originals;
};

/// The candidates at the peak step of one plan, and how to apply one.
class RematDecider {
public:
  /// `originOf` maps each copy remat kept to the original node it
  /// computes again.
  RematDecider(
      ir::Module &module, const ModuleMemoryPlan &plan, uint64_t budget,
      const llvm::DenseMap<const ir::Node *, const ir::Node *> &originOf,
      RematRanking ranking)
      : module(module), plan(plan), budget(budget), originOf(originOf),
        ranking(ranking) {
    auto nodes = module.getNodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      stepOf[nodes[i].get()] = i;
      instancesOf[getOrigin(nodes[i].get())].push_back(nodes[i].get());
    }
  }

  /// The candidates at the plan's peak step, best first (see Remat.cpp).
  std::vector<RematCandidate> collect() const;
  /// Copies the candidate's chain before its first reader after the peak
  /// and points the reads there at the copies; a group's values each
  /// before their own, in one change.
  RematChange apply(const RematCandidate &candidate) const;

private:
  /// Every depth of chain for every value live across the peak, whatever
  /// it saves.
  std::vector<RematCandidate>
  collectChains(llvm::ArrayRef<uint64_t> excess) const;
  /// Pairs of chains that keep a value alive for both (see Remat.cpp).
  std::vector<RematCandidate> pairChains(llvm::ArrayRef<RematCandidate> chains,
                                         llvm::ArrayRef<uint64_t> excess) const;
  /// Whether `a` ranks before `b`.
  bool isBetter(const RematCandidate &a, const RematCandidate &b) const;
  /// Adds one value's copies to `change` (a group's earlier values'
  /// copies are already there).
  void applyOne(const RematCandidate &candidate, RematChange &change) const;
  int64_t getStep(const ir::Node *node) const { return stepOf.lookup(node); }
  const ir::Node *getOrigin(const ir::Node *node) const {
    const ir::Node *origin = originOf.lookup(node);
    return origin ? origin : node;
  }
  /// Members of `buffer` defined before the peak: the root, then views.
  llvm::SmallVector<ir::Value *, 4> membersBefore(const ArenaBuffer &buffer,
                                                  int64_t peak) const;

  ir::Module &module;
  const ModuleMemoryPlan &plan;
  uint64_t budget;
  const llvm::DenseMap<const ir::Node *, const ir::Node *> &originOf;
  RematRanking ranking;
  llvm::DenseMap<const ir::Node *, int64_t> stepOf;
  /// Every node computing the same value: an original and its copies.
  llvm::DenseMap<const ir::Node *, llvm::SmallVector<ir::Node *, 2>>
      instancesOf;
};
} // namespace snug

#endif // SNUG_PASSES_MEMORY_BUDGET_REMATCANDIDATES_H
