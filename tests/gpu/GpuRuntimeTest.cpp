//===- GpuRuntimeTest.cpp - The CUDA executor on a real device ------------===//
//
// Needs a CUDA device; every test skips, with the runtime's reason ("no CUDA
// device: ..."), where there is none. Reads the bundles that
// snug-gpu-test-bundles wrote at build time (SNUG_GPU_TEST_BUNDLES overrides
// their directory, so the binary and the bundles can be carried to a GPU
// machine without LLVM), and, when SNUG_GPU_TEST_BUNDLE names a bundle
// compiled with --target=cuda, also runs that one on the device and the
// host and compares.
//
// Links only the runtime (and its driver loader, for the free-memory probe
// and caller-owned device memory).
//
//===----------------------------------------------------------------------===//
#include "ir/Float16.h"
#include "core/BundleFormat.h"
#include "runtime/cuda/CudaContext.h"
#include "snug/snug.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace snug;
namespace rtcuda = snug::rt::cuda;

namespace {

using Bytes = std::vector<uint8_t>;

std::string bundleDir() {
  const char *dir = std::getenv("SNUG_GPU_TEST_BUNDLES");
  return dir && *dir ? dir : SNUG_GPU_TEST_BUNDLES_DEFAULT;
}

std::string bundlePath(const std::string &name) {
  return bundleDir() + "/" + name + ".snug";
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

struct BundleHandle {
  snug_bundle *bundle = nullptr;
  explicit BundleHandle(const std::string &path) {
    EXPECT_EQ(snug_bundle_load(path.c_str(), &bundle), SNUG_OK)
        << snug_last_error();
  }
  ~BundleHandle() { snug_bundle_destroy(bundle); }
};

struct SessionHandle {
  snug_session *session = nullptr;
  ~SessionHandle() { snug_session_destroy(session); }
};

snug_session_options cudaOptions(int graphs = 1) {
  snug_session_options options;
  snug_session_options_init(&options);
  options.device = SNUG_DEVICE_CUDA;
  options.cuda_graphs = graphs;
  return options;
}

/// Why there is no usable device ("" when there is one), found once by
/// creating a session on the reference bundle.
const std::string &noDeviceReason() {
  static const std::string reason = [] {
    snug_bundle *bundle = nullptr;
    if (snug_bundle_load(bundlePath("mlp_f32").c_str(), &bundle))
      return std::string(); // the tests report the load failure themselves
    snug_session_options options = cudaOptions();
    snug_session *session = nullptr;
    snug_status status = snug_session_create(bundle, &options, &session);
    std::string why = status == SNUG_ERROR_NO_DEVICE ? snug_last_error() : "";
    snug_session_destroy(session);
    snug_bundle_destroy(bundle);
    return why;
  }();
  return reason;
}

#define SKIP_WITHOUT_DEVICE()                                                  \
  do {                                                                         \
    if (!noDeviceReason().empty())                                             \
      GTEST_SKIP() << noDeviceReason();                                        \
  } while (0)

/// Input i's bytes: small integers (-1, 0, 1) in the input's dtype, so that
/// every sum of the test bundles is exact; for other bundles random floats
/// in [-1, 1) and small non-negative integers (safe as indices).
Bytes makeInput(const snug_tensor_info &info, uint32_t seed, bool exact) {
  unsigned size = bundle::dtypeSize(uint8_t(info.dtype));
  Bytes bytes(info.bytes);
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < info.bytes / size; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double unit = double(state >> 11) / double(uint64_t(1) << 53);
    double v = exact ? double(int(unit * 3) - 1) : 2 * unit - 1;
    uint8_t *p = bytes.data() + i * size;
    switch (info.dtype) {
    case SNUG_DTYPE_F32: {
      float f = float(v);
      std::memcpy(p, &f, 4);
      break;
    }
    case SNUG_DTYPE_F64:
      std::memcpy(p, &v, 8);
      break;
    case SNUG_DTYPE_F16: {
      uint16_t h = floatToF16(float(v));
      std::memcpy(p, &h, 2);
      break;
    }
    case SNUG_DTYPE_BF16: {
      uint16_t h = floatToBf16(float(v));
      std::memcpy(p, &h, 2);
      break;
    }
    case SNUG_DTYPE_BOOL:
      *p = unit < 0.5;
      break;
    default: {
      int64_t n = int64_t(unit * 10);
      std::memcpy(p, &n, size);
    }
    }
  }
  return bytes;
}

std::vector<Bytes> makeInputs(const snug_bundle *bundle, bool exact) {
  size_t count = 0;
  EXPECT_EQ(snug_bundle_input_count(bundle, &count), SNUG_OK);
  std::vector<Bytes> inputs;
  for (size_t i = 0; i < count; ++i) {
    snug_tensor_info info;
    EXPECT_EQ(snug_bundle_input_info(bundle, i, &info), SNUG_OK);
    inputs.push_back(makeInput(info, uint32_t(i + 7), exact));
  }
  return inputs;
}

void setInputs(snug_session *session, const std::vector<Bytes> &inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    ASSERT_EQ(
        snug_session_set_input(session, i, inputs[i].data(), inputs[i].size()),
        SNUG_OK)
        << snug_last_error();
}

std::vector<Bytes> getOutputs(const snug_bundle *bundle,
                              snug_session *session) {
  size_t count = 0;
  EXPECT_EQ(snug_bundle_output_count(bundle, &count), SNUG_OK);
  std::vector<Bytes> outputs;
  for (size_t i = 0; i < count; ++i) {
    snug_tensor_info info;
    EXPECT_EQ(snug_bundle_output_info(bundle, i, &info), SNUG_OK);
    outputs.emplace_back(info.bytes);
    EXPECT_EQ(
        snug_session_get_output(session, i, outputs.back().data(), info.bytes),
        SNUG_OK)
        << snug_last_error();
  }
  return outputs;
}

/// Sets the inputs, runs once, returns the outputs ({} after a failure).
std::vector<Bytes> runOnce(const snug_bundle *bundle, snug_session *session,
                           const std::vector<Bytes> &inputs) {
  setInputs(session, inputs);
  if (snug_session_run(session) != SNUG_OK) {
    ADD_FAILURE() << snug_last_error();
    return {};
  }
  return getOutputs(bundle, session);
}

std::vector<Bytes> runOn(const snug_bundle *bundle,
                         const snug_session_options &options,
                         const std::vector<Bytes> &inputs) {
  SessionHandle s;
  if (snug_session_create(bundle, &options, &s.session) != SNUG_OK) {
    ADD_FAILURE() << snug_last_error();
    return {};
  }
  return runOnce(bundle, s.session, inputs);
}

uint64_t freeDeviceMemory() {
  uint64_t free = 0, total = 0;
  rt::Status s = rtcuda::getDeviceMemoryInfo(free, total);
  EXPECT_TRUE(s.isOk()) << s.getMessage();
  return free;
}

/// Device memory the test owns (a caller arena), in the context sessions
/// use.
class DeviceBuffer {
public:
  explicit DeviceBuffer(uint64_t bytes) {
    rt::Status s = rtcuda::getCudaDriver(driver);
    EXPECT_TRUE(s.isOk()) << s.getMessage();
    s = rtcuda::CudaContext::acquire(*driver, context);
    EXPECT_TRUE(s.isOk()) << s.getMessage();
    rtcuda::ContextScope scope(*driver, context->get());
    EXPECT_EQ(driver->MemAlloc(&pointer, bytes), CUDA_SUCCESS);
  }
  ~DeviceBuffer() {
    rtcuda::ContextScope scope(*driver, context->get());
    (void)driver->MemFree(pointer);
  }
  void *get() const { return reinterpret_cast<void *>(pointer); }

private:
  const rtcuda::CudaDriver *driver = nullptr;
  std::unique_ptr<rtcuda::CudaContext> context;
  CUdeviceptr pointer = 0;
};

const char *kExactBundles[] = {"mlp_f32",     "mlp_f32_ptx", "mlp_f32_lt",
                               "bmm_f32",     "matmul_f16",  "matmul_bf16",
                               "matmul_f64"};

} // namespace

