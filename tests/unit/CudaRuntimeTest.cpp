//===- CudaRuntimeTest.cpp - CUDA sessions, as far as a CPU can check -----===//
//
// What a machine without a GPU can check of the CUDA executor: that a CUDA
// session fails cleanly (no driver), that argument errors come first, the
// pure device checks (kernel image choice, memory check), the new sizes,
// and snug_session_memory / snug_session_benchmark on the host. Running on a
// device is tests/gpu's job.
//
//===----------------------------------------------------------------------===//
#include "CudaTestPlans.h"
#include "RuntimeTestUtil.h"

#include "ir/Module.h"
#include "runtime/BundleReader.h"
#include "runtime/cuda/DeviceChecks.h"
#include "snug/snug.hpp"

#include <cstdlib>

using namespace snug;
using namespace snug::testing;

namespace {

std::unique_ptr<rt::Bundle> parsed(const std::vector<uint8_t> &bytes) {
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status s = rt::parseBundle(bytes.data(), bytes.size(), "m.snug", bundle);
  EXPECT_TRUE(s.isOk()) << s.getMessage();
  return bundle;
}

snug_session_options cudaOptions() {
  snug_session_options options;
  snug_session_options_init(&options);
  options.device = SNUG_DEVICE_CUDA;
  return options;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST(CudaRuntimeTest, OptionsDefaults) {
  snug_session_options options;
  std::memset(&options, 0x5a, sizeof options);
  snug_session_options_init(&options);
  EXPECT_EQ(options.device, SNUG_DEVICE_HOST);
  EXPECT_EQ(options.arena, nullptr);
  EXPECT_EQ(options.stream, nullptr);
  EXPECT_EQ(options.poison, 0);
  EXPECT_EQ(options.cuda_graphs, 1);
}

TEST(CudaRuntimeTest, NoDeviceIsATypedError) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlan(), someImages()));
  ASSERT_TRUE(loaded.bundle);
  snug_session_options options = cudaOptions();
  snug_session *session = nullptr;
  snug_status status = snug_session_create(loaded.bundle, &options, &session);
  std::string message = snug_last_error();
  if (status != SNUG_ERROR_NO_DEVICE) {
    // A driver and device are present: the fake images cannot load, and
    // that is a typed error too, not a crash.
    EXPECT_NE(status, SNUG_OK);
    snug_session_destroy(session);
    GTEST_SKIP() << "a CUDA device is present (" << message << ")";
  }
  EXPECT_EQ(session, nullptr);
#ifdef SNUG_TEST_HAVE_CUDA
  EXPECT_TRUE(contains(message, "no CUDA device")) << message;
#else
  EXPECT_TRUE(contains(message, "built without CUDA")) << message;
#endif
  // The cached outcome: the same answer the second time.
  EXPECT_EQ(snug_session_create(loaded.bundle, &options, &session),
            SNUG_ERROR_NO_DEVICE);
  EXPECT_EQ(snug_last_error(), message);
  // The host still works in the same process.
  ASSERT_EQ(snug_session_create(loaded.bundle, nullptr, &session), SNUG_OK)
      << snug_last_error();
  snug_session_destroy(session);
}

TEST(CudaRuntimeTest, HostOnlyBundleIsRefusedOnADevice) {
  Loaded loaded(bundleOf(kMlp));
  ASSERT_TRUE(loaded.bundle);
  snug_session_options options = cudaOptions();
  snug_session *session = nullptr;
  snug_status status = snug_session_create(loaded.bundle, &options, &session);
  if (status == SNUG_ERROR_NO_DEVICE)
    GTEST_SKIP() << snug_last_error();
  EXPECT_EQ(status, SNUG_ERROR_UNSUPPORTED);
  EXPECT_EQ(session, nullptr);
  std::string message = snug_last_error();
  EXPECT_TRUE(contains(message, "compiled for the host only")) << message;
  EXPECT_TRUE(contains(message, "--target=cuda")) << message;
  EXPECT_TRUE(contains(message, loaded.file.path)) << message;
}

