//===- Liveness.cpp - Buffers and their live intervals --------------------===//
//
// One forward walk over the schedule. Value intervals are computed first;
// buffers then grow by merging: a buffer's interval is the union of its
// members'. A merge is only taken when it cannot let one member's write
// clobber another member's bytes that are still needed:
//  - a view's operand keeps its bytes, so a view is always safe;
//  - in place needs the whole operand buffer (views of it included) to end
//    at this node, so nobody reads the old bytes afterwards;
//  - concat in place takes only operands alone in their buffer, produced by
//    a node and used nowhere as an output, so the slice has no other owner.
//
//===----------------------------------------------------------------------===//
#include "passes/memory/Liveness.h"

#include "llvm/ADT/DenseSet.h"

#include "ir/OpInfo.h"


#include <algorithm>
#include <memory>

namespace snug {

/// True when every operand of a Concat is one contiguous block of its
/// result: nothing outside the axis iterates around them (all dims before
/// the axis are 1).
static bool isContiguousConcat(const ir::Node &node) {
  if (!node.is(ir::OpCode::Concat) || node.getNumResults() != 1)
    return false;
  const ir::Attribute *axisAttr = node.getAttribute("axis");
  if (!axisAttr || axisAttr->getKind() != ir::Attribute::Kind::Int)
    return false;
  llvm::ArrayRef<int64_t> dims = node.getResult(0)->getType().getDims();
  int64_t axis = axisAttr->getInt();
  if (axis < 0)
    axis += dims.size();
  if (axis < 0 || axis >= int64_t(dims.size()))
    return false;
  return llvm::all_of(dims.take_front(axis), [](int64_t d) { return d == 1; });
}

/// DenseNet writes each layer's input as Concat(x0, f1, ..., fk) and the
/// block's output as Concat(x0, f1, ..., fn): every such Concat's operands
/// are a prefix of a later one's. Maps each of them to the latest-scheduled
/// Concat with the longest operand list it is a prefix of.
static llvm::DenseMap<const ir::Node *, const ir::Node *>
findConcatPrefixes(const ir::Module &module) {
  llvm::DenseMap<const ir::Value *, llvm::SmallVector<const ir::Node *, 4>>
      byFirstOperand;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    if (isContiguousConcat(*node) && node->getNumOperands() > 0 &&
        node->getOperand(0) && !llvm::is_contained(node->getOperands(), nullptr))
      byFirstOperand[node->getOperand(0)].push_back(node.get());
  llvm::DenseMap<const ir::Node *, const ir::Node *> prefixOf;
  for (auto &entry : byFirstOperand) {
    llvm::SmallVector<const ir::Node *, 4> &group = entry.second;
    if (group.size() < 2)
      continue;
    for (const ir::Node *concat : group) {
      const ir::Node *best = nullptr;
      for (const ir::Node *longer : group) {
        llvm::ArrayRef<ir::Value *> mine = concat->getOperands();
        llvm::ArrayRef<ir::Value *> theirs = longer->getOperands();
        if (longer == concat || theirs.size() <= mine.size() ||
            theirs.take_front(mine.size()) != mine ||
            longer->getAttribute("axis")->getInt() !=
                concat->getAttribute("axis")->getInt() ||
            longer->getResult(0)->getType().getDType() !=
                concat->getResult(0)->getType().getDType())
          continue;
        // Group order is schedule order: later ones win ties.
        if (!best || theirs.size() >= best->getNumOperands())
          best = longer;
      }
      if (best)
        prefixOf[concat] = best;
    }
  }
  return prefixOf;
}

namespace {
/// Live bytes per step under range additions, with the maximum at hand: a
/// segment tree with lazy propagation.
class StepProfile {
public:
  explicit StepProfile(int64_t steps) : size(steps), tree(4 * steps, 0),
                                         lazy(4 * steps, 0) {}
  void add(int64_t first, int64_t last, int64_t delta) {
    if (first <= last && delta != 0)
      add(1, 0, size - 1, first, last, delta);
  }
  int64_t max() const { return tree[1]; }

private:
  void add(size_t node, int64_t low, int64_t high, int64_t first,
           int64_t last, int64_t delta) {
    if (last < low || high < first)
      return;
    if (first <= low && high <= last) {
      tree[node] += delta;
      lazy[node] += delta;
      return;
    }
    int64_t mid = (low + high) / 2;
    add(2 * node, low, mid, first, last, delta);
    add(2 * node + 1, mid + 1, high, first, last, delta);
    tree[node] = lazy[node] + std::max(tree[2 * node], tree[2 * node + 1]);
  }
  int64_t size;
  std::vector<int64_t> tree, lazy;
};

class LivenessBuilder {
public:
  /// `noConcat`: Concat operands that stay in their own buffers.
  LivenessBuilder(const ir::Module &module, const LivenessOptions &options,
                  const llvm::DenseSet<const ir::Value *> *noConcat = nullptr)
      : module(module), options(options), noConcat(noConcat) {}
  LivenessInfo build();

private:
  void computeIntervals();
  unsigned newBuffer(const ir::Value *value);
  void join(const ir::Value *value, unsigned buffer, uint64_t offset,
            const char *reason);
  bool tryJoin(const ir::Value *value, unsigned buffer, uint64_t offset,
               const char *reason, bool force = false);
  bool isCallerOwned(unsigned buffer) const;
  bool tryView(const ir::Node &node);
  bool tryInPlace(const ir::Node &node, int64_t step);
  void tryConcatInPlace(const ir::Node &node);
  bool tryConcatPrefix(const ir::Node &node, const ir::Node &longer);

