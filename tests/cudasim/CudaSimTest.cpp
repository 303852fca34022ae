//===- CudaSimTest.cpp - The CUDA simulator on hand-written kernels -------===//
//
// Hand-written kernels (with the real prelude) are compiled once per run by
// compile_kernels.sh, as emitted code is, and launched through the
// simulator: barriers, repeated barrier rounds, the prelude's block
// reductions, every shuffle and the ballot, multi-dimensional ids and
// scalars, and the errors it must report (barrier deadlock, divergence,
// different barrier counts, a shuffle of a partial warp, __trap, a write
// past the arena, a crash). Then the reference GEMM against a naive one, and
// snug-cudasim on a bundle with a device plan (launch, GEMM, copy).
//
//===----------------------------------------------------------------------===//
#include "compiler/bundle/BundleWriter.h"
#include "compiler/cuda/CudaEmitter.h"
#include "ir/Float16.h"
#include "ir/Parser.h"
#include "core/BundleFormat.h"
#include "tests/cudasim/KernelLibrary.h"
#include "tests/cudasim/SimExecutor.h"
#include "tools/snug-run/TensorFiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace snug;
using namespace snug::cudasim;

namespace {

const char *kKernels = R"cuda(
extern "C" __global__ void __launch_bounds__(128) rotate(const float *x, float *y) {
  __shared__ float tile[128];
  unsigned t = threadIdx.x, b = blockIdx.x;
  tile[t] = x[b * 128 + t];
  __syncthreads();
  y[b * 128 + t] = tile[(t + 1) % 128];
}

// Hillis-Steele inclusive scan: eight barrier rounds in a loop.
extern "C" __global__ void __launch_bounds__(256) scan(const int *x, int *y) {
  __shared__ int buffer[2][256];
  unsigned t = threadIdx.x;
  int p = 0;
  buffer[0][t] = x[blockIdx.x * 256 + t];
  __syncthreads();
  for (unsigned offset = 1; offset < 256; offset <<= 1) {
    int v = buffer[p][t];
    if (t >= offset)
      v += buffer[p][t - offset];
    buffer[1 - p][t] = v;
    p = 1 - p;
    __syncthreads();
  }
  y[blockIdx.x * 256 + t] = buffer[p][t];
}

extern "C" __global__ void __launch_bounds__(256) rowsum(const float *x, float *sum, float *largest, int n) {
  __shared__ float scratch[32];
  float s = 0, m = -snug_inf();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float v = x[blockIdx.x * n + i];
    s += v;
    m = snug_op_max()(m, v);
  }
  s = snug_block_reduce(s, snug_op_sum(), scratch);
  m = snug_block_reduce(m, snug_op_max(), scratch);
  if (threadIdx.x == 0) {
    sum[blockIdx.x] = s;
    largest[blockIdx.x] = m;
  }
}

extern "C" __global__ void __launch_bounds__(64) shuffles(int *out) {
  int t = threadIdx.x, lane = t & 31;
  out[t * 8 + 0] = __shfl_xor_sync(0xffffffffu, t, 1);
  out[t * 8 + 1] = __shfl_down_sync(0xffffffffu, t, 3);
  out[t * 8 + 2] = __shfl_up_sync(0xffffffffu, t, 2);
  out[t * 8 + 3] = __shfl_sync(0xffffffffu, t, 5);
  out[t * 8 + 4] = __shfl_xor_sync(0xffffffffu, t, 4, 8);
  out[t * 8 + 5] = __shfl_down_sync(0xffffffffu, t, 5, 8);
  out[t * 8 + 6] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
  out[t * 8 + 7] = (int)(__shfl_sync(0xffffffffu, (double)t * 0.5, 31 - lane) * 2);
}

extern "C" __global__ void __launch_bounds__(64) ids(int *out, int64_t base, float scale) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned n = blockDim.x * blockDim.y * blockDim.z;
  out[block * n + t] = (int)(base + (int64_t)(scale * (float)(block * 1000 + t)));
}

extern "C" __global__ void __launch_bounds__(64) deadlock(float *y) {
  if (threadIdx.x < 32)
    __syncthreads();
  y[threadIdx.x] = 1;
}

extern "C" __global__ void __launch_bounds__(64) divergent(float *y) {
  if (threadIdx.x & 1) {
    __syncthreads();
    y[threadIdx.x] = 1;
  } else {
    __syncthreads();
    y[threadIdx.x] = 2;
  }
}

