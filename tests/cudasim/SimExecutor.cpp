//===- SimExecutor.cpp - Running a device plan on the host ----------------===//
#include "tests/cudasim/SimExecutor.h"
#include "tests/cudasim/ReferenceGemm.h"

#include "core/BundleFormat.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

namespace snug {
namespace cudasim {

using namespace bundle;

namespace {

constexpr uint8_t kCanary = 0xA5;

size_t pageSize() {
  static size_t page = size_t(sysconf(_SC_PAGESIZE));
  return page;
}

/// What the crash handler reports; set before each step.
struct CrashState {
  const DeviceMemory *memory = nullptr;
  long step = -1;
  char op[256] = {0};
  char kind[96] = {0};
  int exitCode = 3;
};
CrashState crash;

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       since)
      .count();
}

} // namespace

//===----------------------------------------------------------------------===//
// DeviceMemory
//===----------------------------------------------------------------------===//

DeviceMemory::~DeviceMemory() {
  for (Region *region : {&arenaRegion, &weightsRegion})
    if (region->map)
      munmap(region->map, region->mapBytes);
  if (crash.memory == this)
    crash.memory = nullptr;
}

bool DeviceMemory::mapRegion(Region &region, uint64_t bytes,
                             std::string &error) {
  size_t page = pageSize();
  // Room for the bytes, rounded to 256, and a leading slack of up to a page.
  size_t dataBytes = (size_t(bytes) + 256 + page - 1) / page * page;
  size_t mapBytes = dataBytes + 2 * page;
  void *map = mmap(nullptr, mapBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (map == MAP_FAILED) {
    error = "cannot map " + std::to_string(bytes) + " bytes of device memory";
    return false;
  }
  region.map = static_cast<uint8_t *>(map);
  region.mapBytes = mapBytes;
  region.data = region.map + page;
  region.dataBytes = dataBytes;
  mprotect(region.map, page, PROT_NONE);
  mprotect(region.data + dataBytes, page, PROT_NONE);
  uintptr_t end = reinterpret_cast<uintptr_t>(region.data + dataBytes);
  region.base = reinterpret_cast<uint8_t *>((end - bytes) & ~uintptr_t(255));
  region.bytes = bytes;
  std::memset(region.data, kCanary, region.base - region.data);
  std::memset(region.base + bytes, kCanary,
              region.data + dataBytes - (region.base + bytes));
  return true;
}

bool DeviceMemory::allocate(uint64_t arenaSize, uint8_t poison,
                            const uint8_t *weightBytes, uint64_t weightsSize,
                            std::string &error) {
  if (!mapRegion(arenaRegion, arenaSize, error) ||
      !mapRegion(weightsRegion, weightsSize, error))
    return false;
  arena = arenaRegion.base;
  arenaBytes = arenaSize;
  std::memset(arena, poison, arenaSize);
  if (weightsSize)
    std::memcpy(weightsRegion.base, weightBytes, weightsSize);
  // Kernels never write the weights: make a write fault.
  mprotect(weightsRegion.data, weightsRegion.dataBytes, PROT_READ);
  weights = weightsRegion.base;
  weightsBytes = weightsSize;
  crash.memory = this;
  return true;
}

void DeviceMemory::writeBackState(uint64_t weightOffset, uint64_t arenaOffset,
                                  uint64_t bytes) {
  // The one write into the weights: kernels still fault on theirs.
  mprotect(weightsRegion.data, weightsRegion.dataBytes, PROT_READ | PROT_WRITE);
  std::memcpy(weightsRegion.base + weightOffset, arena + arenaOffset, bytes);
  mprotect(weightsRegion.data, weightsRegion.dataBytes, PROT_READ);
}

uint8_t *DeviceMemory::resolve(const DeviceArg &arg) const {
  if (arg.kind == ArgArena)
    return arena + arg.value;
  if (arg.kind == ArgHost)
    return const_cast<uint8_t *>(pinned.data()) + arg.value;
  return const_cast<uint8_t *>(weights) + arg.value;
}

std::string DeviceMemory::checkCanaries() const {
  const Region &r = arenaRegion;
  for (const uint8_t *p = r.data; p < r.base; ++p)
    if (*p != kCanary)
      return "before the start of the device arena, at byte -" +
             std::to_string(r.base - p);
  const uint8_t *end = r.base + r.bytes;
  for (const uint8_t *p = end; p < r.data + r.dataBytes; ++p)
    if (*p != kCanary)
      return "past the end of the device arena (" + std::to_string(r.bytes) +
             " bytes), at byte " + std::to_string(p - r.base);
  return "";
}

std::string DeviceMemory::describeAddress(uintptr_t address) const {
  auto in = [&](const Region &r, const char *name) -> std::string {
    uintptr_t map = reinterpret_cast<uintptr_t>(r.map);
    uintptr_t base = reinterpret_cast<uintptr_t>(r.base);
    if (!r.map || address < map || address >= map + r.mapBytes)
      return "";
    if (address < base)
      return std::to_string(base - address) + " bytes before the start of " +
             name;
    if (address >= base + r.bytes)
      return std::to_string(address - (base + r.bytes)) +
             " bytes past the end of " + name + " (" +
             std::to_string(r.bytes) + " bytes)";
    return "at offset " + std::to_string(address - base) + " of " + name;
  };
  std::string where = in(arenaRegion, "the device arena");
  if (where.empty()) {
    where = in(weightsRegion, "the weights");
    if (!where.empty())
      where += " (read-only: a kernel wrote to the weights?)";
  }
  return where;
}

//===----------------------------------------------------------------------===//
// GEMM
//===----------------------------------------------------------------------===//

namespace {

/// Whether [a, a + aBytes) and [b, b + bBytes) of the same region overlap.
bool overlaps(const DeviceArg &a, uint64_t aBytes, const DeviceArg &b,
              uint64_t bBytes) {
  return a.kind == b.kind && aBytes && bBytes && a.value < b.value + bBytes &&
         b.value < a.value + aBytes;
}

} // namespace

bool referenceGemm(const DeviceGemm &g, const DeviceMemory &memory,
                   std::string &error) {
  uint8_t dtype = g.dtype;
  if (dtype != DTypeF32 && dtype != DTypeF64 && dtype != DTypeF16 &&
      dtype != DTypeBF16) {
    error = std::string("GEMM of dtype ") + dtypeName(dtype) +
            " (cuBLAS takes f32, f64, f16, bf16)";
    return false;
  }
  int64_t m = g.m, n = g.n, k = g.k, batch = g.batch;
  if (m <= 0 || n <= 0 || batch <= 0)
    return true;
  size_t size = dtypeSize(dtype);
  int64_t aRows = g.transA ? k : m, aCols = g.transA ? m : k;
  int64_t bRows = g.transB ? n : k, bCols = g.transB ? k : n;
  uint64_t aBytes = gemmOperandExtent(aRows, aCols, g.lda, g.strideA, batch) * size;
  uint64_t bBytes = gemmOperandExtent(bRows, bCols, g.ldb, g.strideB, batch) * size;
  uint64_t cBytes = gemmOperandExtent(m, n, g.ldc, g.strideC, batch) * size;
  if (overlaps(g.c, cBytes, g.a, aBytes) || overlaps(g.c, cBytes, g.b, bBytes)) {
    error = "GEMM output C overlaps an input (cuBLAS leaves the result "
            "undefined)";
    return false;
  }
  DeviceArg workspace = DeviceArg::arena(g.workspaceOffset);
  uint64_t workspaceBytes = g.workspaceBytes;
  if (overlaps(workspace, workspaceBytes, g.a, aBytes) ||
      overlaps(workspace, workspaceBytes, g.b, bBytes) ||
      overlaps(workspace, workspaceBytes, g.c, cBytes)) {
    error = "the GEMM's cuBLAS workspace overlaps an operand (cuBLAS "
            "writes it during the call)";
    return false;
  }
  if ((g.transA ? g.lda < std::max<int64_t>(k, 1) : g.lda < std::max<int64_t>(m, 1)) ||
      (g.transB ? g.ldb < std::max<int64_t>(n, 1) : g.ldb < std::max<int64_t>(k, 1)) ||
      g.ldc < std::max<int64_t>(m, 1)) {
    error = "GEMM leading dimension too small (cuBLAS rejects it: lda " +
            std::to_string(g.lda) + ", ldb " + std::to_string(g.ldb) +
            ", ldc " + std::to_string(g.ldc) + ")";
    return false;
  }
  if (g.epilogue > GemmEpilogueLast ||
      (g.epilogue != GemmEpilogueNone && dtype == DTypeF64)) {
    error = "GEMM epilogue " + std::to_string(g.epilogue) + " on dtype " +
            dtypeName(dtype) + " (cuBLASLt's epilogues take f32, f16, bf16)";
    return false;
  }
  uint64_t biasBytes =
      gemmEpilogueHasBias(g.epilogue) ? uint64_t(m) * size : 0;
  if (overlaps(g.c, cBytes, g.bias, biasBytes) ||
      overlaps(workspace, workspaceBytes, g.bias, biasBytes)) {
    error = "the GEMM's bias overlaps its result or its workspace "
            "(cuBLASLt reads it while it writes them)";
    return false;
  }
  computeGemm(g, memory.resolve(g.a), memory.resolve(g.b),
              memory.resolve(g.c), biasBytes ? memory.resolve(g.bias) : nullptr);
  return true;
}


//===----------------------------------------------------------------------===//
// The step loop
//===----------------------------------------------------------------------===//

bool runDevicePlan(const DevicePlan &plan, KernelLibrary &kernels,
                   DeviceMemory &memory, const RunOptions &options,
                   const DescribeOp &describeOp, RunStats &stats,
                   std::string &error) {
  std::vector<uint64_t> slots;
  std::vector<void *> argv;
  size_t count = std::min(plan.steps.size(), options.stopAfter);
  for (size_t i = 0; i < count; ++i) {
    const DeviceStep &step = plan.steps[i];
    std::string op = describeOp ? describeOp(step.op)
                                : "op #" + std::to_string(step.op);
    std::string where = "step " + std::to_string(i) + " (" + op + ")";
    crash.step = long(i);
    std::snprintf(crash.op, sizeof crash.op, "%s", op.c_str());
    auto start = std::chrono::steady_clock::now();
    std::string what;
    if (step.kind == StepLaunch) {
      const DeviceLaunch &l = step.launch;
      if (l.kernel >= kernels.symbols.size()) {
        error = where + ": unknown kernel " + std::to_string(l.kernel);
        return false;
      }
      const std::string &symbol = kernels.symbols[l.kernel];
      std::snprintf(crash.kind, sizeof crash.kind, "launch of %s",
                    symbol.c_str());
      if (l.sharedBytes) {
        error = where + ": kernel " + symbol + " asks for " +
                std::to_string(l.sharedBytes) +
                " bytes of dynamic shared memory; the kernel rules allow "
                "static __shared__ only";
        return false;
      }
      slots.assign(l.args.size(), 0);
      argv.assign(l.args.size(), nullptr);
      for (size_t a = 0; a < l.args.size(); ++a) {
        const DeviceArg &arg = l.args[a];
        if (arg.isPointer()) {
          uint8_t *pointer = memory.resolve(arg);
          std::memcpy(&slots[a], &pointer, sizeof pointer);
        } else {
          slots[a] = arg.value; // i32, f32: the low bytes (little-endian)
        }
        argv[a] = &slots[a];
      }
      if (!kernels.launch(l.kernel, argv.data(), l.grid, l.block,
                          options.schedule, error)) {
        error = where + ": " + error;
        return false;
      }
      uint64_t blocks = uint64_t(l.grid[0]) * l.grid[1] * l.grid[2];
      stats.blocks += blocks;
      stats.threads += blocks * l.block[0] * l.block[1] * l.block[2];
      ++stats.launches;
      double s = seconds(start);
      stats.launchSeconds += s;
      if (options.trace)
        std::fprintf(options.trace,
                     "step %zu %s: launch %s grid(%u,%u,%u) block(%u,%u,%u): "
                     "%.3f ms\n",
                     i, op.c_str(), symbol.c_str(), l.grid[0], l.grid[1],
                     l.grid[2], l.block[0], l.block[1], l.block[2], s * 1e3);
      what = "kernel " + symbol;
    } else if (step.kind == StepGemm) {
      const DeviceGemm &g = step.gemm;
      std::snprintf(crash.kind, sizeof crash.kind, "GEMM");
      if (g.workspaceBytes) {
        if (g.workspaceOffset > memory.arenaBytes ||
            g.workspaceBytes > memory.arenaBytes - g.workspaceOffset ||
            g.workspaceOffset % 256) {
          error = where + ": cuBLAS workspace of " +
                  std::to_string(g.workspaceBytes) + " bytes at offset " +
                  std::to_string(g.workspaceOffset) +
                  " is not a 256-byte aligned range of the device arena (" +
                  std::to_string(memory.arenaBytes) + " bytes)";
          return false;
        }
        // cuBLAS may write all of its workspace (split-K partial sums): so
        // does the simulator, with NaNs, so that a tensor the plan wrongly
        // laid over it comes out wrong.
        std::memset(memory.arena + g.workspaceOffset, 0xFF, g.workspaceBytes);
      }
      if (!referenceGemm(g, memory, error)) {
        error = where + ": " + error;
        return false;
      }
      ++stats.gemms;
      double s = seconds(start);
      stats.gemmSeconds += s;
      if (options.trace)
        std::fprintf(options.trace,
                     "step %zu %s: gemm %s m %d n %d k %d batch %d%s%s%s%s: "
                     "%.3f ms\n",
                     i, op.c_str(), dtypeName(g.dtype), g.m, g.n, g.k,
                     g.batch, g.transA ? " transA" : "",
                     g.transB ? " transB" : "",
                     g.epilogue ? " epilogue " : "",
                     g.epilogue ? gemmEpilogueName(g.epilogue) : "", s * 1e3);
      what = "the GEMM";
    } else if (step.kind == StepCopy) {
      const DeviceCopy &c = step.copy;
      std::snprintf(crash.kind, sizeof crash.kind, "copy");
      if (overlaps(c.dst, c.bytes, c.src, c.bytes) &&
          c.dst.value != c.src.value) {
        error = where + ": copy of " + std::to_string(c.bytes) +
                " bytes between overlapping ranges (cudaMemcpyAsync leaves "
                "the result undefined)";
        return false;
      }
      std::memmove(memory.resolve(c.dst), memory.resolve(c.src), c.bytes);
      ++stats.copies;
      double s = seconds(start);
      stats.copySeconds += s;
      if (options.trace)
        std::fprintf(options.trace, "step %zu %s: copy %llu bytes: %.3f ms\n",
                     i, op.c_str(), (unsigned long long)c.bytes, s * 1e3);
      what = "the copy";
    } else if (step.kind == StepBranch) {
      // The If not taken: its steps are skipped, as the CUDA executor does.
      const DeviceBranch &b = step.branch;
      bool condition = *memory.resolve(b.condition) != 0;
      if (options.trace)
        std::fprintf(options.trace, "step %zu %s: branch on %s: %s %u steps\n",
                     i, op.c_str(), condition ? "true" : "false",
                     condition == (b.when != 0) ? "skip" : "run", b.count);
      if (condition == (b.when != 0))
        i += b.count;
      continue;
    } else {
      error = where + ": unknown step kind " + std::to_string(step.kind);
      return false;
    }
    std::string hit = memory.checkCanaries();
    if (!hit.empty()) {
      error = where + ": " + what + " wrote " + hit;
      return false;
    }
  }
  crash.step = -1;
  return true;
}

//===----------------------------------------------------------------------===//
// Crash reports
//===----------------------------------------------------------------------===//

namespace {

/// Whether `address` lies just below the interrupted stack pointer (a fiber
/// stack overflowing into its guard page).
bool nearStackPointer(uintptr_t address, void *context) {
#if defined(__x86_64__) && defined(REG_RSP)
  auto *uc = static_cast<ucontext_t *>(context);
  uintptr_t sp = uintptr_t(uc->uc_mcontext.gregs[REG_RSP]);
  return address + (64u << 10) >= sp && address <= sp + 4096;
#else
  (void)address, (void)context;
  return false;
#endif
}

void onCrash(int signal, siginfo_t *info, void *context) {
  char where[512] = {0};
  if (const KernelLibrary *kernels = KernelLibrary::getActive())
    kernels->where(where, sizeof where);
  const char *name = signal == SIGSEGV  ? "SIGSEGV (bad memory access)"
                     : signal == SIGBUS ? "SIGBUS"
                     : signal == SIGFPE ? "SIGFPE (integer division by zero?)"
                                        : "SIGILL (__builtin_trap?)";
  std::fprintf(stderr, "error: %s", name);
  if (crash.step >= 0)
    std::fprintf(stderr, " in step %ld (%s), %s", crash.step, crash.op,
                 crash.kind);
  if (where[0])
    std::fprintf(stderr, ", %s", where);
  if (signal == SIGSEGV || signal == SIGBUS) {
    std::string hit = crash.memory
                          ? crash.memory->describeAddress(
                                reinterpret_cast<uintptr_t>(info->si_addr))
                          : "";
    const char *what = ": ";
    if (hit.empty())
      what = nearStackPointer(reinterpret_cast<uintptr_t>(info->si_addr),
                              context)
                 ? " (a fiber stack overflow: the kernel's locals need more; "
                   "raise SNUG_CUDASIM_STACK_KB, 256 by default)"
                 : " (outside device memory: a wild pointer)";
    std::fprintf(stderr, "; address %p%s%s", info->si_addr, what,
                 hit.c_str());
  }
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  _exit(crash.exitCode);
}

} // namespace

void installCrashHandler(int exitCode) {
  crash.exitCode = exitCode;
  static std::vector<char> altStack(1 << 16);
  stack_t stack;
  stack.ss_sp = altStack.data();
  stack.ss_size = altStack.size();
  stack.ss_flags = 0;
  sigaltstack(&stack, nullptr);
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = onCrash;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    sigaction(signal, &action, nullptr);
}

} // namespace cudasim
} // namespace snug
