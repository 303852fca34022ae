//===- OracleBench.cpp - The remat heuristic against the exact oracle -----===//
//
// Random DAGs (RematInstances.h) of 20, 40 and 60 nodes, several seeds,
// budgets at 90, 75 and 60 % of the remat-free live-bytes peak: per
// instance the oracle's status, extra FLOPs and solve time, the remat
// pass's arena, extra FLOPs and time, and their ratio; then the average
// ratio over the instances where the pass met the budget and CBC proved
// its schedule optimal (issue 16's acceptance figure), and the instances
// CBC could not prove within its time limit, with CBC's lower bound on
// their extra FLOPs (the bound column). The oracle starts from the
// pass's schedule when the pass met the budget (it only speeds the search
// up; the proof is CBC's).
//
//   remat-oracle-bench [--sizes=20,40,60] [--seeds=3] [--percents=90,75,60]
//                      [--time-limit=60]
//
// Prints a table; nothing passes or fails on it.
//
//===----------------------------------------------------------------------===//
#include "passes/RematInstances.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace snug;

int main(int argc, char **argv) {
  std::vector<unsigned> sizes = {20, 40, 60};
  unsigned seeds = 3;
  double timeLimit = 60;
  std::vector<unsigned> percents = {90, 75, 60};
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    bool isSizes = arg.startswith("--sizes="),
         isPercents = arg.startswith("--percents=");
    if (isSizes || isPercents) {
      std::vector<unsigned> &list = isSizes ? sizes : percents;
      list.clear();
      llvm::SmallVector<llvm::StringRef, 4> parts;
      arg.split('=').second.split(parts, ',');
      for (llvm::StringRef part : parts) {
        unsigned number;
        if (part.getAsInteger(10, number) || number == 0 ||
            (isPercents && number > 100)) {
          llvm::errs() << "error: " << arg.split('=').first << ": '" << part
                       << "' is not a " << (isSizes ? "size" : "percentage")
                       << "\n";
          return 1;
        }
        list.push_back(number);
      }
    } else if (arg.consume_front("--seeds=")) {
      if (arg.getAsInteger(10, seeds) || seeds == 0) {
        llvm::errs() << "error: --seeds must be a positive number\n";
        return 1;
      }
    } else if (arg.consume_front("--time-limit=")) {
      if (arg.getAsDouble(timeLimit) || !(timeLimit > 0)) {
        llvm::errs() << "error: --time-limit must be positive seconds\n";
        return 1;
      }
    } else {
      llvm::errs() << "error: unknown argument '" << arg << "'\n";
      return 1;
    }
  }
  llvm::outs() << "nodes seed  pct  budget | oracle          extra      bound "
                  "  time_s |  met   arena      extra  time_s |  ratio\n";
  double ratioSum = 0, heuristicSum = 0, oracleSum = 0;
  unsigned both = 0, unproven = 0, infeasible = 0, missed = 0;
  std::vector<std::pair<unsigned, double>> worst;
  for (unsigned size : sizes)
    for (uint64_t seed = 1; seed <= seeds; ++seed) {
      auto make = [&] { return makeRematRandomModule(seed, size); };
      llvm::Expected<RematComparison> free =
          compareRemat(make, uint64_t(1) << 40, {}, false);
      if (!free) {
        llvm::errs() << "error: " << llvm::toString(free.takeError()) << "\n";
        return 2;
      }
      for (unsigned percent : percents) {
        uint64_t budget = free->freePeak * percent / 100;
        RematOracleOptions options;
        options.timeLimitSeconds = timeLimit;
        llvm::Expected<RematComparison> c =
            compareRemat(make, budget, options, true);
        if (!c) {
          llvm::errs() << "error: " << llvm::toString(c.takeError()) << "\n";
          return 2;
        }
        const RematOracleResult &oracle = c->oracle;
        using Status = RematOracleResult::Status;
        bool solved = oracle.status == Status::Optimal;
        std::string ratio = "-";
        if (solved && c->heuristicMet) {
          double r = oracle.extraCost == 0
                         ? (c->heuristicExtra == 0 ? 1.0 : INFINITY)
                         : double(c->heuristicExtra) / double(oracle.extraCost);
          ratioSum += r;
          heuristicSum += double(c->heuristicExtra);
          oracleSum += double(oracle.extraCost);
          ++both;
          ratio = llvm::formatv("{0:f3}", r).str();
        }
        unproven += oracle.status == Status::Feasible ||
                    oracle.status == Status::Unknown;
        infeasible += oracle.status == Status::Infeasible;
        missed += oracle.status != Status::Infeasible && !c->heuristicMet;
        llvm::outs() << llvm::format(
            "%5u %4u %3u%% %7llu | %-10s %10llu %10.0f %8.2f | %4s %7llu "
            "%10llu %7.3f | %6s\n",
            unsigned(c->graph.nodes.size() - c->graph.getNumInputs()),
            unsigned(seed), percent, (unsigned long long)budget,
            getRematOracleStatusName(oracle.status).str().c_str(),
            (unsigned long long)oracle.extraCost,
            oracle.status == Status::Infeasible
                ? 0.0
                : std::max(0.0, oracle.bestBound -
                                    double(c->graph.getBaseCost())),
            oracle.seconds,
            c->heuristicMet ? "yes" : "no",
            (unsigned long long)c->heuristicArena,
            (unsigned long long)c->heuristicExtra, c->heuristicSeconds,
            ratio.c_str());
        llvm::outs().flush();
      }
    }
  llvm::outs() << "\ninstances where the pass met the budget and CBC proved "
                  "the optimum: "
               << both << "\n";
  if (both)
    llvm::outs() << llvm::format(
        "average heuristic/oracle extra-FLOPs ratio: %.4f (ratio of sums "
        "%.4f)\n",
        ratioSum / both, oracleSum > 0 ? heuristicSum / oracleSum : 1.0);
  llvm::outs() << "oracle infeasible: " << infeasible
               << "; not proven within " << llvm::format("%g", timeLimit)
               << " s: " << unproven
               << "; not proven infeasible but missed by the pass: "
               << missed << "\n";
  return 0;
}