  uint64_t footprint(uint64_t bytes) const {
    uint64_t alignment = std::max<uint64_t>(1, options.alignment);
    return (bytes + alignment - 1) / alignment * alignment;
  }

  const ir::Module &module;
  const LivenessOptions &options;
  const llvm::DenseSet<const ir::Value *> *noConcat;
  LivenessInfo info;
  /// An upper bound of the live footprint per step under the sharing taken
  /// so far, and the bound it must stay under (the unshared lower bound).
  std::unique_ptr<StepProfile> profile;
  int64_t profileLimit = 0;
  llvm::DenseMap<const ir::Node *, const ir::Node *> prefixOf;
  /// Per buffer: whether a member is a graph input or output (kept as
  /// members join, so that a 100,000-node in-place chain asks in O(1)).
  std::vector<char> callerOwned;
};
} // namespace

void LivenessBuilder::computeIntervals() {
  auto nodes = module.getNodes();
  info.numSteps = std::max<int64_t>(1, nodes.size());
  int64_t lastStep = info.numSteps - 1;
  for (const ir::Value *input : module.getInputs())
    info.intervals[input] = {0, 0};
  for (size_t step = 0; step < nodes.size(); ++step) {
    const ir::Node &node = *nodes[step];
    for (const ir::Value *operand : node.getOperands()) {
      auto it = operand ? info.intervals.find(operand) : info.intervals.end();
      if (it != info.intervals.end())
        it->second.second = std::max<int64_t>(it->second.second, step);
    }
    for (unsigned i = 0; i < node.getNumResults(); ++i)
      info.intervals[node.getResult(i)] = {int64_t(step), int64_t(step)};
  }
  for (const ir::Value *output : module.getOutputs()) {
    auto it = info.intervals.find(output);
    if (it != info.intervals.end())
      it->second.second = lastStep;
  }
}

bool isHostResident(const ir::Value *value) {
  return value && value->isResult() &&
         value->getDefiningNode()->getOpInfo().hasHostResult();
}

unsigned LivenessBuilder::newBuffer(const ir::Value *value) {
  auto interval = info.intervals.lookup(value);
  LiveBuffer buffer;
  buffer.bytes = value->getType().getByteSize();
  buffer.firstStep = interval.first;
  buffer.lastStep = interval.second;
  buffer.values.push_back(value);
  buffer.reasons.push_back("");
  if (isHostResident(value)) {
    // Nothing joins it (no view or in-place rule reads a host value), so
    // the caller-owned flags, which index device buffers, skip it.
    info.hostBuffers.push_back(std::move(buffer));
    info.storage[value] = {unsigned(info.hostBuffers.size() - 1), 0, true};
    return info.hostBuffers.size() - 1;
  }
  info.buffers.push_back(std::move(buffer));
  callerOwned.push_back(value->isInput() || module.isOutput(value));
  info.storage[value] = {unsigned(info.buffers.size() - 1), 0};
  return info.buffers.size() - 1;
}

void LivenessBuilder::join(const ir::Value *value, unsigned index,
                           uint64_t offset, const char *reason) {
  LiveBuffer &buffer = info.buffers[index];
  auto interval = info.intervals.lookup(value);
  buffer.firstStep = std::min(buffer.firstStep, interval.first);
  buffer.lastStep = std::max(buffer.lastStep, interval.second);
  buffer.bytes =
      std::max(buffer.bytes, offset + value->getType().getByteSize());
  buffer.values.push_back(value);
  buffer.reasons.push_back(reason);
  if (value->isInput() || module.isOutput(value))
    callerOwned[index] = 1;
  info.storage[value] = {index, offset};
}

/// Joins `value` to a buffer unless that could raise the bound: a buffer
/// larger than the value (a Concat result holding slices) stretched over the
/// value's steps can hold more than the value did alone.
bool LivenessBuilder::tryJoin(const ir::Value *value, unsigned index,
                              uint64_t offset, const char *reason, bool force) {
  if (profile) {
    const LiveBuffer &target = info.buffers[index];
    auto interval = info.intervals.lookup(value);
    uint64_t bytes =
        std::max(target.bytes, offset + value->getType().getByteSize());
    int64_t first = std::min(target.firstStep, interval.first);
    int64_t last = std::max(target.lastStep, interval.second);
    int64_t before = footprint(target.bytes);
    int64_t after = footprint(bytes);
    int64_t own = footprint(value->getType().getByteSize());
    auto apply = [&](int64_t sign) {
      profile->add(target.firstStep, target.lastStep, sign * (after - before));
      profile->add(first, target.firstStep - 1, sign * after);
      profile->add(target.lastStep + 1, last, sign * after);
      profile->add(interval.first, interval.second, -sign * own);
    };
    // Never push the running bound above the unshared bound, or above where
    // a forced join (a Concat prefix chain) already put it.
    int64_t ceiling = std::max(profileLimit, profile->max());
    apply(1);
    if (!force && profile->max() > ceiling) {
      apply(-1);
      return false;
    }
  }
  join(value, index, offset, reason);
  return true;
}

bool LivenessBuilder::isCallerOwned(unsigned index) const {
  return callerOwned[index];
}

bool LivenessBuilder::tryView(const ir::Node &node) {
  if (!options.views || !node.getOpInfo().isView() ||
      node.getNumResults() != 1 || node.getNumOperands() == 0)
    return false;
  const ir::Value *operand = node.getOperand(0);
  const ir::Value *result = node.getResult(0);
  auto it = operand ? info.storage.find(operand) : info.storage.end();
  if (it == info.storage.end() || it->second.host ||
      operand->getType().getByteSize() != result->getType().getByteSize())
    return false;
  return tryJoin(result, it->second.buffer, it->second.offsetInBuffer,
                 "view");
}

bool LivenessBuilder::tryInPlace(const ir::Node &node, int64_t step) {
  if (!options.inPlace || node.getNumResults() != 1 ||
      !node.getOpInfo().mayRunInPlace())
    return false;
  const ir::Value *result = node.getResult(0);
  // Per operand buffer: the one operand value stored there, or null when
  // two different ones are (a view of it, or the Concat that holds it): an
  // in-place write would be read at other addresses than the ones written.
  // One pass, so that a 20,000-operand Sum costs O(operands).
  llvm::SmallDenseMap<unsigned, const ir::Value *, 8> operandIn;
  for (const ir::Value *operand : node.getOperands()) {
    auto it = operand ? info.storage.find(operand) : info.storage.end();
    if (it == info.storage.end() || it->second.host)
      continue;
    auto inserted = operandIn.insert({it->second.buffer, operand});
    if (!inserted.second && inserted.first->second != operand)
      inserted.first->second = nullptr;
  }
  for (const ir::Value *operand : node.getOperands()) {
    auto it = operand ? info.storage.find(operand) : info.storage.end();
    if (it == info.storage.end() || it->second.host ||
        operand->getType() != result->getType())
      continue;
    const LiveBuffer &buffer = info.buffers[it->second.buffer];
    if (buffer.lastStep != step || isCallerOwned(it->second.buffer))
      continue;
    if (operandIn.lookup(it->second.buffer) != operand)
      continue;
    if (tryJoin(result, it->second.buffer, it->second.offsetInBuffer,
                "in-place"))
      return true;
  }
  return false;
}

void LivenessBuilder::tryConcatInPlace(const ir::Node &node) {
  const ir::Value *result = node.getResult(0);
  if (!isContiguousConcat(node))
    return;
  unsigned resultBuffer = info.storage[result].buffer;
  struct Candidate {
    const ir::Value *operand;
    uint64_t offset;
  };
  llvm::SmallVector<Candidate, 8> candidates;
  llvm::SmallDenseMap<const ir::Value *, unsigned, 8> reads;
  for (const ir::Value *operand : node.getOperands())
    ++reads[operand];
  uint64_t offset = 0;
  for (unsigned i = 0; i < node.getNumOperands(); ++i) {
    const ir::Value *operand = node.getOperand(i);
    if (!operand)
      return;
    uint64_t bytes = operand->getType().getByteSize();
    auto it = info.storage.find(operand);
    bool alone = it != info.storage.end() && !it->second.host &&
                 info.buffers[it->second.buffer].values.size() == 1;
    bool repeated = reads.lookup(operand) > 1;
    bool excluded = noConcat && noConcat->count(operand);
    if (alone && operand->isResult() && !module.isOutput(operand) &&
        !repeated && bytes > 0 && !excluded)
      candidates.push_back({operand, offset});
    offset += bytes;
  }
  // Latest-defined operands first: they extend the result's life least.
  llvm::stable_sort(candidates, [&](const Candidate &a, const Candidate &b) {
    return info.intervals.lookup(a.operand).first >
           info.intervals.lookup(b.operand).first;
  });
  for (const Candidate &candidate : candidates) {
    unsigned own = info.storage[candidate.operand].buffer;
    if (!tryJoin(candidate.operand, resultBuffer, candidate.offset, "concat"))
      continue;
    // The operand's own buffer is left empty; the result's took it over.
    LiveBuffer &old = info.buffers[own];
    old.values.clear();
    old.reasons.clear();
    old.bytes = 0;
  }
}

/// Places a Concat that is a prefix of a later one inside the later one's
/// buffer: its operands at their slots, its result a view of the front. The
/// copy disappears and the prefix costs nothing. Declines (leaving what it
/// placed, which is still correct) when an operand cannot move there.
bool LivenessBuilder::tryConcatPrefix(const ir::Node &node,
                                      const ir::Node &longer) {
  const ir::Value *target = longer.getResult(0);
  if (!info.storage.count(target))
    newBuffer(target);
  unsigned root = info.storage[target].buffer;
  uint64_t offset = 0;
  for (const ir::Value *operand : node.getOperands()) {
    uint64_t bytes = operand->getType().getByteSize();
    auto it = info.storage.find(operand);
    if (it == info.storage.end())
      return false;
    bool placed =
        it->second.buffer == root && it->second.offsetInBuffer == offset;
    if (!placed) {
      unsigned own = it->second.buffer;
      bool alone = info.buffers[own].values.size() == 1;
      if (!alone || !operand->isResult() || module.isOutput(operand) ||
          bytes == 0 || !tryJoin(operand, root, offset, "concat", true))
        return false;
      LiveBuffer &old = info.buffers[own];
      old.values.clear();
      old.reasons.clear();
      old.bytes = 0;
    }
    offset += bytes;
  }
  return tryJoin(node.getResult(0), root, 0, "concat prefix", true);
}

LivenessInfo LivenessBuilder::build() {
  computeIntervals();
  if (options.concatInPlace) {
    // Views and in place never raise any step's bytes, so the unshared
    // profile stays an upper bound until a concat changes it.
    profile = std::make_unique<StepProfile>(info.numSteps);
    for (const auto &entry : info.intervals)
      if (!isHostResident(entry.first))
        profile->add(entry.second.first, entry.second.second,
                     footprint(entry.first->getType().getByteSize()));
    profileLimit = profile->max();
    if (options.concatPrefixes)
      prefixOf = findConcatPrefixes(module);
  }
  for (const ir::Value *input : module.getInputs())
    newBuffer(input);
  auto nodes = module.getNodes();
  for (size_t step = 0; step < nodes.size(); ++step) {
    const ir::Node &node = *nodes[step];
    if (tryView(node) || tryInPlace(node, step))
      continue;
    if (options.concatInPlace) {
      auto longer = prefixOf.find(&node);
      if (longer != prefixOf.end() && tryConcatPrefix(node, *longer->second))
        continue;
    }
    // A later Concat's result may already own a buffer that prefixes of it
    // filled.
    for (unsigned i = 0; i < node.getNumResults(); ++i)
      if (!info.storage.count(node.getResult(i)))
        newBuffer(node.getResult(i));
    if (options.concatInPlace && isContiguousConcat(node))
      tryConcatInPlace(node);
  }
  // Drop buffers emptied by concat in place, renumbering the rest.
  std::vector<LiveBuffer> kept;
  for (LiveBuffer &buffer : info.buffers) {
    if (buffer.values.empty())
      continue;
    for (const ir::Value *value : buffer.values)
      if (!info.storage[value].host)
        info.storage[value].buffer = kept.size();
    kept.push_back(std::move(buffer));
  }
  info.buffers = std::move(kept);
  return std::move(info);
}

/// The most aligned bytes live at one step.
static uint64_t peakBytes(const LivenessInfo &info, uint64_t alignment) {
  std::vector<int64_t> delta(info.numSteps + 1, 0);
  alignment = std::max<uint64_t>(1, alignment);
  for (const LiveBuffer &buffer : info.buffers) {
    int64_t bytes = (buffer.bytes + alignment - 1) / alignment * alignment;
    delta[buffer.firstStep] += bytes;
    delta[buffer.lastStep + 1] -= bytes;
  }
  int64_t live = 0, peak = 0;
  for (int64_t change : delta)
    peak = std::max(peak, live += change);
  return peak;
}

/// The operands Concats took into their result's buffer, those that
/// stretch the result's life most first: the result's bytes times the
/// steps from the operand's definition to the Concat's.
static std::vector<const ir::Value *>
getConcatOperandsInPlace(const LivenessInfo &info) {
  std::vector<std::pair<uint64_t, const ir::Value *>> found;
  for (const LiveBuffer &buffer : info.buffers) {
    const ir::Value *root = buffer.values.front();
    int64_t at = info.intervals.lookup(root).first;
    for (size_t k = 1; k < buffer.values.size(); ++k)
      if (llvm::StringRef(buffer.reasons[k]) == "concat") {
        int64_t from = info.intervals.lookup(buffer.values[k]).first;
        found.push_back(
            {buffer.bytes * uint64_t(std::max<int64_t>(0, at - from)),
             buffer.values[k]});
      }
  }
  llvm::stable_sort(found, [](const auto &a, const auto &b) {
    return a.first > b.first;
  });
  std::vector<const ir::Value *> values;
  for (const auto &entry : found)
    values.push_back(entry.second);
  return values;
}

/// How many Concat operands computeLiveness tries out of their result, and
/// the steps all those trials may visit together: each trial rebuilds the
/// liveness (O(steps)), so a module of up to 2,048 steps gets every trial
/// and a 20,000-step one 6 (a 20,000-node fan-out took 196 builds, 9 s).
/// A work bound, not a clock: plan-memory and verify-plan must agree.
constexpr size_t kMaxConcatTrials = 64;
constexpr size_t kConcatTrialSteps = size_t(1) << 17;

LivenessInfo computeLiveness(const ir::Module &module,
                             const LivenessOptions &options) {
  LivenessOptions plain = options;
  plain.concatPrefixes = false;
  LivenessInfo info = LivenessBuilder(module, plain).build();
  const LivenessOptions *chosen = &plain;
  if (options.concatInPlace && options.concatPrefixes &&
      !findConcatPrefixes(module).empty()) {
    // Prefix chains pay up front (the whole block's buffer lives from its
    // first operand) and save later, so they are judged on the whole result.
    LivenessInfo chained = LivenessBuilder(module, options).build();
    if (peakBytes(chained, options.alignment) <
        peakBytes(info, options.alignment)) {
      info = std::move(chained);
      chosen = &options;
    }
  }
  if (!options.concatInPlace)
    return info;
  // A Concat in place keeps its whole result live from its first operand's
  // definition: a skip connection's operand then holds the result's bytes
  // across everything in between (U-Net). The builder's running bound only
  // keeps that under the unshared bound, so each operand taken in is tried
  // out of it (the ones that stretch the result most first, the Concat
  // still taking its others) and left out where that lowers the peak: the
  // sharing never ends above what leaving out one more operand gives.
  llvm::DenseSet<const ir::Value *> excluded;
  uint64_t peak = peakBytes(info, options.alignment);
  std::vector<const ir::Value *> operands = getConcatOperandsInPlace(info);
  size_t trials = std::min<size_t>(
      kMaxConcatTrials,
      std::max<size_t>(1, kConcatTrialSteps /
                              std::max<size_t>(1, size_t(info.numSteps))));
  size_t tried = 0;
  for (size_t i = 0; i < operands.size() && i < trials; ++i) {
    ++tried;
    excluded.insert(operands[i]);
    LivenessInfo trial = LivenessBuilder(module, *chosen, &excluded).build();
    uint64_t trialPeak = peakBytes(trial, options.alignment);
    if (trialPeak < peak) {
      info = std::move(trial);
      peak = trialPeak;
    } else {
      excluded.erase(operands[i]);
    }
  }
  info.concatTrials = tried;
  return info;
}

} // namespace snug
