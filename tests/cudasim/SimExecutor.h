//===- SimExecutor.h - Running a device plan on the host --------*- C++ -*-===//
//
// The host side of the CUDA simulator: device memory (the device arena and
// a copy of the weights in host memory, fenced by guard pages and canaries),
// the kernels (a shared object built by compile_kernels.sh from the emitted
// source, with CudaSim.h's block scheduler inside), and the step loop:
// Launch runs SYM_sim over the grid through snug_cudasim_launch, Gemm fills
// its cuBLAS workspace with NaNs (as a split-K cuBLAS kernel may scribble
// over all of it, so a tensor the plan laid over a live workspace comes out
// wrong) and runs a reference column-major strided-batched GEMM with
// cuBLAS's semantics, Copy is a memmove. Used by snug-cudasim and the simulator's tests. Runtime
// headers only (no LLVM).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_CUDASIM_SIMEXECUTOR_H
#define SNUG_TESTS_CUDASIM_SIMEXECUTOR_H

#include "core/DevicePlan.h"
#include "tests/cudasim/KernelRunner.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace snug {
namespace cudasim {

/// Host memory standing in for device memory: one mapping per region, with
/// a PROT_NONE page before and after, the region placed (256-byte aligned,
/// like cudaMalloc) so its end is within 256 bytes of the trailing guard
/// page; the slack around it holds a canary that checkCanaries verifies.
class DeviceMemory {
public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;
  ~DeviceMemory();

  /// Maps an arena of `arenaBytes` filled with `poison` (0xFF: every float
  /// a NaN) and a read-only copy of `weights`.
  bool allocate(uint64_t arenaBytes, uint8_t poison, const uint8_t *weights,
                uint64_t weightsBytes, std::string &error);

  uint8_t *arena = nullptr;
  uint64_t arenaBytes = 0;
  const uint8_t *weights = nullptr;
  uint64_t weightsBytes = 0;
  /// The pinned host region (offload copies); plain host memory here.
  std::vector<uint8_t> pinned;

  /// Copies `bytes` at arena offset `arenaOffset` over the weights at
  /// `weightOffset`: a persistent state's write-back after a step (the
  /// CUDA executor's device-to-device copy), the weights read-only again
  /// after it.
  void writeBackState(uint64_t weightOffset, uint64_t arenaOffset,
                      uint64_t bytes);
  /// The address of `arg` (arena, weights or pinned host + offset).
  uint8_t *resolve(const bundle::DeviceArg &arg) const;
  /// "" when the canaries around the arena are intact, else where the first
  /// hit lies ("past the end of the device arena (1000 bytes), at byte
  /// 1002").
  std::string checkCanaries() const;
  /// Where `address` lies, for a crash report: "N bytes past the end of the
  /// device arena", "in the weights (read-only)", or "".
  std::string describeAddress(uintptr_t address) const;

private:
  struct Region {
    uint8_t *map = nullptr; // the whole mapping, guards included
    size_t mapBytes = 0;
    uint8_t *data = nullptr; // first byte after the leading guard
    size_t dataBytes = 0;    // up to the trailing guard
    uint8_t *base = nullptr;
    uint64_t bytes = 0;
  };
  bool mapRegion(Region &region, uint64_t bytes, std::string &error);
  Region arenaRegion, weightsRegion;
};

struct RunOptions {
  /// SNUG_CUDASIM_REVERSE (1) or SNUG_CUDASIM_SHUFFLE (2): the order the
  /// threads of a block run in each round.
  unsigned schedule = 0;
  /// One line per step (kind, kernel, grid, time) to this stream.
  std::FILE *trace = nullptr;
  /// Run only steps [0, stopAfter) (for bisecting a wrong result).
  size_t stopAfter = SIZE_MAX;
};

struct RunStats {
  size_t launches = 0, gemms = 0, copies = 0;
  uint64_t blocks = 0, threads = 0;
  double launchSeconds = 0, gemmSeconds = 0, copySeconds = 0;
};

/// "node 'conv1' (Conv)" for a step's host op, for messages.
using DescribeOp = std::function<std::string(uint32_t op)>;

/// Runs `plan` step by step. Errors name the step, its op and the kernel:
/// a launch that fails (deadlock, divergence, trap), an argument count the
/// plan and the kernel disagree on cannot be detected (the thunk reads what
/// it expects), an overlapping copy or GEMM, a canary hit after a step.
bool runDevicePlan(const bundle::DevicePlan &plan, KernelLibrary &kernels,
                   DeviceMemory &memory, const RunOptions &options,
                   const DescribeOp &describeOp, RunStats &stats,
                   std::string &error);

/// The reference of one cuBLAS strided-batched GEMM (column-major; op(A)
/// m x k, op(B) k x n; C = alpha * op(A) op(B) + beta * C, C not read when
/// beta is 0), accumulating in double; f16 and bf16 through float. False with
/// `error` set on an unsupported dtype, when C overlaps A or B, or when the
/// workspace overlaps A, B or C.
bool referenceGemm(const bundle::DeviceGemm &gemm, const DeviceMemory &memory,
                   std::string &error);

/// Installs SIGSEGV/SIGBUS/SIGFPE/SIGILL handlers (on an alternate stack) that
/// print where the simulator was (step, op, kernel, block, thread, and what
/// the fault address hit) and exit with `exitCode`.
void installCrashHandler(int exitCode);

} // namespace cudasim
} // namespace snug

#endif // SNUG_TESTS_CUDASIM_SIMEXECUTOR_H