#ifdef SNUG_TEST_HAVE_CUDA
// Argument errors are the caller's on any machine, so they come before the
// driver is even loaded.
TEST(CudaRuntimeTest, CallerArenaIsCheckedFirst) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlan(), someImages()));
  ASSERT_TRUE(loaded.bundle);
  snug_session_options options = cudaOptions();
  snug_session *session = nullptr;
  options.arena = reinterpret_cast<void *>(uintptr_t(1) << 32 | 64);
  options.arena_bytes = 1 << 20;
  EXPECT_EQ(snug_session_create(loaded.bundle, &options, &session),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(snug_last_error(), "not aligned to 256 bytes"))
      << snug_last_error();
  options.arena = reinterpret_cast<void *>(uintptr_t(1) << 32);
  options.arena_bytes = 1279;
  EXPECT_EQ(snug_session_create(loaded.bundle, &options, &session),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(
      contains(snug_last_error(), "1279 bytes is smaller than the 1280 bytes"))
      << snug_last_error();
  EXPECT_EQ(session, nullptr);
}
#endif

TEST(CudaRuntimeTest, SizesDescribeTheDeviceArena) {
  Loaded cuda(cudaBundleOf(kMlp, mlpPlan(), someImages()));
  Loaded host(bundleOf(kMlp));
  ASSERT_TRUE(cuda.bundle && host.bundle);
  snug_sizes sizes;
  ASSERT_EQ(snug_bundle_sizes(cuda.bundle, &sizes), SNUG_OK);
  EXPECT_EQ(sizes.arena, 192u);
  EXPECT_EQ(sizes.device_arena, 1280u);
  EXPECT_EQ(sizes.workspace, 1024u);
  EXPECT_EQ(sizes.weights, 128u);
  ASSERT_EQ(snug_bundle_sizes(host.bundle, &sizes), SNUG_OK);
  EXPECT_EQ(sizes.device_arena, 0u);
  EXPECT_EQ(sizes.workspace, 0u);
}

TEST(CudaRuntimeTest, DeviceBundleRunsOnTheHostToo) {
  Loaded loaded(cudaBundleOf(kMlp, mlpPlan(), someImages()));
  ASSERT_TRUE(loaded.bundle);
  snug::Session session;
  snug_session_options options;
  snug_session_options_init(&options);
  options.poison = 1;
  snug_session *raw = nullptr;
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &raw), SNUG_OK)
      << snug_last_error();
  float x[4] = {1, 2, 3, -4}, y[2], z[2];
  ASSERT_EQ(snug_session_set_input(raw, 0, x, sizeof x), SNUG_OK);
  ASSERT_EQ(snug_session_run(raw), SNUG_OK) << snug_last_error();
  ASSERT_EQ(snug_session_get_output(raw, 0, y, sizeof y), SNUG_OK);
  ASSERT_EQ(snug_session_get_output(raw, 1, z, sizeof z), SNUG_OK);
  EXPECT_EQ(y[0], 8.5f);
  EXPECT_EQ(y[1], -0.875f);
  EXPECT_EQ(z[0], 8.5f);
  EXPECT_EQ(z[1], -0.875f);
  snug_session_destroy(raw);
}

