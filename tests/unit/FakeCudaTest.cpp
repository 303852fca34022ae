//===- FakeCudaTest.cpp - The CUDA executor against a fake driver ---------===//
//
// Runs with LD_LIBRARY_PATH pointing at the fake libcuda.so.1,
// libcublas.so.12/.13 and libcublasLt.so.12/.13 of FakeCuda.cpp, so the executor's whole life — lazy
// loading, the checks, allocation, upload, argument marshalling, eager run,
// graph capture and replay, I/O, timing, destruction — runs on a CPU, with
// the fake's counters as witnesses. The fake refuses what the real driver
// refuses (FakeCuda.cpp's banner); each refusal has a test here that passes
// only against it. The zoo's emitted plans go through the same executor on
// the fake in the e2e tier (tests/e2e/run_model.py --fake-cuda). What only a
// real device can show (real kernels, the real cuBLAS, driver memory
// accounting) is tests/gpu's job.
//
//===----------------------------------------------------------------------===//
#include "FakeCuda.h"
#include "CudaTestPlans.h"
#include "RuntimeTestUtil.h"

#include "ir/Module.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/LtGemm.h"
#include "snug/snug.h"

#include <dlfcn.h>

#include <cstring>

using namespace snug;
using namespace snug::testing;

namespace {

/// The fake's counters, null when the libcuda.so.1 on the loader's path is
/// not the fake (the test runs outside ctest, which sets LD_LIBRARY_PATH).
/// Loading it here first makes the runtime's dlopen find this very copy.
const FakeCudaStats *fakeOrNull() {
  static const FakeCudaStats *stats = [] {
    void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library)
      return static_cast<const FakeCudaStats *>(nullptr);
    auto get = reinterpret_cast<const FakeCudaStats *(*)()>(
        dlsym(library, "fakeCudaStats"));
    return get ? get() : nullptr;
  }();
  return stats;
}

const FakeCudaStats &fake() { return *fakeOrNull(); }

class FakeCudaTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!fakeOrNull())
      GTEST_SKIP() << "libcuda.so.1 is not the fake driver: run through "
                      "ctest, or with LD_LIBRARY_PATH=" SNUG_FAKE_CUDA_DIR;
    // The hand-written plans (CudaTestPlans.h) give their GEMMs 512 and
    // 1024 bytes of workspace; CublasRefusesASmallWorkspace checks the
    // fake's real minimum.
    setenv("SNUG_FAKE_CUDA_MIN_WORKSPACE", "512", 1);
  }
  void TearDown() override { unsetenv("SNUG_FAKE_CUDA_MIN_WORKSPACE"); }
};

/// The fake's host kernels as a test image declares them (PTX's .entry
/// syntax): the parameters the fake reads at launch and cuFuncGetParamInfo
/// reports, snug_heavy's 128-thread limit. `target` makes the image a
/// stand-in for a cubin of that arch ("" loads on any device).
std::string fakeImageText(const std::string &target = "") {
  return "FAKE\n" + (target.empty() ? "" : ".target " + target + "\n") +
         ".entry snug_add(.param .u64 a, .param .u64 b, .param .u64 c, "
         ".param .u32 n) { }\n"
         ".entry snug_fail(.param .u64 a, .param .u64 b, .param .u64 c, "
         ".param .u32 n) { }\n"
         ".entry snug_leaky(.param .u64 x, .param .u64 y, .param .u64 n, "
         ".param .f32 alpha) { }\n"
         ".entry snug_heavy(.param .u64 x, .param .u64 y, .param .u64 n, "
         ".param .f32 alpha)\n.maxntid 128, 1, 1\n{ }\n"
         ".entry snug_check_labels(.param .u64 labels, .param .u64 out, "
         ".param .u64 record, .param .u64 n, .param .u64 classes, "
         ".param .u64 op) { }\n";
}

std::vector<bundle::KernelImage> fakeImages() {
  return {image(bundle::ImageCubin, 90, fakeImageText())};
}

snug_session_options cudaOptions(int graphs = 1) {
  snug_session_options options;
  snug_session_options_init(&options);
  options.device = SNUG_DEVICE_CUDA;
  options.cuda_graphs = graphs;
  return options;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// Sets x, runs, returns y and z.
std::vector<float> runMlp(snug_session *session, std::vector<float> x) {
  EXPECT_EQ(snug_session_set_input(session, 0, x.data(), 16), SNUG_OK)
      << snug_last_error();
  if (snug_session_run(session) != SNUG_OK) {
    ADD_FAILURE() << snug_last_error();
    return {};
  }
  std::vector<float> out(4);
  EXPECT_EQ(snug_session_get_output(session, 0, out.data(), 8), SNUG_OK);
  EXPECT_EQ(snug_session_get_output(session, 1, out.data() + 2, 8), SNUG_OK);
  return out;
}

/// Every object the fake hands out is back.
void expectNothingLive() {
  const FakeCudaStats &f = fake();
  EXPECT_EQ(f.allocBytes.size(), 0u);
  EXPECT_EQ(f.streams, 0);
  EXPECT_EQ(f.events, 0);
  EXPECT_EQ(f.modules, 0);
  EXPECT_EQ(f.cublasHandles, 0);
  EXPECT_EQ(f.graphs, 0);
  EXPECT_EQ(f.graphExecs, 0);
  EXPECT_EQ(f.primaryRetains, 0);
}

} // namespace

// Eager, then capture, then replay: the host's numbers every time, kernels
// launched directly only in the first run, one graph instantiated.
TEST_F(FakeCudaTest, RunsEagerThenCapturesThenReplays) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlan(), fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  const FakeCudaStats &f = fake();
  int launches = f.directLaunches, instantiations = f.instantiations;
  int replays = f.graphLaunches, gemms = f.gemms, copies = f.deviceToDevice;
  int workspaceCalls = f.setWorkspaceCalls;
  std::vector<float> expected = {8.5f, -0.875f, 8.5f, -0.875f};
  EXPECT_EQ(runMlp(session, {1, 2, 3, -4}), expected);
  EXPECT_EQ(f.directLaunches, launches + 2);
  EXPECT_EQ(f.gemms, gemms + 1);
  EXPECT_EQ(f.deviceToDevice, copies + 1);
  EXPECT_EQ(f.instantiations, instantiations);
  EXPECT_EQ(runMlp(session, {1, 2, 3, -4}), expected); // captured
  EXPECT_EQ(f.instantiations, instantiations + 1);
  EXPECT_EQ(f.graphLaunches, replays + 1);
  for (int run = 0; run < 3; ++run) // replays, with other inputs
    EXPECT_EQ(runMlp(session, {0, 0, 0, 1}),
              (std::vector<float>{-0.125f, 1.5f, -0.125f, 1.5f}));
  EXPECT_EQ(f.directLaunches, launches + 2);
  EXPECT_EQ(f.instantiations, instantiations + 1);
  EXPECT_EQ(f.graphLaunches, replays + 4);
  // cuBLAS: exact math, the GEMM's workspace inside the arena after the
  // host plan's part, f32 computed in f32 (CUBLAS_COMPUTE_32F = 68). One
  // GEMM, one workspace: set once, at creation, and never again.
  EXPECT_EQ(f.mathMode, 0);
  EXPECT_EQ(f.workspaceBytes, 1024u);
  EXPECT_EQ(f.gemmWorkspaces.back().second, 1024u);
  EXPECT_EQ(f.lastComputeType, 68);
  EXPECT_EQ(f.setWorkspaceCalls, workspaceCalls);
  int uses = -1;
  EXPECT_EQ(snug_session_uses_cuda_graphs(session, &uses), SNUG_OK);
  EXPECT_EQ(uses, 1);
  snug_session_destroy(session);
  expectNothingLive();
}

// A GEMM step of --precision=tf32 (GemmMathTf32, through the bundle's math
// byte) asks cuBLAS for CUBLAS_COMPUTE_32F_FAST_TF32 (77); the handle's
// math mode stays CUBLAS_DEFAULT_MATH (0), and a default step in the same
// session is CUBLAS_COMPUTE_32F (68).
TEST_F(FakeCudaTest, Tf32GemmAsksForFastTf32) {
  for (bool tf32 : {true, false}) {
    bundle::DevicePlan plan = mlpPlan();
    for (bundle::DeviceStep &step : plan.steps)
      if (step.kind == bundle::StepGemm && tf32)
        step.gemm.math = bundle::GemmMathTf32;
    Loaded loaded(cudaBundleOf(kMlp, plan, fakeImages()));
    ASSERT_TRUE(loaded.bundle);
    snug_session *session = nullptr;
    snug_session_options options = cudaOptions();
    ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
        << snug_last_error();
    const FakeCudaStats &f = fake();
    int gemms = f.gemms;
    runMlp(session, {1, 2, 3, -4});
    EXPECT_EQ(f.gemms, gemms + 1);
    EXPECT_EQ(f.lastComputeType, tf32 ? 77 : 68) << tf32;
    EXPECT_EQ(f.mathMode, 0);
    snug_session_destroy(session);
  }
  expectNothingLive();
}

