//===- KernelReportTest.cpp - Kernel resources from cubins, device limits --===//
//
// CubinInfo on cubins NVRTC and nvJitLink make from hand-written kernels
// whose resources are known (a local array, static shared memory, a
// __launch_bounds__ that forces spills), on truncated and corrupted
// cubins (an error or a result, never a crash), and the limit checker and
// local-memory estimate on synthetic records.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CubinInfo.h"
#include "compiler/cuda/DeviceLimits.h"
#include "compiler/cuda/KernelReport.h"
#include "compiler/cuda/Nvrtc.h"

#include <gtest/gtest.h>

#include <random>

using namespace snug;
using namespace snug::cuda;

namespace {

// k_local: a 64-float array indexed by a run-time value lives in local
// memory (256 B per thread), beside 1200 B of static shared memory.
// k_spill: 48 values live at once under __launch_bounds__(1024, 2), which
// caps it at 65536 / 2048 = 32 registers: ptxas spills.
const char *kSource = R"(
extern "C" __global__ void __launch_bounds__(256)
k_local(float *out, const float *in, int n) {
  float a[64];
  __shared__ float sh[300];
  for (int i = 0; i < 64; ++i) a[i] = in[(threadIdx.x * 7 + i * n) % 1000];
  sh[threadIdx.x] = a[(threadIdx.x + n) & 63];
  __syncthreads();
  out[threadIdx.x] = sh[(threadIdx.x + 1) % 256] + a[n & 63];
}
extern "C" __global__ void __launch_bounds__(1024, 2)
k_spill(float *out, const float *in, int n) {
  float v[48];
#pragma unroll
  for (int i = 0; i < 48; ++i) v[i] = in[threadIdx.x + i * n];
  float s = 0;
#pragma unroll
  for (int i = 0; i < 48; ++i)
#pragma unroll
    for (int j = 0; j < 48; j += 5) s = s * v[i] + v[(i + j) % 48];
  out[threadIdx.x] = s;
}
)";

CudaProgram makeProgram() {
  CudaProgram program;
  program.source = kSource;
  program.plan.kernels = {"k_local", "k_spill"};
  for (uint32_t k = 0; k < 2; ++k) {
    bundle::DeviceStep step;
    step.kind = bundle::StepLaunch;
    step.launch.kernel = k;
    step.launch.grid[0] = 4;
    step.launch.block[0] = k == 0 ? 256 : 1024;
    program.plan.steps.push_back(step);
  }
  program.kernelNodes = {"node 'a' (Local)", "node 'b' (Spill)"};
  return program;
}

struct Compiled {
  std::vector<bundle::KernelImage> images;
  std::vector<std::string> logs;
};

const Compiled *compileOnce() {
  static const llvm::Optional<Compiled> compiled = [] {
    llvm::Optional<Compiled> result;
    if (!isNvrtcAvailable())
      return result;
    Compiled out;
    auto images = compileCudaProgram(makeProgram(), {80, 90}, KernelCache(),
                                     nullptr, {}, &out.logs);
    if (!images) {
      ADD_FAILURE() << llvm::toString(images.takeError());
      return result;
    }
    out.images = std::move(*images);
    result = std::move(out);
    return result;
  }();
  return compiled ? &*compiled : nullptr;
}

const KernelRecord *find(const std::vector<KernelRecord> &records,
                         llvm::StringRef name, unsigned arch) {
  for (const KernelRecord &record : records)
    if (record.name == name && record.arch == arch)
      return &record;
  return nullptr;
}

KernelRecord makeRecord(unsigned threads, unsigned registers) {
  KernelRecord record;
  record.name = "snug_k_0";
  record.node = "node 'n' (Op)";
  record.arch = 90;
  record.block[0] = threads;
  record.resources.registers = registers;
  record.launches = 1;
  return record;
}

std::string refusal(const KernelRecord &record) {
  llvm::Error error = checkKernelLimits(record);
  return error ? llvm::toString(std::move(error)) : std::string();
}

} // namespace

