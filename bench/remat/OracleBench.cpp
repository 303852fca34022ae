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
// up; the proof is CBC's); where that search ends unproven, a second one
// starts from nothing and the better of the two counts (time_s is both).
// The averages are printed per size: against the proven optimum, and
// separately against CBC's best schedule where it proved none (ratio
// marked *; CBC's best costs at least the optimum, so that ratio can
// understate the true one).
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
#include <map>

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
  unsigned both = 0, unproven = 0, infeasible = 0, missed = 0, starts = 0;
  struct Ratios {
    double sum = 0;
    unsigned count = 0;
  };
  std::map<unsigned, Ratios> proven, best;
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
        using Status = RematOracleResult::Status;
        // Not proven from the pass's schedule: CBC's search from it can
        // stay near it (seen at 60 nodes, where a search from scratch found
        // a schedule 34 % cheaper), so a second search starts from nothing
        // and the better schedule (and the higher bound) is kept.
        if (c->oracle.startGiven && c->oracle.status == Status::Feasible) {
          llvm::Expected<RematOracleResult> fresh =
              solveRematOracle(c->graph, budget, options);
          if (!fresh) {
            llvm::errs() << "error: " << llvm::toString(fresh.takeError())
                         << "\n";
            return 2;
          }
          double bound = std::max(c->oracle.bestBound, fresh->bestBound);
          double seconds = c->oracle.seconds + fresh->seconds;
          if (fresh->status == Status::Optimal ||
              (fresh->status == Status::Feasible &&
               fresh->extraCost < c->oracle.extraCost)) {
            fresh->startGiven = true;
            c->oracle = std::move(*fresh);
          }
          if (c->oracle.status != Status::Optimal)
            c->oracle.bestBound = bound;
          c->oracle.seconds = seconds;
        }
        const RematOracleResult &oracle = c->oracle;
        bool solved = oracle.status == Status::Optimal;
        std::string ratio = "-";
        if ((solved || oracle.status == Status::Feasible) && c->heuristicMet) {
          double r = oracle.extraCost == 0
                         ? (c->heuristicExtra == 0 ? 1.0 : INFINITY)
                         : double(c->heuristicExtra) / double(oracle.extraCost);
          // Against the optimum where CBC proved it, else against its best
          // schedule (marked *): an upper bound on the optimum, so the
          // ratio is a lower bound on the true one.
          Ratios &ratios = (solved ? proven : best)[size];
          ratios.sum += r;
          ++ratios.count;
          if (solved) {
            ratioSum += r;
            heuristicSum += double(c->heuristicExtra);
            oracleSum += double(oracle.extraCost);
            ++both;
          }
          ratio = llvm::formatv("{0:f3}{1}", r, solved ? "" : "*").str();
        }
        starts += oracle.startGiven;
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
  auto printRatios = [&](const char *what,
                         const std::map<unsigned, Ratios> &bySize) {
    Ratios all;
    for (const auto &[size, ratios] : bySize) {
      llvm::outs() << llvm::format("%s, %u nodes: %.4f over %u\n", what, size,
                                   ratios.sum / ratios.count, ratios.count);
      all.sum += ratios.sum;
      all.count += ratios.count;
    }
    if (all.count)
      llvm::outs() << llvm::format("%s, all sizes: %.4f over %u\n", what,
                                   all.sum / all.count, all.count);
  };
  printRatios("average ratio against the proven optimum", proven);
  printRatios("average ratio against CBC's best unproven schedule (*)", best);
  llvm::outs() << "CBC started from the pass's schedule: " << starts
               << " instances\n";
  llvm::outs() << "oracle infeasible: " << infeasible
               << "; not proven within " << llvm::format("%g", timeLimit)
               << " s: " << unproven
               << "; not proven infeasible but missed by the pass: "
               << missed << "\n";
  return 0;
}