// Two GEMMs with different workspaces: cuBLAS is pointed at each one's
// before it runs (the calls happen while the graph is captured too, and the
// replays need none), and both see their own bytes of the arena.
TEST_F(FakeCudaTest, SwitchesWorkspaceBetweenGemms) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlanTwoWorkspaces(), fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  const FakeCudaStats &f = fake();
  // Creation set the first GEMM's, and the warm-up switched to the second.
  ASSERT_GE(f.gemmWorkspaces.size(), 2u);
  auto arena = static_cast<uint8_t *>(f.gemmWorkspaces.back().first) - 768;
  size_t gemmsBefore = f.gemmWorkspaces.size();
  int callsBefore = f.setWorkspaceCalls;
  std::vector<float> expected = {8.5f, -0.875f, 8.5f, -0.875f};
  EXPECT_EQ(runMlp(session, {1, 2, 3, -4}), expected); // eager
  EXPECT_EQ(runMlp(session, {1, 2, 3, -4}), expected); // captured
  EXPECT_EQ(f.setWorkspaceCalls, callsBefore + 4);
  ASSERT_EQ(f.gemmWorkspaces.size(), gemmsBefore + 4);
  for (size_t i = gemmsBefore; i < f.gemmWorkspaces.size(); ++i) {
    bool first = (i - gemmsBefore) % 2 == 0;
    EXPECT_EQ(f.gemmWorkspaces[i].first, arena + (first ? 256 : 768)) << i;
    EXPECT_EQ(f.gemmWorkspaces[i].second, 512u) << i;
  }
  EXPECT_EQ(runMlp(session, {1, 2, 3, -4}), expected); // replayed
  EXPECT_EQ(f.setWorkspaceCalls, callsBefore + 4);
  snug_session_destroy(session);
  expectNothingLive();
}

namespace {

/// Makes the fake's cuBLASLt heuristic find no algorithm (or find again).
void setLtNoAlgorithm(bool none) {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr);
  auto set = reinterpret_cast<void (*)(int)>(
      dlsym(library, "fakeCudaLtNoAlgorithm"));
  ASSERT_NE(set, nullptr);
  set(none ? 1 : 0);
  dlclose(library);
}

/// The session's weights allocation: the live one that is not the arena
/// (mlpPlan's, 256 + 1024 bytes).
const uint8_t *weightsOf(const FakeCudaStats &f) {
  for (const auto &[pointer, bytes] : f.allocBytes)
    if (bytes != 256 + 1024)
      return static_cast<const uint8_t *>(pointer);
  return nullptr;
}

} // namespace

// A GEMM with an epilogue (mlpPlanLt: the bias Add in the GEMM) runs as
// cublasLtMatmul, set up once at creation: one heuristic per step, asked
// for the step's planned workspace; the descriptor as the plan says
// (CUBLAS_COMPUTE_32F = 68, scale type CUDA_R_32F = 0, no transposes,
// CUBLASLT_EPILOGUE_BIAS = 4, the bias pointer into the weights, batch
// stride 0), column-major layouts of A (m x k), B (k x n), C = D (m x n),
// the workspace pointer and bytes of the plan, the heuristic's algorithm.
// Eager, captured and replayed runs give the host's numbers; no cuBLAS
// handle (the plan has no plain GEMM); destruction frees every descriptor.
TEST_F(FakeCudaTest, LtGemmRunsItsEpilogue) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlanLt(), fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  const FakeCudaStats &f = fake();
  int heuristics = f.ltHeuristics;
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  EXPECT_EQ(f.ltHeuristics, heuristics + 1);
  EXPECT_EQ(f.ltMaxWorkspace, 1024u);
  EXPECT_EQ(f.ltHandles, 1);
  EXPECT_EQ(f.ltDescs, 1);
  EXPECT_EQ(f.ltLayouts, 3);
  EXPECT_EQ(f.ltPreferences, 0); // destroyed once the heuristic answered
  EXPECT_EQ(f.cublasHandles, 0);
  int matmuls = f.ltMatmuls, gemms = f.gemms;
  std::vector<float> expected = {8.5f, -0.875f, 8.5f, -0.875f};
  EXPECT_EQ(runMlp(session, {1, 2, 3, -4}), expected); // eager
  EXPECT_EQ(f.ltMatmuls, matmuls + 1);
  EXPECT_EQ(runMlp(session, {1, 2, 3, -4}), expected); // captured
  EXPECT_EQ(runMlp(session, {0, 0, 0, 1}),
            (std::vector<float>{-0.125f, 1.5f, -0.125f, 1.5f})); // replayed
  EXPECT_EQ(f.ltMatmuls, matmuls + 2); // the replay calls nothing
  EXPECT_EQ(f.ltHeuristics, heuristics + 1);
  EXPECT_EQ(f.gemms, gemms);

  const FakeCudaStats::LtCall &call = f.lastLt;
  EXPECT_EQ(call.computeType, 68);
  EXPECT_EQ(call.scaleType, 0);
  EXPECT_EQ(call.transA, 0);
  EXPECT_EQ(call.transB, 0);
  EXPECT_EQ(call.epilogue, 4u);
  const uint8_t *weights = weightsOf(f);
  ASSERT_NE(weights, nullptr);
  EXPECT_EQ(call.bias, weights + 64);
  EXPECT_EQ(call.biasBatchStride, 0);
  auto expectLayout = [](const FakeCudaStats::LtLayout &l, uint64_t rows,
                         uint64_t cols, int64_t ld, const char *name) {
    EXPECT_EQ(l.type, 0) << name;
    EXPECT_EQ(l.rows, rows) << name;
    EXPECT_EQ(l.cols, cols) << name;
    EXPECT_EQ(l.ld, ld) << name;
    EXPECT_EQ(l.batch, 1) << name;
    EXPECT_EQ(l.stride, 0) << name;
  };
  expectLayout(call.a, 2, 4, 2, "A");
  expectLayout(call.b, 4, 1, 4, "B");
  expectLayout(call.c, 2, 1, 2, "C");
  expectLayout(call.d, 2, 1, 2, "D");
  // C is D, at arena + 128; the workspace at arena + 256, 1024 bytes.
  EXPECT_EQ(call.pointerC, call.pointerD);
  const uint8_t *arena = static_cast<const uint8_t *>(call.pointerD) - 128;
  EXPECT_EQ(f.allocBytes.count(const_cast<uint8_t *>(arena)), 1u);
  EXPECT_EQ(call.workspace, arena + 256);
  EXPECT_EQ(call.workspaceBytes, 1024u);
  EXPECT_EQ(call.algo, 42u);
  snug_session_destroy(session);
  EXPECT_EQ(f.ltHandles, 0);
  EXPECT_EQ(f.ltDescs, 0);
  EXPECT_EQ(f.ltLayouts, 0);
  expectNothingLive();
}

// The alignments cuBLASLt may assume: the lowest set bit of the address
// and, over several batch items, of the batch stride in bytes; 256 at most.
TEST_F(FakeCudaTest, LtAlignmentOfAnOperand) {
  using rt::cuda::getLtAlignment;
  EXPECT_EQ(getLtAlignment(0x10000, 0, 1), 256u);
  EXPECT_EQ(getLtAlignment(0x10040, 0, 1), 64u);
  EXPECT_EQ(getLtAlignment(0x10080, 0, 1), 128u);
  EXPECT_EQ(getLtAlignment(0x10010, 0, 1), 16u);
  // A 3-float stride puts the second item 12 bytes on: 4-byte aligned.
  EXPECT_EQ(getLtAlignment(0x10000, 12, 2), 4u);
  // With one item the stride is never applied.
  EXPECT_EQ(getLtAlignment(0x10000, 12, 1), 256u);
  EXPECT_EQ(getLtAlignment(0x10000, 1 << 20, 4), 256u);
}

