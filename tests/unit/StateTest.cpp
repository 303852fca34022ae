//===- StateTest.cpp - Persistent state: bundle, host executor, C API -----===//
//
// A weight paired with an output (ir/State.h) is written back after each
// run: the host executor's write-back, the State section the writer emits
// and the reader checks, and the C API's state reads.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"

#include "runtime/BundleReader.h"
#include "runtime/host/HostExecutor.h"

#include <cstring>

using namespace snug;
using namespace snug::testing;

namespace {

/// w' = w + x, paired with w: each run adds x to the state w, and the
/// output is the new value. `%c`, a weight with w's first bytes beside it,
/// must keep them: the write-back touches w's bytes only.
const char *const kCounterPlan =
    "func @counter(%x: f32[2] {offset = 0}, %w: f32[2] weight = [1.0, 2.0], "
    "%c: f32[2] weight = [1.0, 2.0]) -> (f32[2], f32[2]) attributes "
    "{alignment = 64, arena = 192, state = [\"parameter:w=w.updated\"]} {\n"
    "  %w.updated = Add(%w, %x) : f32[2] {offset = 64}\n"
    "  %y = Mul(%c, %x) : f32[2] {offset = 128}\n"
    "  return %w.updated, %y\n"
    "}\n";

std::vector<float> floatsAt(const uint8_t *data, size_t count) {
  std::vector<float> values(count);
  std::memcpy(values.data(), data, count * sizeof(float));
  return values;
}

} // namespace

TEST(StateTest, HostExecutorWritesStateBackAfterEachRun) {
  std::vector<uint8_t> bytes = bundleOf(kCounterPlan);
  std::unique_ptr<rt::Bundle> bundle;
  ASSERT_FALSE(rt::parseBundle(bytes.data(), bytes.size(), "counter.snug",
                               bundle));
  ASSERT_EQ(bundle->state.size(), 1u);
  const rt::StateDesc &w = bundle->state[0];
  EXPECT_EQ(w.name, "w");
  EXPECT_EQ(w.role, bundle::StateParameter);
  EXPECT_EQ(w.bytes, 8u);
  EXPECT_EQ(bundle->outputs[w.output].name, "w.updated");
  std::unique_ptr<rt::HostExecutor> executor;
  ASSERT_FALSE(rt::HostExecutor::create(*bundle, nullptr, 0, true, executor));
  EXPECT_EQ(floatsAt(executor->getState(w), 2),
            (std::vector<float>{1.0f, 2.0f}));
  const float x[2] = {1.0f, 10.0f};
  for (int run = 1; run <= 3; ++run) {
    std::memcpy(executor->getArena(), x, sizeof x);
    ASSERT_FALSE(executor->run());
    std::vector<float> expected = {1.0f + run, 2.0f + 10.0f * run};
    EXPECT_EQ(floatsAt(executor->getState(w), 2), expected) << "run " << run;
    EXPECT_EQ(floatsAt(executor->getArena() + 64, 2), expected);
    // c beside w keeps its bytes: y = c * x.
    EXPECT_EQ(floatsAt(executor->getArena() + 128, 2),
              (std::vector<float>{1.0f, 20.0f}));
  }
  // The bundle's own weights still hold the first value: a second executor
  // starts from step one.
  std::unique_ptr<rt::HostExecutor> fresh;
  ASSERT_FALSE(rt::HostExecutor::create(*bundle, nullptr, 0, false, fresh));
  EXPECT_EQ(floatsAt(fresh->getState(w), 2), (std::vector<float>{1.0f, 2.0f}));
}

