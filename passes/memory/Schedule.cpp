//===- Schedule.cpp - Reorder nodes to lower the peak of live bytes -------===//
//
// The schedule is the total order of nodes; the lower bound of the arena is
// the most bytes live at one step of it, so the order alone can move the
// bound a lot on graphs with parallel branches (Inception, DenseNet, U-Net).
// This pass builds candidate topological orders and keeps the one whose
// lower bound (with the same sharing rules plan-memory uses) is lowest:
//  - the current order;
//  - a greedy list schedule: among ready nodes, the one that adds the fewest
//    bytes (results allocated minus operands it frees as their last reader),
//    ties going to the node that reads what was produced most recently, so
//    that a branch is finished before the next one starts;
//  - a depth-first order from the outputs that computes the operand whose
//    subtree needs most memory first (Sethi–Ullman's rule).
// Only a strictly lower bound replaces the current order, so the pass never
// raises the bound and is idempotent. Results never change: every candidate
// is a topological order of the same nodes.
//
// Cost. Planning must stay near O(n log n) on 100,000-node chains and
// 20,000-wide fan-outs, so everything per node is computed once up front:
// distinct producers, consumers and operand values with their read counts
// (a node's operand list can be 20,000 long). The list schedule keeps a heap
// whose stale keys are refreshed on pop (a node's delta only falls as other
// readers of its operands run, so a fresh top is a true minimum), and the
// depth-first order is iterative (a 100,000-deep recursion would overflow
// the stack). Each distinct candidate costs one liveness computation; one
// equal to an order already judged is skipped.
//
// Budget. Option time-limit=SECONDS caps the pass's wall-clock time (the
// planning pipeline gives it a share of --time-limit; plan-memory gets the
// rest). The candidates are tried in a fixed order and the clock is read
// only between them, so the result is deterministic unless the cap is hit;
// then the best order found so far is kept, which is never worse than the
// current one. Statistic `candidates` counts the orders evaluated.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/memory/Liveness.h"
#include "passes/planner/MemoryPlanner.h"
#include "passes/memory/PlanMemory.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"

#include <chrono>
#include <queue>

