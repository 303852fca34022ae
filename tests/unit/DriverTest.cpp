//===- DriverTest.cpp - The driver's searches --------------------------===//
//
// findLargestFitting (what --fit-batch searches with): for every threshold
// the answer is the largest value that fits, each value is tried at most
// once, the cap holds, and an error from the predicate ends the search.
// The budget error says rematerialization lowered the peak only when it did.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"

#include "llvm/ADT/DenseSet.h"

#include <gtest/gtest.h>

using namespace snug;

TEST(DriverTest, FindLargestFittingFindsEveryThreshold) {
  for (int64_t threshold : {0, 1, 2, 3, 37, 64, 65, 127, 128, 1000, 4096}) {
    llvm::DenseSet<int64_t> tried;
    bool repeated = false;
    llvm::Expected<int64_t> found = findLargestFitting(
        [&](int64_t value) -> llvm::Expected<bool> {
          repeated |= !tried.insert(value).second;
          EXPECT_GE(value, 1);
          return value <= threshold;
        },
        int64_t(1) << 20);
    ASSERT_TRUE(static_cast<bool>(found));
    EXPECT_EQ(*found, threshold);
    EXPECT_FALSE(repeated) << threshold;
    // Doubling then bisection: about 2 log2(threshold) tries.
    EXPECT_LE(tried.size(), 2u * 22u);
  }
}

TEST(DriverTest, FindLargestFittingStopsAtTheCap) {
  for (int64_t cap : {1, 5, 8, 100}) {
    int64_t largestTried = 0;
    llvm::Expected<int64_t> found = findLargestFitting(
        [&](int64_t value) -> llvm::Expected<bool> {
          largestTried = std::max(largestTried, value);
          return true;
        },
        cap);
    ASSERT_TRUE(static_cast<bool>(found));
    EXPECT_EQ(*found, cap);
    EXPECT_EQ(largestTried, cap);
  }
}

TEST(DriverTest, FindLargestFittingPassesErrorsOn) {
  llvm::Expected<int64_t> found = findLargestFitting(
      [&](int64_t value) -> llvm::Expected<bool> {
        if (value == 16)
          return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                         "no model at 16");
        return true;
      },
      1000);
  ASSERT_FALSE(static_cast<bool>(found));
  EXPECT_EQ(llvm::toString(found.takeError()), "no model at 16");
}

static std::string budgetMessage(uint64_t peakBefore, uint64_t peak) {
  MemoryReport report;
  report.predictedPeakBytes = peak;
  report.remat.applied = true;
  report.remat.peakBeforeBytes = peakBefore;
  report.remat.decisions = {"recompute x at step 3"};
  return llvm::toString(llvm::make_error<MemoryBudgetError>(
      "model.onnx", peak / 2, std::move(report)));
}

TEST(DriverTest, BudgetErrorSaysLoweredOnlyWhenTheRematLoweredThePeak) {
  EXPECT_NE(budgetMessage(2000, 1000).find("rematerialization lowered it "
                                           "from 2000 B"),
            std::string::npos);
  for (uint64_t before : {uint64_t(1000), uint64_t(600)}) {
    std::string message = budgetMessage(before, 1000);
    EXPECT_EQ(message.find("lowered it"), std::string::npos) << message;
    EXPECT_NE(message.find("1 decisions, +0 FLOPs, did not lower it: " +
                           std::to_string(before) + " B"),
              std::string::npos)
        << message;
  }
}