// cuBLASLt's MIN_ALIGNMENT_{A,B,C,D}_BYTES preferences default to 256:
// the executor sets each to the operand's real alignment, so the
// heuristic cannot pick a kernel that needs more. mlpPlanLt has A at
// weights + 0, B at arena + 0, C = D at arena + 128.
TEST_F(FakeCudaTest, LtGemmSetsOperandAlignments) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlanLt(), fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  runMlp(session, {1, 2, 3, -4});
  const FakeCudaStats::LtCall &call = fake().lastLt;
  EXPECT_EQ(call.minAlignment[0], 256u);
  EXPECT_EQ(call.minAlignment[1], 256u);
  EXPECT_EQ(call.minAlignment[2], 128u);
  EXPECT_EQ(call.minAlignment[3], 128u);
  snug_session_destroy(session);
}

namespace {
/// Two f32 products snugc lowers to cuBLAS alone (no kernel): a plain
/// MatMul, and a MatMul + bias + Relu that becomes one cublasLtMatmul with
/// the RELU_BIAS epilogue. Small, so that neither splits K: before every
/// GEMM got cuBLAS's 16 KiB minimum, both ran with no workspace.
const char *kTwoGemms = R"(ir_version: 8
opset_import { domain: "" version: 13 }
graph {
  name: "two_gemms"
  node { name: "mm1" op_type: "MatMul" input: "x" input: "w1" output: "h" }
  node { name: "mm2" op_type: "MatMul" input: "h" input: "w2" output: "p" }
  node { name: "bias" op_type: "Add" input: "p" input: "b2" output: "q" }
  node { name: "act" op_type: "Relu" input: "q" output: "y" }
  input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_value: 2 } dim { dim_value: 8 } } } } }
  output { name: "y" type { tensor_type { elem_type: 1 shape { dim { dim_value: 2 } dim { dim_value: 4 } } } } }
)";

/// kTwoGemms with its weights (multiples of 1/8: every sum is exact).
std::string twoGemmsModel() {
  std::string text = kTwoGemms;
  auto initializer = [&](const char *name, std::vector<int> dims) {
    int count = 1;
    text += std::string("  initializer { name: \"") + name +
            "\" data_type: 1";
    for (int d : dims)
      text += " dims: " + std::to_string(d), count *= d;
    for (int i = 0; i < count; ++i)
      text += " float_data: " + std::to_string(((i * 5 + 3) % 17 - 8) / 8.0);
    text += " }\n";
  };
  initializer("w1", {8, 16});
  initializer("w2", {16, 4});
  initializer("b2", {4});
  return text + "}\n";
}
} // namespace

// What snugc plans for the GEMMs it lowers to cuBLAS reaches cuBLAS: every
// plain GEMM's handle has a workspace of at least cuBLAS's documented
// 16 KiB (below it "some routines" fail with CUBLAS_STATUS_ALLOC_FAILED),
// 256-byte aligned (cublasSetWorkspace refuses less) and inside the arena;
// every cublasLtMatmul gets the same, and was planned under
// MIN_ALIGNMENT preferences that hold of its pointers and are the most
// they allow (up to 256). --alignment=64 packs the values 64 bytes apart,
// so C and D of the cuBLASLt GEMM sit at 128. The outputs are the host
// executor's.
TEST_F(FakeCudaTest, CompiledGemmsGetWorkspaceAndAlignment) {
  TempFile model("onnxtxt"), bundlePath;
  std::string text = twoGemmsModel();
  writeFile(model.path, std::vector<uint8_t>(text.begin(), text.end()));
  std::string command = std::string(SNUGC_TOOL) + " compile " + model.path +
                        " -o " + bundlePath.path +
                        " --target=cuda --alignment=64 --memory-report=none "
                        "> /dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  snug_bundle *bundle = nullptr;
  ASSERT_EQ(snug_bundle_load(bundlePath.path.c_str(), &bundle), SNUG_OK)
      << snug_last_error();
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(int(i % 7) - 3) / 4;
  auto run = [&](snug_device device, std::vector<float> &y) {
    snug_session_options options = cudaOptions();
    options.device = device;
    snug_session *session = nullptr;
    ASSERT_EQ(snug_session_create(bundle, &options, &session), SNUG_OK)
        << snug_last_error();
    EXPECT_EQ(snug_session_set_input(session, 0, x.data(), 64), SNUG_OK);
    EXPECT_EQ(snug_session_run(session), SNUG_OK) << snug_last_error();
    y.assign(8, -1.0f);
    EXPECT_EQ(snug_session_get_output(session, 0, y.data(), 32), SNUG_OK);
    snug_session_destroy(session);
  };
  const FakeCudaStats &f = fake();
  size_t gemmsBefore = f.gemmWorkspaces.size(), ltBefore = f.ltCalls.size();
  std::vector<float> onHost, onDevice;
  run(SNUG_DEVICE_HOST, onHost);
  run(SNUG_DEVICE_CUDA, onDevice);
  snug_bundle_destroy(bundle);
  EXPECT_EQ(onDevice, onHost);

  ASSERT_GT(f.gemmWorkspaces.size(), gemmsBefore);
  for (size_t i = gemmsBefore; i < f.gemmWorkspaces.size(); ++i) {
    auto workspace = f.gemmWorkspaces[i];
    EXPECT_GE(workspace.second, 16384u) << "GEMM " << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(workspace.first) % 256, 0u)
        << "GEMM " << i;
  }
  ASSERT_GT(f.ltCalls.size(), ltBefore);
  bool under256 = false;
  for (size_t i = ltBefore; i < f.ltCalls.size(); ++i) {
    const FakeCudaStats::LtCall &call = f.ltCalls[i];
    EXPECT_GE(call.workspaceBytes, 16384u) << "cublasLtMatmul " << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(call.workspace) % 256, 0u)
        << "cublasLtMatmul " << i;
    const void *pointers[] = {call.pointerA, call.pointerB, call.pointerC,
                              call.pointerD};
    for (int o = 0; o < 4; ++o) {
      uint32_t alignment = call.minAlignment[o];
      uintptr_t address = reinterpret_cast<uintptr_t>(pointers[o]);
      std::string what =
          "cublasLtMatmul " + std::to_string(i) + " operand " + "ABCD"[o];
      ASSERT_NE(alignment, 0u) << what << ": MIN_ALIGNMENT not set";
      EXPECT_EQ(alignment & (alignment - 1), 0u) << what;
      EXPECT_LE(alignment, 256u) << what;
      EXPECT_EQ(address % alignment, 0u) << what;
      if (alignment < 256) {
        EXPECT_NE(address % (2 * alignment), 0u) << what << ": understated";
      }
      under256 |= alignment < 256;
    }
  }
  // The test means something only when an operand sits off 256.
  EXPECT_TRUE(under256);
}

// Each epilogue kind is cuBLASLt's (RELU_BIAS 6, GELU_BIAS 36, RELU 2,
// GELU 32), the bias pointer set only with a bias, and TF32 math asks for
// CUBLAS_COMPUTE_32F_FAST_TF32 (77) as the plain path does. ReLU with the
// bias: y = leaky(relu(x w + b)) = [8.5, 0].
TEST_F(FakeCudaTest, LtGemmEpilogueKindsAndMath) {
  const struct {
    uint8_t epilogue;
    uint32_t lt;
    bool tf32;
  } cases[] = {{bundle::GemmEpilogueReluBias, 6, false},
               {bundle::GemmEpilogueGeluBias, 36, true},
               {bundle::GemmEpilogueRelu, 2, false},
               {bundle::GemmEpilogueGelu, 32, false}};
  const FakeCudaStats &f = fake();
  for (const auto &c : cases) {
    bundle::DevicePlan plan = mlpPlanLt(c.epilogue);
    if (c.tf32)
      plan.steps[0].gemm.math = bundle::GemmMathTf32;
    Loaded loaded(cudaBundleOf(kMlp, plan, fakeImages()));
    ASSERT_TRUE(loaded.bundle);
    snug_session *session = nullptr;
    snug_session_options options = cudaOptions();
    ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
        << snug_last_error();
    std::vector<float> out = runMlp(session, {1, 2, 3, -4});
    EXPECT_EQ(f.lastLt.epilogue, c.lt);
    EXPECT_EQ(f.lastLt.computeType, c.tf32 ? 77 : 68);
    bool bias = bundle::gemmEpilogueHasBias(c.epilogue);
    EXPECT_EQ(f.lastLt.bias == nullptr, !bias);
    if (c.epilogue == bundle::GemmEpilogueReluBias) {
      EXPECT_EQ(out, (std::vector<float>{8.5f, 0.0f, 8.5f, 0.0f}));
    }
    snug_session_destroy(session);
  }
  expectNothingLive();
}

