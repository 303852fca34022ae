//===- RematCandidates.cpp - What remat can recompute at the peak ---------===//
//
// Collecting and ranking the candidates at a plan's peak step, and applying
// one to the module; the rules are in passes/memory/budget/Remat.cpp's banner.
//
//===----------------------------------------------------------------------===//
#include "passes/memory/budget/RematCandidates.h"

#include "passes/memory/budget/BudgetSearch.h"
#include "passes/analysis/CostModel.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <numeric>

namespace snug {

namespace {
/// At most this many nodes are copied for one value.
constexpr size_t kMaxChain = 16;
/// Pairs are formed among at most this many chains keeping one value.
constexpr size_t kMaxChainsPerKept = 16;

/// The bytes saved at each step from after `lastBefore` to before
/// `firstAfter`, each capped at the step's excess over the target, summed.
double getRelief(int64_t lastBefore, int64_t firstAfter, int64_t saving,
                 llvm::ArrayRef<uint64_t> excess) {
  double relief = 0;
  if (saving <= 0)
    return relief;
  for (int64_t step = lastBefore + 1; step < firstAfter; ++step)
    relief += double(std::min<uint64_t>(excess[step], uint64_t(saving)));
  return relief;
}
} // namespace

unsigned RematCandidate::getNumCopies() const {
  unsigned copies = unsigned(chain.size());
  for (const RematCandidate &other : alongside)
    copies += other.getNumCopies();
  return copies;
}

llvm::SmallVector<ir::Value *, 4>
RematDecider::membersBefore(const ArenaBuffer &buffer, int64_t peak) const {
  llvm::SmallVector<ir::Value *, 4> members;
  for (const ir::Value *value : buffer.values)
    if (getStep(value->getDefiningNode()) < peak)
      members.push_back(const_cast<ir::Value *>(value));
  return members;
}

std::vector<RematCandidate>
RematDecider::collectChains(llvm::ArrayRef<uint64_t> excess) const {
  std::vector<RematCandidate> candidates;
  int64_t peak = plan.peakStep;
  const ir::Node &atPeak = *module.getNodes()[peak];
  llvm::DenseSet<const ir::Value *> touchedAtPeak;
  for (const ir::Value *operand : atPeak.getOperands())
    touchedAtPeak.insert(operand);
  for (unsigned i = 0; i < atPeak.getNumResults(); ++i)
    touchedAtPeak.insert(atPeak.getResult(i));
  const DeviceSpec &device = getDefaultDevice();
  for (const ArenaBuffer &buffer : plan.buffers) {
    if (buffer.kind != ArenaBuffer::Kind::Values || buffer.firstStep >= peak ||
        buffer.lastStep <= peak)
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
    // The steps the value stops being live at: after its last read before
    // the peak (or its definition) and before its first read after it.
    int64_t lastBefore = buffer.firstStep, firstAfter = buffer.lastStep + 1;
    for (const ir::Value *value : membersBefore(buffer, peak))
      for (const ir::Value::Use &use : value->getUses()) {
        int64_t step = getStep(use.user);
        if (step < peak)
          lastBefore = std::max(lastBefore, step);
        else if (step > peak)
          firstAfter = std::min(firstAfter, step);
      }
    // One candidate per depth: the values that died before the peak are
    // recomputed too, up to `limit` nodes, and past that kept alive to the
    // copy. Where to stop is a trade: a small value kept can save a long
    // chain (or one ending at a graph input, kept anyway), seen on random
    // DAGs against the oracle; so every depth up to kMaxChain is offered.
    // The copies read what is live at the peak anyway for free. The chain
    // grows by the latest-scheduled producer of a value that died before
    // the peak and that it reads, so a depth's chain is the one before it
    // and one node more, and a node two of its members read joins before
    // the ancestors of either (growing depth first, a value read twice was
    // counted kept at one read while the chain took it in at the other;
    // on a random DAG of 60 nodes that hid the cheapest chain).
    auto diedBefore = [&](const ir::Value *operand) {
      if (!operand || operand->isWeight())
        return false;
      auto interval = plan.intervals.find(operand);
      return interval != plan.intervals.end() && interval->second.second < peak;
    };
    std::vector<ir::Node *> order;
    llvm::DenseSet<const ir::Node *> inChain;
    std::vector<ir::Node *> frontier{root->getDefiningNode()};
    while (!frontier.empty() && order.size() < kMaxChain) {
      auto latest = std::max_element(frontier.begin(), frontier.end(),
                                     [&](const ir::Node *a, const ir::Node *b) {
                                       return getStep(a) < getStep(b);
                                     });
      ir::Node *node = *latest;
      frontier.erase(latest);
      order.push_back(node);
      inChain.insert(node);
      for (const ir::Value *operand : node->getOperands()) {
        if (!diedBefore(operand))
          continue;
        ir::Node *producer = operand->getDefiningNode();
        if (producer && !producer->getOpInfo().hasSideEffects() &&
            !inChain.count(producer) && !llvm::is_contained(frontier, producer))
          frontier.push_back(producer);
      }
    }
    for (size_t limit = 1; limit <= order.size(); ++limit) {
      RematCandidate candidate;
      candidate.buffer = &buffer;
      candidate.root = const_cast<ir::Value *>(root);
      candidate.saving = int64_t(alignBytesUp(buffer.bytes, plan.alignment));
      candidate.chain.assign(order.begin(), order.begin() + limit);
      llvm::DenseSet<const ir::Node *> members(candidate.chain.begin(),
                                               candidate.chain.end());
      candidate.lastBefore = lastBefore;
      candidate.firstAfter = firstAfter;
      // What the chain reads that died before the peak and is not in it is
      // kept alive to the copies: it costs its bytes.
      for (const ir::Node *node : candidate.chain)
        for (const ir::Value *operand : node->getOperands()) {
          if (!operand || operand->isWeight() ||
              members.count(operand->getDefiningNode()))
            continue;
          if (!diedBefore(operand)) {
            if (!llvm::is_contained(candidate.readAcross, operand))
              candidate.readAcross.push_back(operand);
          } else if (!llvm::is_contained(candidate.kept, operand)) {
            candidate.kept.push_back(operand);
            candidate.saving -= int64_t(
                alignBytesUp(operand->getType().getByteSize(), plan.alignment));
          }
        }
      candidate.relief =
          getRelief(lastBefore, firstAfter, candidate.saving, excess);
      std::sort(candidate.chain.begin(), candidate.chain.end(),
                [&](const ir::Node *a, const ir::Node *b) {
                  return getStep(a) < getStep(b);
                });
      for (const ir::Node *node : candidate.chain) {
        Cost cost = costOfNode(*node);
        candidate.seconds += estimateSeconds(cost, device);
        candidate.flops += double(cost.getFlops());
      }
      candidates.push_back(std::move(candidate));
    }
  }
  return candidates;
}

std::vector<RematCandidate>
RematDecider::pairChains(llvm::ArrayRef<RematCandidate> chains,
                         llvm::ArrayRef<uint64_t> excess) const {
  std::vector<RematCandidate> pairs;
  auto bytesOf = [&](const ir::Value *value) {
    return int64_t(
        alignBytesUp(value->getType().getByteSize(), plan.alignment));
  };
  // The chains that keep each value, cheapest first, at most
  // kMaxChainsPerKept of them (a value many chains read would otherwise
  // make the pairs quadratic in them).
  llvm::DenseMap<const ir::Value *, std::vector<size_t>> keptBy;
  std::vector<size_t> byFlops(chains.size());
  std::iota(byFlops.begin(), byFlops.end(), 0);
  std::stable_sort(byFlops.begin(), byFlops.end(), [&](size_t a, size_t b) {
    return chains[a].flops < chains[b].flops;
  });
  for (size_t index : byFlops)
    for (const ir::Value *value : chains[index].kept) {
      std::vector<size_t> &list = keptBy[value];
      if (list.size() < kMaxChainsPerKept)
        list.push_back(index);
    }
  // Whether a chain reads a value of the other's buffer: its copies would
  // keep that value alive across the peak, which the other frees.
  auto readsBuffer = [](const RematCandidate &reader,
                        const RematCandidate &other) {
    return llvm::any_of(reader.readAcross, [&](const ir::Value *value) {
      return llvm::is_contained(other.buffer->values, value);
    });
  };
  // The best pair per two buffers, by the ranking's key.
  llvm::DenseMap<std::pair<const ArenaBuffer *, const ArenaBuffer *>, size_t>
      best;
  // Values of keptBy in a fixed order (the chains'), for a deterministic
  // result.
  llvm::DenseSet<const ir::Value *> visited;
  for (const RematCandidate &chain : chains)
    for (const ir::Value *shared : chain.kept) {
      if (!visited.insert(shared).second)
        continue;
      const std::vector<size_t> &list = keptBy[shared];
      for (size_t i = 0; i < list.size(); ++i)
        for (size_t j = i + 1; j < list.size(); ++j) {
          const RematCandidate &a = chains[list[i]], &b = chains[list[j]];
          if (a.buffer == b.buffer || readsBuffer(a, b) || readsBuffer(b, a))
            continue;
          // A pair that shares more than one kept value is met once per
          // value: the first (its chains' kept values seen in order).
          const ir::Value *first = nullptr;
          for (const ir::Value *value : a.kept)
            if (llvm::is_contained(b.kept, value)) {
              first = value;
              break;
            }
          if (first != shared)
            continue;
          int64_t saving = bytesOf(a.root) + bytesOf(b.root);
          llvm::SmallVector<const ir::Value *, 8> kept(a.kept.begin(),
                                                       a.kept.end());
          for (const ir::Value *value : b.kept)
            if (!llvm::is_contained(kept, value))
              kept.push_back(value);
          for (const ir::Value *value : kept)
            saving -= bytesOf(value);
          // Only worth a decision where it saves more than either alone.
          if (saving <= std::max<int64_t>(0, std::max(a.saving, b.saving)))
            continue;
          // Both values are gone where their steps overlap, each alone
          // (with its own chain's kept values) elsewhere.
          int64_t from = std::max(a.lastBefore, b.lastBefore);
          int64_t to = std::min(a.firstAfter, b.firstAfter);
          RematCandidate pair = a.firstAfter <= b.firstAfter ? a : b;
          const RematCandidate &second = a.firstAfter <= b.firstAfter ? b : a;
          pair.relief = getRelief(from, to, saving, excess);
          if (pair.relief <= 0)
            continue;
          pair.relief +=
              getRelief(a.lastBefore, std::min(a.firstAfter, from + 1),
                        a.saving, excess) +
              getRelief(b.lastBefore, std::min(b.firstAfter, from + 1),
                        b.saving, excess) +
              getRelief(std::max(a.lastBefore, to - 1), a.firstAfter, a.saving,
                        excess) +
              getRelief(std::max(b.lastBefore, to - 1), b.firstAfter, b.saving,
                        excess);
          pair.saving = saving;
          pair.seconds = a.seconds + b.seconds;
          pair.flops = a.flops + b.flops;
          pair.kept.assign(kept.begin(), kept.end());
          pair.alongside.push_back(second);
          auto key = std::make_pair(std::min(a.buffer, b.buffer),
                                    std::max(a.buffer, b.buffer));
          auto [it, inserted] = best.try_emplace(key, pairs.size());
          if (inserted)
            pairs.push_back(std::move(pair));
          else if (isBetter(pair, pairs[it->second]))
            pairs[it->second] = std::move(pair);
        }
    }
  return pairs;
}
std::vector<RematCandidate> RematDecider::collect() const {
  std::vector<RematCandidate> candidates;
  if (plan.peakStep < 0)
    return candidates;
  // What each step has live over the target: the budget while the bound is
  // above it, else (the arena is over the budget but the bound is not) the
  // steps at the bound.
  std::vector<uint64_t> live = getLiveBytes(plan);
  uint64_t target =
      budget < plan.lowerBoundBytes ? budget : plan.lowerBoundBytes - 1;
  std::vector<uint64_t> excess(live.size());
  for (size_t step = 0; step < live.size(); ++step)
    excess[step] = live[step] > target ? live[step] - target : 0;
  std::vector<RematCandidate> chains = collectChains(excess);
  for (const RematCandidate &chain : chains)
    if (chain.saving > 0)
      candidates.push_back(chain);
  std::vector<RematCandidate> pairs = pairChains(chains, excess);
  std::move(pairs.begin(), pairs.end(), std::back_inserter(candidates));
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const RematCandidate &a, const RematCandidate &b) {
                     return isBetter(a, b);
                   });
  return candidates;
}