// Every test bundle gives the host's bytes exactly (integer data), through
// cubins, JIT-compiled PTX, batched GEMMs, each GEMM dtype and a cuBLASLt
// GEMM with the bias epilogue.
TEST(GpuRuntimeTest, MatchesTheHostExactly) {
  SKIP_WITHOUT_DEVICE();
  for (const char *name : kExactBundles) {
    SCOPED_TRACE(name);
    BundleHandle b(bundlePath(name));
    ASSERT_TRUE(b.bundle);
    std::vector<Bytes> inputs = makeInputs(b.bundle, true);
    snug_session_options host;
    snug_session_options_init(&host);
    host.poison = 1;
    std::vector<Bytes> expected = runOn(b.bundle, host, inputs);
    std::vector<Bytes> actual = runOn(b.bundle, cudaOptions(), inputs);
    ASSERT_FALSE(expected.empty());
    EXPECT_EQ(actual, expected);
  }
}

// The memory report's prediction is what the session allocates, exactly.
TEST(GpuRuntimeTest, PredictedEqualsAllocated) {
  SKIP_WITHOUT_DEVICE();
  for (const char *name : kExactBundles) {
    SCOPED_TRACE(name);
    BundleHandle b(bundlePath(name));
    ASSERT_TRUE(b.bundle);
    snug_sizes sizes;
    ASSERT_EQ(snug_bundle_sizes(b.bundle, &sizes), SNUG_OK);
    SessionHandle s;
    snug_session_options options = cudaOptions();
    ASSERT_EQ(snug_session_create(b.bundle, &options, &s.session), SNUG_OK)
        << snug_last_error();
    snug_memory_stats stats;
    ASSERT_EQ(snug_session_memory(s.session, &stats), SNUG_OK);
    EXPECT_EQ(stats.device, SNUG_DEVICE_CUDA);
    EXPECT_EQ(stats.allocated_bytes, sizes.weights + sizes.device_arena);
    EXPECT_EQ(stats.allocations, 2u);
    EXPECT_EQ(stats.arena_bytes, sizes.device_arena);
    EXPECT_EQ(stats.weights_bytes, sizes.weights);
    // The driver rounds allocations up (2 MiB pages) and cuBLAS and the
    // module take their share: at least what was allocated.
    EXPECT_GE(stats.device_used_bytes, stats.allocated_bytes);
    std::printf("%s: predicted %llu, allocated %llu, device used %llu\n", name,
                (unsigned long long)(sizes.weights + sizes.device_arena),
                (unsigned long long)stats.allocated_bytes,
                (unsigned long long)stats.device_used_bytes);
  }
}

