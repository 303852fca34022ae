//===- RematGraph.h - Remat problems and a checker of schedules -*- C++ -*-===//
//
// The IR-free form of a rematerialization problem and an independent check
// of any answer to it. A graph is values in a fixed topological order, each
// with a cost (FLOPs), its bytes and the earlier values it reads; a schedule
// is the sequence of node computations, recomputations included.
//
// The memory model is snug's liveness (Liveness.h) without sharing: a
// computed value occupies its bytes from the step that computes it to its
// last read, the operands and the result of a step are live together, graph
// inputs are live from the first step to their last read, graph outputs
// from their (last) computation to the end. A read uses the latest
// computation of its operand, so an earlier one dies at its own last read.
// replayRematSchedule replays exactly this, step by step, and knows nothing
// of how the schedule was found: it checks the oracle (RematOracle.h) and
// the remat pass alike.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_SUPPORT_REMATGRAPH_H
#define SNUG_TESTS_SUPPORT_REMATGRAPH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace snug {

/// One value of the graph: a graph input or a node's one result.
struct RematNode {
  /// What computing it costs (FLOPs); graph inputs cost nothing.
  uint64_t cost = 0;
  /// Bytes its value occupies (rounded up to the planner's alignment).
  uint64_t bytes = 0;
  /// Indices of earlier nodes it reads, each once.
  std::vector<unsigned> operands;
  bool isOutput = false;
  /// A graph input: there from the start, never computed. Inputs come
  /// first in the order.
  bool isInput = false;
};

/// Nodes in topological order, graph inputs first.
struct RematGraph {
  std::vector<RematNode> nodes;
  /// The number of leading nodes that are graph inputs.
  unsigned getNumInputs() const;
  /// Sum of the costs: what a schedule without recomputation costs.
  uint64_t getBaseCost() const;
};

/// Node indices in the order they are computed (graph inputs never appear).
using RematSchedule = std::vector<unsigned>;

/// The schedule without recomputation: every computed node once, in order.
RematSchedule getInOrderSchedule(const RematGraph &graph);

/// What replaying a schedule found.
struct RematReplay {
  uint64_t peakBytes = 0;
  uint64_t cost = 0;
};

/// Replays `schedule` on `graph` under the memory model above: fails when a
/// graph input is computed, a node reads an operand never computed before
/// it, a node is never computed, or the graph is malformed (an operand not
/// earlier, an input after a computed node or with operands).
llvm::Expected<RematReplay> replayRematSchedule(const RematGraph &graph,
                                                llvm::ArrayRef<unsigned> schedule);

/// replayRematSchedule, then: the peak is within `budget` and the cost is
/// `expectedCost`. The error says which fails, with the figures.
llvm::Error checkRematSchedule(const RematGraph &graph,
                               llvm::ArrayRef<unsigned> schedule,
                               uint64_t budget, uint64_t expectedCost);

} // namespace snug

#endif // SNUG_TESTS_SUPPORT_REMATGRAPH_H