TEST(StateTest, CApiReadsStateByName) {
  Loaded loaded(bundleOf(kCounterPlan));
  ASSERT_TRUE(loaded.bundle);
  size_t count = 0;
  ASSERT_EQ(snug_bundle_state_count(loaded.bundle, &count), SNUG_OK);
  EXPECT_EQ(count, 1u);
  snug_tensor_info info;
  ASSERT_EQ(snug_bundle_state_info(loaded.bundle, 0, &info), SNUG_OK);
  EXPECT_STREQ(info.name, "w");
  EXPECT_EQ(info.bytes, 8u);
  EXPECT_EQ(info.rank, 1u);
  EXPECT_EQ(snug_bundle_state_info(loaded.bundle, 1, &info),
            SNUG_ERROR_INVALID_ARGUMENT);
  snug_session *session = nullptr;
  ASSERT_EQ(snug_session_create(loaded.bundle, nullptr, &session), SNUG_OK)
      << snug_last_error();
  float w[2] = {0, 0};
  ASSERT_EQ(snug_session_get_state(session, "w", w, sizeof w), SNUG_OK);
  EXPECT_EQ(w[0], 1.0f);
  const float x[2] = {0.5f, -1.0f};
  for (int run = 0; run < 2; ++run) {
    ASSERT_EQ(snug_session_set_input(session, 0, x, sizeof x), SNUG_OK);
    ASSERT_EQ(snug_session_run(session), SNUG_OK) << snug_last_error();
  }
  ASSERT_EQ(snug_session_get_state(session, "w", w, sizeof w), SNUG_OK);
  EXPECT_EQ(w[0], 2.0f);
  EXPECT_EQ(w[1], 0.0f);
  EXPECT_EQ(snug_session_get_state(session, "c", w, sizeof w),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(snug_last_error()).find("has no state named 'c'"),
            std::string::npos);
  EXPECT_EQ(snug_session_get_state(session, "w", w, 4),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(snug_last_error()).find("has 8 bytes, got 4"),
            std::string::npos);
  snug_session_destroy(session);
}

TEST(StateTest, WriterRefusesAStatePairOfOtherTypes) {
  auto module = parseOrDie(
      "func @bad(%x: f32[2] {offset = 0}, %w: f32[1] weight = [1.0]) -> "
      "f32[2] attributes {alignment = 64, arena = 128, state = "
      "[\"parameter:w=y\"]} {\n"
      "  %y = Add(%w, %x) : f32[2] {offset = 64}\n"
      "  return %y\n"
      "}\n");
  ASSERT_TRUE(module);
  BundleOptions options;
  auto bytes = serializeBundle(*module, options);
  ASSERT_FALSE(bytes);
  EXPECT_EQ(toString(bytes.takeError()),
            "state entry 'parameter:w=y': the output is f32[2], the weight "
            "f32[1]");
}

TEST(StateTest, ABundleWithoutStateHasNone) {
  Loaded loaded(bundleOf(kMlpPlan));
  size_t count = 7;
  ASSERT_EQ(snug_bundle_state_count(loaded.bundle, &count), SNUG_OK);
  EXPECT_EQ(count, 0u);
}

namespace {
std::string loadError(std::vector<uint8_t> bytes) {
  fixUpHeader(bytes);
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status =
      rt::parseBundle(bytes.data(), bytes.size(), "counter.snug", bundle);
  return status.getMessage();
}
} // namespace

// The reader holds each entry to its weights range and its output: a
// write-back outside them is refused before anything runs. The section is
// u32 count, then for "w": u32 length + 1 byte, u8 role, u64 offset (at
// 10), u64 bytes (at 18), u32 output (at 26).
TEST(StateTest, ReaderRefusesStateOutsideItsBuffers) {
  std::vector<uint8_t> bytes = bundleOf(kCounterPlan);
  uint64_t at = findSection(bytes, bundle::SectionKind::State).first;
  ASSERT_NE(at, 0u);
  EXPECT_EQ(loadError(bytes), "");
  std::vector<uint8_t> badOutput = bytes;
  badOutput[at + 26] = 5;
  EXPECT_NE(loadError(badOutput).find("state 'w': output 5 does not exist"),
            std::string::npos)
      << loadError(badOutput);
  std::vector<uint8_t> badRole = bytes;
  badRole[at + 9] = 7;
  EXPECT_NE(loadError(badRole).find("state 'w': unknown role 7"),
            std::string::npos)
      << loadError(badRole);
  std::vector<uint8_t> outside = bytes;
  outside[at + 20] = 1; // 65544 bytes, past the 128 of the weights
  EXPECT_NE(loadError(outside).find("state 'w' lies outside the weights"),
            std::string::npos)
      << loadError(outside);
}