extern "C" __global__ void __launch_bounds__(64) counts(float *y) {
  for (unsigned i = 0; i < threadIdx.x / 32 + 1; ++i)
    __syncthreads();
  y[threadIdx.x] = 0;
}

extern "C" __global__ void __launch_bounds__(48) partial(int *out) {
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (int)threadIdx.x, 16);
}

extern "C" __global__ void __launch_bounds__(32) trap(int *out) {
  if (blockIdx.x == 1 && threadIdx.x == 3)
    __trap();
  out[0] = 0;
}

extern "C" __global__ void __launch_bounds__(32) poke(float *y, int64_t index) {
  if (threadIdx.x == 0)
    y[index] = 1.0f;
}

// Reads its neighbour's shared slot without a barrier: right in the forward
// schedule, wrong in the reverse one.
extern "C" __global__ void __launch_bounds__(64) racy(int *y, int base) {
  __shared__ int s[64];
  s[threadIdx.x] = base + threadIdx.x;
  y[threadIdx.x] = threadIdx.x ? s[threadIdx.x - 1] : base - 1;
}

// 512 KiB of locals: more than a fiber's stack.
extern "C" __global__ void __launch_bounds__(32) deep(float *y) {
  volatile float big[131072];
  big[threadIdx.x] = 1.0f;
  y[threadIdx.x] = big[threadIdx.x];
}

extern "C" __global__ void __launch_bounds__(32) relu(const float *x, float *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float v = snug_load(x + i);
    snug_store(y + i, v > 0.0f ? v : 0.0f);
  }
}

#ifdef SNUG_CUDA_SIM
extern "C" void rotate_sim(void **a) { rotate(*(const float **)a[0], *(float **)a[1]); }
extern "C" void scan_sim(void **a) { scan(*(const int **)a[0], *(int **)a[1]); }
extern "C" void rowsum_sim(void **a) { rowsum(*(const float **)a[0], *(float **)a[1], *(float **)a[2], *(int *)a[3]); }
extern "C" void shuffles_sim(void **a) { shuffles(*(int **)a[0]); }
extern "C" void ids_sim(void **a) { ids(*(int **)a[0], *(int64_t *)a[1], *(float *)a[2]); }
extern "C" void deadlock_sim(void **a) { deadlock(*(float **)a[0]); }
extern "C" void divergent_sim(void **a) { divergent(*(float **)a[0]); }
extern "C" void counts_sim(void **a) { counts(*(float **)a[0]); }
extern "C" void partial_sim(void **a) { partial(*(int **)a[0]); }
extern "C" void trap_sim(void **a) { trap(*(int **)a[0]); }
extern "C" void poke_sim(void **a) { poke(*(float **)a[0], *(int64_t *)a[1]); }
extern "C" void racy_sim(void **a) { racy(*(int **)a[0], *(int *)a[1]); }
extern "C" void deep_sim(void **a) { deep(*(float **)a[0]); }
extern "C" void relu_sim(void **a) { relu(*(const float **)a[0], *(float **)a[1], *(int *)a[2]); }
#endif
)cuda";

const std::vector<std::string> kSymbols = {
    "rotate", "scan",  "rowsum", "shuffles", "ids",  "deadlock", "divergent",
    "counts", "partial", "trap", "poke",     "racy", "deep", "relu"};

enum Kernel {
  Rotate, Scan, RowSum, Shuffles, Ids, Deadlock, Divergent, Counts, Partial,
  Trap, Poke, Racy, Deep, Relu
};

std::string scratchDir() {
  static std::string dir = [] {
    std::string path = std::filesystem::temp_directory_path().string() +
                       "/snug-cudasim-test-" + std::to_string(getpid());
    std::filesystem::create_directories(path);
    return path;
  }();
  return dir;
}

/// Removes the scratch directory after the last test (not from a static
/// destructor: death-test children exit through those too).
class ScratchCleanup : public ::testing::Environment {
public:
  void TearDown() override {
    std::error_code error;
    std::filesystem::remove_all(scratchDir(), error);
  }
};
::testing::Environment *const scratchCleanup =
    ::testing::AddGlobalTestEnvironment(new ScratchCleanup);

std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Compiles the kernels (once per variant and contents) and returns the .so
/// path.
std::string buildKernels(const std::string &extraFlags) {
  static std::map<std::string, std::string> built;
  auto found = built.find(extraFlags);
  if (found != built.end())
    return found->second;
  std::string error;
  std::string library = cudasim::buildKernelLibrary(
      cuda::getCudaPrelude().str() + kKernels, extraFlags,
      SNUG_CUDASIM_TEST_CACHE, "kernels", error);
  EXPECT_FALSE(library.empty()) << error;
  built[extraFlags] = library;
  return library;
}

