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
static double timeLimitOf(const std::string &pipeline, const std::string &pass) {
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
  EXPECT_EQ(expanded.rfind("dce,schedule{time-limit=1},plan-memory{", 0), 0u)
      << expanded;
  EXPECT_EQ(timeLimitOf(expanded, "plan-memory"), 3) << expanded;
}
