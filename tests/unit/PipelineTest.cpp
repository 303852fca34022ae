//===- PipelineTest.cpp - The planning pipeline's options -----------------===//
//
// --time-limit bounds the whole of planning (issue 12 item 7): the schedule
// pass gets its share and plan-memory the rest, and the two add up to the
// limit; without the schedule pass plan-memory gets all of it.
//
//===----------------------------------------------------------------------===//
#include "compiler/Pipeline.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>

using namespace snug;

/// The time-limit=SECONDS option of `pass` in `pipeline`; -1 when absent.
static double timeLimitOf(const std::string &pipeline,
                          const std::string &pass) {
  std::smatch match;
  std::regex pattern("(^|,)" + pass + "\\{[^}]*time-limit=([0-9.e+-]+)");
  if (!std::regex_search(pipeline, match, pattern))
    return -1;
  return std::strtod(match[2].str().c_str(), nullptr);
}

TEST(PipelineTest, ScheduleAndPackerShareTheTimeLimit) {
  for (double limit : {0.0, 0.1, 2.0, 7.5, 300.0}) {
    PlanningOptions options;
    options.timeLimitSeconds = limit;
    std::string pipeline = getPlanningPipeline(options);
    double schedule = timeLimitOf(pipeline, "schedule");
    double packer = timeLimitOf(pipeline, "plan-memory");
    EXPECT_GE(schedule, 0) << pipeline;
    EXPECT_GE(packer, 0) << pipeline;
    EXPECT_NEAR(schedule + packer, limit, 1e-6 * (1 + limit)) << pipeline;
    EXPECT_NEAR(schedule, getScheduleTimeShare(options), 1e-9) << pipeline;
    if (limit > 0) {
      EXPECT_GT(schedule, 0) << pipeline;
      EXPECT_GT(packer, schedule) << pipeline;
    }
  }
}

TEST(PipelineTest, WithoutSchedulePlanMemoryGetsTheWholeLimit) {
  PlanningOptions options;
  options.schedule = false;
  options.timeLimitSeconds = 3;
  std::string pipeline = getPlanningPipeline(options);
  EXPECT_EQ(pipeline.find("schedule"), std::string::npos) << pipeline;
  EXPECT_EQ(timeLimitOf(pipeline, "plan-memory"), 3) << pipeline;
  EXPECT_EQ(getScheduleTimeShare(options), 0);
}

TEST(PipelineTest, PlanNameExpandsToTheSharedBudget) {
  PlanningOptions options;
  options.timeLimitSeconds = 4;
  std::string expanded = expandPipelineNames("dce,plan", options);
  EXPECT_EQ(expanded.rfind("dce,schedule{time-limit=1},guard-branches,plan-memory{", 0), 0u)
      << expanded;
  EXPECT_EQ(timeLimitOf(expanded, "plan-memory"), 3) << expanded;
}

// The pipelines' text, literally: snugc records it in a bundle's manifest,
// so building them a different way must not change a byte of it.

static const char *kImportPrefix =
    "fold-constants{max-bytes=4194304 max-expand-bytes=256},dce,"
    "dedupe-weights,";

static std::string importFor(const std::string &precision,
                             const std::string &keep = "",
                             const std::string &io = "model") {
  PlanningOptions options;
  options.precision = precision;
  options.keepFp32 = keep;
  options.ioPrecision = io;
  return getImportPipeline(options);
}

TEST(PipelineTest, ImportPipelineText) {
  std::string prefix = kImportPrefix;
  EXPECT_EQ(getDefaultImportPipeline(), prefix + "fuse");
  EXPECT_EQ(importFor("fp32"), prefix + "fuse");
  // fp32 takes neither keep nor io.
  EXPECT_EQ(importFor("fp32", "Softmax", "lowered"), prefix + "fuse");
  // At fp16 and bf16 the BatchNorms fold first, while their parameters
  // are f32 (passes/fusion/FoldBatchNorms.cpp).
  EXPECT_EQ(importFor("fp16"),
            prefix + "fold-batchnorm,lower-precision{to=f16},fuse");
  EXPECT_EQ(importFor("fp16", "Softmax,LayerNormalization"),
            prefix + "fold-batchnorm,"
                     "lower-precision{to=f16 keep=Softmax,LayerNormalization},"
                     "fuse");
  EXPECT_EQ(importFor("fp16", "", "lowered"),
            prefix + "fold-batchnorm,lower-precision{to=f16 io=lowered},fuse");
  EXPECT_EQ(
      importFor("fp16", "attn/softmax", "lowered"),
      prefix +
          "fold-batchnorm,lower-precision{to=f16 keep=attn/softmax io=lowered},"
          "fuse");
  EXPECT_EQ(importFor("bf16"),
            prefix + "fold-batchnorm,lower-precision{to=bf16},fuse");
  EXPECT_EQ(
      importFor("bf16", "Pow", "lowered"),
      prefix +
          "fold-batchnorm,lower-precision{to=bf16 keep=Pow io=lowered},fuse");
  EXPECT_EQ(importFor("tf32"), prefix + "fuse,tf32-math");
  // tf32 keeps storage f32: io does not apply.
  EXPECT_EQ(importFor("tf32", "Conv", "lowered"),
            prefix + "fuse,tf32-math{keep=Conv}");
}

