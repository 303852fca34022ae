//===- RuntimeApiTest.cpp - The C API: load, describe, run, errors --------===//
#include "RuntimeTestUtil.h"

#include "ir/Module.h"
#include "snug/snug.hpp"

#include <cstdlib>

using namespace snug;
using namespace snug::testing;

namespace {


} // namespace

TEST(RuntimeApiTest, DescribesSizesAndIo) {
  Loaded loaded(bundleOf(kMlpPlan));
  ASSERT_TRUE(loaded.bundle);
  snug_sizes sizes;
  ASSERT_EQ(snug_bundle_sizes(loaded.bundle, &sizes), SNUG_OK);
  EXPECT_EQ(sizes.arena, 192u);
  EXPECT_EQ(sizes.alignment, 64u);
  EXPECT_EQ(sizes.weights, 128u);
  EXPECT_EQ(sizes.io, 24u);
  size_t count = 0;
  ASSERT_EQ(snug_bundle_input_count(loaded.bundle, &count), SNUG_OK);
  EXPECT_EQ(count, 1u);
  snug_tensor_info info;
  ASSERT_EQ(snug_bundle_input_info(loaded.bundle, 0, &info), SNUG_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, SNUG_DTYPE_F32);
  EXPECT_EQ(info.rank, 2u);
  EXPECT_EQ(info.dims[1], 4);
  EXPECT_EQ(info.bytes, 16u);
  ASSERT_EQ(snug_bundle_output_info(loaded.bundle, 0, &info), SNUG_OK);
  EXPECT_STREQ(info.name, "y");
  EXPECT_EQ(snug_bundle_output_info(loaded.bundle, 1, &info),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(snug_last_error()).find("out of range"), std::string::npos);
  size_t index = 9;
  EXPECT_EQ(snug_bundle_find_input(loaded.bundle, "x", &index), SNUG_OK);
  EXPECT_EQ(index, 0u);
  EXPECT_EQ(snug_bundle_find_output(loaded.bundle, "nope", &index),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(snug_bundle_pipeline(loaded.bundle), "test-pipeline");
}

TEST(RuntimeApiTest, RunsOnTheHost) {
  auto outputs = runF32(kMlpPlan, {{1, 2, 3, -4}});
  ASSERT_EQ(outputs.size(), 1u);
  // x*w = [1+3+4, 2+3-8] = [8, -3]; + b = [8.5, -3.5]; leaky = [8.5, -0.875]
  EXPECT_EQ(outputs[0], (std::vector<float>{8.5f, -0.875f}));
}

TEST(RuntimeApiTest, CallerOwnedArena) {
  Loaded loaded(bundleOf(kMlpPlan));
  ASSERT_TRUE(loaded.bundle);
  snug_session_options options;
  snug_session_options_init(&options);
  std::vector<uint8_t> small(128 + 64);
  uint8_t *aligned = small.data() + (64 - reinterpret_cast<uintptr_t>(small.data()) % 64) % 64;
  options.arena = aligned;
  options.arena_bytes = 128;
  snug_session *session = nullptr;
  EXPECT_EQ(snug_session_create(loaded.bundle, &options, &session),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(session, nullptr);
  EXPECT_NE(std::string(snug_last_error()).find("smaller than the 192 bytes"),
            std::string::npos)
      << snug_last_error();

  void *arena = std::aligned_alloc(64, 256);
  options.arena = arena;
  options.arena_bytes = 256;
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  float x[4] = {1, 2, 3, -4}, y[2];
  ASSERT_EQ(snug_session_set_input(session, 0, x, sizeof x), SNUG_OK);
  ASSERT_EQ(snug_session_run(session), SNUG_OK) << snug_last_error();
  ASSERT_EQ(snug_session_get_output(session, 0, y, sizeof y), SNUG_OK);
  EXPECT_EQ(y[0], 8.5f);
  // The output lives in the caller's arena at its planned offset (0).
  const void *pointer = nullptr;
  ASSERT_EQ(snug_session_output_data(session, 0, &pointer), SNUG_OK);
  EXPECT_EQ(pointer, arena);
  // Inputs must be set again before the next run.
  EXPECT_EQ(snug_session_run(session), SNUG_ERROR_INPUT_NOT_SET);
  EXPECT_NE(std::string(snug_last_error()).find("'x'"), std::string::npos);
  snug_session_destroy(session);
  std::free(arena);

  options.arena = aligned + 4; // misaligned
  options.arena_bytes = 180;
  EXPECT_EQ(snug_session_create(loaded.bundle, &options, &session),
            SNUG_ERROR_INVALID_ARGUMENT);
}

TEST(RuntimeApiTest, WrongSizesAndDevices) {
  Loaded loaded(bundleOf(kMlpPlan));
  ASSERT_TRUE(loaded.bundle);
  snug_session_options options;
  snug_session_options_init(&options);
  options.device = SNUG_DEVICE_CUDA;
  snug_session *session = nullptr;
  EXPECT_EQ(snug_session_create(loaded.bundle, &options, &session),
            SNUG_ERROR_NO_DEVICE);
  EXPECT_NE(std::string(snug_last_error()).find("CUDA"), std::string::npos);
  ASSERT_EQ(snug_session_create(loaded.bundle, nullptr, &session), SNUG_OK);
  float x[3] = {};
  EXPECT_EQ(snug_session_set_input(session, 0, x, sizeof x),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(snug_last_error()).find("takes 16 bytes"),
            std::string::npos);
  EXPECT_EQ(snug_session_set_input(session, 1, x, sizeof x),
            SNUG_ERROR_INVALID_ARGUMENT);
  // A null pointer of the right size is named as such, not as a size
  // mismatch ("takes 16 bytes, got 16").
  EXPECT_EQ(snug_session_set_input(session, 0, nullptr, 16),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(snug_last_error()),
            "input 'x': null data pointer for 16 bytes");
  float y[2];
  EXPECT_EQ(snug_session_get_output(session, 0, y, sizeof y),
            SNUG_ERROR_INVALID_ARGUMENT); // no run yet
  float four[4] = {1, 2, 3, 4};
  ASSERT_EQ(snug_session_set_input(session, 0, four, sizeof four), SNUG_OK);
  ASSERT_EQ(snug_session_run(session), SNUG_OK) << snug_last_error();
  EXPECT_EQ(snug_session_get_output(session, 0, nullptr, sizeof y),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(snug_last_error()),
            "output 'y': null data pointer for 8 bytes");
  snug_session_destroy(session);
}

TEST(RuntimeApiTest, LoadErrorsNameTheFileAndTheOp) {
  snug_bundle *bundle = nullptr;
  EXPECT_EQ(snug_bundle_load("/nonexistent/m.snug", &bundle), SNUG_ERROR_IO);
  EXPECT_NE(std::string(snug_last_error()).find("/nonexistent/m.snug"),
            std::string::npos);

  TempFile garbage;
  writeFile(garbage.path, std::vector<uint8_t>(100, 7));
  EXPECT_EQ(snug_bundle_load(garbage.path.c_str(), &bundle),
            SNUG_ERROR_INVALID_BUNDLE);
  EXPECT_NE(std::string(snug_last_error()).find(garbage.path), std::string::npos);

  // An op that is not in the op table is a load-time error naming it (the
  // plan verifier; every op of the table has a host kernel).
  ir::Module module("m");
  ir::Value *x = module.addInput("x", ir::TensorType(ir::DType::F32, {2}));
  x->setArenaOffset(0);
  ir::Node *node = module.addNode(ir::OpCode::Softsign, {x},
                                  {ir::TensorType(ir::DType::F32, {2})});
  node->setName("odd");
  node->getResult(0)->setArenaOffset(64);
  module.setOutputs({node->getResult(0)});
  module.setAttribute("arena", ir::Attribute::getInt(128));
  auto bytes = serializeBundle(module, {});
  ASSERT_TRUE(static_cast<bool>(bytes)) << toString(bytes.takeError());
  TempFile file;
  writeFile(file.path, renameOp(*bytes, "Softsign", "snug.odd"));
  EXPECT_EQ(snug_bundle_load(file.path.c_str(), &bundle),
            SNUG_ERROR_INVALID_BUNDLE);
  std::string message = snug_last_error();
  EXPECT_NE(message.find(file.path), std::string::npos) << message;
  EXPECT_NE(message.find("node 'odd' (snug.odd): unknown op 'snug.odd'"),
            std::string::npos)
      << message;
}

TEST(RuntimeApiTest, PoisonFillsAllButTheInputs) {
  Loaded loaded(bundleOf(
      "func @m(%x: f32[2] {offset = 0}) -> f32[2] attributes {arena = 256} {\n"
      "  %y = Neg(%x) : f32[2] {offset = 64}\n"
      "  return %y\n}\n"));
  ASSERT_TRUE(loaded.bundle);
  std::vector<uint8_t> storage(256 + 64, 0);
  uint8_t *arena = storage.data() +
                   (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
  snug_session_options options;
  snug_session_options_init(&options);
  options.arena = arena;
  options.arena_bytes = 256;
  options.poison = 1;
  snug_session *session = nullptr;
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK);
  float x[2] = {1, -2};
  ASSERT_EQ(snug_session_set_input(session, 0, x, sizeof x), SNUG_OK);
  ASSERT_EQ(snug_session_run(session), SNUG_OK) << snug_last_error();
  float y[2];
  std::memcpy(y, arena + 64, 8);
  EXPECT_EQ(y[0], -1.0f);
  EXPECT_EQ(y[1], 2.0f);
  EXPECT_EQ(std::memcmp(arena, x, 8), 0) << "poison must spare the inputs";
  for (size_t at = 8; at < 256; ++at)
    if (at < 64 || at >= 72) {
      ASSERT_EQ(arena[at], 0xff) << "byte " << at;
    }
  snug_session_destroy(session);
}

TEST(RuntimeApiTest, CppWrapper) {
  TempFile file;
  writeFile(file.path, bundleOf(kMlpPlan));
  snug::Bundle bundle;
  ASSERT_FALSE(bundle.load(file.path)) << snug_last_error();
  EXPECT_EQ(bundle.inputCount(), 1u);
  snug::Session session;
  ASSERT_FALSE(session.create(bundle));
  float x[4] = {1, 2, 3, -4}, y[2];
  ASSERT_FALSE(session.setInput(0, x, sizeof x));
  ASSERT_FALSE(session.run());
  ASSERT_FALSE(session.getOutput(0, y, sizeof y));
  EXPECT_EQ(y[1], -0.875f);
  snug::Status bad = session.run(); // inputs not set again
  EXPECT_EQ(bad.code, SNUG_ERROR_INPUT_NOT_SET);
  EXPECT_NE(bad.message.find("'x'"), std::string::npos);
  bool graphs = true;
  ASSERT_FALSE(session.usesCudaGraphs(graphs));
  EXPECT_FALSE(graphs); // a host session
}
