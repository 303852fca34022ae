//===- RematGraph.cpp - Replaying a rematerialization schedule -----------===//
//
// Replays a schedule on a RematGraph: one pass to find each computation's
// last read (the latest computation of an operand is what a step reads),
// one to add up the bytes live at each step. Written apart from the MILP on
// purpose: it shares no code with RematOracle.cpp, so a wrong constraint
// there shows up as a failed replay here.
//
//===----------------------------------------------------------------------===//
#include "tests/support/RematGraph.h"

#include <algorithm>
#include <string>

namespace snug {
namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "remat schedule: " + message);
}

llvm::Error checkGraph(const RematGraph &graph) {
  bool seenComputed = false;
  for (unsigned i = 0; i < graph.nodes.size(); ++i) {
    const RematNode &node = graph.nodes[i];
    if (node.isInput && (seenComputed || !node.operands.empty()))
      return fail("node " + llvm::Twine(i) +
                  " is a graph input after a computed node or with operands");
    seenComputed |= !node.isInput;
    for (unsigned operand : node.operands)
      if (operand >= i)
        return fail("node " + llvm::Twine(i) + " reads node " +
                    llvm::Twine(operand) + ", which is not earlier");
  }
  return llvm::Error::success();
}

} // namespace

unsigned RematGraph::getNumInputs() const {
  unsigned count = 0;
  while (count < nodes.size() && nodes[count].isInput)
    ++count;
  return count;
}

uint64_t RematGraph::getBaseCost() const {
  uint64_t total = 0;
  for (const RematNode &node : nodes)
    total += node.cost;
  return total;
}

RematSchedule getInOrderSchedule(const RematGraph &graph) {
  RematSchedule schedule;
  for (unsigned i = graph.getNumInputs(); i < graph.nodes.size(); ++i)
    schedule.push_back(i);
  return schedule;
}

llvm::Expected<RematReplay>
replayRematSchedule(const RematGraph &graph, llvm::ArrayRef<unsigned> schedule) {
  if (llvm::Error error = checkGraph(graph))
    return error;
  const size_t numNodes = graph.nodes.size();
  const int64_t numSteps = int64_t(schedule.size());
  // Instances: one per graph input (defined at step 0), then one per step.
  struct Instance {
    unsigned node;
    int64_t first, last;
  };
  std::vector<Instance> instances;
  std::vector<int64_t> latest(numNodes, -1);
  for (unsigned i = 0; i < numNodes && graph.nodes[i].isInput; ++i) {
    latest[i] = int64_t(instances.size());
    instances.push_back({i, 0, 0});
  }
  RematReplay replay;
  std::vector<bool> computed(numNodes, false);
  for (int64_t step = 0; step < numSteps; ++step) {
    unsigned index = schedule[step];
    if (index >= numNodes)
      return fail("step " + llvm::Twine(step) + " computes node " +
                  llvm::Twine(index) + ", which does not exist");
    const RematNode &node = graph.nodes[index];
    if (node.isInput)
      return fail("step " + llvm::Twine(step) + " computes graph input " +
                  llvm::Twine(index));
    for (unsigned operand : node.operands) {
      if (latest[operand] < 0)
        return fail("step " + llvm::Twine(step) + " computes node " +
                    llvm::Twine(index) + " but its operand " +
                    llvm::Twine(operand) + " was never computed before");
      Instance &read = instances[latest[operand]];
      read.last = std::max(read.last, step);
    }
    latest[index] = int64_t(instances.size());
    instances.push_back({index, step, step});
    computed[index] = true;
    replay.cost += node.cost;
  }
  for (unsigned i = 0; i < numNodes; ++i) {
    if (!graph.nodes[i].isInput && !computed[i])
      return fail("node " + llvm::Twine(i) + " is never computed");
    if (graph.nodes[i].isOutput)
      instances[latest[i]].last = std::max<int64_t>(numSteps - 1, 0);
  }
  std::vector<uint64_t> live(std::max<int64_t>(numSteps, 1), 0);
  for (const Instance &instance : instances)
    for (int64_t step = instance.first; step <= instance.last; ++step)
      live[step] += graph.nodes[instance.node].bytes;
  replay.peakBytes = *std::max_element(live.begin(), live.end());
  return replay;
}

llvm::Error checkRematSchedule(const RematGraph &graph,
                               llvm::ArrayRef<unsigned> schedule,
                               uint64_t budget, uint64_t expectedCost) {
  llvm::Expected<RematReplay> replay = replayRematSchedule(graph, schedule);
  if (!replay)
    return replay.takeError();
  if (replay->peakBytes > budget)
    return fail("the live bytes reach " + llvm::Twine(replay->peakBytes) +
                ", over the budget of " + llvm::Twine(budget));
  if (replay->cost != expectedCost)
    return fail("the computations cost " + llvm::Twine(replay->cost) +
                ", not the " + llvm::Twine(expectedCost) + " claimed");
  return llvm::Error::success();
}

} // namespace snug