// Every op of a plan must be one of the op table's, device plan or not (the
// loader's plan verifier holds the host plan to it, and every op of the
// table has a host kernel): a renamed op is refused at load, naming it.
TEST(CudaRuntimeTest, DeviceOnlyOpsFailOnTheHostSession) {
  ir::Module module("m");
  ir::Value *x = module.addInput("x", ir::TensorType(ir::DType::F32, {2}));
  x->setArenaOffset(0);
  ir::Node *node = module.addNode(ir::OpCode::Softsign, {x},
                                  {ir::TensorType(ir::DType::F32, {2})});
  node->setName("odd");
  node->getResult(0)->setArenaOffset(64);
  module.setOutputs({node->getResult(0)});
  module.setAttribute("arena", ir::Attribute::getInt(128));
  bundle::DevicePlan plan;
  plan.arenaBytes = 128;
  plan.kernels = {"snug_mystery"};
  bundle::DeviceStep step;
  step.kind = bundle::StepLaunch;
  step.launch.args = {bundle::DeviceArg::arena(0),
                      bundle::DeviceArg::arena(64)};
  plan.steps = {step};
  std::vector<bundle::KernelImage> images = {image(bundle::ImagePtx, 80)};
  auto bytes = serializeBundle(module, {"p", "v", &plan, &images});
  ASSERT_TRUE(static_cast<bool>(bytes)) << toString(bytes.takeError());
  TempFile file;
  writeFile(file.path, renameOp(*bytes, "Softsign", "snug.odd"));
  snug_bundle *bundle = nullptr;
  EXPECT_EQ(snug_bundle_load(file.path.c_str(), &bundle),
            SNUG_ERROR_INVALID_BUNDLE);
  EXPECT_EQ(bundle, nullptr);
  EXPECT_TRUE(contains(snug_last_error(),
                       "node 'odd' (snug.odd): unknown op 'snug.odd'"))
      << snug_last_error();
}

TEST(CudaRuntimeTest, KernelImageChoice) {
  auto bundle = parsed(cudaBundleOf(kMlp, mlpPlan(), someImages()));
  ASSERT_TRUE(bundle);
  rt::Status why;
  // A cubin for exactly the device's arch wins.
  const rt::KernelImageRef *chosen =
      rt::cuda::selectKernelImage(*bundle, 90, "H200", why);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->kind, bundle::ImageCubin);
  EXPECT_EQ(chosen->arch, 90u);
  // Without a cubin for exactly its arch, a device JITs the newest PTX not
  // newer than itself: sm_100 takes compute_90; sm_86 finds none (the rule
  // ignores the sm_80 cubin, although same-major SASS would run).
  chosen = rt::cuda::selectKernelImage(*bundle, 100, "B200", why);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->kind, bundle::ImagePtx);
  chosen = rt::cuda::selectKernelImage(*bundle, 86, "RTX 3090", why);
  EXPECT_FALSE(chosen);
  EXPECT_EQ(why.getCode(), SNUG_ERROR_UNSUPPORTED);
  std::string message = why.getMessage();
  EXPECT_TRUE(contains(message, "'RTX 3090' (sm_86)")) << message;
  EXPECT_TRUE(contains(message, "cubins for sm_80, sm_90")) << message;
  EXPECT_TRUE(contains(message, "PTX for compute_90")) << message;
  EXPECT_TRUE(contains(message, "m.snug")) << message;

  // The newest PTX not newer than the device.
  auto ptxOnly = parsed(
      cudaBundleOf(kMlp, mlpPlan(),
                   {image(bundle::ImagePtx, 70), image(bundle::ImagePtx, 80),
                    image(bundle::ImagePtx, 90)}));
  ASSERT_TRUE(ptxOnly);
  chosen = rt::cuda::selectKernelImage(*ptxOnly, 86, "RTX 3090", why);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->arch, 80u);
}

