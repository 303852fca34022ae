//===- PlanBuffersBench.cpp - Memory planner benchmark --------------------===//
//
// Plans every *.csv problem under the directories given on the command line
// with each planner strategy and prints a markdown table: buffers, lower
// bound, arena per strategy, best/LB and planning times, then per-strategy
// summaries (problems at the bound, geometric mean of arena/LB). Every plan
// is checked with verifyMemoryPlan; a failed check makes the exit status 1.
//
// Usage: plan-buffers-bench [--time-limit=SECONDS] [--seed=N]
//                           [--random=N[,N...]] [--training=N[,N...]]
//                           [--tilings=COUNT] [--tiling-seed=N]
//                           [--only=TEXT] [--strategies=best,...] DIR...
// --random adds synthetic DAG-like problems of N buffers (the shape used by
// the unit tests) to the table, e.g. to time a 10,000-buffer plan;
// --training adds generated training steps of about N buffers and
// --tilings COUNT guillotine tilings of 200-800 buffers (optimum = LB), see
// tests/support/PackingInstances.h; --tiling-seed moves the tilings' seeds (1000 by
// default) to check other instances. --only keeps the problems whose name
// contains TEXT (one tiling of a series, say). --strategies limits the
// columns (the last one listed is the one summarised as "best").
//
//===----------------------------------------------------------------------===//
#include "passes/planner/BufferTrace.h"
#include "passes/planner/MemoryPlanner.h"
#include "tests/support/PackingInstances.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace snug;

