//===- Pipeline.cpp - The default pass pipelines and their options --------===//
#include "compiler/Pipeline.h"
#include "passes/simplify/ConstantEval.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cstdio>

namespace snug {

llvm::StringRef getDefaultImportPipeline() {
  // The folding limits are spelled out so that a bundle's pipeline string
  // says what was folded (passes/simplify/ConstantEval.h has the defaults).
  static const std::string pipeline =
      "fold-constants{max-bytes=" + std::to_string(kDefaultFoldMaxBytes) +
      " max-expand-bytes=" + std::to_string(kDefaultFoldMaxExpandBytes) +
      "},dce,dedupe-weights,fuse";
  return pipeline;
}

std::string getImportPipeline(const PlanningOptions &planning) {
  std::string pipeline = getDefaultImportPipeline().str();
  if (planning.precision == "fp32")
    return pipeline;
  if (planning.precision == "tf32") {
    // Math, not storage: after fuse, which decides the epilogues the pass
    // reads (passes/precision/Tf32Math.cpp).
    pipeline += ",tf32-math";
    if (!planning.keepFp32.empty())
      pipeline += "{keep=" + planning.keepFp32 + "}";
    return pipeline;
  }
  std::string lower = "lower-precision{to=" +
                      std::string(planning.precision == "bf16" ? "bf16"
                                                               : "f16");
  if (!planning.keepFp32.empty())
    lower += " keep=" + planning.keepFp32;
  if (planning.ioPrecision == "lowered")
    lower += " io=lowered";
  lower += "},";
  size_t fuse = pipeline.rfind("fuse");
  return pipeline.substr(0, fuse) + lower + pipeline.substr(fuse);
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

std::string getPlanningPipeline(const PlanningOptions &options) {
  // One budget for the whole of planning: the schedule pass takes its share
  // and plan-memory (liveness, packing, its own check) what remains.
  double scheduleSeconds = getScheduleTimeShare(options);
  double planSeconds = std::max(0.0, options.timeLimitSeconds - scheduleSeconds);
  std::string pipeline =
      options.schedule
          ? "schedule{time-limit=" + formatNumber(scheduleSeconds) + "},"
          : "";
  // remat plans as plan-memory will (same planner, alignment and
  // scratch), with a short limit per plan: it plans once per decision.
  std::string shared = "planner=" + options.planner +
                       " alignment=" + std::to_string(options.alignment);
  std::string scratch =
      " target=" + options.target +
      " cublas-workspace=" + std::to_string(options.cublasWorkspaceBytes);
  if (options.arenaBudgetBytes && options.allowOffload)
    pipeline += "offload{arena-budget=" +
                std::to_string(options.arenaBudgetBytes) +
                " host-bandwidth=" + formatNumber(options.offloadBandwidthGBs) +
                " " + shared + scratch + "},";
  if (options.arenaBudgetBytes)
    pipeline += "remat{arena-budget=" +
                std::to_string(options.arenaBudgetBytes) + " " + shared +
                scratch + "},";
  pipeline += "plan-memory{" + shared +
              " time-limit=" + formatNumber(planSeconds) + scratch + "}";
  if (options.verifyPlan)
    pipeline += ",verify-plan";
  return pipeline;
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
    else if (element == "default")
      expanded = getImportPipeline(planning) + "," +
                 getPlanningPipeline(planning);
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
  if (llvm::Error error = passManager.addPipeline(expandPipelineNames(pipeline)))
    return error;
  auto module = importOnnxModel(path, options);
  if (!module)
    return module.takeError();
  if (llvm::Error error = passManager.run(**module))
    return error;
  return module;
}

} // namespace snug