namespace snug {
namespace {
class Schedule : public Pass {
public:
  llvm::StringRef getName() const override { return "schedule"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  /// Negative: no limit.
  double timeLimitSeconds = -1;
};

using Order = std::vector<ir::Node *>;

/// A distinct non-weight operand value of a node and how often it reads it.
struct Read {
  unsigned value;
  unsigned count;
};

struct Graph {
  std::vector<ir::Node *> nodes;
  llvm::DenseMap<const ir::Node *, unsigned> index;
  /// Producer node index of each operand slot (-1: argument or absent).
  std::vector<llvm::SmallVector<int, 4>> producers;
  /// Distinct producers, in operand order.
  std::vector<llvm::SmallVector<unsigned, 4>> distinctProducers;
  /// Distinct consumers, in schedule order.
  std::vector<llvm::SmallVector<unsigned, 4>> consumers;
  /// Distinct non-weight operand values, numbered densely.
  std::vector<llvm::SmallVector<Read, 4>> reads;
  std::vector<uint64_t> valueBytes;
  std::vector<char> valueIsOutput;
  /// Bytes each node adds when it runs; views add nothing.
  std::vector<uint64_t> resultBytes;
};
} // namespace

static uint64_t getResultBytes(const ir::Node &node) {
  if (node.getOpInfo().isView())
    return 0;
  uint64_t bytes = 0;
  for (unsigned i = 0; i < node.getNumResults(); ++i)
    bytes += node.getResult(i)->getType().getByteSize();
  return bytes;
}

static Graph buildGraph(const ir::Module &module) {
  Graph graph;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    graph.index[node.get()] = graph.nodes.size();
    graph.nodes.push_back(node.get());
  }
  size_t count = graph.nodes.size();
  graph.producers.resize(count);
  graph.distinctProducers.resize(count);
  graph.consumers.resize(count);
  graph.reads.resize(count);
  graph.resultBytes.resize(count);
  llvm::DenseMap<const ir::Value *, unsigned> valueIds;
  // Per producer / value: the last node (plus one) that read it, and where
  // in that node's reads it sits, so that duplicates cost O(1).
  std::vector<unsigned> producerSeenBy(count, 0);
  std::vector<unsigned> valueSeenBy, valueSlot;
  for (unsigned i = 0; i < count; ++i) {
    const ir::Node &node = *graph.nodes[i];
    graph.resultBytes[i] = getResultBytes(node);
    for (const ir::Value *operand : node.getOperands()) {
      int producer = -1;
      if (operand && operand->isResult())
        producer = graph.index.lookup(operand->getDefiningNode());
      graph.producers[i].push_back(producer);
      if (producer >= 0 && producerSeenBy[producer] != i + 1) {
        producerSeenBy[producer] = i + 1;
        graph.distinctProducers[i].push_back(producer);
        graph.consumers[producer].push_back(i);
      }
      if (!operand || operand->isWeight())
        continue;
      auto inserted = valueIds.insert({operand, unsigned(valueIds.size())});
      unsigned id = inserted.first->second;
      if (inserted.second) {
        graph.valueBytes.push_back(operand->getType().getByteSize());
        graph.valueIsOutput.push_back(module.isOutput(operand));
        valueSeenBy.push_back(0);
        valueSlot.push_back(0);
      }
      if (valueSeenBy[id] == i + 1) {
        ++graph.reads[i][valueSlot[id]].count;
        continue;
      }
      valueSeenBy[id] = i + 1;
      valueSlot[id] = graph.reads[i].size();
      graph.reads[i].push_back({id, 1});
    }
  }
  return graph;
}

static Order greedyListSchedule(const Graph &graph) {
  size_t count = graph.nodes.size();
  // Reads of each value not yet scheduled; outputs never free.
  std::vector<unsigned> pendingReaders(graph.valueBytes.size(), 0);
  for (const auto &reads : graph.reads)
    for (const Read &read : reads)
      pendingReaders[read.value] += read.count;
  std::vector<unsigned> missing(count, 0);
  for (unsigned i = 0; i < count; ++i)
    missing[i] = graph.distinctProducers[i].size();
  std::vector<int64_t> producedAt(count, -1);

  auto delta = [&](unsigned i) {
    int64_t freed = 0;
    // Freed when this node holds every remaining read of the value.
    for (const Read &read : graph.reads[i])
      if (!graph.valueIsOutput[read.value] &&
          pendingReaders[read.value] == read.count)
        freed += graph.valueBytes[read.value];
    return int64_t(graph.resultBytes[i]) - freed;
  };
  // Fixed once a node is ready: all its producers have run.
  auto recency = [&](unsigned i) {
    int64_t latest = -1;
    for (unsigned producer : graph.distinctProducers[i])
      latest = std::max(latest, producedAt[producer]);
    return latest;
  };
  // Entries: (delta, -recency, index); stale deltas are re-pushed on pop.
  using Entry = std::tuple<int64_t, int64_t, unsigned>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready;
  for (unsigned i = 0; i < count; ++i)
    if (missing[i] == 0)
      ready.push({delta(i), 1, i});
  Order order;
  order.reserve(count);
  while (!ready.empty()) {
    auto [score, negRecency, i] = ready.top();
    ready.pop();
    int64_t fresh = delta(i);
    if (fresh != score) {
      ready.push({fresh, negRecency, i});
      continue;
    }
    producedAt[i] = order.size();
    order.push_back(graph.nodes[i]);
    for (const Read &read : graph.reads[i])
      pendingReaders[read.value] -= read.count;
    for (unsigned consumer : graph.consumers[i])
      if (--missing[consumer] == 0)
        ready.push({delta(consumer), -recency(consumer), consumer});
  }
  assert(order.size() == count && "the graph has a cycle");
  return order;
}

static Order depthFirstSchedule(const ir::Module &module, const Graph &graph) {
  size_t count = graph.nodes.size();
  // Peak bytes of computing each node's subtree, approximated bottom-up.
  std::vector<uint64_t> need(count, 0);
  for (unsigned i = 0; i < count; ++i) {
    uint64_t peak = 0, held = 0;
    llvm::SmallVector<uint64_t, 4> children;
    for (int producer : graph.producers[i])
      if (producer >= 0)
        children.push_back(need[producer]);
    llvm::sort(children, std::greater<uint64_t>());
    for (uint64_t child : children) {
      peak = std::max(peak, held + child);
      held += child;
    }
    need[i] = std::max(peak, held + graph.resultBytes[i]);
  }
  // Children (producers) in descending need, sorted once per node.
  std::vector<llvm::SmallVector<unsigned, 4>> children =
      graph.distinctProducers;
  for (auto &list : children)
    llvm::stable_sort(
        list, [&](unsigned a, unsigned b) { return need[a] > need[b]; });
  Order order;
  order.reserve(count);
  std::vector<char> done(count, 0);
  // Iterative DFS: a chain of 100,000 nodes is 100,000 frames deep.
  std::vector<std::pair<unsigned, unsigned>> stack;
  auto visit = [&](unsigned root) {
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto &[node, next] = stack.back();
      if (done[node]) {
        stack.pop_back();
        continue;
      }
      if (next < children[node].size()) {
        unsigned child = children[node][next++];
        if (!done[child])
          stack.push_back({child, 0});
        continue;
      }
      done[node] = 1;
      order.push_back(graph.nodes[node]);
      stack.pop_back();
    }
  };
  for (const ir::Value *output : module.getOutputs())
    if (output->isResult())
      visit(graph.index.lookup(output->getDefiningNode()));
  // Nodes no output needs still run, last, in their old order.
  for (unsigned i = 0; i < count; ++i)
    if (!done[i])
      visit(i);
  return order;
}

