//===- RematInstances.h - Remat problems for tests and benches --*- C++ -*-===//
//
// Generated modules on which the remat pass and the exact oracle
// (RematOracle.h) can be compared, and the comparison itself:
//  - training-like chains: forward f1..fn, then backward bn..b1 where b_i
//    reads f_i and b_(i+1) (Mul when their widths agree, else a Gemm whose
//    bias operand is f_i): every forward value is live from its step to its
//    mirror in the backward pass, the shape of issue 18's training graphs;
//  - random DAGs: elementwise unary and binary ops and MatMuls with a
//    weight over f32[1,k], every sink a graph output.
// Every value is f32[1,k] with k <= 256 and every node has one result and
// is no view, and the comparison plans with the host target (no cuBLAS
// scratch), in-place and concat sharing off: what RematModule.h needs so
// that plan-memory's live-bytes bound is the oracle's peak.
//
// The generators use SplitMix64, so a (seed, size) pair gives the same
// module everywhere.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_SUPPORT_REMATINSTANCES_H
#define SNUG_TESTS_SUPPORT_REMATINSTANCES_H

#include "passes/memory/PlanMemory.h"
#include "tests/support/RematOracle.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <memory>

namespace snug {

/// A chain of `layers` forward and as many backward nodes.
std::unique_ptr<ir::Module> makeRematChainModule(uint64_t seed,
                                                 unsigned layers);
/// A random DAG of `nodes` nodes.
std::unique_ptr<ir::Module> makeRematRandomModule(uint64_t seed,
                                                  unsigned nodes);

/// The plan-memory options both sides of a comparison use: alignment 256,
/// host target, no in-place or concat sharing.
PlanMemoryOptions getRematComparisonPlanOptions();
/// The same as remat pass options (key, value).
std::vector<std::pair<std::string, std::string>> getRematComparisonPassOptions();

/// One budget, both methods.
struct RematComparison {
  uint64_t budget = 0;
  /// The live-bytes peak and the packed arena without remat.
  uint64_t freePeak = 0, freeArena = 0;
  /// The remat pass: its module planned again afterwards.
  bool heuristicMet = false;
  uint64_t heuristicArena = 0, heuristicLiveBytes = 0, heuristicExtra = 0;
  double heuristicSeconds = 0;
  RematSchedule heuristicSchedule;
  RematGraph graph;
  RematOracleResult oracle;
};

/// The heuristic's half of compareRemat: everything but `oracle`.
llvm::Expected<RematComparison>
runRematHeuristic(llvm::function_ref<std::unique_ptr<ir::Module>()> make,
                  uint64_t budget);

/// Runs the remat pass with arena-budget=`budget` on a module `make`
/// returns and the oracle on that module's graph with `budget` live bytes
/// (seeded with the heuristic's schedule when `seedOracle`). Fails when a
/// step fails or the two memory models disagree on the heuristic's
/// schedule (its replayed peak is not plan-memory's bound, or its replayed
/// cost is not the module's FLOPs).
llvm::Expected<RematComparison>
compareRemat(llvm::function_ref<std::unique_ptr<ir::Module>()> make,
             uint64_t budget, RematOracleOptions oracleOptions,
             bool seedOracle);

} // namespace snug

#endif // SNUG_TESTS_SUPPORT_REMATINSTANCES_H
