//===- RematOracle.h - Exact rematerialization for small graphs -*- C++ -*-===//
//
// The exact answer the remat heuristic is measured against: given a graph
// in a fixed topological order and a budget on the live-bytes peak, the
// cheapest way to compute every node, recomputing values instead of keeping
// them live. IR-free, like MemoryPlanner.h: the problem is a RematGraph
// (RematGraph.h, which states the memory model and replays schedules
// independently); RematModule.h turns a module into one.
//
// The solver is Checkmate's MILP (Jain et al., "Checkmate: Breaking the
// Memory Wall with Optimal Tensor Rematerialization", MLSys 2020) with the
// order of first computations fixed: stage t ends by computing the t-th
// computed node, and may recompute any earlier node before it, in order.
// Variables, for stage t and node i:
//   R[t][i]  i is computed in stage t (binary; R[t][t-th node] = 1; none
//            for nodes after the stage's own, none for graph inputs);
//   S[t][i]  a computation of i from an earlier stage is kept into stage t
//            (binary; graph inputs are kept into stage 0);
//   U[t][k]  the live bytes while node k computes in stage t (continuous,
//            at most the budget);
//   F[t][i][k] i's bytes are released after k, i being k or an operand
//            of k (continuous in [0, 1]).
// Constraints: an operand is computed earlier in the stage or kept into it
// (R[t][j] <= R[t][i] + S[t][i] for every edge i -> j); only what exists is
// kept (S[t+1][i] <= R[t][i] + S[t][i]); graph outputs, once computed, are
// kept to the end and never computed again; U[t][first] = sum of M[i]
// S[t][i] + M[first] R[t][first], and U[t][k] = U[t][k-1] - released after
// k-1 + M[k] R[t][k]. F[t][i][k] is bounded above by R[t][k], by
// 1 - S[t+1][i] and by 1 - R[t][j] for every reader j of i after k in the
// stage: it can only release what no later step of the stage reads and the
// next stage does not keep. Checkmate also bounds F below (so it equals the
// product); that is not needed for exactness, because a smaller F only
// counts more bytes live, and the solver raises F where the budget needs it.
// Objective: the sum of cost[i] R[t][i]. Byte counts are divided by their
// greatest common divisor (the alignment, usually) to keep the numbers of
// the LP small; that is exact since every sum of them is a multiple of it.
//
// What it does not do: model in-place, view or concat sharing, packing (the
// budget bounds live bytes, so against a heuristic checked on a packed arena
// it is a relaxation and its optimum a lower bound), or schedules that
// compute one node twice in one stage. Sizes past a few hundred nodes are
// out of reach; the tests and bench/remat use up to 60.
//
// Checkmate's other solvers (the LP rounding, the greedy baselines) and its
// training-graph builders are not here; Remat.cpp is snug's heuristic.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_SUPPORT_REMATORACLE_H
#define SNUG_TESTS_SUPPORT_REMATORACLE_H

#include "tests/support/RematGraph.h"

#include <string>
#include <utility>

namespace snug {

struct RematOracleOptions {
  /// CBC's wall-clock limit; past it the best schedule found is returned
  /// as Feasible (or none, as Unknown).
  double timeLimitSeconds = 20;
  /// Optionally a schedule to start from (the heuristic's, say); ignored
  /// when empty. It only speeds the search up.
  RematSchedule start;
  /// CBC parameters, as its command line names them. Cut generation and
  /// preprocessing off are the default: on these MILPs they cost more time
  /// than they save (about 3x and 1.4x on RematOracleTest's chains and
  /// DAGs, measured with CBC 2.10.8).
  std::vector<std::pair<std::string, std::string>> cbcParameters = {
      {"cuts", "off"}, {"preprocess", "off"}};
};

struct RematOracleResult {
  enum class Status {
    Optimal,    ///< proven optimal
    Feasible,   ///< a schedule within the budget, not proven optimal
    Infeasible, ///< proven: no schedule meets the budget
    Unknown,    ///< the time ran out before any schedule was found
  };
  Status status = Status::Unknown;
  /// Of the schedule found (Optimal or Feasible).
  uint64_t cost = 0;
  /// cost - graph.getBaseCost().
  uint64_t extraCost = 0;
  /// CBC's bound on the optimal cost (equals cost when Optimal).
  double bestBound = 0;
  RematSchedule schedule;
  /// Whether options.start fitted the stages and went to CBC as a MIP
  /// start (recomputations nothing reads dropped first).
  bool startGiven = false;
  double seconds = 0;
  /// The MILP's size, for the bench.
  unsigned numColumns = 0, numRows = 0;
};

llvm::StringRef getRematOracleStatusName(RematOracleResult::Status status);

/// Solves the MILP above for `budget` live bytes. Errors only on a malformed
/// graph or a schedule CBC returns that does not replay (an internal bug).
llvm::Expected<RematOracleResult>
solveRematOracle(const RematGraph &graph, uint64_t budget,
                 const RematOracleOptions &options = {});

/// A lower bound on the extra cost of every schedule within a budget,
/// proven one step at a time, for where CBC's own bound stays weak (random
/// DAGs of 60 nodes: bounds of 48-2806 FLOPs against schedules of 8000 and
/// more). At the first computation of node k, what must exist is fixed by
/// the order alone: k and its operands, the outputs computed before it,
/// the graph inputs read at or after it, and every value computed before it
/// that a node after it reads. Each of the last either stays live across
/// the step (its bytes) or is computed again after it (at least its own
/// cost, and what it reads must then stay live or be computed again after
/// the step too; outputs and inputs never are). Choosing which, at the
/// least cost within the budget, is a small MILP (two binaries per earlier
/// value) that CBC solves exactly; a schedule costs at least the largest
/// of these over the steps, and none meets the budget where one has no
/// solution. Only steps over the budget without recomputation are solved.
struct RematLowerBound {
  /// Proven: no schedule meets the budget.
  bool infeasible = false;
  /// Every schedule within the budget costs at least this over the base.
  uint64_t extraCost = 0;
  /// Whether every step's MILP was solved to optimality (else the bound
  /// holds but may be below what the steps prove).
  bool exact = true;
  double seconds = 0;
};

/// The bound above; `timeLimitSeconds` per step (past it CBC's bound on the
/// step's MILP is used, still a valid bound).
llvm::Expected<RematLowerBound>
boundRematExtraCost(const RematGraph &graph, uint64_t budget,
                    double timeLimitSeconds = 20);

} // namespace snug

#endif // SNUG_TESTS_SUPPORT_REMATORACLE_H
