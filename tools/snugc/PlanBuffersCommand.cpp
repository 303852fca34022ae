//===- PlanBuffersCommand.cpp - snugc plan-buffers ------------------------===//
//
// `snugc plan-buffers FILE.csv`: plans a raw buffer-packing problem (rows
// `id,lower,upper,size`, each buffer live over [lower, upper)) with the
// IR-free planner and prints arena, lower bound, their ratio and the time,
// so the packer can be measured on its own against published figures
// (../shared/bench-data/packing). Alignment is 1 unless --alignment says
// otherwise. Every plan is checked with verifyMemoryPlan before it is shown.
//
//===----------------------------------------------------------------------===//
#include "tools/snugc/SnugcCommands.h"
#include "tools/snugc/SnugcCommon.h"

#include "compiler/MemoryReport.h"
#include "passes/planner/BufferTrace.h"
#include "passes/planner/MemoryPlanner.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"

namespace cl = llvm::cl;

namespace snug {
namespace snugc {

cl::SubCommand &getPlanBuffersCommand() {
  static cl::SubCommand command(
      "plan-buffers", "Plan a raw buffer problem (CSV: id,lower,upper,size)");
  return command;
}

static cl::list<std::string> csvPaths(cl::Positional, cl::OneOrMore,
                                      cl::desc("<problem.csv>..."),
                                      cl::sub(getPlanBuffersCommand()));
static cl::opt<std::string>
    plannerName("planner",
                cl::desc("none|greedy-size|greedy-breadth|search|best"),
                cl::init("best"), cl::sub(getPlanBuffersCommand()));
static cl::opt<double> timeLimit("time-limit",
                                 cl::desc("Planning budget in seconds, a "
                                          "hard cap on each problem"),
                                 cl::init(10.0),
                                 cl::sub(getPlanBuffersCommand()));
static cl::opt<uint64_t> alignment("alignment",
                                   cl::desc("Offset alignment in bytes"),
                                   cl::init(1),
                                   cl::sub(getPlanBuffersCommand()));
static cl::opt<uint64_t> seed("seed", cl::desc("Search seed"), cl::init(0),
                              cl::sub(getPlanBuffersCommand()));
static cl::opt<std::string> format("format", cl::desc("text|json"),
                                   cl::init("text"),
                                   cl::sub(getPlanBuffersCommand()));

int runPlanBuffers() {
  llvm::Expected<PlannerStrategy> strategy = parsePlannerStrategy(plannerName);
  if (!strategy)
    return reportError(strategy.takeError());
  if (!llvm::isPowerOf2_64(alignment)) {
    llvm::errs() << "error: --alignment=" << alignment
                 << " is not a power of two\n";
    return ExitUserError;
  }
  // !(x >= 0) also rejects NaN; above a day is surely a typo (and would
  // overflow the clock arithmetic further down).
  if (!(timeLimit >= 0) || timeLimit > 86400) {
    llvm::errs() << "error: --time-limit=" << timeLimit
                 << " must be between 0 and 86400 seconds\n";
    return ExitUserError;
  }
  if (format != "text" && format != "json") {
    llvm::errs() << "error: --format must be text or json, not '" << format
                 << "'\n";
    return ExitUserError;
  }
  PlannerOptions options;
  options.strategy = *strategy;
  options.timeLimitSeconds = timeLimit;
  options.seed = seed;

  llvm::json::Array results;
  if (format == "text")
    llvm::outs() << llvm::format("%-44s %8s %14s %14s %8s %10s  %s\n",
                                 static_cast<const char *>("problem"),
                                 static_cast<const char *>("buffers"),
                                 static_cast<const char *>("arena"),
                                 static_cast<const char *>("lower bound"),
                                 static_cast<const char *>("ratio"),
                                 static_cast<const char *>("ms"),
                                 static_cast<const char *>("planner"));
  for (const std::string &path : csvPaths) {
    llvm::Expected<std::vector<PlanBuffer>> buffers = readBufferTrace(path);
    if (!buffers)
      return reportError(buffers.takeError());
    for (PlanBuffer &buffer : *buffers)
      buffer.alignment = alignment;
    llvm::Expected<MemoryPlan> plan = planMemory(*buffers, options);
    if (!plan)
      return reportError(plan.takeError());
    if (llvm::Error error = verifyMemoryPlan(*buffers, *plan)) {
      llvm::errs() << path << ": internal error: the plan does not verify: "
                   << toString(std::move(error)) << '\n';
      return ExitInternalError;
    }
    double ratio = plan->lowerBoundBytes
                       ? double(plan->arenaBytes) / plan->lowerBoundBytes
                       : 1.0;
    if (format == "text")
      llvm::outs() << llvm::format(
          "%-44s %8zu %14llu %14llu %8.4f %10.1f  %s\n", path.c_str(),
          buffers->size(), (unsigned long long)plan->arenaBytes,
          (unsigned long long)plan->lowerBoundBytes, ratio, plan->planningMs,
          getPlannerStrategyName(plan->strategy).str().c_str());
    else
      results.push_back(llvm::json::Object{
          {"problem", toJsonString(path)},
          {"buffers", int64_t(buffers->size())},
          {"arena_bytes", int64_t(plan->arenaBytes)},
          {"lower_bound_bytes", int64_t(plan->lowerBoundBytes)},
          {"ratio", ratio},
          {"planning_ms", plan->planningMs},
          {"planner", getPlannerStrategyName(plan->strategy)}});
  }
  if (format == "json")
    llvm::outs() << llvm::formatv("{0:2}", llvm::json::Value(std::move(results)))
                 << '\n';
  return ExitOk;
}

} // namespace snugc
} // namespace snug