bool RematDecider::isBetter(const RematCandidate &a,
                            const RematCandidate &b) const {
  auto key = [&](const RematCandidate &c) {
    if (c.relief <= 0)
      return std::numeric_limits<double>::infinity();
    switch (ranking) {
    case RematRanking::PerByteStep:
      return c.flops / c.relief;
    case RematRanking::PerByte:
      return c.flops / double(c.saving);
    case RematRanking::Flops:
      return c.flops;
    }
    llvm_unreachable("unknown ranking");
  };
  double ka = key(a), kb = key(b);
  if (ka != kb)
    return ka < kb;
  if (a.relief != b.relief)
    return a.relief > b.relief;
  double sa = a.seconds / double(a.saving);
  double sb = b.seconds / double(b.saving);
  if (sa != sb)
    return sa < sb;
  return a.saving > b.saving;
}

RematChange RematDecider::apply(const RematCandidate &candidate) const {
  RematChange change;
  // A group's values in the order of their first reads after the peak, as
  // separate decisions would make them (pairChains puts the earlier first).
  applyOne(candidate, change);
  for (const RematCandidate &other : candidate.alongside)
    applyOne(other, change);
  return change;
}

void RematDecider::applyOne(const RematCandidate &candidate,
                            RematChange &change) const {
  // Positions now: a group's earlier values have inserted copies after the
  // peak (never before it, so the steps up to the peak are the plan's).
  llvm::DenseMap<const ir::Node *, int64_t> position;
  auto nodes = module.getNodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    position[nodes[i].get()] = int64_t(i);
  int64_t peak = plan.peakStep;
  llvm::SmallVector<ir::Value *, 4> members =
      membersBefore(*candidate.buffer, peak);
  // Reads after the peak, collected before any is changed.
  std::vector<RematChange::Redirect> reads;
  int64_t firstRead = std::numeric_limits<int64_t>::max();
  const ir::Node *firstUser = nullptr;
  for (ir::Value *value : members)
    for (const ir::Value::Use &use : value->getUses())
      if (position.lookup(use.user) > peak) {
        reads.push_back({use.user, use.operandIndex, value});
        if (position.lookup(use.user) < firstRead) {
          firstRead = position.lookup(use.user);
          firstUser = use.user;
        }
      }
  change.firstUsers.push_back(firstUser);
  // The chain's copies in schedule order, then copies of the views before
  // the peak (the buffer lists them in definition order), each reading the
  // copies of what it reads.
  std::vector<ir::Node *> originals = candidate.chain;
  for (ir::Value *value : members)
    if (value != candidate.root)
      originals.push_back(value->getDefiningNode());
  llvm::DenseMap<const ir::Value *, ir::Value *> copyOf;
  size_t index = size_t(firstRead);
  size_t firstCopy = change.copies.size();
  for (ir::Node *original : originals) {
    llvm::SmallVector<ir::Value *, 4> operands;
    for (ir::Value *operand : original->getOperands()) {
      ir::Value *mapped = operand ? copyOf.lookup(operand) : nullptr;
      operands.push_back(mapped ? mapped : operand);
    }
    ir::Node *copy = module.insertCopy(index++, *original, operands);
    change.copies.push_back(copy);
    change.originals.push_back(original);
    for (unsigned i = 0; i < original->getNumResults(); ++i)
      copyOf[original->getResult(i)] = copy->getResult(i);
  }
  for (RematChange::Redirect &read : reads)
    read.copy = copyOf.lookup(read.original);
  // The copies are now the latest computations of what they copy: every
  // read from here on of an earlier computation of the same value (the
  // original, or a copy an earlier decision made) reads them instead, so
  // that one copy serves them all and the earlier ones die sooner.
  // Without this, an ancestor copied along with a value is computed once
  // more for a later read an earlier decision had given a copy of its own
  // (seen on chains against the oracle). A group's earlier values' copies
  // count as earlier decisions'.
  llvm::DenseSet<std::pair<const ir::Node *, unsigned>> redirected;
  for (const RematChange::Redirect &read : change.redirects)
    redirected.insert({read.user, read.operand});
  for (const RematChange::Redirect &read : reads)
    redirected.insert({read.user, read.operand});
  for (size_t k = 0; k < candidate.chain.size(); ++k) {
    const ir::Node *origin = getOrigin(candidate.chain[k]);
    llvm::SmallVector<ir::Node *, 4> instances(instancesOf.lookup(origin));
    for (size_t c = 0; c < firstCopy; ++c)
      if (getOrigin(change.originals[c]) == origin)
        instances.push_back(change.copies[c]);
    ir::Node *copy = change.copies[firstCopy + k];
    for (ir::Node *instance : instances)
      for (unsigned i = 0; i < instance->getNumResults(); ++i)
        for (const ir::Value::Use &use : instance->getResult(i)->getUses())
          if (position.count(use.user) &&
              position.lookup(use.user) >= firstRead &&
              redirected.insert({use.user, use.operandIndex}).second)
            reads.push_back({use.user, use.operandIndex, instance->getResult(i),
                             copy->getResult(i)});
  }
  for (const RematChange::Redirect &read : reads)
    read.user->setOperand(read.operand, read.copy);
  change.redirects.insert(change.redirects.end(), reads.begin(), reads.end());
}

} // namespace snug