// Graph capture (run 2) and replay (runs 3..) give the eager run's bytes;
// so does a session with graphs off.
TEST(GpuRuntimeTest, GraphReplayMatchesTheEagerRun) {
  SKIP_WITHOUT_DEVICE();
  for (const char *name : {"mlp_f32", "mlp_f32_lt", "bmm_f32", "matmul_f16"}) {
    SCOPED_TRACE(name);
    BundleHandle b(bundlePath(name));
    ASSERT_TRUE(b.bundle);
    std::vector<Bytes> inputs = makeInputs(b.bundle, true);
    SessionHandle s;
    snug_session_options options = cudaOptions();
    ASSERT_EQ(snug_session_create(b.bundle, &options, &s.session), SNUG_OK)
        << snug_last_error();
    std::vector<Bytes> eager = runOnce(b.bundle, s.session, inputs);
    ASSERT_FALSE(eager.empty());
    for (int run = 2; run <= 5; ++run)
      EXPECT_EQ(runOnce(b.bundle, s.session, inputs), eager) << "run " << run;
    EXPECT_EQ(runOn(b.bundle, cudaOptions(0), inputs), eager);
  }
}

// A run allocates nothing: once the graph exists (after run 2), 20 more
// runs leave the device's free memory exactly as it was.
TEST(GpuRuntimeTest, NoAllocationDuringRuns) {
  SKIP_WITHOUT_DEVICE();
  BundleHandle b(bundlePath("mlp_f32"));
  ASSERT_TRUE(b.bundle);
  std::vector<Bytes> inputs = makeInputs(b.bundle, true);
  SessionHandle s;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(b.bundle, &options, &s.session), SNUG_OK)
      << snug_last_error();
  uint64_t afterCreation = freeDeviceMemory();
  ASSERT_FALSE(runOnce(b.bundle, s.session, inputs).empty()); // eager
  ASSERT_FALSE(runOnce(b.bundle, s.session, inputs).empty()); // capture
  uint64_t before = freeDeviceMemory();
  for (int run = 0; run < 20; ++run) {
    setInputs(s.session, inputs);
    ASSERT_EQ(snug_session_run(s.session), SNUG_OK) << snug_last_error();
  }
  EXPECT_EQ(freeDeviceMemory(), before);
  // For the record: what the first runs took (cuBLAS loading its kernels
  // lazily, the graph's instantiation), which no test can forbid.
  std::printf("free memory: after creation %llu, after runs 1-2 %llu "
              "(delta %lld)\n",
              (unsigned long long)afterCreation, (unsigned long long)before,
              (long long)(afterCreation - before));
}