static uint64_t lowerBoundOf(ir::Module &module, const Order &order) {
  module.setSchedule(order);
  // The bound plan-memory will see with its default alignment and sharing.
  PlanMemoryOptions defaults;
  LivenessOptions sharing = defaults.sharing;
  sharing.alignment = defaults.alignment;
  return computeLowerBound(
      getPlanBuffers(computeLiveness(module, sharing), defaults.alignment));
}

llvm::Error Schedule::setOption(llvm::StringRef key, llvm::StringRef value) {
  if (key == "time-limit") {
    double seconds;
    if (value.getAsDouble(seconds) || !(seconds >= 0))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "schedule option 'time-limit': bad value '" + value +
              "' (seconds, not negative)");
    timeLimitSeconds = seconds;
    return llvm::Error::success();
  }
  return Pass::setOption(key, value);
}

llvm::Expected<bool> Schedule::run(ir::Module &module) {
  if (module.getNodes().size() < 2)
    return false;
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  auto outOfTime = [&]() {
    return timeLimitSeconds >= 0 &&
           std::chrono::duration<double>(Clock::now() - start).count() >=
               timeLimitSeconds;
  };
  Graph graph = buildGraph(module);
  Order original = graph.nodes;
  uint64_t best = lowerBoundOf(module, original);
  uint64_t before = best;
  Order bestOrder = original;
  int64_t evaluated = 1;
  // Each candidate is built and judged only while time remains.
  enum Candidate { GreedyList, DepthFirst, NumCandidates };
  bool stopped = false;
  std::vector<Order> judged{original};
  for (int which = GreedyList; which < NumCandidates; ++which) {
    if (outOfTime()) {
      stopped = true;
      break;
    }
    Order candidate = which == GreedyList ? greedyListSchedule(graph)
                                          : depthFirstSchedule(module, graph);
    // On a chain every candidate is the current order: judge each order
    // once (a liveness computation is the expensive part).
    if (llvm::is_contained(judged, candidate))
      continue;
    if (outOfTime()) {
      stopped = true;
      break;
    }
    uint64_t bound = lowerBoundOf(module, candidate);
    judged.push_back(candidate);
    ++evaluated;
    if (bound < best) {
      best = bound;
      bestOrder = std::move(candidate);
    }
  }
  module.setSchedule(bestOrder);
  addStatistic("lower-bound-before", before);
  addStatistic("lower-bound-after", best);
  addStatistic("candidates", evaluated);
  if (stopped)
    addStatistic("stopped-at-time-limit");
  return bestOrder != original;
}

std::unique_ptr<Pass> createSchedulePass() {
  return std::make_unique<Schedule>();
}

} // namespace snug