/// A launch with pointer or scalar arguments.
struct Args {
  std::vector<uint64_t> slots;
  std::vector<void *> pointers;
  template <class T> Args &add(T value) {
    uint64_t slot = 0;
    std::memcpy(&slot, &value, sizeof value);
    slots.push_back(slot);
    return *this;
  }
  void **get() {
    pointers.clear();
    for (uint64_t &slot : slots)
      pointers.push_back(&slot);
    return pointers.data();
  }
};

class CudaSimTest : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    std::string library = buildKernels(GetParam());
    ASSERT_FALSE(library.empty());
    std::string error;
    ASSERT_TRUE(kernels.load(library, kSymbols, error)) << error;
  }

  bool launch(Kernel kernel, Args &args, std::vector<uint32_t> grid,
              std::vector<uint32_t> block, unsigned flags = 0) {
    grid.resize(3, 1);
    block.resize(3, 1);
    error.clear();
    return kernels.launch(kernel, args.get(), grid.data(), block.data(), flags,
                          error);
  }

  KernelLibrary kernels;
  std::string error;
};

TEST_P(CudaSimTest, SharedMemoryAndBarrier) {
  std::vector<float> x(3 * 128), y(x.size(), NAN);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i);
  for (unsigned flags : {0u, 1u, 2u}) {
    Args args;
    args.add(x.data()).add(y.data());
    ASSERT_TRUE(launch(Rotate, args, {3}, {128}, flags)) << error;
    for (unsigned b = 0; b < 3; ++b)
      for (unsigned t = 0; t < 128; ++t)
        ASSERT_EQ(y[b * 128 + t], x[b * 128 + (t + 1) % 128]) << b << " " << t;
  }
}

TEST_P(CudaSimTest, BarrierRoundsInALoop) {
  std::vector<int> x(2 * 256), y(x.size(), -1);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = int(i % 7) - 3;
  Args args;
  args.add(x.data()).add(y.data());
  ASSERT_TRUE(launch(Scan, args, {2}, {256}, 2)) << error;
  for (unsigned b = 0; b < 2; ++b) {
    int sum = 0;
    for (unsigned t = 0; t < 256; ++t) {
      sum += x[b * 256 + t];
      ASSERT_EQ(y[b * 256 + t], sum) << b << " " << t;
    }
  }
}

TEST_P(CudaSimTest, PreludeBlockReductions) {
  const int rows = 5, n = 1000;
  std::vector<float> x(rows * n), sum(rows, NAN), largest(rows, NAN);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < n; ++i)
      x[r * n + i] = float((i * 7 + r) % 13) - 6; // integers: exact sums
  x[3 * n + 17] = NAN;                            // max propagates NaN
  Args args;
  args.add(x.data()).add(sum.data()).add(largest.data()).add(int32_t(n));
  ASSERT_TRUE(launch(RowSum, args, {rows}, {256})) << error;
  for (int r = 0; r < rows; ++r) {
    float expectSum = 0, expectMax = -INFINITY;
    for (int i = 0; i < n; ++i) {
      expectSum += x[r * n + i];
      expectMax = std::max(expectMax, x[r * n + i]);
    }
    if (r == 3) {
      EXPECT_TRUE(std::isnan(sum[r]));
      EXPECT_TRUE(std::isnan(largest[r]));
    } else {
      EXPECT_EQ(sum[r], expectSum) << r;
      EXPECT_EQ(largest[r], expectMax) << r;
    }
  }
}

TEST_P(CudaSimTest, ShufflesAndBallot) {
  std::vector<int> out(64 * 8, -1);
  Args args;
  args.add(out.data());
  ASSERT_TRUE(launch(Shuffles, args, {1}, {64})) << error;
  unsigned ballot = 0;
  for (int lane = 0; lane < 32; lane += 3)
    ballot |= 1u << lane;
  for (int t = 0; t < 64; ++t) {
    int lane = t & 31, warp = t & ~31;
    const int *o = &out[t * 8];
    EXPECT_EQ(o[0], warp + (lane ^ 1)) << t;
    EXPECT_EQ(o[1], lane + 3 < 32 ? t + 3 : t) << t;
    EXPECT_EQ(o[2], lane >= 2 ? t - 2 : t) << t;
    EXPECT_EQ(o[3], warp + 5) << t;
    EXPECT_EQ(o[4], warp + (lane ^ 4)) << t;
    EXPECT_EQ(o[5], (lane % 8) + 5 < 8 ? t + 5 : t) << t;
    EXPECT_EQ(unsigned(o[6]), ballot) << t;
    EXPECT_EQ(o[7], warp + 31 - lane) << t;
  }
}

