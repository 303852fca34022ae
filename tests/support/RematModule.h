//===- RematModule.h - A module as a rematerialization problem --*- C++ -*-===//
//
// The bridge between the IR and the IR-free remat oracle (RematOracle.h):
// a module becomes a RematGraph (one node per graph input and per node, its
// cost the cost model's FLOPs, its bytes rounded up to the planner's
// alignment, weights left out: they live outside the arena), and the same
// module after the remat pass becomes a RematSchedule over that graph, each
// copy the pass inserted standing for the node it copies. That is how the
// tests and bench/remat put the heuristic and the oracle on one graph.
//
// Only modules whose memory the graph models exactly are accepted: every
// node has one result and none is a view. With plan-memory's in-place and
// concat sharing off (views=0 in-place=0 concat=0) snug's live-bytes bound
// is then the replayed peak of the schedule; the tests check that it is.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_SUPPORT_REMATMODULE_H
#define SNUG_TESTS_SUPPORT_REMATMODULE_H

#include "ir/Module.h"
#include "tests/support/RematGraph.h"

#include "llvm/ADT/DenseMap.h"

#include <map>
#include <string>

namespace snug {

/// A module's remat problem and how its values map onto it.
struct RematModuleGraph {
  RematGraph graph;
  /// The graph node of each graph input and node result.
  llvm::DenseMap<const ir::Value *, unsigned> indexOf;
  /// A node's op and operands (graph indices, weights by name) -> its graph
  /// node: how a copy is recognised.
  std::map<std::string, unsigned> bySignature;
};

/// Builds the graph of `module`; fails (naming the node) on a node with
/// other than one result, a view, or two nodes computing the same op on the
/// same operands (a copy of either could not be told apart).
llvm::Expected<RematModuleGraph> buildRematGraph(const ir::Module &module,
                                                 uint64_t alignment);

/// The schedule of `module`, the module `graph` was built from after remat
/// inserted copies: each node as the graph node it is or copies. Fails on a
/// node that is neither.
llvm::Expected<RematSchedule> getRematSchedule(const RematModuleGraph &graph,
                                               const ir::Module &module);

} // namespace snug

#endif // SNUG_TESTS_SUPPORT_REMATMODULE_H
