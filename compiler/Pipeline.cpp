//===- Pipeline.cpp - The default pass pipelines and their options --------===//
#include "compiler/Pipeline.h"
#include "passes/simplify/ConstantEval.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cassert>
#include <cstdio>

namespace snug {

/// The passes after import at the model's precision.
static PipelineSteps getDefaultImportSteps() {
  // The folding limits are spelled out so that a bundle's pipeline string
  // says what was folded (passes/simplify/ConstantEval.h has the defaults).
  return {{"fold-constants",
           {{"max-bytes", std::to_string(kDefaultFoldMaxBytes)},
            {"max-expand-bytes", std::to_string(kDefaultFoldMaxExpandBytes)}}},
          {"dce", {}},
          {"dedupe-weights", {}},
          {"fuse", {}}};
}

llvm::StringRef getDefaultImportPipeline() {
  static const std::string pipeline = printPipeline(getDefaultImportSteps());
  return pipeline;
}

PipelineSteps getImportSteps(const PlanningOptions &planning) {
  PipelineSteps steps = getDefaultImportSteps();
  if (planning.precision == "fp32")
    return steps;
  if (planning.precision == "tf32") {
    // Math, not storage: after fuse, which decides the epilogues the pass
    // reads (passes/precision/Tf32Math.cpp).
    PipelineStep tf32{"tf32-math", {}};
    if (!planning.keepFp32.empty())
      tf32.options.push_back({"keep", planning.keepFp32});
    steps.push_back(std::move(tf32));
    return steps;
  }
  // Storage: before fuse, so that the groups it forms hold the lowered
  // types, and the casts lower-precision inserts can join them.
  PipelineStep lower{"lower-precision",
                     {{"to", planning.precision == "bf16" ? "bf16" : "f16"}}};
  if (!planning.keepFp32.empty())
    lower.options.push_back({"keep", planning.keepFp32});
  if (planning.ioPrecision == "lowered")
    lower.options.push_back({"io", "lowered"});
  bool inserted = insertStepBefore(steps, "fuse", std::move(lower));
  assert(inserted && "the default import pipeline runs fuse");
  // Inference BatchNorms folded while their parameters are f32
  // (passes/fusion/FoldBatchNorms.cpp).
  inserted = insertStepBefore(steps, "lower-precision", {"fold-batchnorm", {}});
  assert(inserted && "lower-precision was just inserted");
  (void)inserted;
  return steps;
}

std::string getImportPipeline(const PlanningOptions &planning) {
  return printPipeline(getImportSteps(planning));
}

/// The shortest text that reads back as `seconds` (2 -> "2", 0.5 -> "0.5").
static std::string formatNumber(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", seconds);
  return buffer;
}

double getScheduleTimeShare(const PlanningOptions &options) {
  return options.schedule ? options.timeLimitSeconds * kScheduleTimeShare : 0;
}

PipelineSteps getPlanningSteps(const PlanningOptions &options) {
  // One budget for the whole of planning: the schedule pass takes its share
  // and plan-memory (liveness, packing, its own check) what remains.
  double scheduleSeconds = getScheduleTimeShare(options);
  double planSeconds =
      std::max(0.0, options.timeLimitSeconds - scheduleSeconds);
  PipelineSteps steps;
  if (options.schedule)
    steps.push_back(
        {"schedule", {{"time-limit", formatNumber(scheduleSeconds)}}});
  // remat (and offload) plan as plan-memory will (same planner, alignment
  // and scratch), with a short limit per plan: they plan once per decision.
  using Options = std::vector<std::pair<std::string, std::string>>;
  Options shared = {{"planner", options.planner},
                    {"alignment", std::to_string(options.alignment)}};
  Options scratch = {
      {"target", options.target},
      {"cublas-workspace", std::to_string(options.cublasWorkspaceBytes)}};
  auto withBudget = [&](const char *pass, Options first) {
    PipelineStep step{pass, std::move(first)};
    step.options.insert(step.options.end(), shared.begin(), shared.end());
    step.options.insert(step.options.end(), scratch.begin(), scratch.end());
    return step;
  };
  std::string budget = std::to_string(options.arenaBudgetBytes);
  if (options.arenaBudgetBytes && options.allowOffload)
    steps.push_back(withBudget(
        "offload",
        {{"arena-budget", budget},
         {"host-bandwidth", formatNumber(options.offloadBandwidthGBs)}}));
  if (options.arenaBudgetBytes)
    steps.push_back(withBudget("remat", {{"arena-budget", budget}}));
  // After every pass that orders the schedule; changes nothing in a graph
  // without an If on runtime data.
  steps.push_back({"guard-branches", {}});
  PipelineStep plan{"plan-memory", shared};
  plan.options.push_back({"time-limit", formatNumber(planSeconds)});
  plan.options.insert(plan.options.end(), scratch.begin(), scratch.end());
  steps.push_back(std::move(plan));
  if (options.verifyPlan)
    steps.push_back({"verify-plan", {}});
  return steps;
}

std::string getPlanningPipeline(const PlanningOptions &options) {
  return printPipeline(getPlanningSteps(options));
}

std::string expandPipelineNames(llvm::StringRef pipeline,
                                const PlanningOptions &planning) {
  // Split at top-level commas only: a pass's options in braces may hold
  // anything.
  std::string result;
  auto append = [&](llvm::StringRef element) {
    element = element.trim();
    std::string expanded = element.str();
    if (element == "import")
      expanded = getImportPipeline(planning);
    else if (element == "plan")
      expanded = getPlanningPipeline(planning);
    else if (element == "default") {
      PipelineSteps steps = getImportSteps(planning);
      PipelineSteps plan = getPlanningSteps(planning);
      steps.insert(steps.end(), plan.begin(), plan.end());
      expanded = printPipeline(steps);
    }
    if (expanded.empty())
      return;
    result += (result.empty() ? "" : ",") + expanded;
  };
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < pipeline.size(); ++i) {
    char c = pipeline[i];
    if (c == '{')
      ++depth;
    else if (c == '}')
      --depth;
    else if (c == ',' && depth == 0) {
      append(pipeline.slice(start, i));
      start = i + 1;
    }
  }
  append(pipeline.substr(start));
  return result;
}

llvm::Expected<std::unique_ptr<ir::Module>>
importAndRunPipeline(llvm::StringRef path, const ImportOptions &options,
                     llvm::StringRef pipeline) {
  PassManager passManager;
  // A bad pipeline is reported before the (possibly slow) import.
  if (llvm::Error error =
          passManager.addPipeline(expandPipelineNames(pipeline)))
    return error;
  auto module = importOnnxModel(path, options);
  if (!module)
    return module.takeError();
  if (llvm::Error error = passManager.run(**module))
    return error;
  return module;
}

} // namespace snug
