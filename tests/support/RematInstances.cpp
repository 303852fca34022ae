//===- RematInstances.cpp - Remat problems for tests and benches ---------===//
//
// See RematInstances.h. Widths come from a short list so that elementwise
// binary ops find partners and MatMuls change the sizes; weights are
// elided (nothing here evaluates the modules).
//
//===----------------------------------------------------------------------===//
#include "tests/support/RematInstances.h"

#include "passes/analysis/CostModel.h"
#include "tests/support/PackingInstances.h"
#include "passes/Passes.h"
#include "tests/support/RematModule.h"

#include <cassert>
#include <chrono>
#include <set>

namespace snug {
namespace {

using ir::DType;
using ir::Module;
using ir::TensorType;
using ir::Value;

constexpr int64_t kWidths[] = {32, 64, 128, 192, 256};

TensorType row(int64_t width) { return TensorType(DType::F32, {1, width}); }
int64_t widthOf(const Value *value) { return value->getType().getDims()[1]; }

/// Adds nodes while no two compute the same op on the same operands, which
/// RematModule.h needs to tell copies apart.
class Builder {
public:
  explicit Builder(llvm::StringRef name)
      : module(std::make_unique<Module>(name)) {}
  Value *add(llvm::StringRef op, llvm::ArrayRef<Value *> operands,
             int64_t width) {
    std::string key = op.str();
    for (const Value *operand : operands)
      key += "," + std::to_string(uintptr_t(operand));
    if (!seen.insert(key).second)
      return nullptr;
    return module->addNode(op, operands, {row(width)})->getResult(0);
  }
  Value *weight(int64_t rows, int64_t columns) {
    return module->addElidedWeight("w" + std::to_string(weights++),
                                   TensorType(DType::F32, {rows, columns}));
  }
  std::unique_ptr<Module> module;

private:
  std::set<std::string> seen;
  unsigned weights = 0;
};

const char *const kUnary[] = {"Relu", "Sigmoid", "Tanh", "Exp", "Neg"};

} // namespace

std::unique_ptr<ir::Module> makeRematChainModule(uint64_t seed,
                                                 unsigned layers) {
  SplitMix64 rng{seed};
  Builder builder("chain");
  auto width = [&] { return kWidths[rng.below(std::size(kWidths))]; };
  Value *x = builder.module->addInput("x", row(width()));
  std::vector<Value *> forward{x};
  for (unsigned i = 0; i < layers; ++i) {
    Value *previous = forward.back();
    int64_t next = rng.below(2) ? widthOf(previous) : width();
    Value *value =
        next == widthOf(previous)
            ? builder.add(kUnary[rng.below(4)], {previous}, next)
            : builder.add("MatMul", {previous, builder.weight(widthOf(previous), next)},
                          next);
    assert(value && "each layer reads a new value, so none repeats");
    forward.push_back(value);
  }
  Value *gradient = builder.add("Neg", {forward.back()}, widthOf(forward.back()));
  for (unsigned i = layers - 1; i >= 1; --i) {
    Value *saved = forward[i];
    gradient = widthOf(saved) == widthOf(gradient)
                   ? builder.add("Mul", {saved, gradient}, widthOf(saved))
                   : builder.add("Gemm",
                                 {gradient,
                                  builder.weight(widthOf(gradient),
                                                 widthOf(saved)),
                                  saved},
                                 widthOf(saved));
  }
  builder.module->setOutputs({gradient});
  return std::move(builder.module);
}

std::unique_ptr<ir::Module> makeRematRandomModule(uint64_t seed,
                                                  unsigned nodes) {
  SplitMix64 rng{seed};
  Builder builder("random");
  std::vector<Value *> values{builder.module->addInput(
      "x", row(kWidths[rng.below(std::size(kWidths))]))};
  while (builder.module->getNodes().size() < nodes) {
    // Mostly recent values, so that chains form; sometimes far back; half
    // the time one nothing reads yet, so that few values end as sinks
    // (graph outputs, live to the end, which would leave remat no room).
    size_t window = std::min<size_t>(values.size(), 1 + rng.below(8));
    Value *a = values[values.size() - 1 - rng.below(window)];
    std::vector<Value *> unread;
    for (Value *value : values)
      if (value->getUses().empty())
        unread.push_back(value);
    if (unread.size() > 1 && rng.below(2))
      a = unread[rng.below(unread.size() - 1)];
    Value *result = nullptr;
    switch (rng.below(6)) {
    case 0:
    case 1:
      result = builder.add(kUnary[rng.below(std::size(kUnary))], {a},
                           widthOf(a));
      break;
    case 2:
    case 3: {
      Value *b = values[rng.below(values.size())];
      if (widthOf(b) == widthOf(a) && b != a)
        result = builder.add(rng.below(2) ? "Add" : "Mul", {a, b}, widthOf(a));
      break;
    }
    default: {
      int64_t width = kWidths[rng.below(std::size(kWidths))];
      result = builder.add("MatMul", {a, builder.weight(widthOf(a), width)},
                           width);
      break;
    }
    }
    if (result)
      values.push_back(result);
  }
  std::vector<Value *> sinks;
  for (Value *value : values)
    if (value->getUses().empty())
      sinks.push_back(value);
  builder.module->setOutputs(sinks);
  builder.module->eraseUnusedWeights();
  return std::move(builder.module);
}

PlanMemoryOptions getRematComparisonPlanOptions() {
  PlanMemoryOptions options;
  options.alignment = 256;
  options.scratch.cuda = false;
  options.sharing.inPlace = false;
  options.sharing.concatInPlace = false;
  return options;
}

std::vector<std::pair<std::string, std::string>>
getRematComparisonPassOptions() {
  return {{"alignment", "256"},
          {"target", "host"},
          {"in-place", "0"},
          {"concat", "0"}};
}

llvm::Expected<RematComparison>
runRematHeuristic(llvm::function_ref<std::unique_ptr<ir::Module>()> make,
                  uint64_t budget) {
  RematComparison comparison;
  comparison.budget = budget;
  PlanMemoryOptions planOptions = getRematComparisonPlanOptions();
  std::unique_ptr<ir::Module> module = make();
  llvm::Expected<RematModuleGraph> graph =
      buildRematGraph(*module, planOptions.alignment);
  if (!graph)
    return graph.takeError();
  comparison.graph = graph->graph;
  llvm::Expected<ModuleMemoryPlan> free = planModuleMemory(*module, planOptions);
  if (!free)
    return free.takeError();
  comparison.freePeak = free->lowerBoundBytes;
  comparison.freeArena = free->arenaBytes;

  std::unique_ptr<Pass> remat = createPassByName("remat");
  for (const auto &[key, value] : getRematComparisonPassOptions())
    if (llvm::Error error = remat->setOption(key, value))
      return error;
  if (llvm::Error error = remat->setOption("arena-budget", std::to_string(budget)))
    return error;
  auto start = std::chrono::steady_clock::now();
  llvm::Expected<bool> changed = remat->run(*module);
  comparison.heuristicSeconds = std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - start)
                                    .count();
  if (!changed)
    return changed.takeError();
  llvm::Expected<ModuleMemoryPlan> plan = planModuleMemory(*module, planOptions);
  if (!plan)
    return plan.takeError();
  comparison.heuristicArena = plan->arenaBytes;
  comparison.heuristicLiveBytes = plan->lowerBoundBytes;
  comparison.heuristicMet = plan->arenaBytes <= budget;
  const ir::Attribute *before = module->getAttribute("remat_flops_before");
  uint64_t flops = costOfModule(*module).getFlops();
  comparison.heuristicExtra = flops - uint64_t(before->getInt());
  llvm::Expected<RematSchedule> schedule = getRematSchedule(*graph, *module);
  if (!schedule)
    return schedule.takeError();
  comparison.heuristicSchedule = *schedule;
  llvm::Expected<RematReplay> replay =
      replayRematSchedule(graph->graph, *schedule);
  if (!replay)
    return replay.takeError();
  if (replay->peakBytes != plan->lowerBoundBytes || replay->cost != flops)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "remat comparison: the heuristic's schedule replays to " +
            std::to_string(replay->peakBytes) + " B at " +
            std::to_string(replay->cost) + " FLOPs, plan-memory says " +
            std::to_string(plan->lowerBoundBytes) + " B and the module " +
            std::to_string(flops) + " FLOPs");

  return comparison;
}

llvm::Expected<RematComparison>
compareRemat(llvm::function_ref<std::unique_ptr<ir::Module>()> make,
             uint64_t budget, RematOracleOptions oracleOptions,
             bool seedOracle) {
  llvm::Expected<RematComparison> comparison = runRematHeuristic(make, budget);
  if (!comparison)
    return comparison.takeError();
  if (seedOracle && comparison->heuristicMet)
    oracleOptions.start = comparison->heuristicSchedule;
  llvm::Expected<RematOracleResult> oracle =
      solveRematOracle(comparison->graph, budget, oracleOptions);
  if (!oracle)
    return oracle.takeError();
  comparison->oracle = std::move(*oracle);
  return comparison;
}

} // namespace snug