static PlanningOptions planning(bool schedule, bool verifyPlan) {
  PlanningOptions options;
  options.schedule = schedule;
  options.verifyPlan = verifyPlan;
  return options;
}

TEST(PipelineTest, PlanningPipelineText) {
  const std::string planMemory =
      "guard-branches,plan-memory{planner=best alignment=256 time-limit=1.5 target=cuda "
      "cublas-workspace=4194304}";
  EXPECT_EQ(getPlanningPipeline(planning(true, false)),
            "schedule{time-limit=0.5}," + planMemory);
  EXPECT_EQ(getPlanningPipeline(planning(true, true)),
            "schedule{time-limit=0.5}," + planMemory + ",verify-plan");
  EXPECT_EQ(getPlanningPipeline(planning(false, false)),
            "guard-branches,plan-memory{planner=best alignment=256 time-limit=2 target=cuda "
            "cublas-workspace=4194304}");
  EXPECT_EQ(getPlanningPipeline(planning(false, true)),
            "guard-branches,plan-memory{planner=best alignment=256 time-limit=2 target=cuda "
            "cublas-workspace=4194304},verify-plan");

  PlanningOptions other = planning(true, true);
  other.planner = "search";
  other.alignment = 64;
  other.timeLimitSeconds = 3;
  other.target = "host";
  other.cublasWorkspaceBytes = 0;
  EXPECT_EQ(getPlanningPipeline(other),
            "schedule{time-limit=0.75},guard-branches,plan-memory{planner=search alignment=64 "
            "time-limit=2.25 target=host cublas-workspace=0},verify-plan");

  PlanningOptions budget = planning(true, false);
  budget.arenaBudgetBytes = 1000000;
  EXPECT_EQ(getPlanningPipeline(budget),
            "schedule{time-limit=0.5},remat{arena-budget=1000000 planner=best "
            "alignment=256 target=cuda cublas-workspace=4194304}," +
                planMemory);
  // Offload only with a budget.
  PlanningOptions offload = budget;
  offload.allowOffload = true;
  offload.offloadBandwidthGBs = 12.5;
  EXPECT_EQ(getPlanningPipeline(offload),
            "schedule{time-limit=0.5},offload{arena-budget=1000000 "
            "host-bandwidth=12.5 planner=best alignment=256 target=cuda "
            "cublas-workspace=4194304},remat{arena-budget=1000000 planner=best "
            "alignment=256 target=cuda cublas-workspace=4194304}," +
                planMemory);
  offload.schedule = false;
  offload.verifyPlan = true;
  EXPECT_EQ(getPlanningPipeline(offload),
            "offload{arena-budget=1000000 host-bandwidth=12.5 planner=best "
            "alignment=256 target=cuda cublas-workspace=4194304},"
            "remat{arena-budget=1000000 planner=best alignment=256 "
            "target=cuda cublas-workspace=4194304},guard-branches,plan-memory{planner=best "
            "alignment=256 time-limit=2 target=cuda cublas-workspace=4194304},"
            "verify-plan");
  PlanningOptions noBudget = planning(true, false);
  noBudget.allowOffload = true;
  EXPECT_EQ(getPlanningPipeline(noBudget),
            "schedule{time-limit=0.5}," + planMemory);
}

TEST(PipelineTest, ExpandedNamesText) {
  PlanningOptions options = planning(true, true);
  options.precision = "bf16";
  options.keepFp32 = "Softmax";
  std::string import =
      std::string(kImportPrefix) +
      "fold-batchnorm,lower-precision{to=bf16 keep=Softmax},fuse";
  std::string plan =
      "schedule{time-limit=0.5},guard-branches,plan-memory{planner=best alignment=256 "
      "time-limit=1.5 target=cuda cublas-workspace=4194304},verify-plan";
  EXPECT_EQ(expandPipelineNames("import", options), import);
  EXPECT_EQ(expandPipelineNames("plan", options), plan);
  EXPECT_EQ(expandPipelineNames("default", options), import + "," + plan);
  EXPECT_EQ(expandPipelineNames(" dce , import ,fuse{max-ops=8 patterns=a+b}",
                                options),
            "dce," + import + ",fuse{max-ops=8 patterns=a+b}");
  // Names inside braces are option text, not pipeline names.
  EXPECT_EQ(expandPipelineNames("tf32-math{keep=plan,import}", options),
            "tf32-math{keep=plan,import}");
}