// Creating and destroying sessions, successfully or not, returns every
// byte (a session kept alive holds the context, whose own memory would
// otherwise come and go).
TEST(GpuRuntimeTest, NothingLeaksAcrossSessions) {
  SKIP_WITHOUT_DEVICE();
  BundleHandle b(bundlePath("mlp_f32"));
  BundleHandle huge(bundlePath("huge"));
  ASSERT_TRUE(b.bundle && huge.bundle);
  SessionHandle keeper;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(b.bundle, &options, &keeper.session), SNUG_OK)
      << snug_last_error();
  std::vector<Bytes> inputs = makeInputs(b.bundle, true);
  ASSERT_FALSE(runOnce(b.bundle, keeper.session, inputs).empty());
  uint64_t before = freeDeviceMemory();
  for (int i = 0; i < 3; ++i) {
    SessionHandle s;
    ASSERT_EQ(snug_session_create(b.bundle, &options, &s.session), SNUG_OK);
    runOnce(b.bundle, s.session, inputs);
    runOnce(b.bundle, s.session, inputs);
    runOnce(b.bundle, s.session, inputs);
  }
  SessionHandle failed;
  EXPECT_EQ(snug_session_create(huge.bundle, &options, &failed.session),
            SNUG_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(freeDeviceMemory(), before);
}