TEST_P(CudaSimTest, MultiDimensionalIdsAndScalars) {
  // grid (2,3,2) of blocks (4,4,4)
  std::vector<int> out(12 * 64, -1);
  Args args;
  // The int64 scalar needs all 64 bits: its low 32 are 8.
  args.add(out.data()).add(int64_t(8) - (int64_t(1) << 33)).add(0.5f);
  ASSERT_TRUE(launch(Ids, args, {2, 3, 2}, {4, 4, 4})) << error;
  for (unsigned b = 0; b < 12; ++b)
    for (unsigned t = 0; t < 64; ++t)
      ASSERT_EQ(out[b * 64 + t], 8 + int((b * 1000 + t) / 2)) << b << " " << t;
}

TEST_P(CudaSimTest, ReportsBarrierDeadlock) {
  std::vector<float> y(64);
  Args args;
  args.add(y.data());
  ASSERT_FALSE(launch(Deadlock, args, {2}, {64}));
  EXPECT_NE(error.find("kernel deadlock, block (0,0,0)"), std::string::npos)
      << error;
  EXPECT_NE(error.find("barrier deadlock: thread (0,0,0) waits at "
                       "__syncthreads()"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("thread (32,0,0) has finished"), std::string::npos)
      << error;
  // The simulator recovers: the next launch runs.
  std::vector<float> x(128, 1), z(128);
  Args ok;
  ok.add(x.data()).add(z.data());
  EXPECT_TRUE(launch(Rotate, ok, {1}, {128})) << error;
}

TEST_P(CudaSimTest, ReportsBarrierDivergence) {
  std::vector<float> y(64);
  Args args;
  args.add(y.data());
  ASSERT_FALSE(launch(Divergent, args, {1}, {64}));
  EXPECT_NE(error.find("kernel divergent"), std::string::npos) << error;
  EXPECT_NE(error.find("barrier divergence: thread (0,0,0) waits at "
                       "__syncthreads() on line"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("thread (1,0,0) at __syncthreads() on line"),
            std::string::npos)
      << error;
}

TEST_P(CudaSimTest, ReportsDifferentBarrierCounts) {
  std::vector<float> y(64);
  Args args;
  args.add(y.data());
  ASSERT_FALSE(launch(Counts, args, {1}, {64}));
  EXPECT_NE(error.find("barrier deadlock: thread (32,0,0) waits"),
            std::string::npos)
      << error;
}

TEST_P(CudaSimTest, ReportsShuffleOfAPartialWarp) {
  std::vector<int> out(48);
  Args args;
  args.add(out.data());
  ASSERT_FALSE(launch(Partial, args, {1}, {48}));
  EXPECT_NE(error.find("kernel partial, block (0,0,0), thread (32,0,0): "
                       "shuffle reads lane 16 of a partial warp"),
            std::string::npos)
      << error;
}

TEST_P(CudaSimTest, ReportsTrap) {
  std::vector<int> out(1);
  Args args;
  args.add(out.data());
  ASSERT_FALSE(launch(Trap, args, {4}, {32}));
  EXPECT_EQ(error, "kernel trap, block (1,0,0), thread (3,0,0): __trap()");
}

TEST_P(CudaSimTest, ReverseScheduleExposesAMissingBarrier) {
  std::vector<int> y(64);
  for (unsigned flags : {0u, 1u}) {
    Args args;
    args.add(y.data()).add(int32_t(1000 + 100 * flags));
    ASSERT_TRUE(launch(Racy, args, {1}, {64}, flags)) << error;
    bool right = true;
    for (int t = 0; t < 64; ++t)
      right &= y[t] == int(1000 + 100 * flags) + t - 1;
    EXPECT_EQ(right, flags == 0) << flags;
  }
}

// The assembly context switch, at -O1 (compile_kernels.sh) and -O2 (more
// aggressive code motion around the barriers), and the ucontext fallback.
INSTANTIATE_TEST_SUITE_P(Switch, CudaSimTest,
                         ::testing::Values("", "-O2", "-DSNUG_CUDASIM_UCONTEXT"),
                         [](const auto &info) {
                           return info.param.empty() ? std::string("Assembly")
                                  : info.param == "-O2"
                                      ? std::string("AssemblyO2")
                                      : std::string("Ucontext");
                         });

//===----------------------------------------------------------------------===//
// The step executor: canaries, guard pages, crash reports
//===----------------------------------------------------------------------===//

bundle::DeviceStep launchStep(uint32_t kernel, uint32_t gridX, uint32_t blockX,
                              std::vector<bundle::DeviceArg> args) {
  bundle::DeviceStep step;
  step.kind = bundle::StepLaunch;
  step.launch.kernel = kernel;
  step.launch.grid[0] = gridX;
  step.launch.block[0] = blockX;
  step.launch.args = std::move(args);
  return step;
}

TEST(CudaSimExecutor, ReportsAWriteJustPastTheArena) {
  KernelLibrary kernels;
  std::string error;
  ASSERT_TRUE(kernels.load(buildKernels(""), kSymbols, error)) << error;
  DeviceMemory memory;
  ASSERT_TRUE(memory.allocate(1000, 0xFF, nullptr, 0, error)) << error;
  bundle::DevicePlan plan;
  plan.arenaBytes = 1000;
  plan.kernels = kSymbols;
  plan.steps.push_back(launchStep(
      Poke, 1, 32, {bundle::DeviceArg::arena(992), {bundle::ArgI64, 2}}));
  RunStats stats;
  EXPECT_FALSE(runDevicePlan(plan, kernels, memory, RunOptions(), nullptr,
                             stats, error));
  EXPECT_EQ(error, "step 0 (op #0): kernel poke wrote past the end of the "
                   "device arena (1000 bytes), at byte 1000");
  // Poison: every float of the arena is NaN until written.
  float first;
  std::memcpy(&first, memory.arena, 4);
  EXPECT_TRUE(std::isnan(first));
}

TEST(CudaSimExecutorDeathTest, ReportsACrashWithTheKernelAndAddress) {
  auto crash = [](int64_t index, bool intoWeights) {
    KernelLibrary kernels;
    std::string error;
    if (!kernels.load(buildKernels(""), kSymbols, error))
      std::exit(9);
    DeviceMemory memory;
    std::vector<uint8_t> weights(256, 0);
    if (!memory.allocate(1024, 0xFF, weights.data(), weights.size(), error))
      std::exit(9);
    installCrashHandler(3);
    bundle::DevicePlan plan;
    plan.arenaBytes = 1024;
    plan.kernels = kSymbols;
    plan.steps.push_back(launchStep(
        Poke, 1, 32,
        {intoWeights ? bundle::DeviceArg::weight(0)
                     : bundle::DeviceArg::arena(0),
         {bundle::ArgI64, uint64_t(index)}}));
    RunStats stats;
    runDevicePlan(plan, kernels, memory, RunOptions(),
                  [](uint32_t) { return std::string("node 'p' (Poke)"); },
                  stats, error);
    std::exit(0);
  };
  EXPECT_EXIT(crash(256 + 512, false), ::testing::ExitedWithCode(3),
              "SIGSEGV \\(bad memory access\\) in step 0 \\(node 'p' "
              "\\(Poke\\)\\), launch of poke, kernel poke, block \\(0,0,0\\), "
              "thread \\(0,0,0\\); address 0x[0-9a-f]+: 2048 bytes past the "
              "end of the device arena \\(1024 bytes\\)");
  EXPECT_EXIT(crash(3, true), ::testing::ExitedWithCode(3),
              "at offset 12 of the weights \\(read-only");
  auto overflow = [] {
    KernelLibrary kernels;
    std::string error;
    if (!kernels.load(buildKernels(""), kSymbols, error))
      std::exit(9);
    installCrashHandler(3);
    std::vector<float> y(32);
    Args args;
    args.add(y.data());
    uint32_t grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    kernels.launch(Deep, args.get(), grid, block, 0, error);
    std::exit(0);
  };
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's own stack bookkeeping meets the fiber's guard page
  // first in some runs (seen: 1 run in 3), so the overflow report is
  // checked in the plain build only.
  return;
#endif
  EXPECT_EXIT(overflow(),
      ::testing::ExitedWithCode(3),
      "SIGSEGV \\(bad memory access\\), kernel deep, block \\(0,0,0\\), "
      "thread \\(0,0,0\\); address 0x[0-9a-f]+ \\(a fiber stack overflow");
}

//===----------------------------------------------------------------------===//
// The reference GEMM
//===----------------------------------------------------------------------===//

struct GemmCase {
  int m, n, k, batch;
  bool transA, transB;
  float alpha, beta;
};

TEST(CudaSimGemm, MatchesANaiveColumnMajorGemm) {
  std::mt19937 random(7);
  std::uniform_int_distribution<int> small(-4, 4);
  for (const GemmCase &c :
       {GemmCase{3, 2, 4, 1, false, false, 1, 0},
        GemmCase{5, 3, 2, 2, true, false, 0.5f, 0},
        GemmCase{4, 4, 3, 3, false, true, 1, 2},
        GemmCase{2, 5, 6, 2, true, true, -1, 0.25f}}) {
    SCOPED_TRACE(testing::Message() << c.m << "x" << c.n << "x" << c.k << " b"
                                    << c.batch << " tA" << c.transA << " tB"
                                    << c.transB);
    for (uint8_t dtype : {bundle::DTypeF32, bundle::DTypeF16,
                          bundle::DTypeF64, bundle::DTypeBF16}) {
      size_t size = bundle::dtypeSize(dtype);
      int64_t aRows = c.transA ? c.k : c.m, bRows = c.transB ? c.n : c.k;
      int64_t aCols = c.transA ? c.m : c.k, bCols = c.transB ? c.k : c.n;
      bundle::DeviceGemm g;
      g.dtype = dtype;
      g.transA = c.transA, g.transB = c.transB;
      g.m = c.m, g.n = c.n, g.k = c.k, g.batch = c.batch;
      g.lda = aRows + 1, g.ldb = bRows + 2, g.ldc = c.m + 1;
      g.strideA = g.lda * aCols + 3, g.strideB = g.ldb * bCols;
      g.strideC = g.ldc * c.n + 5;
      g.alpha = c.alpha, g.beta = c.beta;
      uint64_t aBytes = bundle::gemmOperandExtent(aRows, aCols, g.lda, g.strideA, c.batch) * size;
      uint64_t bBytes = bundle::gemmOperandExtent(bRows, bCols, g.ldb, g.strideB, c.batch) * size;
      uint64_t cBytes = bundle::gemmOperandExtent(c.m, c.n, g.ldc, g.strideC, c.batch) * size;
      // A in the weights; B and C in the arena.
      std::vector<double> a(aBytes / size), b(bBytes / size), cInit(cBytes / size);
      for (double &v : a) v = small(random);
      for (double &v : b) v = small(random);
      for (double &v : cInit) v = small(random);
      auto store = [&](uint8_t *p, double v) {
        switch (dtype) {
        case bundle::DTypeF32: { float f = float(v); std::memcpy(p, &f, 4); break; }
        case bundle::DTypeF64: std::memcpy(p, &v, 8); break;
        case bundle::DTypeF16: { uint16_t h = floatToF16(float(v)); std::memcpy(p, &h, 2); break; }
        default: { uint16_t h = floatToBf16(float(v)); std::memcpy(p, &h, 2); break; }
        }
      };
      auto load = [&](const uint8_t *p) -> double {
        switch (dtype) {
        case bundle::DTypeF32: { float f; std::memcpy(&f, p, 4); return f; }
        case bundle::DTypeF64: { double d; std::memcpy(&d, p, 8); return d; }
        case bundle::DTypeF16: { uint16_t h; std::memcpy(&h, p, 2); return f16ToFloat(h); }
        default: { uint16_t h; std::memcpy(&h, p, 2); return bf16ToFloat(h); }
        }
      };
      std::vector<uint8_t> weights(aBytes);
      for (size_t i = 0; i < a.size(); ++i)
        store(weights.data() + i * size, a[i]);
      DeviceMemory memory;
      std::string error;
      uint64_t bOffset = 0, cOffset = (bBytes + 255) / 256 * 256;
      ASSERT_TRUE(memory.allocate(cOffset + cBytes, 0xFF, weights.data(),
                                  weights.size(), error));
      for (size_t i = 0; i < b.size(); ++i)
        store(memory.arena + bOffset + i * size, b[i]);
      // beta == 0: C keeps its NaN poison and must not be read.
      if (c.beta != 0)
        for (size_t i = 0; i < cInit.size(); ++i)
          store(memory.arena + cOffset + i * size, cInit[i]);
      g.a = bundle::DeviceArg::weight(0);
      g.b = bundle::DeviceArg::arena(bOffset);
      g.c = bundle::DeviceArg::arena(cOffset);
      ASSERT_TRUE(referenceGemm(g, memory, error)) << error;
      for (int batch = 0; batch < c.batch; ++batch)
        for (int i = 0; i < c.m; ++i)
          for (int j = 0; j < c.n; ++j) {
            double sum = 0;
            for (int p = 0; p < c.k; ++p) {
              double av = a[batch * g.strideA + (c.transA ? p + i * g.lda : i + p * g.lda)];
              double bv = b[batch * g.strideB + (c.transB ? j + p * g.ldb : p + j * g.ldb)];
              sum += av * bv;
            }
            int64_t ci = batch * g.strideC + i + j * g.ldc;
            double expect = c.alpha * sum + (c.beta != 0 ? c.beta * cInit[ci] : 0);
            uint8_t rounded[8];
            store(rounded, expect); // the result in the output type
            expect = load(rounded);
            ASSERT_EQ(load(memory.arena + cOffset + ci * size), expect)
                << "dtype " << int(dtype) << " batch " << batch << " (" << i
                << "," << j << ")";
          }
      // Outside the matrices (the gaps of ld and stride), C is untouched.
      if (c.beta == 0) {
        EXPECT_TRUE(std::isnan(load(memory.arena + cOffset + c.m * size)));
      }
    }
  }
}

TEST(CudaSimGemm, RejectsAnOutputOverlappingAnInput) {
  DeviceMemory memory;
  std::string error;
  ASSERT_TRUE(memory.allocate(1024, 0, nullptr, 0, error));
  bundle::DeviceGemm g;
  g.dtype = bundle::DTypeF32;
  g.m = g.n = g.k = 4;
  g.lda = g.ldb = g.ldc = 4;
  g.a = bundle::DeviceArg::arena(0);
  g.b = bundle::DeviceArg::arena(128);
  g.c = bundle::DeviceArg::arena(32);
  EXPECT_FALSE(referenceGemm(g, memory, error));
  EXPECT_NE(error.find("overlaps"), std::string::npos) << error;
}

//===----------------------------------------------------------------------===//
// snug-cudasim on a bundle
//===----------------------------------------------------------------------===//

/// x[2,4] @ w[4,3] (a GEMM), Relu (a launch), Identity (a copy).
const char *kModel =
    "func @m(%x: f32[2,4] {offset = 0}, %w: f32[4,3] weight = [1.0, -1.0, "
    "0.5, 2.0, 0.0, -2.0, -1.0, 1.0, 1.0, 0.5, 0.25, -0.5]) -> f32[2,3] "
    "attributes {alignment = 64, arena = 256, lower_bound = 64} {\n"
    "  %0 = MatMul(%x, %w) : f32[2,3] {offset = 64}\n"
    "  %1 = Relu(%0) : f32[2,3] {offset = 128}\n"
    "  %y = Identity(%1) : f32[2,3] {offset = 192}\n"
    "  return %y\n"
    "}\n";

struct ToolRun {
  int status = -1;
  std::string output;
};

ToolRun runTool(const std::string &arguments) {
  std::string log = scratchDir() + "/tool.log";
  std::string command = SNUG_CUDASIM_TOOL " " + arguments + " > " + log + " 2>&1";
  ToolRun run;
  int status = std::system(command.c_str());
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.output = readText(log);
  return run;
}

void writeTensor(const std::string &path, const std::vector<float> &values,
                 std::vector<int64_t> dims) {
  HostTensor tensor;
  tensor.dtype = bundle::DTypeF32;
  tensor.dims = std::move(dims);
  tensor.bytes.resize(values.size() * 4);
  std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  std::string error;
  ASSERT_TRUE(writeNpy(path, tensor, error)) << error;
}

TEST(SnugCudaSimTool, RunsADevicePlanAndChecksOutputs) {
  auto module = ir::parseModule(kModel, "m.ir");
  ASSERT_TRUE(bool(module)) << toString(module.takeError());
  WeightsLayout layout = computeWeightsLayout(**module);
  ASSERT_EQ(layout.offsets.size(), 1u);

  bundle::DevicePlan plan;
  plan.arenaBytes = 256;
  plan.kernels = kSymbols;
  // Row-major Y[2x3] = X[2x4] W[4x3] is column-major Y^T = W^T X^T.
  bundle::DeviceStep gemm;
  gemm.kind = bundle::StepGemm;
  gemm.op = 0;
  gemm.gemm.dtype = bundle::DTypeF32;
  gemm.gemm.m = 3, gemm.gemm.n = 2, gemm.gemm.k = 4;
  gemm.gemm.lda = 3, gemm.gemm.ldb = 4, gemm.gemm.ldc = 3;
  gemm.gemm.a = bundle::DeviceArg::weight(layout.offsets[0].second);
  gemm.gemm.b = bundle::DeviceArg::arena(0);
  gemm.gemm.c = bundle::DeviceArg::arena(64);
  plan.steps.push_back(gemm);
  bundle::DeviceStep relu = launchStep(
      Relu, 1, 32,
      {bundle::DeviceArg::arena(64), bundle::DeviceArg::arena(128),
       {bundle::ArgI32, 6}});
  relu.op = 1;
  plan.steps.push_back(relu);
  bundle::DeviceStep copy;
  copy.kind = bundle::StepCopy;
  copy.op = 2;
  copy.copy.dst = bundle::DeviceArg::arena(192);
  copy.copy.src = bundle::DeviceArg::arena(128);
  copy.copy.bytes = 24;
  plan.steps.push_back(copy);
  std::vector<bundle::KernelImage> images;
  BundleOptions options{"test", "0.test", &plan, &images};
  std::string dir = scratchDir();
  std::string bundlePath = dir + "/m.snug";
  if (llvm::Error e = writeBundle(**module, bundlePath, options))
    FAIL() << toString(std::move(e));
  BundleOptions hostOnly{"test", "0.test"};
  if (llvm::Error e = writeBundle(**module, dir + "/host.snug", hostOnly))
    FAIL() << toString(std::move(e));

  std::vector<float> x = {1, 2, 3, 4, -1, 0.5f, 2, -3};
  const float w[4][3] = {{1, -1, 0.5f}, {2, 0, -2}, {-1, 1, 1}, {0.5f, 0.25f, -0.5f}};
  std::vector<float> y(6);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      float sum = 0;
      for (int p = 0; p < 4; ++p)
        sum += x[i * 4 + p] * w[p][j];
      y[i * 3 + j] = std::max(sum, 0.0f);
    }
  std::string check = dir + "/check";
  std::filesystem::create_directories(check);
  writeTensor(check + "/x.npy", x, {2, 4});
  writeTensor(check + "/y.npy", y, {2, 3});
  std::string wrong = dir + "/wrong";
  std::filesystem::create_directories(wrong);
  writeTensor(wrong + "/x.npy", x, {2, 4});
  y[4] += 1;
  writeTensor(wrong + "/y.npy", y, {2, 3});

  std::string kernels = buildKernels("");
  ToolRun ok = runTool(bundlePath + " --kernels " + kernels + " --check " + check +
                   " --trace --output-dir " + dir + "/out");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("ran 1 launches (1 blocks, 32 threads, 0 barrier "
                           "rounds), 1 GEMMs, 1 copies"),
            std::string::npos)
      << ok.output;
  EXPECT_NE(ok.output.find("(Relu): launch relu grid(1,1,1) block(32,1,1)"),
            std::string::npos)
      << ok.output;
  EXPECT_NE(ok.output.find("output y f32[2,3]: max abs 0, max rel 0: ok"),
            std::string::npos)
      << ok.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/out/y.npy"));

  ToolRun mismatch = runTool(bundlePath + " --kernels " + kernels + " --check " +
                         wrong);
  EXPECT_EQ(mismatch.status, 1) << mismatch.output;
  EXPECT_NE(mismatch.output.find("MISMATCH (1 of 6 elements)"),
            std::string::npos)
      << mismatch.output;

  ToolRun random = runTool(bundlePath + " --kernels " + kernels +
                       " --input x=random --seed 3");
  EXPECT_EQ(random.status, 0) << random.output;
  EXPECT_NE(random.output.find("output y f32[2,3]"), std::string::npos);

  ToolRun hostBundle = runTool(dir + "/host.snug --kernels " + kernels +
                           " --check " + check);
  EXPECT_EQ(hostBundle.status, 1);
  EXPECT_NE(hostBundle.output.find("has no device plan"), std::string::npos)
      << hostBundle.output;

  // A library without the plan's kernels.
  plan.kernels.push_back("missing_kernel");
  if (llvm::Error e = writeBundle(**module, dir + "/missing.snug", options))
    FAIL() << toString(std::move(e));
  ToolRun missing = runTool(dir + "/missing.snug --kernels " + kernels +
                        " --check " + check);
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.output.find("lacks 1 kernel thunk(s) of the device plan: "
                                "missing_kernel_sim"),
            std::string::npos)
      << missing.output;
}

} // namespace
