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
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/Liveness.h"
#include "passes/MemoryPlanner.h"
#include "passes/PlanMemory.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"

#include <queue>

namespace snug {
namespace {
class Schedule : public Pass {
public:
  llvm::StringRef getName() const override { return "schedule"; }
  llvm::Expected<bool> run(ir::Module &module) override;
};

using Order = std::vector<ir::Node *>;

struct Graph {
  std::vector<ir::Node *> nodes;
  llvm::DenseMap<const ir::Node *, unsigned> index;
  /// Producer node index of each operand slot (-1: argument or absent).
  std::vector<llvm::SmallVector<int, 4>> producers;
  std::vector<llvm::SmallVector<unsigned, 4>> consumers;
};
} // namespace

static Graph buildGraph(const ir::Module &module) {
  Graph graph;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    graph.index[node.get()] = graph.nodes.size();
    graph.nodes.push_back(node.get());
  }
  graph.producers.resize(graph.nodes.size());
  graph.consumers.resize(graph.nodes.size());
  for (unsigned i = 0; i < graph.nodes.size(); ++i) {
    for (const ir::Value *operand : graph.nodes[i]->getOperands()) {
      int producer = -1;
      if (operand && operand->isResult())
        producer = graph.index.lookup(operand->getDefiningNode());
      graph.producers[i].push_back(producer);
      if (producer >= 0 && !llvm::is_contained(graph.consumers[producer], i))
        graph.consumers[producer].push_back(i);
    }
  }
  return graph;
}

/// Bytes a node adds when it runs; views add nothing.
static uint64_t resultBytes(const ir::Node &node) {
  if (node.getOpInfo().isView())
    return 0;
  uint64_t bytes = 0;
  for (unsigned i = 0; i < node.getNumResults(); ++i)
    bytes += node.getResult(i)->getType().getByteSize();
  return bytes;
}

static Order greedyListSchedule(const ir::Module &module, const Graph &graph) {
  size_t count = graph.nodes.size();
  // Readers of each value not yet scheduled; outputs never free.
  llvm::DenseMap<const ir::Value *, unsigned> pendingReaders;
  for (const ir::Node *node : graph.nodes)
    for (const ir::Value *operand : node->getOperands())
      if (operand && !operand->isWeight())
        ++pendingReaders[operand];
  std::vector<unsigned> missing(count, 0);
  for (unsigned i = 0; i < count; ++i)
    for (int producer : graph.producers[i])
      if (producer >= 0)
        ++missing[i];
  std::vector<int64_t> producedAt(count, -1);

  auto delta = [&](unsigned i) {
    const ir::Node &node = *graph.nodes[i];
    int64_t freed = 0;
    llvm::SmallVector<const ir::Value *, 4> seen;
    for (const ir::Value *operand : node.getOperands()) {
      if (!operand || operand->isWeight() || module.isOutput(operand) ||
          llvm::is_contained(seen, operand))
        continue;
      seen.push_back(operand);
      // Freed when this node holds every remaining read of the value.
      if (pendingReaders.lookup(operand) ==
          unsigned(llvm::count(node.getOperands(), operand)))
        freed += operand->getType().getByteSize();
    }
    return int64_t(resultBytes(node)) - freed;
  };
  auto recency = [&](unsigned i) {
    int64_t latest = -1;
    for (int producer : graph.producers[i])
      if (producer >= 0)
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
  while (!ready.empty()) {
    auto [score, negRecency, i] = ready.top();
    ready.pop();
    Entry fresh{delta(i), -recency(i), i};
    if (fresh != Entry{score, negRecency, i}) {
      ready.push(fresh);
      continue;
    }
    producedAt[i] = order.size();
    order.push_back(graph.nodes[i]);
    for (const ir::Value *operand : graph.nodes[i]->getOperands())
      if (operand && !operand->isWeight())
        --pendingReaders[operand];
    for (unsigned consumer : graph.consumers[i]) {
      unsigned edges = llvm::count(graph.producers[consumer], int(i));
      missing[consumer] -= edges;
      if (missing[consumer] == 0)
        ready.push({delta(consumer), -recency(consumer), consumer});
    }
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
    need[i] = std::max(peak, held + resultBytes(*graph.nodes[i]));
  }
  Order order;
  std::vector<char> state(count, 0); // 0 new, 1 on stack, 2 done
  // Iterative DFS: children (producers) in descending need.
  auto visit = [&](unsigned root) {
    std::vector<std::pair<unsigned, unsigned>> stack{{root, 0}};
    while (!stack.empty()) {
      auto &[node, next] = stack.back();
      if (state[node] == 2) {
        stack.pop_back();
        continue;
      }
      state[node] = 1;
      llvm::SmallVector<unsigned, 4> children;
      for (int producer : graph.producers[node])
        if (producer >= 0 && !llvm::is_contained(children, unsigned(producer)))
          children.push_back(producer);
      llvm::stable_sort(children, [&](unsigned a, unsigned b) {
        return need[a] > need[b];
      });
      if (next < children.size()) {
        unsigned child = children[next++];
        if (state[child] == 0)
          stack.push_back({child, 0});
        continue;
      }
      state[node] = 2;
      order.push_back(graph.nodes[node]);
      stack.pop_back();
    }
  };
  for (const ir::Value *output : module.getOutputs())
    if (output->isResult())
      visit(graph.index.lookup(output->getDefiningNode()));
  // Nodes no output needs still run, last, in their old order.
  for (unsigned i = 0; i < count; ++i)
    if (state[i] != 2)
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

llvm::Expected<bool> Schedule::run(ir::Module &module) {
  if (module.getNodes().size() < 2)
    return false;
  Graph graph = buildGraph(module);
  Order original = graph.nodes;
  uint64_t best = lowerBoundOf(module, original);
  uint64_t before = best;
  Order bestOrder = original;
  for (Order candidate :
       {greedyListSchedule(module, graph), depthFirstSchedule(module, graph)}) {
    uint64_t bound = lowerBoundOf(module, candidate);
    if (bound < best) {
      best = bound;
      bestOrder = std::move(candidate);
    }
  }
  module.setSchedule(bestOrder);
  addStatistic("lower-bound-before", before);
  addStatistic("lower-bound-after", best);
  return bestOrder != original;
}

std::unique_ptr<Pass> createSchedulePass() {
  return std::make_unique<Schedule>();
}

} // namespace snug