// The driver must be at least the bundle's recorded minimum; cuBLAS is
// looked up from the bundle's release up to the driver's, never newer.
TEST(CudaRuntimeTest, DriverVersionAndCublasMajors) {
  bundle::KernelToolchain cuda12;
  cuda12.nvrtcVersion = cuda12.jitLinkVersion = 12000;
  cuda12.ptxIsa = 80;
  cuda12.minDriverVersion = 12000;
  auto recorded = parsed(cudaBundleOf(kMlp, mlpPlan(), someImages(), cuda12));
  auto unrecorded = parsed(cudaBundleOf(kMlp, mlpPlan(), someImages()));
  ASSERT_TRUE(recorded && unrecorded);
  EXPECT_TRUE(rt::cuda::checkDriverVersion(*recorded, 12000).isOk());
  EXPECT_TRUE(rt::cuda::checkDriverVersion(*recorded, 13000).isOk());
  EXPECT_TRUE(rt::cuda::checkDriverVersion(*unrecorded, 11020).isOk());
  rt::Status s = rt::cuda::checkDriverVersion(*recorded, 11080);
  EXPECT_EQ(s.getCode(), SNUG_ERROR_DRIVER_TOO_OLD);
  EXPECT_TRUE(contains(s.getMessage(),
                       "bundle 'm.snug' needs a CUDA 12.0 driver (its "
                       "kernels: NVRTC 12.0, nvJitLink 12.0, PTX ISA 8.0); "
                       "this driver is CUDA 11.8 (cuDriverGetVersion 11080)"))
      << s.getMessage();

  using Majors = std::vector<int>;
  EXPECT_EQ(rt::cuda::getCublasMajors(*recorded, 12080), Majors({12}));
  EXPECT_EQ(rt::cuda::getCublasMajors(*recorded, 13000), Majors({12, 13}));
  EXPECT_EQ(rt::cuda::getCublasMajors(*unrecorded, 13010), Majors({12, 13}));
  EXPECT_EQ(rt::cuda::getCublasMajors(*unrecorded, 11080), Majors());
  // A CUDA 13 bundle takes cuBLAS 13 only.
  bundle::KernelToolchain cuda13 = cuda12;
  cuda13.minDriverVersion = 13000;
  auto newer = parsed(cudaBundleOf(kMlp, mlpPlan(), someImages(), cuda13));
  ASSERT_TRUE(newer);
  EXPECT_EQ(rt::cuda::getCublasMajors(*newer, 13000), Majors({13}));
}

TEST(CudaRuntimeTest, MemoryCheckNamesTheParts) {
  auto bundle = parsed(cudaBundleOf(kMlp, mlpPlan(), someImages()));
  ASSERT_TRUE(bundle);
  EXPECT_TRUE(
      rt::cuda::checkDeviceMemory(*bundle, 128, 1280, 1408, 4096, "G").isOk());
  rt::Status s =
      rt::cuda::checkDeviceMemory(*bundle, 128, 1280, 1407, 4096, "G");
  EXPECT_EQ(s.getCode(), SNUG_ERROR_OUT_OF_MEMORY);
  std::string message = s.getMessage();
  EXPECT_TRUE(contains(message, "needs 1408 bytes")) << message;
  // Largest part first.
  EXPECT_TRUE(contains(message,
                       "(arena 1280 bytes (1.2 KiB) with cuBLAS workspaces "
                       "of up to 1024 bytes (1.0 KiB) inside, weights 128 "
                       "bytes)"))
      << message;
  EXPECT_TRUE(contains(message, "'G' has 1407 bytes (1.4 KiB) free of 4096"))
      << message;
  // A caller-owned arena is not the session's to allocate.
  EXPECT_TRUE(
      rt::cuda::checkDeviceMemory(*bundle, 128, 0, 128, 4096, "G").isOk());
}