// Weights + arena beyond the free memory: a typed error naming the sizes,
// before anything is allocated.
TEST(GpuRuntimeTest, OutOfMemoryIsCheckedBeforeAllocating) {
  SKIP_WITHOUT_DEVICE();
  BundleHandle huge(bundlePath("huge"));
  ASSERT_TRUE(huge.bundle);
  SessionHandle s;
  snug_session_options options = cudaOptions();
  EXPECT_EQ(snug_session_create(huge.bundle, &options, &s.session),
            SNUG_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(s.session, nullptr);
  std::string message = snug_last_error();
  EXPECT_TRUE(contains(message, "needs 1099511627776 bytes")) << message;
  EXPECT_TRUE(contains(message, "arena 1099511627776 bytes (1.0 TiB)"))
      << message;
  EXPECT_TRUE(contains(message, "free of")) << message;
}

// A caller-owned device arena: used in place (outputs live in it), only
// the weights are allocated; too small or misaligned is refused.
TEST(GpuRuntimeTest, CallerOwnedArena) {
  SKIP_WITHOUT_DEVICE();
  BundleHandle b(bundlePath("mlp_f32"));
  ASSERT_TRUE(b.bundle);
  snug_sizes sizes;
  ASSERT_EQ(snug_bundle_sizes(b.bundle, &sizes), SNUG_OK);
  std::vector<Bytes> inputs = makeInputs(b.bundle, true);
  std::vector<Bytes> expected = runOn(b.bundle, cudaOptions(), inputs);

  DeviceBuffer arena(sizes.device_arena + 256);
  snug_session_options options = cudaOptions();
  options.arena = arena.get();
  options.arena_bytes = sizes.device_arena - 1;
  SessionHandle s;
  EXPECT_EQ(snug_session_create(b.bundle, &options, &s.session),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(snug_last_error(), "smaller than")) << snug_last_error();
  options.arena = static_cast<uint8_t *>(arena.get()) + 128;
  options.arena_bytes = sizes.device_arena;
  EXPECT_EQ(snug_session_create(b.bundle, &options, &s.session),
            SNUG_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(snug_last_error(), "aligned")) << snug_last_error();

  options.arena = arena.get();
  ASSERT_EQ(snug_session_create(b.bundle, &options, &s.session), SNUG_OK)
      << snug_last_error();
  snug_memory_stats stats;
  ASSERT_EQ(snug_session_memory(s.session, &stats), SNUG_OK);
  EXPECT_EQ(stats.allocated_bytes, sizes.weights);
  EXPECT_EQ(stats.allocations, 1u);
  for (int run = 0; run < 3; ++run)
    EXPECT_EQ(runOnce(b.bundle, s.session, inputs), expected) << "run " << run;
  // Device pointers, inside the caller's arena at the planned offsets.
  snug_tensor_info info;
  ASSERT_EQ(snug_bundle_output_info(b.bundle, 1, &info), SNUG_OK);
  const void *output = nullptr;
  ASSERT_EQ(snug_session_output_data(s.session, 1, &output), SNUG_OK);
  EXPECT_EQ(output, static_cast<uint8_t *>(arena.get()) + info.arena_offset);
}

// A caller's stream is used as given (and graphs are captured on it).
TEST(GpuRuntimeTest, CallerStream) {
  SKIP_WITHOUT_DEVICE();
  BundleHandle b(bundlePath("mlp_f32"));
  ASSERT_TRUE(b.bundle);
  std::vector<Bytes> inputs = makeInputs(b.bundle, true);
  std::vector<Bytes> expected = runOn(b.bundle, cudaOptions(), inputs);
  const rtcuda::CudaDriver *driver;
  ASSERT_TRUE(rtcuda::getCudaDriver(driver).isOk());
  std::unique_ptr<rtcuda::CudaContext> context;
  ASSERT_TRUE(rtcuda::CudaContext::acquire(*driver, context).isOk());
  CUstream stream = nullptr;
  {
    rtcuda::ContextScope scope(*driver, context->get());
    ASSERT_EQ(driver->StreamCreate(&stream, CU_STREAM_NON_BLOCKING),
              CUDA_SUCCESS);
  }
  {
    SessionHandle s;
    snug_session_options options = cudaOptions();
    options.stream = stream;
    ASSERT_EQ(snug_session_create(b.bundle, &options, &s.session), SNUG_OK)
        << snug_last_error();
    for (int run = 0; run < 4; ++run)
      EXPECT_EQ(runOnce(b.bundle, s.session, inputs), expected);
  }
  rtcuda::ContextScope scope(*driver, context->get());
  EXPECT_EQ(driver->StreamDestroy(stream), CUDA_SUCCESS);
}

// Timed runs on the device: positive times, and the outputs afterwards
// are a normal run's.
TEST(GpuRuntimeTest, Benchmark) {
  SKIP_WITHOUT_DEVICE();
  BundleHandle b(bundlePath("mlp_f32"));
  ASSERT_TRUE(b.bundle);
  std::vector<Bytes> inputs = makeInputs(b.bundle, true);
  SessionHandle s;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(b.bundle, &options, &s.session), SNUG_OK);
  std::vector<Bytes> expected = runOnce(b.bundle, s.session, inputs);
  setInputs(s.session, inputs);
  double ms[10];
  ASSERT_EQ(snug_session_benchmark(s.session, 3, 10, ms), SNUG_OK)
      << snug_last_error();
  for (double t : ms) {
    EXPECT_GT(t, 0);
    EXPECT_LT(t, 1000);
  }
  EXPECT_EQ(getOutputs(b.bundle, s.session), expected);
}

// No image for the device's arch (an sm_80 cubin only, on a newer GPU): a
// typed error naming the device's arch and the bundle's.
TEST(GpuRuntimeTest, NoImageForTheDevice) {
  SKIP_WITHOUT_DEVICE();
  BundleHandle b(bundlePath("mlp_f32_sm80"));
  ASSERT_TRUE(b.bundle);
  SessionHandle s;
  snug_session_options options = cudaOptions();
  snug_status status = snug_session_create(b.bundle, &options, &s.session);
  std::string message = snug_last_error();
  if (status == SNUG_OK)
    GTEST_SKIP() << "the device is an sm_80";
  EXPECT_EQ(status, SNUG_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(message, "cubins for sm_80")) << message;
  EXPECT_TRUE(contains(message, "PTX for none")) << message;
}