TEST(KernelReportTest, ReadsWhatPtxasRecorded) {
  const Compiled *compiled = compileOnce();
  if (!compiled)
    GTEST_SKIP() << "built without NVRTC";
  ASSERT_EQ(compiled->logs.size(), compiled->images.size());
  auto records = buildKernelRecords(makeProgram().plan, compiled->images,
                                    compiled->logs, makeProgram().kernelNodes);
  ASSERT_TRUE(bool(records)) << llvm::toString(records.takeError());
  ASSERT_EQ(records->size(), 4u); // 2 kernels x (sm_80, sm_90)
  for (unsigned arch : {80u, 90u}) {
    const KernelRecord *local = find(*records, "k_local", arch);
    const KernelRecord *spill = find(*records, "k_spill", arch);
    ASSERT_TRUE(local && spill) << arch;
    // sm_90 adds the 1 KiB it reserves per block to the section.
    EXPECT_EQ(local->resources.sharedBytes, arch == 90 ? 2224u : 1200u);
    EXPECT_EQ(local->resources.localBytes, 256u) << arch;
    EXPECT_EQ(local->resources.maxThreads, 256u);
    EXPECT_EQ(local->spillBytes, 0u);
    EXPECT_EQ(local->getThreads(), 256u);
    EXPECT_GT(local->resources.registers, 8u);
    EXPECT_EQ(spill->resources.maxThreads, 1024u);
    EXPECT_LE(spill->resources.registers, 32u) << arch;
    EXPECT_GT(spill->resources.registers, 16u) << arch;
    // ptxas counts the bytes its spill store instructions write; the
    // frame holds the spilled values.
    EXPECT_GT(spill->spillBytes, 0u) << arch;
    EXPECT_GT(spill->resources.localBytes, 0u) << arch;
    EXPECT_EQ(spill->node, "node 'b' (Spill)");
  }
  EXPECT_FALSE(bool(checkKernelLimits(*records)));
  LocalMemoryReservation reservation = computeLocalMemoryReservation(*records);
  EXPECT_TRUE(reservation.known);
  EXPECT_GT(reservation.bytes, 0u);
}

// A launch with more threads than the kernel's __launch_bounds__ is what
// the driver refuses (CUDA_ERROR_INVALID_VALUE): so does the checker.
TEST(KernelReportTest, RefusesALaunchPastItsLaunchBounds) {
  const Compiled *compiled = compileOnce();
  if (!compiled)
    GTEST_SKIP() << "built without NVRTC";
  CudaProgram program = makeProgram();
  program.plan.steps[0].launch.block[0] = 512;
  auto records = buildKernelRecords(program.plan, compiled->images,
                                    compiled->logs, program.kernelNodes);
  ASSERT_TRUE(bool(records)) << llvm::toString(records.takeError());
  llvm::Error error = checkKernelLimits(*records);
  ASSERT_TRUE(bool(error));
  EXPECT_EQ(llvm::toString(std::move(error)),
            "kernel 'k_local' of node 'a' (Local) on sm_80: a block of 512 "
            "threads is over its __launch_bounds__ of 256");
}

// A cubin that lacks a launched kernel is an error, not a zero record.
TEST(KernelReportTest, MissingKernelIsAnError) {
  const Compiled *compiled = compileOnce();
  if (!compiled)
    GTEST_SKIP() << "built without NVRTC";
  CudaProgram program = makeProgram();
  program.plan.kernels[1] = "k_other";
  auto records = buildKernelRecords(program.plan, compiled->images,
                                    compiled->logs, program.kernelNodes);
  ASSERT_FALSE(bool(records));
  EXPECT_EQ(llvm::toString(records.takeError()),
            "the sm_80 cubin has no kernel 'k_other'");
}

// Truncated at every length and with bytes flipped anywhere in the ELF
// header, the section headers and the .nv.info records: an error or a
// result, never a read past the image (ASan builds check that too).
TEST(KernelReportTest, CorruptCubinsNeverCrash) {
  const Compiled *compiled = compileOnce();
  if (!compiled)
    GTEST_SKIP() << "built without NVRTC";
  const std::vector<uint8_t> &cubin = compiled->images[0].bytes;
  ASSERT_TRUE(bool(readCubinResources(cubin)));
  size_t errors = 0;
  for (size_t size = 0; size < cubin.size(); size += 7) {
    std::vector<uint8_t> cut(cubin.begin(), cubin.begin() + size);
    auto result = readCubinResources(cut);
    if (!result) {
      ++errors;
      llvm::consumeError(result.takeError());
    }
  }
  EXPECT_GT(errors, 0u);
  std::mt19937 random(36);
  for (int trial = 0; trial < 4000; ++trial) {
    std::vector<uint8_t> bad = cubin;
    for (int flips = 0; flips < 4; ++flips)
      bad[random() % bad.size()] ^= uint8_t(1u << (random() % 8));
    auto result = readCubinResources(bad);
    if (!result)
      llvm::consumeError(result.takeError());
  }
  auto notElf = readCubinResources(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>("\x7f" "ELG0123456789"), 14));
  ASSERT_FALSE(bool(notElf));
  EXPECT_EQ(llvm::toString(notElf.takeError()), "cubin: not an ELF image");
}

TEST(KernelReportTest, ReadsSpillsFromEitherLogForm) {
  llvm::StringMap<uint64_t> spills = readSpillBytes(
      "ptxas info    : Function properties for k_a\n"
      "ptxas         .     256 bytes stack frame, 40 bytes spill stores, "
      "40 bytes spill loads\n"
      "ptxas info    : Function properties for k_b\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "info    : Function properties for 'k_c':\n"
      "info    : used 8 registers, 0 stack\n");
  EXPECT_EQ(spills.lookup("k_a"), 40u);
  EXPECT_TRUE(spills.count("k_b"));
  EXPECT_EQ(spills.lookup("k_b"), 0u);
  EXPECT_FALSE(spills.count("k_c"));
}