TEST(CudaRuntimeTest, HostSessionMemory) {
  Loaded loaded(bundleOf(kMlp));
  ASSERT_TRUE(loaded.bundle);
  snug_session *session = nullptr;
  ASSERT_EQ(snug_session_create(loaded.bundle, nullptr, &session), SNUG_OK);
  snug_memory_stats stats;
  ASSERT_EQ(snug_session_memory(session, &stats), SNUG_OK);
  EXPECT_EQ(stats.device, SNUG_DEVICE_HOST);
  EXPECT_EQ(stats.allocated_bytes, 192u);
  EXPECT_EQ(stats.allocations, 1u);
  EXPECT_EQ(stats.arena_bytes, 192u);
  EXPECT_EQ(stats.device_used_bytes, 0u);
  EXPECT_EQ(stats.weights_bytes, 0u);
  EXPECT_EQ(snug_session_memory(session, nullptr), SNUG_ERROR_INVALID_ARGUMENT);
  snug_session_destroy(session);

  void *arena = std::aligned_alloc(64, 192);
  snug_session_options options;
  snug_session_options_init(&options);
  options.arena = arena;
  options.arena_bytes = 192;
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK);
  ASSERT_EQ(snug_session_memory(session, &stats), SNUG_OK);
  EXPECT_EQ(stats.allocated_bytes, 0u);
  EXPECT_EQ(stats.allocations, 0u);
  EXPECT_EQ(stats.arena_bytes, 192u);
  snug_session_destroy(session);
  std::free(arena);
}

TEST(CudaRuntimeTest, HostBenchmark) {
  Loaded loaded(bundleOf(kMlp));
  ASSERT_TRUE(loaded.bundle);
  snug_session_options options;
  snug_session_options_init(&options);
  options.poison = 1; // inputs must survive poisoning: they are restored
  snug_session *session = nullptr;
  ASSERT_EQ(snug_session_create(loaded.bundle, &options, &session), SNUG_OK);
  double ms[5] = {-1, -1, -1, -1, -1};
  EXPECT_EQ(snug_session_benchmark(session, 1, 5, ms),
            SNUG_ERROR_INPUT_NOT_SET);
  float x[4] = {1, 2, 3, -4}, y[2], z[2];
  ASSERT_EQ(snug_session_set_input(session, 0, x, sizeof x), SNUG_OK);
  EXPECT_EQ(snug_session_benchmark(session, 1, 5, nullptr),
            SNUG_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(snug_session_benchmark(session, 2, 5, ms), SNUG_OK)
      << snug_last_error();
  for (double t : ms)
    EXPECT_GE(t, 0);
  // The outputs are those of a normal run: the y slot (offset 0) overwrote
  // the input x, which every timed run got back.
  ASSERT_EQ(snug_session_get_output(session, 0, y, sizeof y), SNUG_OK);
  ASSERT_EQ(snug_session_get_output(session, 1, z, sizeof z), SNUG_OK);
  EXPECT_EQ(y[0], 8.5f);
  EXPECT_EQ(y[1], -0.875f);
  EXPECT_EQ(z[1], -0.875f);
  // Inputs must be set again afterwards, as after a run.
  EXPECT_EQ(snug_session_run(session), SNUG_ERROR_INPUT_NOT_SET);
  // No timed runs is fine (warmup only, no array needed).
  ASSERT_EQ(snug_session_set_input(session, 0, x, sizeof x), SNUG_OK);
  EXPECT_EQ(snug_session_benchmark(session, 3, 0, nullptr), SNUG_OK);
  snug_session_destroy(session);
}

TEST(CudaRuntimeTest, GemmLimits) {
  auto good = parsed(cudaBundleOf(kMlp, mlpPlan(), someImages()));
  ASSERT_TRUE(good);
  EXPECT_TRUE(rt::cuda::checkGemmLimits(*good).isOk());
  // A misaligned workspace never reaches the executor: the reader refuses
  // the bundle.
  bundle::DevicePlan plan = mlpPlan();
  plan.steps[0].gemm.workspaceOffset = 320; // inside the arena, not aligned
  plan.steps[0].gemm.workspaceBytes = 960;
  std::vector<uint8_t> bytes = cudaBundleOf(kMlp, plan, someImages());
  std::unique_ptr<rt::Bundle> misaligned;
  rt::Status s =
      rt::parseBundle(bytes.data(), bytes.size(), "m.snug", misaligned);
  EXPECT_EQ(s.getCode(), SNUG_ERROR_INVALID_BUNDLE);
  EXPECT_TRUE(contains(s.getMessage(), "at offset 320 are not 256-byte aligned"))
      << s.getMessage();
}