namespace {

std::vector<PlannerStrategy> kStrategies = {
    PlannerStrategy::None, PlannerStrategy::GreedySize,
    PlannerStrategy::GreedyBreadth, PlannerStrategy::Search,
    PlannerStrategy::Best};
constexpr size_t kMaxStrategies = 5;

struct Problem {
  std::string name;
  std::vector<PlanBuffer> buffers;
};

struct Summary {
  size_t atBound = 0;
  double logRatioSum = 0;
  double totalMs = 0;
  double maxMs = 0;
  double maxRatio = 1;
};

using Random = SplitMix64;

/// A DAG-like activation trace: one buffer produced per step, most consumed
/// within a few steps, some kept for skip connections, a few for long.
std::vector<PlanBuffer> makeRandomProblem(size_t n, uint64_t seed) {
  Random random{seed};
  std::vector<PlanBuffer> buffers;
  for (size_t i = 0; i < n; ++i) {
    PlanBuffer buffer;
    buffer.id = int64_t(i);
    buffer.firstStep = int64_t(i);
    uint64_t kind = random.below(100);
    uint64_t life = kind < 70   ? 1 + random.below(8)
                    : kind < 95 ? 1 + random.below(64)
                                : 1 + random.below(std::max<size_t>(n / 8, 1));
    buffer.lastStep = buffer.firstStep + int64_t(life) - 1;
    // Log-uniform between 256 B and 4 MiB, in 256-byte units.
    double exponent = 8 + 14 * double(random.below(1 << 20)) / (1 << 20);
    buffer.bytes = (uint64_t(std::pow(2.0, exponent)) + 255) / 256 * 256;
    buffer.alignment = 256;
    buffers.push_back(buffer);
  }
  return buffers;
}

bool collectProblems(llvm::StringRef dir, std::vector<Problem> &problems) {
  std::error_code ec;
  std::vector<std::string> paths;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".csv")
      paths.push_back(it->path());
  if (ec) {
    llvm::errs() << dir << ": error: " << ec.message() << "\n";
    return false;
  }
  std::sort(paths.begin(), paths.end());
  for (const std::string &path : paths) {
    llvm::Expected<std::vector<PlanBuffer>> buffers = readBufferTrace(path);
    if (!buffers) {
      llvm::errs() << llvm::toString(buffers.takeError()) << "\n";
      return false;
    }
    problems.push_back(
        {llvm::sys::path::filename(path).str(), std::move(*buffers)});
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  PlannerOptions base;
  std::vector<std::string> dirs;
  std::vector<size_t> randomSizes, trainingSizes;
  size_t tilings = 0;
  uint64_t tilingSeed = 1000;
  std::string only;
  auto parseSizes = [](llvm::StringRef arg, std::vector<size_t> &out) {
    llvm::SmallVector<llvm::StringRef, 4> sizes;
    arg.split(sizes, ',');
    for (llvm::StringRef size : sizes) {
      size_t n = 0;
      if (size.getAsInteger(10, n) || n == 0)
        return false;
      out.push_back(n);
    }
    return true;
  };
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg.consume_front("--time-limit=")) {
      if (arg.getAsDouble(base.timeLimitSeconds)) {
        llvm::errs() << "error: bad --time-limit\n";
        return 2;
      }
    } else if (arg.consume_front("--seed=")) {
      if (arg.getAsInteger(10, base.seed)) {
        llvm::errs() << "error: bad --seed\n";
        return 2;
      }
    } else if (arg.consume_front("--random=")) {
      if (!parseSizes(arg, randomSizes)) {
        llvm::errs() << "error: bad --random\n";
        return 2;
      }
    } else if (arg.consume_front("--training=")) {
      if (!parseSizes(arg, trainingSizes)) {
        llvm::errs() << "error: bad --training\n";
        return 2;
      }
    } else if (arg.consume_front("--tilings=")) {
      if (arg.getAsInteger(10, tilings)) {
        llvm::errs() << "error: bad --tilings\n";
        return 2;
      }
    } else if (arg.consume_front("--tiling-seed=")) {
      if (arg.getAsInteger(10, tilingSeed)) {
        llvm::errs() << "error: bad --tiling-seed\n";
        return 2;
      }
    } else if (arg.consume_front("--only=")) {
      only = arg.str();
    } else if (arg.consume_front("--strategies=")) {
      llvm::SmallVector<llvm::StringRef, 5> names;
      arg.split(names, ',');
      kStrategies.clear();
      for (llvm::StringRef name : names) {
        llvm::Expected<PlannerStrategy> strategy = parsePlannerStrategy(name);
        if (!strategy || kStrategies.size() == kMaxStrategies) {
          llvm::consumeError(strategy.takeError());
          llvm::errs() << "error: bad --strategies\n";
          return 2;
        }
        kStrategies.push_back(*strategy);
      }
    } else if (arg.startswith("-")) {
      llvm::errs() << "usage: " << argv[0]
                   << " [--time-limit=SECONDS] [--seed=N] [--random=N,...] "
                      "[--training=N,...] [--tilings=COUNT] [--tiling-seed=N] "
                      "[--only=TEXT] [--strategies=NAME,...] DIR...\n";
      return 2;
    } else {
      dirs.push_back(arg.str());
    }
  }

  std::vector<Problem> problems;
  for (const std::string &dir : dirs)
    if (!collectProblems(dir, problems))
      return 1;
  for (size_t n : randomSizes)
    problems.push_back(
        {"random-" + std::to_string(n), makeRandomProblem(n, /*seed=*/n)});
  for (size_t n : trainingSizes)
    problems.push_back(
        {"training-" + std::to_string(n), makeTrainingTrace(n, /*seed=*/n)});
  // Tiling k has 200 + 600 k / COUNT pieces over a 1 MiB x 1000-step
  // rectangle (seed --tiling-seed + k).
  for (size_t k = 0; k < tilings; ++k) {
    size_t pieces = 200 + 600 * k / std::max<size_t>(tilings, 1);
    problems.push_back(
        {"tiling-" + std::to_string(pieces) + "-s" +
             std::to_string(tilingSeed + k),
         makeGuillotineTiling(1 << 20, 1000, pieces, tilingSeed + k)});
  }
  if (!only.empty())
    llvm::erase_if(problems, [&](const Problem &problem) {
      return problem.name.find(only) == std::string::npos;
    });

  llvm::outs() << "| trace | buffers | LB |";
  for (PlannerStrategy strategy : kStrategies)
    llvm::outs() << " " << getPlannerStrategyName(strategy) << " |";
  llvm::outs() << " best/LB | winner | search ms | best ms |\n|---|--:|--:|";
  for (size_t s = 0; s < kStrategies.size(); ++s)
    llvm::outs() << "--:|";
  llvm::outs() << "--:|---|--:|--:|\n";

  Summary summaries[kMaxStrategies];
  bool allValid = true;
  for (const Problem &problem : problems) {
    MemoryPlan plans[kMaxStrategies];
    for (size_t s = 0; s < kStrategies.size(); ++s) {
      PlannerOptions options = base;
      options.strategy = kStrategies[s];
      llvm::Expected<MemoryPlan> plan = planMemory(problem.buffers, options);
      if (!plan) {
        llvm::errs() << problem.name << ": " << llvm::toString(plan.takeError())
                     << "\n";
        return 1;
      }
      if (llvm::Error error = verifyMemoryPlan(problem.buffers, *plan)) {
        llvm::errs() << problem.name << " ("
                     << getPlannerStrategyName(kStrategies[s])
                     << "): invalid plan: " << llvm::toString(std::move(error))
                     << "\n";
        allValid = false;
      }
      plans[s] = std::move(*plan);
      Summary &summary = summaries[s];
      uint64_t bound = plans[s].lowerBoundBytes;
      summary.atBound += plans[s].arenaBytes == bound;
      summary.logRatioSum +=
          bound ? std::log(double(plans[s].arenaBytes) / double(bound)) : 0;
      summary.totalMs += plans[s].planningMs;
      summary.maxMs = std::max(summary.maxMs, plans[s].planningMs);
      if (bound)
        summary.maxRatio = std::max(
            summary.maxRatio, double(plans[s].arenaBytes) / double(bound));
    }
    const MemoryPlan &best = plans[kStrategies.size() - 1];
    llvm::outs() << "| " << problem.name << " | " << problem.buffers.size()
                 << " | " << best.lowerBoundBytes << " |";
    for (size_t s = 0; s < kStrategies.size(); ++s)
      llvm::outs() << " " << plans[s].arenaBytes << " |";
    double ratio = best.lowerBoundBytes
                       ? double(best.arenaBytes) / double(best.lowerBoundBytes)
                       : 1.0;
    llvm::outs() << " " << llvm::format("%.3f", ratio) << " | "
                 << getPlannerStrategyName(best.strategy) << " | "
                 << llvm::format("%.1f", plans[kStrategies.size() - (kStrategies.size() > 1 ? 2 : 1)].planningMs)
                 << " | " << llvm::format("%.1f", best.planningMs) << " |\n";
  }

  llvm::outs() << "\n| strategy | at LB | geomean arena/LB | worst arena/LB | "
                  "total ms | max ms |\n|---|--:|--:|--:|--:|--:|\n";
  for (size_t s = 0; s < kStrategies.size(); ++s) {
    const Summary &summary = summaries[s];
    double geomean = problems.empty()
                         ? 1.0
                         : std::exp(summary.logRatioSum / problems.size());
    llvm::outs() << "| " << getPlannerStrategyName(kStrategies[s]) << " | "
                 << summary.atBound << "/" << problems.size() << " | "
                 << llvm::format("%.4f", geomean) << " | "
                 << llvm::format("%.4f", summary.maxRatio) << " | "
                 << llvm::format("%.1f", summary.totalMs) << " | "
                 << llvm::format("%.1f", summary.maxMs) << " |\n";
  }
  const Summary &best = summaries[kStrategies.size() - 1];
  llvm::outs() << "\nSummary (best): " << best.atBound << "/" << problems.size()
               << " at LB, geometric mean arena/LB "
               << llvm::format("%.4f", problems.empty()
                                           ? 1.0
                                           : std::exp(best.logRatioSum /
                                                      problems.size()))
               << "\n";
  return allValid ? 0 : 1;
}