TEST(KernelReportTest, ChecksEachLimitOfTheArch) {
  EXPECT_EQ(refusal(makeRecord(1024, 64)), ""); // exactly 65536 registers
  EXPECT_EQ(refusal(makeRecord(1025, 16)),
            "kernel 'snug_k_0' of node 'n' (Op) on sm_90: a block of 1025 "
            "threads is over the limit of 1024 per block");
  // 65 registers take 2304 per warp (units of 256): 32 warps need 73728.
  EXPECT_EQ(refusal(makeRecord(1024, 65)),
            "kernel 'snug_k_0' of node 'n' (Op) on sm_90: 65 registers x 1024 "
            "threads need 73728 registers (allocated per warp in units of "
            "256), over the limit of 65536 per block");
  // 255 registers: 8160 -> 8192 per warp, 8 warps at most.
  EXPECT_EQ(refusal(makeRecord(256, 255)), "");
  EXPECT_NE(refusal(makeRecord(257, 255)), "");

  // sm_90's cubins count the 1 KiB the system reserves; sm_80's do not.
  KernelRecord shared = makeRecord(128, 32);
  shared.resources.sharedBytes = 49 * 1024;
  EXPECT_EQ(refusal(shared), "");
  shared.dynamicSharedBytes = 1;
  EXPECT_EQ(refusal(shared),
            "kernel 'snug_k_0' of node 'n' (Op) on sm_90: 50177 bytes of "
            "shared memory (50176 static with 1024 reserved, 1 dynamic) are "
            "over the limit of 50176 per block without the cuFuncSetAttribute "
            "opt-in");
  shared.arch = 80;
  shared.resources.sharedBytes = 48 * 1024;
  shared.dynamicSharedBytes = 0;
  EXPECT_EQ(refusal(shared), "");
  shared.dynamicSharedBytes = 1;
  EXPECT_EQ(refusal(shared),
            "kernel 'snug_k_0' of node 'n' (Op) on sm_80: 49153 bytes of "
            "shared memory (49152 static, 1 dynamic) are over the limit of "
            "49152 per block without the cuFuncSetAttribute opt-in");

  KernelRecord grid = makeRecord(128, 32);
  grid.grid[0] = 0x7fffffffu;
  grid.grid[1] = grid.grid[2] = 65535;
  EXPECT_EQ(refusal(grid), "");
  grid.grid[0] = 0x80000000u;
  EXPECT_EQ(refusal(grid), "kernel 'snug_k_0' of node 'n' (Op) on sm_90: "
                           "gridDim.x = 2147483648 is over the limit of "
                           "2147483647");
  grid.grid[0] = 1;
  grid.grid[2] = 65536;
  EXPECT_NE(refusal(grid).find("gridDim.z = 65536"), std::string::npos);

  KernelRecord block = makeRecord(1, 32);
  block.block[0] = 4;
  block.block[2] = 65;
  EXPECT_NE(refusal(block).find("blockDim.z = 65 is over the limit of 64"),
            std::string::npos);
}

TEST(KernelReportTest, LocalMemoryOfTheWorstKernelOnTheLargestGpu) {
  EXPECT_FALSE(computeLocalMemoryReservation({}).known);
  KernelRecord none = makeRecord(256, 32);
  LocalMemoryReservation zero = computeLocalMemoryReservation({none});
  EXPECT_TRUE(zero.known);
  EXPECT_EQ(zero.bytes, 0u);

  KernelRecord small = makeRecord(256, 32), large = makeRecord(256, 32);
  small.name = "small";
  small.resources.localBytes = 16;
  large.name = "large";
  large.resources.localBytes = 520;
  large.arch = 80;
  LocalMemoryReservation worst =
      computeLocalMemoryReservation({small, large});
  // roundUp(520 + 512, 256) = 1280 B x 2048 threads x 108 SMs (A100).
  EXPECT_EQ(worst.kernel, "large");
  EXPECT_EQ(worst.bytesPerThread, 1280u);
  EXPECT_EQ(worst.bytes, 1280ull * 2048 * 108);
  // sm_90 alone: 768 B x 2048 x 132 (H100 SXM).
  LocalMemoryReservation h100 = computeLocalMemoryReservation({small});
  EXPECT_EQ(h100.bytes, 768ull * 2048 * 132);
  EXPECT_EQ(h100.sms, 132u);
}

TEST(KernelReportTest, LimitsTableFallsBackWithinAFamily) {
  EXPECT_EQ(getDeviceLimits(90).largestGpuSms, 132u);
  EXPECT_EQ(getDeviceLimits(86).threadsPerSm, 1536u);
  EXPECT_EQ(getDeviceLimits(88).arch, 87u);
  EXPECT_EQ(getDeviceLimits(103).arch, 100u);
  EXPECT_EQ(getDeviceLimits(121).arch, 120u);
}