// A GEMM cuBLASLt has no algorithm for fails the session's creation (not a
// run), naming the step and its op; nothing stays allocated.
TEST_F(FakeCudaTest, LtGemmWithoutAnAlgorithmFailsCreation) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlanLt(), fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  setLtNoAlgorithm(true);
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  EXPECT_NE(snug_session_create(loaded.bundle, &options, &session), SNUG_OK);
  setLtNoAlgorithm(false);
  std::string error = snug_last_error();
  EXPECT_TRUE(contains(error, "device step 0 of")) << error;
  EXPECT_TRUE(contains(error, "MatMul")) << error;
  EXPECT_TRUE(contains(error, "cuBLASLt has no algorithm for this GEMM with "
                              "epilogue bias (m 2, n 1, k 4, batch 1) within "
                              "1024 bytes of workspace"))
      << error;
  EXPECT_EQ(session, nullptr);
  const FakeCudaStats &f = fake();
  EXPECT_EQ(f.ltHandles, 0);
  EXPECT_EQ(f.ltDescs, 0);
  EXPECT_EQ(f.ltLayouts, 0);
  EXPECT_EQ(f.ltPreferences, 0);
  expectNothingLive();
}

TEST_F(FakeCudaTest, GraphsOff) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlan(), fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions(0);
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK);
  int instantiations = fake().instantiations;
  int launches = fake().directLaunches;
  for (int run = 0; run < 4; ++run)
    EXPECT_EQ(runMlp(session, {1, 2, 3, -4}),
              (std::vector<float>{8.5f, -0.875f, 8.5f, -0.875f}));
  EXPECT_EQ(fake().instantiations, instantiations);
  EXPECT_EQ(fake().directLaunches, launches + 8);
  // What the session does, as snug-run's latency line reports it; a host
  // session never replays a graph; null arguments are refused.
  int uses = -1;
  EXPECT_EQ(snug_session_uses_cuda_graphs(session, &uses), SNUG_OK);
  EXPECT_EQ(uses, 0);
  EXPECT_EQ(snug_session_uses_cuda_graphs(session, nullptr),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(snug_session_uses_cuda_graphs(nullptr, &uses),
            SNUG_ERROR_INVALID_ARGUMENT);
  snug_session_destroy(session);
  snug_session_options host = cudaOptions();
  host.device = SNUG_DEVICE_HOST;
  ASSERT_EQ(snug_session_create(loaded.bundle, &host, &session), SNUG_OK);
  uses = -1;
  EXPECT_EQ(snug_session_uses_cuda_graphs(session, &uses), SNUG_OK);
  EXPECT_EQ(uses, 0);
  snug_session_destroy(session);
  expectNothingLive();
}

// Two allocations of exactly the predicted sizes at creation, none later;
// device_used_bytes sees the module's and cuBLAS's share too.
TEST_F(FakeCudaTest, MemoryIsAllocatedOnceAndExactly) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlan(), fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  snug_sizes sizes;
  ASSERT_EQ(snug_bundle_sizes(loaded.bundle, &sizes), SNUG_OK);
  int before = fake().allocCalls;
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK);
  EXPECT_EQ(fake().allocCalls, before + 2);
  snug_memory_stats stats;
  ASSERT_EQ(snug_session_memory(session, &stats), SNUG_OK);
  EXPECT_EQ(stats.device, SNUG_DEVICE_CUDA);
  EXPECT_EQ(stats.allocated_bytes, sizes.weights + sizes.device_arena);
  EXPECT_EQ(stats.allocated_bytes, 128u + 1280u);
  EXPECT_EQ(stats.allocations, 2u);
  EXPECT_EQ(stats.arena_bytes, 1280u);
  EXPECT_EQ(stats.weights_bytes, 128u);
  EXPECT_EQ(stats.device_used_bytes,
            stats.allocated_bytes + kFakeModuleBytes + kFakeCublasBytes);
  for (int run = 0; run < 5; ++run)
    runMlp(session, {1, 2, 3, -4});
  double ms[4];
  float x[4] = {1, 2, 3, -4};
  ASSERT_EQ(snug_session_set_input(session, 0, x, sizeof x), SNUG_OK);
  ASSERT_EQ(snug_session_benchmark(session, 2, 4, ms), SNUG_OK)
      << snug_last_error();
  for (double t : ms)
    EXPECT_GE(t, 0);
  EXPECT_EQ(fake().allocCalls, before + 2);
  // The weights were uploaded, and kernels loaded before the first launch.
  EXPECT_GE(fake().functionsLoaded, 2);
  snug_session_destroy(session);
  expectNothingLive();
}

// I/O pointers are device addresses inside the session's arena.
TEST_F(FakeCudaTest, DataPointersAreDeviceAddresses) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlan(), fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK);
  void *input = nullptr;
  const void *output = nullptr;
  ASSERT_EQ(snug_session_input_data(session, 0, &input), SNUG_OK);
  ASSERT_EQ(snug_session_output_data(session, 1, &output), SNUG_OK);
  EXPECT_EQ(static_cast<const uint8_t *>(output) -
                static_cast<const uint8_t *>(input),
            128);                              // z at 128, x at 0
  EXPECT_TRUE(fake().allocBytes.count(input)); // the arena's base
  // The fake's device memory is host memory: write x through the pointer.
  float x[4] = {1, 2, 3, -4};
  std::memcpy(input, x, sizeof x);
  ASSERT_EQ(snug_session_run(session), SNUG_OK) << snug_last_error();
  float z[2];
  std::memcpy(z, output, sizeof z);
  EXPECT_EQ(z[0], 8.5f);
  EXPECT_EQ(z[1], -0.875f);
  snug_session_destroy(session);
}

// The caller's arena and stream are used, not allocated or created.
TEST_F(FakeCudaTest, CallerArenaAndStream) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlan(), fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  const rt::cuda::CudaDriver *driver;
  ASSERT_TRUE(rt::cuda::getCudaDriver(driver).isOk());
  std::unique_ptr<rt::cuda::CudaContext> context;
  ASSERT_TRUE(rt::cuda::CudaContext::acquire(*driver, context).isOk());
  CUstream stream = nullptr;
  {
    rt::cuda::ContextScope scope(*driver, context->get());
    ASSERT_EQ(driver->StreamCreate(&stream, 0), CUDA_SUCCESS);
  }
  void *arena = std::aligned_alloc(256, 1280);
  snug_session_options options = cudaOptions();
  options.arena = arena;
  options.arena_bytes = 1280;
  options.stream = stream;
  snug_session *session = nullptr;
  int streams = fake().streams;
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  EXPECT_EQ(fake().streams, streams); // the caller's
  snug_memory_stats stats;
  ASSERT_EQ(snug_session_memory(session, &stats), SNUG_OK);
  EXPECT_EQ(stats.allocated_bytes, 128u);
  EXPECT_EQ(stats.allocations, 1u);
  EXPECT_EQ(stats.arena_bytes, 1280u);
  for (int run = 0; run < 3; ++run) // eager, capture, replay on the stream
    EXPECT_EQ(runMlp(session, {1, 2, 3, -4}),
              (std::vector<float>{8.5f, -0.875f, 8.5f, -0.875f}));
  float y[2];
  std::memcpy(y, arena, sizeof y); // y lives at offset 0 of the caller's arena
  EXPECT_EQ(y[0], 8.5f);
  EXPECT_EQ(fake().workspace, static_cast<uint8_t *>(arena) + 256);
  snug_session_destroy(session);
  std::free(arena);
  {
    rt::cuda::ContextScope scope(*driver, context->get());
    EXPECT_EQ(driver->StreamDestroy(stream), CUDA_SUCCESS);
  }
  context.reset();
  expectNothingLive();
}

