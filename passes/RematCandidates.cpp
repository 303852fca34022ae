//===- RematCandidates.cpp - What remat can recompute at the peak ---------===//
//
// Collecting and ranking the candidates at a plan's peak step, and applying
// one to the module; the rules are in passes/Remat.cpp's banner.
//
//===----------------------------------------------------------------------===//
#include "passes/RematCandidates.h"

#include "passes/BudgetSearch.h"
#include "passes/CostModel.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <limits>

namespace snug {

namespace {
/// At most this many nodes are copied for one value.
constexpr size_t kMaxChain = 16;
} // namespace

llvm::SmallVector<ir::Value *, 4>
RematDecider::membersBefore(const ArenaBuffer &buffer, int64_t peak) const {
  llvm::SmallVector<ir::Value *, 4> members;
  for (const ir::Value *value : buffer.values)
    if (getStep(value->getDefiningNode()) < peak)
      members.push_back(const_cast<ir::Value *>(value));
  return members;
}

std::vector<RematCandidate> RematDecider::collect() const {
  std::vector<RematCandidate> candidates;
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
  // What each step has live over the target: the budget while the bound is
  // above it, else (the arena is over the budget but the bound is not) the
  // steps at the bound.
  std::vector<uint64_t> live = getLiveBytes(plan);
  uint64_t target =
      budget < plan.lowerBoundBytes ? budget : plan.lowerBoundBytes - 1;
  std::vector<uint64_t> excess(live.size());
  for (size_t step = 0; step < live.size(); ++step)
    excess[step] = live[step] > target ? live[step] - target : 0;
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
      // What the chain reads that died before the peak and is not in it is
      // kept alive to the copies: it costs its bytes.
      llvm::DenseSet<const ir::Value *> kept;
      for (const ir::Node *node : candidate.chain)
        for (const ir::Value *operand : node->getOperands())
          if (diedBefore(operand) &&
              !members.count(operand->getDefiningNode()) &&
              kept.insert(operand).second)
            candidate.saving -= int64_t(
                alignBytesUp(operand->getType().getByteSize(), plan.alignment));
      if (candidate.saving <= 0)
        continue;
      for (int64_t step = lastBefore + 1; step < firstAfter; ++step)
        candidate.relief += double(
            std::min<uint64_t>(excess[step], uint64_t(candidate.saving)));
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
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](const RematCandidate &a, const RematCandidate &b) {
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
                   });
  return candidates;
}

RematChange RematDecider::apply(const RematCandidate &candidate) const {
  RematChange change;
  int64_t peak = plan.peakStep;
  llvm::SmallVector<ir::Value *, 4> members =
      membersBefore(*candidate.buffer, peak);
  // Reads after the peak, collected before any is changed.
  std::vector<RematChange::Redirect> reads;
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
  // (seen on chains against the oracle).
  llvm::DenseSet<std::pair<const ir::Node *, unsigned>> redirected;
  for (const RematChange::Redirect &read : reads)
    redirected.insert({read.user, read.operand});
  for (size_t k = 0; k < candidate.chain.size(); ++k)
    for (ir::Node *instance : instancesOf.lookup(getOrigin(candidate.chain[k])))
      for (unsigned i = 0; i < instance->getNumResults(); ++i)
        for (const ir::Value::Use &use : instance->getResult(i)->getUses())
          if (stepOf.count(use.user) && getStep(use.user) >= firstRead &&
              redirected.insert({use.user, use.operandIndex}).second)
            reads.push_back({use.user, use.operandIndex, instance->getResult(i),
                             change.copies[k]->getResult(i)});
  for (const RematChange::Redirect &read : reads)
    read.user->setOperand(read.operand, read.copy);
  change.redirects = std::move(reads);
  return change;
}

} // namespace snug