// A host-only bundle is refused with a hint.
TEST(GpuRuntimeTest, HostOnlyBundleIsRefused) {
  SKIP_WITHOUT_DEVICE();
  BundleHandle b(bundlePath("host_only"));
  ASSERT_TRUE(b.bundle);
  SessionHandle s;
  snug_session_options options = cudaOptions();
  EXPECT_EQ(snug_session_create(b.bundle, &options, &s.session),
            SNUG_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(snug_last_error(), "--target=cuda"))
      << snug_last_error();
}

// A bundle compiled by snugc --target=cuda (SNUG_GPU_TEST_BUNDLE): the
// device's outputs agree with the host's within tolerance, repeated runs
// are identical, and predicted equals allocated.
TEST(GpuRuntimeTest, CompiledBundle) {
  SKIP_WITHOUT_DEVICE();
  const char *path = std::getenv("SNUG_GPU_TEST_BUNDLE");
  if (!path || !*path)
    GTEST_SKIP() << "set SNUG_GPU_TEST_BUNDLE to a bundle compiled with "
                    "--target=cuda";
  BundleHandle b(path);
  ASSERT_TRUE(b.bundle);
  std::vector<Bytes> inputs = makeInputs(b.bundle, false);
  snug_session_options host;
  snug_session_options_init(&host);
  std::vector<Bytes> expected = runOn(b.bundle, host, inputs);
  SessionHandle s;
  snug_session_options options = cudaOptions();
  ASSERT_EQ(snug_session_create(b.bundle, &options, &s.session), SNUG_OK)
      << snug_last_error();
  snug_sizes sizes;
  snug_memory_stats stats;
  ASSERT_EQ(snug_bundle_sizes(b.bundle, &sizes), SNUG_OK);
  ASSERT_EQ(snug_session_memory(s.session, &stats), SNUG_OK);
  EXPECT_EQ(stats.allocated_bytes, sizes.weights + sizes.device_arena);
  std::vector<Bytes> first = runOnce(b.bundle, s.session, inputs);
  ASSERT_EQ(first.size(), expected.size());
  for (int run = 2; run <= 4; ++run)
    EXPECT_EQ(runOnce(b.bundle, s.session, inputs), first) << "run " << run;
  for (size_t i = 0; i < first.size(); ++i) {
    snug_tensor_info info;
    ASSERT_EQ(snug_bundle_output_info(b.bundle, i, &info), SNUG_OK);
    unsigned size = bundle::dtypeSize(uint8_t(info.dtype));
    size_t bad = 0, count = info.bytes / size;
    for (size_t k = 0; k < count; ++k) {
      auto at = [&](const Bytes &data) -> double {
        const uint8_t *p = data.data() + k * size;
        switch (info.dtype) {
        case SNUG_DTYPE_F32: {
          float v;
          std::memcpy(&v, p, 4);
          return v;
        }
        case SNUG_DTYPE_F64: {
          double v;
          std::memcpy(&v, p, 8);
          return v;
        }
        case SNUG_DTYPE_F16: {
          uint16_t v;
          std::memcpy(&v, p, 2);
          return f16ToFloat(v);
        }
        case SNUG_DTYPE_BF16: {
          uint16_t v;
          std::memcpy(&v, p, 2);
          return bf16ToFloat(v);
        }
        default: {
          int64_t v = 0;
          std::memcpy(&v, p, size);
          return double(v);
        }
        }
      };
      double a = at(first[i]), e = at(expected[i]);
      if (std::isnan(a) && std::isnan(e))
        continue;
      double tolerance =
          info.dtype == SNUG_DTYPE_F16 || info.dtype == SNUG_DTYPE_BF16
              ? 1e-2 + 1e-2 * std::fabs(e)
              : 1e-4 + 1e-3 * std::fabs(e);
      if (!(std::fabs(a - e) <= tolerance))
        ++bad;
    }
    EXPECT_EQ(bad, 0u) << "output '" << info.name << "': " << bad << " of "
                       << count << " elements differ from the host";
  }
}