TEST_F(FakeCudaTest, OutOfMemoryBeforeAllocating) {
  bundle::DevicePlan plan = mlpPlan();
  plan.steps[0].gemm.workspaceBytes = uint64_t(2) << 30; // the fake has 1 GiB
  plan.arenaBytes = plan.steps[0].gemm.workspaceOffset +
                    plan.steps[0].gemm.workspaceBytes;
  Loaded loaded(cudaBundleOf(kMlp, plan, fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  int before = fake().allocCalls;
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  EXPECT_EQ(snug_session_create(loaded.bundle, &options, &session),
            SNUG_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(session, nullptr);
  std::string message = snug_last_error();
  EXPECT_TRUE(contains(message, "needs 2147484032 bytes (2.0 GiB) on the CUDA "
                                "device (arena 2147483904 bytes"))
      << message;
  EXPECT_TRUE(contains(message, "weights 128 bytes)")) << message;
  EXPECT_TRUE(contains(message, "'Fake GPU' has 1073741824 bytes (1.0 GiB) "
                                "free of 1073741824"))
      << message;
  EXPECT_EQ(fake().allocCalls, before);
  expectNothingLive();
}

// Creation failures after some resources exist release them all.
TEST_F(FakeCudaTest, FailedCreationLeaksNothing) {
  bundle::DevicePlan plan = mlpPlan();
  plan.kernels[1] = "snug_missing"; // not in the image
  Loaded missing(cudaBundleOf(kMlp, plan, fakeImages()));
  ASSERT_TRUE(missing.bundle);
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  EXPECT_EQ(snug_session_create(missing.bundle, &options, &session),
            SNUG_ERROR_INVALID_BUNDLE);
  EXPECT_TRUE(contains(snug_last_error(), "kernel 'snug_missing' is not in"))
      << snug_last_error();
  expectNothingLive();

  plan = mlpPlan();
  plan.kernels[1] = "snug_heavy"; // 128 threads per block at most
  plan.steps[2].launch.block[0] = 256;
  Loaded heavy(cudaBundleOf(kMlp, plan, fakeImages()));
  ASSERT_TRUE(heavy.bundle);
  EXPECT_EQ(snug_session_create(heavy.bundle, &options, &session),
            SNUG_ERROR_UNSUPPORTED);
  std::string message = snug_last_error();
  EXPECT_TRUE(contains(message, "device step 2 of op #2 (LeakyRelu)"))
      << message;
  EXPECT_TRUE(contains(message, "256 threads per block")) << message;
  EXPECT_TRUE(contains(message, "allows 128")) << message;
  expectNothingLive();

  Loaded garbage(cudaBundleOf(kMlp, mlpPlan(),
                              {image(bundle::ImageCubin, 90, "not an image")}));
  ASSERT_TRUE(garbage.bundle);
  EXPECT_EQ(snug_session_create(garbage.bundle, &options, &session),
            SNUG_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(snug_last_error(), "cannot load its cubin sm_90"))
      << snug_last_error();
  expectNothingLive();
}

// A kernel fault is asynchronous: the launch succeeds, the fault shows at
// the run's synchronization (sticky: the session's later calls fail too,
// until its context goes); with CUDA_LAUNCH_BLOCKING=1 the launch itself
// fails and the error names the step and the op, as the executor's message
// advises. Nothing leaks either way.
TEST_F(FakeCudaTest, KernelFaultIsReportedAtTheNextSynchronization) {
  bundle::DevicePlan plan = mlpPlan();
  plan.kernels[0] = "snug_fail";
  Loaded loaded(cudaBundleOf(kMlp, plan, fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  for (bool blocking : {false, true}) {
    if (blocking)
      setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
    snug_session *session = nullptr;
    snug_session_options options = cudaOptions();
    ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK);
    float x[4] = {1, 2, 3, -4};
    ASSERT_EQ(snug_session_set_input(session, 0, x, sizeof x), SNUG_OK);
    EXPECT_EQ(snug_session_run(session), SNUG_ERROR_RUNTIME);
    std::string message = snug_last_error();
    EXPECT_TRUE(contains(message, "CUDA_ERROR_LAUNCH_FAILED")) << message;
    if (blocking) {
      EXPECT_TRUE(contains(message, "device step 1 of op #1 (Add)"))
          << message;
      EXPECT_TRUE(contains(message, "launching kernel 'snug_fail'"))
          << message;
    } else {
      EXPECT_TRUE(contains(message, "a kernel failed after the steps were "
                                    "enqueued"))
          << message;
    }
    // Sticky: the next run fails at its first step (the GEMM).
    EXPECT_EQ(snug_session_run(session), SNUG_ERROR_RUNTIME);
    float y[2];
    EXPECT_EQ(snug_session_get_output(session, 0, y, sizeof y),
              SNUG_ERROR_INVALID_ARGUMENT); // no successful run
    snug_session_destroy(session);
    unsetenv("CUDA_LAUNCH_BLOCKING");
    expectNothingLive();
  }
  // The context went with the session: a new one runs.
  Loaded good(cudaBundleOf(kMlp, mlpPlan(), fakeImages()));
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(good.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  EXPECT_EQ(runMlp(session, {1, 2, 3, -4}),
            (std::vector<float>{8.5f, -0.875f, 8.5f, -0.875f}));
  snug_session_destroy(session);
}

// The driver reads as many parameters as the kernel has (the image says
// how many, and their sizes): a launch with one argument too few, or one
// of the wrong width, is refused at creation, naming the step and kernel.
TEST_F(FakeCudaTest, LaunchArgumentsMatchTheKernel) {
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  bundle::DevicePlan plan = mlpPlan();
  plan.steps[1].launch.args.pop_back(); // snug_add without its n
  Loaded fewer(cudaBundleOf(kMlp, plan, fakeImages()));
  ASSERT_TRUE(fewer.bundle);
  EXPECT_EQ(snug_session_create(fewer.bundle, &options, &session),
            SNUG_ERROR_INVALID_BUNDLE);
  EXPECT_TRUE(contains(snug_last_error(),
                       "device step 1 of op #1 (Add) launches kernel "
                       "'snug_add' with 3 arguments; the kernel takes 4"))
      << snug_last_error();
  expectNothingLive();

  plan = mlpPlan();
  plan.steps[1].launch.args[3].kind = bundle::ArgI64; // n is a .u32
  Loaded wider(cudaBundleOf(kMlp, plan, fakeImages()));
  ASSERT_TRUE(wider.bundle);
  EXPECT_EQ(snug_session_create(wider.bundle, &options, &session),
            SNUG_ERROR_INVALID_BUNDLE);
  EXPECT_TRUE(contains(snug_last_error(),
                       "with a 8-byte argument 3; the kernel's parameter "
                       "has 4 bytes"))
      << snug_last_error();
  expectNothingLive();
}

namespace {

/// A driver entry point of the fake, by name.
template <typename F> F driverFunction(const char *name) {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto getProc = reinterpret_cast<CUresult (*)(
      const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *)>(
      dlsym(library, "cuGetProcAddress_v2"));
  void *function = nullptr;
  if (getProc)
    (void)getProc(name, &function, 12000, 0, nullptr);
  dlclose(library);
  return reinterpret_cast<F>(function);
}

template <typename F> F fakeExport(const char *name) {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto function = reinterpret_cast<F>(dlsym(library, name));
  dlclose(library);
  return function;
}

} // namespace

// The launch limits, checked by the driver against the kernel: CUDA's
// per-dim grid and block limits, the kernel's own thread limit (.maxntid
// 128 for snug_heavy), and shared memory above 48 KiB only after
// cuFuncSetAttribute's opt-in (up to the device's 227 KiB on 9.0). (The
// bundle reader refuses such plans before the executor sees them; this is
// the driver that refuses an executor which gets them wrong.)
TEST_F(FakeCudaTest, LaunchLimitsAndSharedMemoryOptIn) {
  const rt::cuda::CudaDriver *driver;
  ASSERT_TRUE(rt::cuda::getCudaDriver(driver).isOk());
  std::unique_ptr<rt::cuda::CudaContext> context;
  ASSERT_TRUE(rt::cuda::CudaContext::acquire(*driver, context).isOk());
  {
    rt::cuda::ContextScope scope(*driver, context->get());
    auto setAttribute =
        driverFunction<decltype(&cuFuncSetAttribute)>("cuFuncSetAttribute");
    ASSERT_NE(setAttribute, nullptr);
    std::string text = fakeImageText();
    CUmodule module = nullptr;
    ASSERT_EQ(driver->ModuleLoadDataEx(&module, text.c_str(), 0, nullptr,
                                       nullptr),
              CUDA_SUCCESS);
    CUfunction leaky = nullptr, heavy = nullptr;
    ASSERT_EQ(driver->ModuleGetFunction(&leaky, module, "snug_leaky"),
              CUDA_SUCCESS);
    ASSERT_EQ(driver->ModuleGetFunction(&heavy, module, "snug_heavy"),
              CUDA_SUCCESS);
    float x = -2, y = 0, alpha = 0.5f;
    long long n = 1;
    float *px = &x, *py = &y;
    void *params[] = {&px, &py, &n, &alpha};
    auto launch = [&](CUfunction f, unsigned gy, unsigned bx, unsigned bz,
                      unsigned shared) {
      return driver->LaunchKernel(f, 1, gy, 1, bx, 1, bz, shared, nullptr,
                                  params, nullptr);
    };
    EXPECT_EQ(launch(leaky, 1, 32, 1, 0), CUDA_SUCCESS);
    EXPECT_EQ(launch(leaky, 65536, 32, 1, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(launch(leaky, 1, 1, 65, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(launch(leaky, 1, 1025, 1, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(launch(heavy, 1, 256, 1, 0), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    EXPECT_EQ(launch(heavy, 1, 128, 1, 0), CUDA_SUCCESS);
    EXPECT_EQ(launch(leaky, 1, 32, 1, 48 << 10), CUDA_SUCCESS);
    EXPECT_EQ(launch(leaky, 1, 32, 1, 64 << 10), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(setAttribute(leaky, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                           300 << 10),
              CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(setAttribute(leaky, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                           64 << 10),
              CUDA_SUCCESS);
    EXPECT_EQ(launch(leaky, 1, 32, 1, 64 << 10), CUDA_SUCCESS);
    // The launches ran (asynchronously, at the synchronization).
    EXPECT_EQ(y, 0.0f);
    EXPECT_EQ(driver->StreamSynchronize(nullptr), CUDA_SUCCESS);
    EXPECT_EQ(y, -1.0f);
    EXPECT_EQ(driver->ModuleUnload(module), CUDA_SUCCESS);
  }
  context.reset();
  expectNothingLive();
}

// During a stream capture a synchronizing call is prohibited: it fails with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the capture ends invalidated,
// with no graph. (The executor's capture makes no such call: the other
// tests' captures succeed with the fake counting no refusal.)
TEST_F(FakeCudaTest, CaptureRefusesSynchronousCalls) {
  const rt::cuda::CudaDriver *driver;
  ASSERT_TRUE(rt::cuda::getCudaDriver(driver).isOk());
  std::unique_ptr<rt::cuda::CudaContext> context;
  ASSERT_TRUE(rt::cuda::CudaContext::acquire(*driver, context).isOk());
  rt::cuda::ContextScope scope(*driver, context->get());
  auto streamCreate = driverFunction<decltype(&cuStreamCreate)>("cuStreamCreate");
  auto streamDestroy =
      driverFunction<decltype(&cuStreamDestroy)>("cuStreamDestroy");
  auto begin =
      driverFunction<decltype(&cuStreamBeginCapture)>("cuStreamBeginCapture");
  auto end = driverFunction<decltype(&cuStreamEndCapture)>("cuStreamEndCapture");
  auto sync =
      driverFunction<decltype(&cuStreamSynchronize)>("cuStreamSynchronize");
  auto ctxSync = driverFunction<CUresult (*)()>("cuCtxSynchronize");
  auto alloc = driverFunction<decltype(&cuMemAlloc)>("cuMemAlloc");
  ASSERT_TRUE(streamCreate && begin && end && sync && ctxSync && alloc);
  CUstream stream = nullptr;
  ASSERT_EQ(streamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  int refusals = fake().captureRefusals;
  for (int call = 0; call < 3; ++call) {
    ASSERT_EQ(begin(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
    CUdeviceptr pointer = 0;
    CUresult r = call == 0   ? sync(stream)
                 : call == 1 ? ctxSync()
                             : alloc(&pointer, 256);
    EXPECT_EQ(r, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) << call;
    CUgraph graph = nullptr;
    EXPECT_EQ(end(stream, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        << call;
    EXPECT_EQ(graph, nullptr);
  }
  EXPECT_EQ(fake().captureRefusals, refusals + 3);
  // Outside a capture the same calls succeed.
  EXPECT_EQ(sync(stream), CUDA_SUCCESS);
  EXPECT_EQ(streamDestroy(stream), CUDA_SUCCESS);
  context.reset();
}

// The device's compute capability picks the image, and the fake loads only
// what such a device loads: on 8.0 the sm_80 cubin, on 8.6 (no exact cubin)
// the PTX through the JIT, on 9.0 the sm_90 cubin; PTX of an ISA newer than
// the driver's JIT (9.0 on a 12.8 driver) is refused, naming the driver.
TEST_F(FakeCudaTest, ComputeCapabilityPicksTheImage) {
  auto setCc = fakeExport<void (*)(int, int)>("fakeCudaSetComputeCapability");
  ASSERT_NE(setCc, nullptr);
  auto ptxImage = [](const std::string &version) {
    std::string text = fakeImageText();
    return image(bundle::ImagePtx, 80,
                 ".version " + version + "\n.target sm_80\n" +
                     text.substr(text.find(".entry")));
  };
  Loaded loaded(cudaBundleOf(kMlp, mlpPlan(),
                             {image(bundle::ImageCubin, 80, fakeImageText("sm_80")),
                              image(bundle::ImageCubin, 90, fakeImageText("sm_90")),
                              ptxImage("8.0")}));
  ASSERT_TRUE(loaded.bundle);
  const FakeCudaStats &f = fake();
  struct Case {
    int major, minor;
    bool cubin;
  };
  for (Case c : {Case{8, 0, true}, Case{8, 6, false}, Case{9, 0, true}}) {
    setCc(c.major, c.minor);
    int cubins = f.cubinLoads, ptxs = f.ptxLoads;
    snug_session *session = nullptr;
    snug_session_options options = cudaOptions();
    ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
        << c.major << "." << c.minor << ": " << snug_last_error();
    EXPECT_EQ(f.cubinLoads, cubins + (c.cubin ? 1 : 0)) << c.major << c.minor;
    EXPECT_EQ(f.ptxLoads, ptxs + (c.cubin ? 0 : 1)) << c.major << c.minor;
    EXPECT_EQ(runMlp(session, {1, 2, 3, -4}),
              (std::vector<float>{8.5f, -0.875f, 8.5f, -0.875f}));
    snug_session_destroy(session);
  }
  // A cubin of another major arch does not load, whatever the bundle says.
  setCc(8, 6);
  Loaded wrongArch(cudaBundleOf(
      kMlp, mlpPlan(), {image(bundle::ImageCubin, 86, fakeImageText("sm_90"))}));
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  EXPECT_EQ(snug_session_create(wrongArch.bundle, &options, &session),
            SNUG_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(snug_last_error(), "CUDA_ERROR_NO_BINARY_FOR_GPU"))
      << snug_last_error();
  // PTX 9.0 (CUDA 13's) on a 12.8 driver, whose JIT takes up to 8.7.
  setenv("SNUG_FAKE_CUDA_DRIVER_VERSION", "12080", 1);
  Loaded newPtx(cudaBundleOf(kMlp, mlpPlan(), {ptxImage("9.0")}));
  EXPECT_EQ(snug_session_create(newPtx.bundle, &options, &session),
            SNUG_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(snug_last_error(), "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"))
      << snug_last_error();
  unsetenv("SNUG_FAKE_CUDA_DRIVER_VERSION");
  setCc(9, 0);
  expectNothingLive();
}

// cuBLAS takes a workspace only 256-byte aligned, and a GEMM needs one of
// at least 16 KiB: mlpPlan's 1024 bytes fail the warm-up GEMM at creation.
TEST_F(FakeCudaTest, CublasRefusesASmallOrUnalignedWorkspace) {
  unsetenv("SNUG_FAKE_CUDA_MIN_WORKSPACE");
  Loaded loaded(cudaBundleOf(kMlp, mlpPlan(), fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  int refusals = fake().workspaceRefusals;
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  EXPECT_NE(snug_session_create(loaded.bundle, &options, &session), SNUG_OK);
  EXPECT_TRUE(contains(snug_last_error(), "CUBLAS_STATUS_ALLOC_FAILED"))
      << snug_last_error();
  EXPECT_EQ(fake().workspaceRefusals, refusals + 1);
  EXPECT_EQ(session, nullptr);
  expectNothingLive();

  auto create = fakeExport<int (*)(void **)>("cublasCreate_v2");
  auto destroy = fakeExport<int (*)(void *)>("cublasDestroy_v2");
  auto setWorkspace =
      fakeExport<int (*)(void *, void *, size_t)>("cublasSetWorkspace_v2");
  ASSERT_TRUE(create && destroy && setWorkspace);
  void *handle = nullptr;
  ASSERT_EQ(create(&handle), 0);
  alignas(256) static uint8_t buffer[256 + 16384];
  EXPECT_EQ(setWorkspace(handle, buffer + 64, 16384), 7); // INVALID_VALUE
  EXPECT_EQ(setWorkspace(handle, buffer, 16384), 0);
  EXPECT_EQ(destroy(handle), 0);
}

TEST_F(FakeCudaTest, ImageChoiceAndHostOnlyBundles) {
  Loaded sm80(
      cudaBundleOf(kMlp, mlpPlan(), {image(bundle::ImageCubin, 80, fakeImageText("sm_80"))}));
  Loaded hostOnly(bundleOf(kMlp));
  ASSERT_TRUE(sm80.bundle && hostOnly.bundle);
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  EXPECT_EQ(snug_session_create(sm80.bundle, &options, &session),
            SNUG_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(snug_last_error(), "'Fake GPU' (sm_90)"))
      << snug_last_error();
  EXPECT_EQ(snug_session_create(hostOnly.bundle, &options, &session),
            SNUG_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(snug_last_error(), "compiled for the host only"))
      << snug_last_error();
  expectNothingLive();

  // PTX not newer than the device is JIT-compiled.
  Loaded ptx(
      cudaBundleOf(kMlp, mlpPlan(), {image(bundle::ImagePtx, 80, fakeImageText())}));
  ASSERT_TRUE(ptx.bundle);
  ASSERT_EQ(snug_session_create(ptx.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  EXPECT_EQ(runMlp(session, {1, 2, 3, -4}),
            (std::vector<float>{8.5f, -0.875f, 8.5f, -0.875f}));
  snug_session_destroy(session);
  expectNothingLive();
}

namespace {

/// Makes the fake's cuDriverGetVersion report `version`.
void setDriverVersion(int version) {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr);
  auto set = reinterpret_cast<void (*)(int)>(
      dlsym(library, "fakeCudaSetDriverVersion"));
  ASSERT_NE(set, nullptr);
  set(version);
  dlclose(library);
}

/// What snugc records for NVRTC and nvJitLink 12.0 (cuda::getKernelToolchain).
bundle::KernelToolchain cuda12Toolchain() {
  bundle::KernelToolchain toolchain;
  toolchain.nvrtcVersion = toolchain.jitLinkVersion = 12000;
  toolchain.ptxIsa = 80;
  toolchain.minDriverVersion = 12000;
  return toolchain;
}

} // namespace

// A bundle whose recorded toolchain needs a newer driver than this one is
// refused at session creation with both versions named, before anything is
// allocated or loaded; the oldest driver it names runs it, and so do newer
// ones. A bundle without a record (format 7, images made by hand) passes
// that check, and its GEMMs then find no cuBLAS for so old a driver.
TEST_F(FakeCudaTest, DriverOlderThanTheToolchainIsRefused) {
  Loaded cuda12(cudaBundleOf(kMlp, mlpPlan(), fakeImages(), cuda12Toolchain()));
  Loaded unrecorded(cudaBundleOf(kMlp, mlpPlan(), fakeImages()));
  ASSERT_TRUE(cuda12.bundle && unrecorded.bundle);
  snug_kernel_toolchain recorded;
  ASSERT_EQ(snug_bundle_kernel_toolchain(cuda12.bundle, &recorded), SNUG_OK);
  EXPECT_EQ(recorded.min_driver_version, 12000u);
  EXPECT_EQ(recorded.ptx_isa, 80u);
  snug_session_options options = cudaOptions();
  snug_session *session = nullptr;
  const FakeCudaStats &f = fake();
  int allocations = f.allocCalls;

  setDriverVersion(11080);
  EXPECT_EQ(snug_session_create(cuda12.bundle, &options, &session),
            SNUG_ERROR_DRIVER_TOO_OLD);
  EXPECT_EQ(session, nullptr);
  std::string message = snug_last_error();
  EXPECT_TRUE(contains(message, "needs a CUDA 12.0 driver (its kernels: "
                                "NVRTC 12.0, nvJitLink 12.0, PTX ISA 8.0); "
                                "this driver is CUDA 11.8 "
                                "(cuDriverGetVersion 11080)"))
      << message;
  EXPECT_EQ(f.allocCalls, allocations);
  expectNothingLive();
  // Without a record the driver judges the images itself (the fake loads
  // them), but no cuBLAS this runtime calls (12 or newer) runs on it: none
  // is loaded.
  EXPECT_EQ(snug_session_create(unrecorded.bundle, &options, &session),
            SNUG_ERROR_NO_DEVICE);
  message = snug_last_error();
  EXPECT_TRUE(contains(message, "no cuBLAS: cannot load libcuBLAS (tried 0 "
                                "names: the driver is older than CUDA 12"))
      << message;
  expectNothingLive();

  for (int version : {12000, 12080, 13000}) {
    setDriverVersion(version);
    session = nullptr;
    ASSERT_EQ(snug_session_create(cuda12.bundle, &options, &session), SNUG_OK)
        << version << ": " << snug_last_error();
    EXPECT_EQ(runMlp(session, {1, 2, 3, -4}),
              (std::vector<float>{8.5f, -0.875f, 8.5f, -0.875f}));
    snug_session_destroy(session);
  }
  setDriverVersion(13000);
  expectNothingLive();
}

// Weights go up in chunks of at most 64 MiB, straight from the mapping; an
// output that is a weight reads them back from the device.
TEST_F(FakeCudaTest, WeightsUploadInChunks) {
  const int64_t count = (uint64_t(65) << 20) / 4 + 3; // just over 65 MiB
  ir::Module module("big");
  std::vector<uint8_t> bytes(count * 4);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = uint8_t(i * 7 + 1);
  ir::Value *w =
      module.addWeight("w", ir::TensorType(ir::DType::F32, {count}), bytes);
  module.setOutputs({w});
  module.setAttribute("arena", ir::Attribute::getInt(0));
  bundle::DevicePlan plan; // nothing to run: the output is the weight
  std::vector<bundle::KernelImage> images = fakeImages();
  auto serialized = serializeBundle(module, {"p", "v", &plan, &images});
  ASSERT_TRUE(static_cast<bool>(serialized))
      << toString(serialized.takeError());
  Loaded loaded(*serialized);
  ASSERT_TRUE(loaded.bundle);
  int uploads = fake().hostToDevice;
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  EXPECT_EQ(fake().hostToDevice, uploads + 2);
  snug_memory_stats stats;
  ASSERT_EQ(snug_session_memory(session, &stats), SNUG_OK);
  EXPECT_EQ(stats.allocations, 1u); // no arena: its size is 0
  ASSERT_EQ(snug_session_run(session), SNUG_OK) << snug_last_error();
  std::vector<uint8_t> out(bytes.size());
  ASSERT_EQ(snug_session_get_output(session, 0, out.data(), out.size()),
            SNUG_OK)
      << snug_last_error();
  EXPECT_TRUE(out == bytes);
  snug_session_destroy(session);
  expectNothingLive();
}

// snug-run --device cuda: predicted against allocated device memory, the
// latency summary, and the outputs of the last (replayed) run equal to the
// first run's.
TEST_F(FakeCudaTest, SnugRunReportsMemoryAndLatency) {
  TempFile bundle;
  writeFile(bundle.path, cudaBundleOf(kMlp, mlpPlan(), fakeImages()));
  TempFile output("txt");
  std::string command = std::string(SNUG_RUN_TOOL) + " " + bundle.path +
                        " --device cuda --input x=random --runs 5 "
                        "--warmup 1 > " +
                        output.path + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  std::FILE *file = std::fopen(output.path.c_str(), "r");
  ASSERT_TRUE(file);
  std::string text(4096, '\0');
  text.resize(std::fread(&text[0], 1, text.size(), file));
  std::fclose(file);
  EXPECT_TRUE(contains(text, "device memory: predicted 1408 bytes (weights "
                             "128 + device arena 1280, cuBLAS workspace 1024 "
                             "inside), allocated 1408 bytes in 2 allocations: "
                             "match"))
      << text;
  EXPECT_TRUE(contains(text, "device memory used by the session: 6292864 "
                             "bytes"))
      << text;
  EXPECT_TRUE(contains(text, "latency: median ")) << text;
  EXPECT_TRUE(contains(text, "over 5 runs after 1 warmup (CUDA events, "
                             "graphs on)"))
      << text;
  EXPECT_TRUE(contains(text, "output y f32[1,2]")) << text;
  EXPECT_FALSE(contains(text, "MISMATCH")) << text;
}

// Host offload (passes/memory/budget/Offload.cpp): the pinned host region is one
// cuMemHostAlloc of exactly the plan's bytes, outside the device
// allocations the prediction counts; the copies out and back are a
// device-to-host and a host-to-device copy on the stream, eager and
// captured alike, and the value comes back with its bits.
TEST_F(FakeCudaTest, OffloadCopiesThroughPinnedHostMemory) {
  const char *text =
      "func @park(%x: f32[4] {offset = 0}) -> f32[4] attributes "
      "{alignment = 64, arena = 128, host_arena = 64} {\n"
      "  %h = snug.offload(%x) : f32[4] {offset = 0}\n"
      "  %y = snug.reload(%h) : f32[4] {offset = 64}\n"
      "  return %y\n"
      "}\n";
  bundle::DevicePlan plan;
  plan.arenaBytes = 128;
  for (auto [dst, src] :
       {std::pair{bundle::DeviceArg::host(0), bundle::DeviceArg::arena(0)},
        std::pair{bundle::DeviceArg::arena(64), bundle::DeviceArg::host(0)}}) {
    bundle::DeviceStep step;
    step.kind = bundle::StepCopy;
    step.op = plan.steps.size();
    step.copy.dst = dst, step.copy.src = src, step.copy.bytes = 16;
    plan.steps.push_back(step);
  }
  Loaded loaded(cudaBundleOf(text, plan, fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  uint64_t pinned = 0;
  ASSERT_EQ(snug_bundle_pinned_host_bytes(loaded.bundle, &pinned), SNUG_OK);
  EXPECT_EQ(pinned, 64u);
  const FakeCudaStats &f = fake();
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  ASSERT_EQ(f.pinnedBytes.size(), 1u);
  EXPECT_EQ(f.pinnedBytes.begin()->second, 64u);
  snug_memory_stats memory;
  ASSERT_EQ(snug_session_memory(session, &memory), SNUG_OK);
  EXPECT_EQ(memory.allocated_bytes, 128u); // the device arena alone
  int out = f.deviceToHost;
  for (int run = 0; run < 3; ++run) { // eager, captured, replayed
    std::vector<float> x = {1.5f, -2.0f, float(run), 1e-30f}, y(4);
    ASSERT_EQ(snug_session_set_input(session, 0, x.data(), 16), SNUG_OK);
    ASSERT_EQ(snug_session_run(session), SNUG_OK) << snug_last_error();
    ASSERT_EQ(snug_session_get_output(session, 0, y.data(), 16), SNUG_OK);
    EXPECT_EQ(y, x) << "run " << run;
  }
  // The offload copy itself, then the outputs read back each run.
  EXPECT_GE(f.deviceToHost, out + 2 + 3);
  snug_session_destroy(session);
  EXPECT_EQ(f.pinnedBytes.size(), 0u);
  expectNothingLive();
}

/// Replaces the first `from` in text by `to`; fails the test if absent.
static void replaceOnce(std::string &text, const std::string &from,
                        const std::string &to) {
  size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
}

// Persistent state on the device: b of kMlp (as f32[1,2]) is paired with
// z, so each run ends with z copied over b in the weights buffer. The state
// lives in the weights allocation, made once; it survives runs eager,
// captured and replayed, and a run sees the previous run's value.
TEST_F(FakeCudaTest, StateIsAllocatedOnceAndSurvivesRuns) {
  std::string text = kMlp;
  auto replace = [&](const std::string &from, const std::string &to) {
    replaceOnce(text, from, to);
  };
  replace("%b: f32[2] weight", "%b: f32[1,2] weight");
  replace("arena = 192}", "arena = 192, state = [\"parameter:b=z\"]}");
  Loaded loaded(cudaBundleOf(text, mlpPlan(), fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  int before = fake().allocCalls;
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  EXPECT_EQ(fake().allocCalls, before + 2);
  float b[2] = {0, 0};
  ASSERT_EQ(snug_session_get_state(session, "b", b, sizeof b), SNUG_OK);
  EXPECT_EQ(b[0], 0.5f);
  EXPECT_EQ(b[1], -0.5f);
  // x w = [8, -3] every run; b' = LeakyRelu(x w + b).
  float expected[2] = {0.5f, -0.5f};
  int copies = fake().deviceToDevice;
  for (int run = 1; run <= 4; ++run) {
    expected[0] = 8.0f + expected[0];
    float sum = -3.0f + expected[1];
    expected[1] = sum < 0 ? 0.25f * sum : sum;
    std::vector<float> out = runMlp(session, {1, 2, 3, -4});
    EXPECT_EQ(out, (std::vector<float>{expected[0], expected[1], expected[0],
                                       expected[1]}))
        << "run " << run;
    ASSERT_EQ(snug_session_get_state(session, "b", b, sizeof b), SNUG_OK);
    EXPECT_EQ(b[0], expected[0]) << "run " << run;
    EXPECT_EQ(b[1], expected[1]) << "run " << run;
    if (run == 1) { // the plan's copy and the write-back
      EXPECT_EQ(fake().deviceToDevice, copies + 2);
    }
  }
  EXPECT_EQ(fake().allocCalls, before + 2);
  EXPECT_GT(fake().graphLaunches, 0);
  snug_session_destroy(session);
  expectNothingLive();
}

// A failed snug.check_labels fails the run with the caller's error (the
// input, the label, its position), read from the check record after the
// plan's steps, and leaves the state as it was: eagerly, and again when the
// plan replays as a CUDA graph (the write-back then runs outside it, after
// the record is read). A good run afterwards goes on from that state.
TEST_F(FakeCudaTest, FailedLabelCheckFailsTheRunAndKeepsTheState) {
  std::string text = kMlp;
  auto replace = [&](const std::string &from, const std::string &to) {
    replaceOnce(text, from, to);
  };
  replace("%b: f32[2] weight", "%b: f32[1,2] weight");
  replace("%x: f32[1,4] {offset = 0}",
          "%x: f32[1,4] {offset = 0}, %labels: i64[4] {offset = 192}");
  replace("-> (f32[1,2], f32[1,2])", "-> (f32[1,2], f32[1,2], i64[4])");
  replace("arena = 192}", "arena = 320, state = [\"parameter:b=z\"]}");
  replace("  return %y, %z\n",
          "  %c = snug.check_labels(%labels) {classes = 3, input = "
          "\"labels\", offset = 10} : i64[4] {offset = 256}\n"
          "  return %y, %z, %c\n");
  bundle::DevicePlan plan = mlpPlan();
  plan.steps[0].gemm.workspaceOffset = 512;
  plan.checkRecordOffset = 512 + 1024;
  plan.arenaBytes = plan.checkRecordOffset + bundle::kCheckRecordBytes;
  plan.kernels.push_back("snug_check_labels");
  bundle::DeviceStep check;
  check.kind = bundle::StepLaunch;
  check.op = 4;
  check.launch.kernel = 2;
  check.launch.block[0] = 32;
  check.launch.args = {bundle::DeviceArg::arena(192),
                       bundle::DeviceArg::arena(256),
                       bundle::DeviceArg::arena(plan.checkRecordOffset),
                       {bundle::ArgI64, 4},
                       {bundle::ArgI64, 3},
                       {bundle::ArgI64, 5}};
  plan.steps.push_back(check);
  Loaded loaded(cudaBundleOf(text, plan, fakeImages()));
  ASSERT_TRUE(loaded.bundle);
  snug_session *session = nullptr;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK)
      << snug_last_error();
  float x[4] = {1, 2, 3, -4}, b[2];
  int64_t good[4] = {0, 1, 2, 1}, bad[4] = {0, 1, 7, -1};
  float expected[2] = {0.5f, -0.5f};
  auto run = [&](const int64_t *labels) {
    EXPECT_EQ(snug_session_set_input(session, 0, x, sizeof x), SNUG_OK);
    EXPECT_EQ(snug_session_set_input(session, 1, labels, 32), SNUG_OK);
    return snug_session_run(session);
  };
  // good, bad (eager), good (captured), bad and good (replayed).
  for (const int64_t *labels : {good, bad, good, bad, good}) {
    snug_status status = run(labels);
    if (labels == good) {
      ASSERT_EQ(status, SNUG_OK) << snug_last_error();
      expected[0] += 8.0f;
      float sum = expected[1] - 3.0f;
      expected[1] = sum < 0 ? 0.25f * sum : sum;
    } else {
      ASSERT_EQ(status, SNUG_ERROR_INVALID_ARGUMENT);
      EXPECT_EQ(std::string(snug_last_error()),
                "input 'labels' holds 7 at position 12, which is not a class "
                "index in [0, 3) (cross-entropy over 3 classes)");
    }
    ASSERT_EQ(snug_session_get_state(session, "b", b, sizeof b), SNUG_OK);
    EXPECT_EQ(b[0], expected[0]);
    EXPECT_EQ(b[1], expected[1]);
  }
  EXPECT_EQ(fake().instantiations, 1);
  EXPECT_GT(fake().graphLaunches, 0);
  snug_session_destroy(session);
  expectNothingLive();
}
