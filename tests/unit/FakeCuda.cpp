//===- FakeCuda.cpp - A CUDA driver and cuBLAS that run on the CPU --------===//
//
// Built as libcuda.so.1 (with libcublas.so.12 and .13 and libcublasLt.so.12
// and .13 links to the same file) in a directory that the tests put first on
// LD_LIBRARY_PATH, so the runtime's lazy loader finds it instead of a real
// driver. It implements what the CUDA executor calls, with host memory as
// "device" memory, and is as strict as the real driver where a plan or the
// executor can be wrong:
//   - modules: a cubin loads only on its own major arch with a minor no
//     newer than the device's, PTX only for a .target and .version the
//     device and driver take (FakeKernelImage.h reads both); the compute
//     capability is 9.0, or SNUG_FAKE_CUDA_CC ("8.6") or
//     fakeCudaSetComputeCapability; the driver version 13.0, or
//     SNUG_FAKE_CUDA_DRIVER_VERSION (12080) or fakeCudaSetDriverVersion;
//   - launches: grid and block against CUDA's per-dim limits, threads
//     against the kernel's own limit (registers, .maxntid), shared memory
//     above 48 KiB only after cuFuncSetAttribute's opt-in, parameters read
//     with the sizes the image gives (cuFuncGetParamInfo answers from it);
//   - streams run asynchronously: work is queued and runs at the next
//     synchronization, where a kernel fault is reported, sticky (every
//     later call fails with it until the primary context is released), not
//     at the launch (CUDA_LAUNCH_BLOCKING=1 runs each launch at once and
//     returns its fault, as the real driver does);
//   - stream capture: a synchronous call (cuStreamSynchronize,
//     cuCtxSynchronize, cuEventSynchronize, cuMemAlloc, cuMemFree, a module
//     load) while a stream is captured fails with
//     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture;
//   - cuBLAS: a workspace must be 256-byte aligned, and a GEMM needs one of
//     at least kFakeMinCublasWorkspace bytes (SNUG_FAKE_CUDA_MIN_WORKSPACE
//     overrides it); cuBLASLt's heuristic can be made to find nothing
//     (fakeCudaLtNoAlgorithm, SNUG_FAKE_CUDA_LT_NO_ALGORITHM=1).
// Kernels: the emitted ones run through the simulator's kernel library
// (tests/cudasim/KernelRunner.h) loaded from SNUG_FAKE_CUDA_KERNELS (a
// compile_kernels.sh .so of the bundle's .cu); a few named host kernels
// (snug_add, snug_leaky, snug_check_labels, snug_fail that faults) serve the
// hand-written plans of FakeCudaTest. GEMMs compute with the simulator's
// reference (tests/cudasim/ReferenceGemm.h). Everything is counted
// (fakeCudaStats) so tests can check that a run allocates nothing, graphs
// are used as planned and destruction frees all.
//
//===----------------------------------------------------------------------===//
#include "FakeCuda.h"
#include "FakeKernelImage.h"

#include "tests/cudasim/KernelRunner.h"
#include "tests/cudasim/ReferenceGemm.h"

#include "core/BundleFormat.h"

#include <cuda.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {
/// What a stream op does when it runs: CUDA_SUCCESS, or the fault it makes
/// sticky.
using Op = std::function<CUresult()>;
} // namespace

// The driver's opaque handle types, defined here.
struct CUctx_st {
  int device = 0;
};
struct CUstream_st {
  bool capturing = false;
  bool invalidated = false; // a prohibited call during the capture
  std::vector<Op> captured;
};
struct CUfunc_st {
  std::string name;
  fakecuda::KernelInfo info;
  int maxDynamicShared = 48 << 10; // cuFuncSetAttribute's opt-in
};
struct CUmod_st {
  fakecuda::KernelImage image;
  std::map<std::string, CUfunc_st> functions; // handed out, by name
};
struct CUgraph_st {
  std::vector<Op> ops;
};
struct CUgraphExec_st {
  std::vector<Op> ops;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at;
};

namespace {

constexpr uint64_t kTotal = uint64_t(1) << 30;
constexpr uint32_t kStaticSharedLimit = 48 << 10;

FakeCudaStats stats;
std::set<void *> allocations;
uint64_t allocatedBytes = 0;
CUctx_st primary;
thread_local std::vector<CUcontext> contextStack;
/// Stream work not yet run, in submission order over all streams (one
/// order is a valid schedule of independent streams).
std::vector<Op> pending;
/// The primary context's sticky error (a kernel fault).
CUresult sticky = CUDA_SUCCESS;
/// Streams being captured (cuStreamBeginCapture to cuStreamEndCapture).
std::set<CUstream> capturing;
int ccMajor = 0, ccMinor = 0; // 0: not chosen yet

void chooseComputeCapability() {
  if (ccMajor)
    return;
  ccMajor = 9, ccMinor = 0;
  if (const char *cc = std::getenv("SNUG_FAKE_CUDA_CC")) {
    int major = 0, minor = 0;
    if (std::sscanf(cc, "%d.%d", &major, &minor) == 2 && major > 0)
      ccMajor = major, ccMinor = minor;
  }
}
int driverVersionOverride = 0; // fakeCudaSetDriverVersion's, 0: none
int driverVersion() {
  if (driverVersionOverride)
    return driverVersionOverride;
  const char *version = std::getenv("SNUG_FAKE_CUDA_DRIVER_VERSION");
  return version ? std::atoi(version) : 13000;
}
/// The newest PTX ISA the driver's JIT takes (X.Y as X * 10 + Y): 8.0 for
/// CUDA 12.0, then one minor per release up to 8.5 (12.5, 12.6), 8.7
/// (12.8), 8.8 (12.9), 9.0 (13.0).
unsigned maxPtxVersion() {
  int version = driverVersion();
  int major = version / 1000, minor = version % 1000 / 10;
  if (major >= 13)
    return 90;
  if (major < 12)
    return 78;
  static const unsigned isa[] = {80, 81, 82, 83, 84, 85, 85, 86, 87, 88};
  return isa[std::min(minor, 9)];
}
/// The most shared memory a block may opt into: 163 KiB (8.0), 99 KiB
/// (8.6, 8.9), 227 KiB (9.0).
int sharedOptInLimit() {
  if (ccMajor == 8)
    return ccMinor == 0 ? 166912 : 101376;
  return 232448;
}
size_t minimumWorkspace() {
  const char *bytes = std::getenv("SNUG_FAKE_CUDA_MIN_WORKSPACE");
  return bytes ? size_t(std::strtoull(bytes, nullptr, 10))
               : kFakeMinCublasWorkspace;
}

/// Runs the queued work; the first fault becomes sticky and drops the rest.
CUresult flush() {
  std::vector<Op> work;
  work.swap(pending);
  for (Op &op : work) {
    if (sticky)
      break;
    sticky = op();
  }
  return sticky;
}

/// A call that synchronizes (or allocates) and so is prohibited while a
/// stream is captured: invalidates every capture and says so.
bool refusedDuringCapture() {
  if (capturing.empty())
    return false;
  for (CUstream stream : capturing)
    stream->invalidated = true;
  ++stats.captureRefusals;
  return true;
}

/// Queues `op` on `stream`, or records it when the stream is captured.
/// Returns the sticky error, if any.
CUresult submitOp(CUstream stream, Op op) {
  if (sticky)
    return sticky;
  if (stream && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD &&
      stream->capturing) {
    stream->captured.push_back(std::move(op));
    return CUDA_SUCCESS;
  }
  pending.push_back(std::move(op));
  return CUDA_SUCCESS;
}
CUresult submit(CUstream stream, std::function<void()> op) {
  return submitOp(stream, [op = std::move(op)] {
    op();
    return CUDA_SUCCESS;
  });
}

template <typename T> T param(void **params, int i) {
  T value;
  std::memcpy(&value, params[i], sizeof value);
  return value;
}

// The host "kernels", by symbol.
void kernelAdd(void **p) { // (const float *a, const float *b, float *c, int n)
  auto a = param<const float *>(p, 0), b = param<const float *>(p, 1);
  auto c = param<float *>(p, 2);
  for (int i = 0, n = param<int>(p, 3); i < n; ++i)
    c[i] = a[i] + b[i];
}
void kernelLeaky(void **p) { // (const float *x, float *y, int64 n, float alpha)
  auto x = param<const float *>(p, 0);
  auto y = param<float *>(p, 1);
  auto alpha = param<float>(p, 3);
  for (long long i = 0, n = param<long long>(p, 2); i < n; ++i)
    y[i] = x[i] < 0 ? alpha * x[i] : x[i];
}
// (const int64 *labels, int64 *out, uint64 *record, int64 n, int64 classes,
//  int64 op + 1): snug.check_labels's semantics, its constants as
// arguments; the first bad label goes into the check record unless one is
// there.
void kernelCheckLabels(void **p) {
  auto labels = param<const int64_t *>(p, 0);
  auto out = param<int64_t *>(p, 1);
  auto record = param<uint64_t *>(p, 2);
  long long n = param<long long>(p, 3), classes = param<long long>(p, 4);
  for (long long i = 0; i < n; ++i) {
    out[i] = labels[i];
    if ((labels[i] < 0 || labels[i] >= classes) && record[0] == 0) {
      record[1] = uint64_t(i);
      record[2] = uint64_t(labels[i]);
      record[0] = param<uint64_t>(p, 5);
    }
  }
}
const std::map<std::string, void (*)(void **)> &hostKernels() {
  static const std::map<std::string, void (*)(void **)> kernels = {
      {"snug_add", kernelAdd},
      {"snug_leaky", kernelLeaky},
      {"snug_heavy", kernelLeaky},
      {"snug_check_labels", kernelCheckLabels}};
  return kernels;
}

/// The emitted kernels, built as host C++ (SNUG_FAKE_CUDA_KERNELS), or null.
snug::cudasim::KernelLibrary *simKernels() {
  static std::unique_ptr<snug::cudasim::KernelLibrary> library = [] {
    std::unique_ptr<snug::cudasim::KernelLibrary> opened;
    const char *path = std::getenv("SNUG_FAKE_CUDA_KERNELS");
    if (!path || !*path)
      return opened;
    opened = std::make_unique<snug::cudasim::KernelLibrary>();
    std::string error;
    if (!opened->open(path, error)) {
      std::fprintf(stderr, "fake CUDA driver: %s\n", error.c_str());
      opened.reset();
    }
    return opened;
  }();
  return library.get();
}

CUresult getErrorName(CUresult error, const char **name) {
  switch (error) {
#define FAKE_CUDA_NAME(code)                                                   \
  case code:                                                                   \
    *name = #code;                                                             \
    return CUDA_SUCCESS;
    FAKE_CUDA_NAME(CUDA_SUCCESS)
    FAKE_CUDA_NAME(CUDA_ERROR_INVALID_VALUE)
    FAKE_CUDA_NAME(CUDA_ERROR_OUT_OF_MEMORY)
    FAKE_CUDA_NAME(CUDA_ERROR_NOT_FOUND)
    FAKE_CUDA_NAME(CUDA_ERROR_LAUNCH_FAILED)
    FAKE_CUDA_NAME(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
    FAKE_CUDA_NAME(CUDA_ERROR_INVALID_IMAGE)
    FAKE_CUDA_NAME(CUDA_ERROR_NO_BINARY_FOR_GPU)
    FAKE_CUDA_NAME(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    FAKE_CUDA_NAME(CUDA_ERROR_NOT_SUPPORTED)
    FAKE_CUDA_NAME(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
    FAKE_CUDA_NAME(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
#undef FAKE_CUDA_NAME
  default:
    *name = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
}
/// The real driver's texts for the errors the fake gives.
CUresult getErrorString(CUresult error, const char **text) {
  switch (error) {
  case CUDA_ERROR_LAUNCH_FAILED:
    *text = "unspecified launch failure";
    break;
  case CUDA_ERROR_INVALID_VALUE:
    *text = "invalid argument";
    break;
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    *text = "too many resources requested for launch";
    break;
  case CUDA_ERROR_INVALID_IMAGE:
    *text = "device kernel image is invalid";
    break;
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
    *text = "no kernel image is available for execution on the device";
    break;
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    *text = "the provided PTX was compiled with an unsupported toolchain.";
    break;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    *text = "operation not permitted when stream is capturing";
    break;
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    *text = "operation failed due to a previous error during capture";
    break;
  default:
    *text = "fake error";
  }
  return CUDA_SUCCESS;
}
CUresult init(unsigned) {
  chooseComputeCapability();
  return CUDA_SUCCESS;
}
CUresult deviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult deviceGet(CUdevice *device, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult deviceGetName(char *name, int length, CUdevice) {
  std::strncpy(name, "Fake GPU", size_t(length));
  return CUDA_SUCCESS;
}
CUresult deviceGetAttribute(int *value, CUdevice_attribute attribute,
                            CUdevice) {
  chooseComputeCapability();
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = ccMajor;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = ccMinor;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *value = sharedOptInLimit();
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = 1024;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult primaryRetain(CUcontext *context, CUdevice) {
  ++stats.primaryRetains;
  *context = &primary;
  return CUDA_SUCCESS;
}
CUresult primaryRelease(CUdevice) {
  // The last release destroys the primary context, its sticky error and
  // any work it still had with it.
  if (--stats.primaryRetains == 0) {
    sticky = CUDA_SUCCESS;
    pending.clear();
  }
  return CUDA_SUCCESS;
}
CUresult ctxGetCurrent(CUcontext *context) {
  *context = contextStack.empty() ? nullptr : contextStack.back();
  return CUDA_SUCCESS;
}
CUresult ctxGetDevice(CUdevice *device) {
  if (contextStack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult ctxPush(CUcontext context) {
  contextStack.push_back(context);
  return CUDA_SUCCESS;
}
CUresult ctxPop(CUcontext *context) {
  if (contextStack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  *context = contextStack.back();
  contextStack.pop_back();
  return CUDA_SUCCESS;
}
bool current() { return !contextStack.empty() && contextStack.back(); }
CUresult ctxSynchronize() {
  if (refusedDuringCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return flush();
}

CUresult memGetInfo(size_t *free, size_t *total) {
  if (!current())
    return CUDA_ERROR_INVALID_CONTEXT;
  *total = kTotal;
  *free = kTotal - allocatedBytes - stats.modules * kFakeModuleBytes -
          stats.cublasHandles * kFakeCublasBytes;
  return CUDA_SUCCESS;
}
CUresult memAlloc(CUdeviceptr *pointer, size_t bytes) {
  if (!current())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (refusedDuringCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (sticky)
    return sticky;
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (bytes > kTotal - allocatedBytes)
    return CUDA_ERROR_OUT_OF_MEMORY;
  // 256-byte aligned, as cuMemAlloc guarantees.
  void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!memory)
    return CUDA_ERROR_OUT_OF_MEMORY;
  allocations.insert(memory);
  allocatedBytes += bytes;
  stats.allocBytes[memory] = bytes;
  ++stats.allocCalls;
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  return CUDA_SUCCESS;
}
CUresult memFree(CUdeviceptr pointer) {
  if (refusedDuringCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  // cuMemFree waits for the work that may use the memory.
  (void)flush();
  void *memory = reinterpret_cast<void *>(pointer);
  if (!allocations.erase(memory))
    return CUDA_ERROR_INVALID_VALUE;
  allocatedBytes -= stats.allocBytes[memory];
  stats.allocBytes.erase(memory);
  std::free(memory);
  return CUDA_SUCCESS;
}
/// Pinned host memory: plain host memory here, tracked apart from the
/// device allocations.
CUresult memHostAlloc(void **pointer, size_t bytes, unsigned) {
  if (!current())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (refusedDuringCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  *pointer = std::malloc(bytes);
  if (!*pointer)
    return CUDA_ERROR_OUT_OF_MEMORY;
  stats.pinnedBytes[*pointer] = bytes;
  return CUDA_SUCCESS;
}
CUresult memFreeHost(void *pointer) {
  (void)flush();
  if (!stats.pinnedBytes.erase(pointer))
    return CUDA_ERROR_INVALID_VALUE;
  std::free(pointer);
  return CUDA_SUCCESS;
}
CUresult copyHtoD(CUdeviceptr to, const void *from, size_t bytes,
                  CUstream stream) {
  ++stats.hostToDevice;
  return submit(stream,
                [=] { std::memcpy(reinterpret_cast<void *>(to), from, bytes); });
}
CUresult copyDtoH(void *to, CUdeviceptr from, size_t bytes, CUstream stream) {
  ++stats.deviceToHost;
  return submit(stream, [=] {
    std::memcpy(to, reinterpret_cast<const void *>(from), bytes);
  });
}
CUresult copyDtoD(CUdeviceptr to, CUdeviceptr from, size_t bytes,
                  CUstream stream) {
  ++stats.deviceToDevice;
  return submit(stream, [=] {
    std::memmove(reinterpret_cast<void *>(to),
                 reinterpret_cast<const void *>(from), bytes);
  });
}
CUresult moduleLoad(CUmodule *module, const void *image, unsigned,
                    CUjit_option *, void **) {
  if (refusedDuringCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  chooseComputeCapability();
  auto loaded = std::make_unique<CUmod_st>();
  std::string error;
  if (!fakecuda::parseKernelImage(image, loaded->image, error))
    return CUDA_ERROR_INVALID_IMAGE;
  const fakecuda::KernelImage &parsed = loaded->image;
  unsigned arch = unsigned(ccMajor * 10 + ccMinor);
  // SASS runs on its own major arch, at the same or a newer minor; PTX is
  // compiled for any device at least its target, by a JIT that knows its
  // ISA version.
  // (A test image with a .target stands for a cubin of that arch.)
  bool cubin = parsed.kind == fakecuda::KernelImage::Cubin ||
               (parsed.kind == fakecuda::KernelImage::Test && parsed.arch);
  if (cubin && (parsed.arch / 10 != arch / 10 || parsed.arch > arch))
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  if (parsed.kind == fakecuda::KernelImage::Ptx) {
    if (parsed.ptxVersion > maxPtxVersion())
      return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    if (parsed.arch > arch)
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  if (cubin)
    ++stats.cubinLoads;
  else if (parsed.kind == fakecuda::KernelImage::Ptx)
    ++stats.ptxLoads;
  *module = loaded.release();
  ++stats.modules;
  return CUDA_SUCCESS;
}
CUresult moduleUnload(CUmodule module) {
  (void)flush();
  delete module;
  --stats.modules;
  return CUDA_SUCCESS;
}
CUresult moduleGetFunction(CUfunction *function, CUmodule module,
                           const char *name) {
  auto found = module->image.kernels.find(name);
  if (found == module->image.kernels.end())
    return CUDA_ERROR_NOT_FOUND;
  CUfunc_st &f = module->functions[name];
  f.name = name;
  f.info = found->second;
  *function = &f;
  return CUDA_SUCCESS;
}
CUresult funcGetAttribute(int *value, CUfunction_attribute attribute,
                          CUfunction function) {
  switch (attribute) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = function->info.maxThreads;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    *value = int(function->info.staticShared);
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_NUM_REGS:
    *value = function->info.registers;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    *value = 0;
    return CUDA_SUCCESS;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
    *value = function->maxDynamicShared;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult funcSetAttribute(CUfunction function, CUfunction_attribute attribute,
                          int value) {
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
    return CUDA_ERROR_INVALID_VALUE;
  if (value < 0 ||
      uint64_t(value) + function->info.staticShared > uint64_t(sharedOptInLimit()))
    return CUDA_ERROR_INVALID_VALUE;
  function->maxDynamicShared = value;
  return CUDA_SUCCESS;
}
CUresult funcGetParamInfo(CUfunction function, size_t index, size_t *offset,
                          size_t *size) {
  const std::vector<uint32_t> &sizes = function->info.paramSizes;
  if (index >= sizes.size())
    return CUDA_ERROR_INVALID_VALUE;
  size_t at = 0;
  for (size_t i = 0; i <= index; ++i) {
    size_t bytes = sizes[i], align = std::min<size_t>(bytes ? bytes : 1, 8);
    at = (at + align - 1) / align * align;
    if (i < index)
      at += bytes;
  }
  if (offset)
    *offset = at;
  if (size)
    *size = sizes[index];
  return CUDA_SUCCESS;
}
CUresult funcLoad(CUfunction) {
  ++stats.functionsLoaded;
  return CUDA_SUCCESS;
}
/// What cuLaunchKernel refuses before anything runs, by the kernel's own
/// limits and CUDA's.
CUresult checkLaunch(const CUfunc_st &f, const unsigned grid[3],
                     const unsigned block[3], unsigned sharedBytes) {
  if (!grid[0] || !grid[1] || !grid[2] || grid[0] > 0x7fffffffu ||
      grid[1] > 65535 || grid[2] > 65535)
    return CUDA_ERROR_INVALID_VALUE;
  if (!block[0] || !block[1] || !block[2] || block[0] > 1024 ||
      block[1] > 1024 || block[2] > 64)
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t threads = uint64_t(block[0]) * block[1] * block[2];
  if (threads > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (threads > uint64_t(f.info.maxThreads))
    return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  if (sharedBytes > uint32_t(f.maxDynamicShared) ||
      (sharedBytes && f.info.staticShared + sharedBytes > kStaticSharedLimit &&
       f.maxDynamicShared == int(kStaticSharedLimit)))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
CUresult launchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                      unsigned bx, unsigned by, unsigned bz,
                      unsigned sharedBytes, CUstream stream, void **params,
                      void **extra) {
  if (sticky)
    return sticky;
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  if (CUresult r = checkLaunch(*f, grid, block, sharedBytes)) {
    ++stats.launchRefusals;
    return r;
  }
  const std::vector<uint32_t> &sizes = f->info.paramSizes;
  if (!sizes.empty() && !params && !extra)
    return CUDA_ERROR_INVALID_VALUE;
  // The parameters are copied at launch (and at capture), as CUDA does:
  // as many as the kernel has, each of its size (in 8-byte aligned slots).
  std::vector<std::vector<uint64_t>> values(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!params[i])
      return CUDA_ERROR_INVALID_VALUE;
    values[i].assign((sizes[i] + 7) / 8 + 1, 0);
    std::memcpy(values[i].data(), params[i], sizes[i]);
  }
  Op run;
  std::string name = f->name;
  auto host = hostKernels().find(name);
  if (name == "snug_fail") {
    // A kernel that faults: reported at the next synchronization.
    run = [] { return CUDA_ERROR_LAUNCH_FAILED; };
  } else if (host != hostKernels().end()) {
    auto kernel = host->second;
    run = [kernel, values]() mutable {
      std::vector<void *> pointers;
      for (std::vector<uint64_t> &value : values)
        pointers.push_back(value.data());
      kernel(pointers.data());
      return CUDA_SUCCESS;
    };
  } else {
    snug::cudasim::KernelLibrary *library = simKernels();
    auto thunk = library ? library->find(name) : nullptr;
    if (!thunk) {
      std::fprintf(stderr,
                   "fake CUDA driver: no host code for kernel '%s' (set "
                   "SNUG_FAKE_CUDA_KERNELS to the bundle's kernels built by "
                   "tests/cudasim/compile_kernels.sh)\n",
                   name.c_str());
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    std::array<uint32_t, 3> g = {gx, gy, gz}, b = {bx, by, bz};
    run = [library, thunk, name, values, g, b]() mutable {
      std::vector<void *> pointers;
      for (std::vector<uint64_t> &value : values)
        pointers.push_back(value.data());
      std::string error;
      if (library->run(thunk, name.c_str(), pointers.data(), g.data(),
                       b.data(), 0, error))
        return CUDA_SUCCESS;
      std::fprintf(stderr, "fake CUDA driver: kernel fault: %s\n",
                   error.c_str());
      return CUDA_ERROR_LAUNCH_FAILED;
    };
  }
  bool captured = stream && stream != CU_STREAM_LEGACY &&
                  stream != CU_STREAM_PER_THREAD && stream->capturing;
  if (!captured)
    ++stats.directLaunches;
  if (CUresult r = submitOp(stream, std::move(run)))
    return r;
  // CUDA_LAUNCH_BLOCKING=1: each launch runs before cuLaunchKernel returns,
  // which then reports its fault.
  const char *blocking = std::getenv("CUDA_LAUNCH_BLOCKING");
  if (!captured && blocking && !std::strcmp(blocking, "1"))
    return flush();
  return CUDA_SUCCESS;
}
CUresult streamCreate(CUstream *stream, unsigned) {
  *stream = new CUstream_st;
  ++stats.streams;
  return CUDA_SUCCESS;
}
CUresult streamDestroy(CUstream stream) {
  capturing.erase(stream);
  delete stream;
  --stats.streams;
  return CUDA_SUCCESS;
}
CUresult streamSynchronize(CUstream) {
  if (refusedDuringCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return flush();
}
CUresult beginCapture(CUstream stream, CUstreamCaptureMode mode) {
  if (!stream || stream == CU_STREAM_LEGACY || stream->capturing)
    return CUDA_ERROR_INVALID_VALUE;
  if (sticky)
    return sticky;
  stream->capturing = true;
  stream->invalidated = false;
  stream->captured.clear();
  // A relaxed capture prohibits nothing.
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    capturing.insert(stream);
  return CUDA_SUCCESS;
}
CUresult endCapture(CUstream stream, CUgraph *graph) {
  if (!stream->capturing)
    return CUDA_ERROR_INVALID_VALUE;
  stream->capturing = false;
  capturing.erase(stream);
  if (stream->invalidated) {
    stream->captured.clear();
    *graph = nullptr;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *graph = new CUgraph_st{std::move(stream->captured)};
  ++stats.graphs;
  return CUDA_SUCCESS;
}
CUresult graphInstantiate(CUgraphExec *exec, CUgraph graph,
                          unsigned long long) {
  *exec = new CUgraphExec_st{graph->ops};
  ++stats.graphExecs;
  ++stats.instantiations;
  return CUDA_SUCCESS;
}
CUresult graphLaunch(CUgraphExec exec, CUstream stream) {
  ++stats.graphLaunches;
  for (Op &op : exec->ops)
    if (CUresult r = submitOp(stream, op))
      return r;
  return CUDA_SUCCESS;
}
CUresult graphExecDestroy(CUgraphExec exec) {
  delete exec;
  --stats.graphExecs;
  return CUDA_SUCCESS;
}
CUresult graphDestroy(CUgraph graph) {
  delete graph;
  --stats.graphs;
  return CUDA_SUCCESS;
}
CUresult eventCreate(CUevent *event, unsigned) {
  *event = new CUevent_st;
  ++stats.events;
  return CUDA_SUCCESS;
}
CUresult eventDestroy(CUevent event) {
  delete event;
  --stats.events;
  return CUDA_SUCCESS;
}
CUresult eventRecord(CUevent event, CUstream stream) {
  return submit(stream,
                [event] { event->at = std::chrono::steady_clock::now(); });
}
CUresult eventSynchronize(CUevent) {
  if (refusedDuringCapture())
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return flush();
}
CUresult eventElapsed(float *ms, CUevent start, CUevent end) {
  if (sticky)
    return sticky;
  *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
  return CUDA_SUCCESS;
}

const std::map<std::string, void *> &procTable() {
  static const std::map<std::string, void *> table = {
      {"cuGetErrorName", (void *)getErrorName},
      {"cuGetErrorString", (void *)getErrorString},
      {"cuInit", (void *)init},
      {"cuDeviceGetCount", (void *)deviceGetCount},
      {"cuDeviceGet", (void *)deviceGet},
      {"cuDeviceGetName", (void *)deviceGetName},
      {"cuDeviceGetAttribute", (void *)deviceGetAttribute},
      {"cuDevicePrimaryCtxRetain", (void *)primaryRetain},
      {"cuDevicePrimaryCtxRelease", (void *)primaryRelease},
      {"cuCtxGetCurrent", (void *)ctxGetCurrent},
      {"cuCtxGetDevice", (void *)ctxGetDevice},
      {"cuCtxPushCurrent", (void *)ctxPush},
      {"cuCtxPopCurrent", (void *)ctxPop},
      {"cuCtxSynchronize", (void *)ctxSynchronize},
      {"cuMemGetInfo", (void *)memGetInfo},
      {"cuMemAlloc", (void *)memAlloc},
      {"cuMemFree", (void *)memFree},
      {"cuMemHostAlloc", (void *)memHostAlloc},
      {"cuMemFreeHost", (void *)memFreeHost},
      {"cuMemcpyHtoDAsync", (void *)copyHtoD},
      {"cuMemcpyDtoHAsync", (void *)copyDtoH},
      {"cuMemcpyDtoDAsync", (void *)copyDtoD},
      {"cuModuleLoadDataEx", (void *)moduleLoad},
      {"cuModuleUnload", (void *)moduleUnload},
      {"cuModuleGetFunction", (void *)moduleGetFunction},
      {"cuFuncGetAttribute", (void *)funcGetAttribute},
      {"cuFuncSetAttribute", (void *)funcSetAttribute},
      {"cuFuncGetParamInfo", (void *)funcGetParamInfo},
      {"cuFuncLoad", (void *)funcLoad},
      {"cuLaunchKernel", (void *)launchKernel},
      {"cuStreamCreate", (void *)streamCreate},
      {"cuStreamDestroy", (void *)streamDestroy},
      {"cuStreamSynchronize", (void *)streamSynchronize},
      {"cuStreamBeginCapture", (void *)beginCapture},
      {"cuStreamEndCapture", (void *)endCapture},
      {"cuGraphInstantiateWithFlags", (void *)graphInstantiate},
      {"cuGraphLaunch", (void *)graphLaunch},
      {"cuGraphExecDestroy", (void *)graphExecDestroy},
      {"cuGraphDestroy", (void *)graphDestroy},
      {"cuEventCreate", (void *)eventCreate},
      {"cuEventDestroy", (void *)eventDestroy},
      {"cuEventRecord", (void *)eventRecord},
      {"cuEventSynchronize", (void *)eventSynchronize},
      {"cuEventElapsedTime", (void *)eventElapsed},
  };
  return table;
}

// cuBLAS: a handle remembers its stream and workspace; the GEMM runs (or is
// captured) on the stream like any other op, and the workspace it had is
// recorded per call. cublasSetStream resets the workspace to the default
// pool, as cuBLAS does.
struct FakeCublas {
  CUstream stream = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  int mathMode = -1;
};

/// cudaDataType -> the bundle dtype the reference GEMM takes, or -1.
int gemmDType(int type) {
  switch (type) {
  case 0: // CUDA_R_32F
    return snug::bundle::DTypeF32;
  case 1: // CUDA_R_64F
    return snug::bundle::DTypeF64;
  case 2: // CUDA_R_16F
    return snug::bundle::DTypeF16;
  case 14: // CUDA_R_16BF
    return snug::bundle::DTypeBF16;
  default:
    return -1;
  }
}
constexpr int kComputeFastTf32 = 77; // CUBLAS_COMPUTE_32F_FAST_TF32

// cuBLASLt: descriptors remember their attributes, a matmul computes in
// f32 (the only type the tests use) and applies the epilogue. Attribute and
// epilogue numbers are cublasLt.h's (not included: its prototypes would
// clash with these untyped ones).
constexpr int kLtTransA = 3, kLtTransB = 4, kLtEpilogue = 7,
              kLtBiasPointer = 8, kLtBiasBatchStride = 10;
constexpr int kLtBatchCount = 5, kLtStridedBatchOffset = 6;
constexpr int kLtMaxWorkspaceBytes = 1, kLtMinAlignmentA = 5,
              kLtMinAlignmentD = 8;
constexpr uint32_t kLtRelu = 2, kLtBias = 4, kLtGelu = 32;

struct FakeLtDesc {
  int computeType = -1, scaleType = -1, transA = 0, transB = 0;
  uint32_t epilogue = 1; // CUBLASLT_EPILOGUE_DEFAULT
  const void *bias = nullptr;
  int64_t biasBatchStride = 0;
};
struct FakeLtPreference {
  uint64_t maxWorkspace = 0;
  uint32_t minAlignment[4] = {0, 0, 0, 0}; // A, B, C, D; 0: not set
};
/// cublasLtMatmulHeuristicResult_t's layout.
struct FakeLtHeuristicResult {
  uint64_t algo[8];
  size_t workspaceSize;
  int state;
  float wavesCount;
  int reserved[4];
};

template <typename T> int copyAttribute(T &into, const void *from, size_t size) {
  if (size != sizeof(T))
    return 7; // CUBLAS_STATUS_INVALID_VALUE
  std::memcpy(&into, from, size);
  return 0;
}

} // namespace

extern "C" {

FAKE_CUDA_API const FakeCudaStats *fakeCudaStats(void) { return &stats; }

/// The compute capability the device reports from now on (sessions made
/// before keep the arch they chose their image for).
FAKE_CUDA_API void fakeCudaSetComputeCapability(int major, int minor) {
  ccMajor = major, ccMinor = minor;
}

FAKE_CUDA_API CUresult cuDriverGetVersion(int *version) {
  *version = driverVersion();
  return CUDA_SUCCESS;
}

/// The version cuDriverGetVersion reports from now on (0: back to
/// SNUG_FAKE_CUDA_DRIVER_VERSION or 13.0), to see a bundle refused or
/// accepted.
FAKE_CUDA_API void fakeCudaSetDriverVersion(int version) {
  driverVersionOverride = version;
}

FAKE_CUDA_API CUresult
cuGetProcAddress_v2(const char *symbol, void **function, int, cuuint64_t,
                    CUdriverProcAddressQueryResult *status) {
  auto found = procTable().find(symbol);
  if (found == procTable().end()) {
    *function = nullptr;
    if (status)
      *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *function = found->second;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

// cuBLAS, by its exported names; enums as ints (CUBLAS_OP_T = 1,
// CUDA_R_32F = 0, CUDA_R_64F = 1).
FAKE_CUDA_API int cublasCreate_v2(void **handle) {
  *handle = new FakeCublas;
  ++stats.cublasHandles;
  return 0;
}
FAKE_CUDA_API int cublasDestroy_v2(void *handle) {
  delete static_cast<FakeCublas *>(handle);
  --stats.cublasHandles;
  return 0;
}
FAKE_CUDA_API int cublasSetStream_v2(void *handle, CUstream stream) {
  static_cast<FakeCublas *>(handle)->stream = stream;
  static_cast<FakeCublas *>(handle)->workspace = nullptr;
  static_cast<FakeCublas *>(handle)->workspaceBytes = 0;
  return 0;
}
FAKE_CUDA_API int cublasSetWorkspace_v2(void *handle, void *workspace,
                                        size_t bytes) {
  // cuBLAS takes only 256-byte aligned workspaces.
  if (reinterpret_cast<uintptr_t>(workspace) % 256)
    return 7; // CUBLAS_STATUS_INVALID_VALUE
  static_cast<FakeCublas *>(handle)->workspace = workspace;
  static_cast<FakeCublas *>(handle)->workspaceBytes = bytes;
  stats.workspace = workspace;
  stats.workspaceBytes = bytes;
  ++stats.setWorkspaceCalls;
  return 0;
}
FAKE_CUDA_API int cublasSetMathMode(void *handle, int mode) {
  static_cast<FakeCublas *>(handle)->mathMode = mode;
  stats.mathMode = mode;
  return 0;
}
FAKE_CUDA_API int cublasGemmStridedBatchedEx(
    void *handle, int ta, int tb, int m, int n, int k, const void *alpha,
    const void *a, int aType, int lda, long long sa, const void *b, int bType,
    int ldb, long long sb, const void *beta, void *c, int cType, int ldc,
    long long sc, int batch, int computeType, int) {
  auto *h = static_cast<FakeCublas *>(handle);
  int dtype = gemmDType(aType);
  if (aType != bType || aType != cType || dtype < 0)
    return 15; // CUBLAS_STATUS_NOT_SUPPORTED
  // Without a workspace of cuBLAS's minimum (a NULL one, or
  // cublasSetStream's reset to the default pool, which a graph capture
  // cannot allocate from), the GEMM cannot run.
  size_t minimum = minimumWorkspace();
  if (minimum && (!h->workspace || h->workspaceBytes < minimum)) {
    ++stats.workspaceRefusals;
    return 3; // CUBLAS_STATUS_ALLOC_FAILED
  }
  ++stats.gemms;
  stats.lastComputeType = computeType;
  stats.gemmWorkspaces.push_back({h->workspace, h->workspaceBytes});
  snug::bundle::DeviceGemm g;
  g.dtype = uint8_t(dtype);
  g.transA = ta != 0, g.transB = tb != 0;
  g.m = m, g.n = n, g.k = k, g.batch = batch;
  g.lda = lda, g.ldb = ldb, g.ldc = ldc;
  g.strideA = sa, g.strideB = sb, g.strideC = sc;
  g.math = computeType == kComputeFastTf32 ? snug::bundle::GemmMathTf32
                                           : snug::bundle::GemmMathDefault;
  // alpha and beta in the compute type, read now (host pointers).
  if (dtype == snug::bundle::DTypeF64) {
    g.alpha = float(*static_cast<const double *>(alpha));
    g.beta = float(*static_cast<const double *>(beta));
  } else {
    g.alpha = *static_cast<const float *>(alpha);
    g.beta = *static_cast<const float *>(beta);
  }
  if (submit(h->stream, [=] {
        snug::cudasim::computeGemm(g, static_cast<const uint8_t *>(a),
                                   static_cast<const uint8_t *>(b),
                                   static_cast<uint8_t *>(c), nullptr);
      }))
    return 13; // CUBLAS_STATUS_EXECUTION_FAILED
  return 0;
}

// cuBLASLt, by its exported names.
FAKE_CUDA_API void fakeCudaLtNoAlgorithm(int none) {
  stats.ltNoAlgorithm = none != 0;
}
FAKE_CUDA_API int cublasLtCreate(void **handle) {
  *handle = new int(0);
  ++stats.ltHandles;
  return 0;
}
FAKE_CUDA_API int cublasLtDestroy(void *handle) {
  delete static_cast<int *>(handle);
  --stats.ltHandles;
  return 0;
}
FAKE_CUDA_API int cublasLtMatmulDescCreate(void **desc, int computeType,
                                           int scaleType) {
  auto *created = new FakeLtDesc;
  created->computeType = computeType;
  created->scaleType = scaleType;
  *desc = created;
  ++stats.ltDescs;
  return 0;
}
FAKE_CUDA_API int cublasLtMatmulDescDestroy(void *desc) {
  delete static_cast<FakeLtDesc *>(desc);
  --stats.ltDescs;
  return 0;
}
FAKE_CUDA_API int cublasLtMatmulDescSetAttribute(void *desc, int attribute,
                                                 const void *value,
                                                 size_t size) {
  auto *d = static_cast<FakeLtDesc *>(desc);
  switch (attribute) {
  case kLtTransA:
    return copyAttribute(d->transA, value, size);
  case kLtTransB:
    return copyAttribute(d->transB, value, size);
  case kLtEpilogue:
    return copyAttribute(d->epilogue, value, size);
  case kLtBiasPointer:
    return copyAttribute(d->bias, value, size);
  case kLtBiasBatchStride:
    return copyAttribute(d->biasBatchStride, value, size);
  default:
    return 7;
  }
}
FAKE_CUDA_API int cublasLtMatrixLayoutCreate(void **layout, int type,
                                             uint64_t rows, uint64_t cols,
                                             int64_t ld) {
  auto *created = new FakeCudaStats::LtLayout;
  created->type = type, created->rows = rows, created->cols = cols;
  created->ld = ld;
  *layout = created;
  ++stats.ltLayouts;
  return 0;
}
FAKE_CUDA_API int cublasLtMatrixLayoutDestroy(void *layout) {
  delete static_cast<FakeCudaStats::LtLayout *>(layout);
  --stats.ltLayouts;
  return 0;
}
FAKE_CUDA_API int cublasLtMatrixLayoutSetAttribute(void *layout,
                                                   int attribute,
                                                   const void *value,
                                                   size_t size) {
  auto *l = static_cast<FakeCudaStats::LtLayout *>(layout);
  if (attribute == kLtBatchCount)
    return copyAttribute(l->batch, value, size);
  if (attribute == kLtStridedBatchOffset)
    return copyAttribute(l->stride, value, size);
  return 7;
}
FAKE_CUDA_API int cublasLtMatmulPreferenceCreate(void **preference) {
  *preference = new FakeLtPreference;
  ++stats.ltPreferences;
  return 0;
}
FAKE_CUDA_API int cublasLtMatmulPreferenceDestroy(void *preference) {
  delete static_cast<FakeLtPreference *>(preference);
  --stats.ltPreferences;
  return 0;
}
FAKE_CUDA_API int cublasLtMatmulPreferenceSetAttribute(void *preference,
                                                       int attribute,
                                                       const void *value,
                                                       size_t size) {
  auto *p = static_cast<FakeLtPreference *>(preference);
  if (attribute >= kLtMinAlignmentA && attribute <= kLtMinAlignmentD)
    return copyAttribute(p->minAlignment[attribute - kLtMinAlignmentA], value,
                         size);
  if (attribute != kLtMaxWorkspaceBytes)
    return 7;
  return copyAttribute(p->maxWorkspace, value, size);
}
FAKE_CUDA_API int cublasLtMatmulAlgoGetHeuristic(
    void *, void *, void *, void *, void *, void *, void *preference,
    int requested, FakeLtHeuristicResult *results, int *returned) {
  ++stats.ltHeuristics;
  stats.ltMaxWorkspace =
      static_cast<FakeLtPreference *>(preference)->maxWorkspace;
  *returned = 0;
  if (requested < 1)
    return 7;
  const char *none = std::getenv("SNUG_FAKE_CUDA_LT_NO_ALGORITHM");
  if (stats.ltNoAlgorithm || (none && !std::strcmp(none, "1")))
    return 15; // CUBLAS_STATUS_NOT_SUPPORTED, as cuBLASLt says it
  std::memset(&results[0], 0, sizeof results[0]);
  results[0].algo[0] = 42;
  // The algorithm remembers the alignments it was picked for (words 1-4
  // of the opaque cublasLtMatmulAlgo_t), so each matmul can report them.
  const uint32_t *alignment =
      static_cast<FakeLtPreference *>(preference)->minAlignment;
  for (int i = 0; i < 4; ++i)
    results[0].algo[1 + i] = alignment[i];
  *returned = 1;
  return 0;
}
FAKE_CUDA_API int cublasLtMatmul(void *, void *desc, const void *alpha,
                                 const void *a, void *aLayout, const void *b,
                                 void *bLayout, const void *beta,
                                 const void *c, void *cLayout, void *d,
                                 void *dLayout, const uint64_t *algo,
                                 void *workspace, size_t workspaceBytes,
                                 CUstream stream) {
  using Layout = FakeCudaStats::LtLayout;
  const FakeLtDesc &op = *static_cast<FakeLtDesc *>(desc);
  const Layout &la = *static_cast<Layout *>(aLayout);
  const Layout &lb = *static_cast<Layout *>(bLayout);
  const Layout &lc = *static_cast<Layout *>(cLayout);
  const Layout &ld = *static_cast<Layout *>(dLayout);
  int dtype = gemmDType(la.type);
  if (dtype < 0 || dtype == snug::bundle::DTypeF64 || lb.type != la.type ||
      lc.type != la.type || ld.type != la.type || op.scaleType != 0 ||
      !algo || algo[0] != 42)
    return 15; // f32, f16, bf16 with f32 scales; an algorithm from the heuristic
  FakeCudaStats::LtCall &call = stats.lastLt;
  call.computeType = op.computeType, call.scaleType = op.scaleType;
  call.transA = op.transA, call.transB = op.transB;
  call.epilogue = op.epilogue, call.bias = op.bias;
  call.biasBatchStride = op.biasBatchStride;
  call.a = la, call.b = lb, call.c = lc, call.d = ld;
  call.pointerA = a, call.pointerB = b;
  call.pointerC = c, call.pointerD = d;
  call.workspace = workspace, call.workspaceBytes = workspaceBytes;
  call.algo = algo[0];
  for (int i = 0; i < 4; ++i)
    call.minAlignment[i] = uint32_t(algo[1 + i]);
  stats.ltCalls.push_back(call);
  ++stats.ltMatmuls;
  snug::bundle::DeviceGemm g;
  g.dtype = uint8_t(dtype);
  g.transA = op.transA != 0, g.transB = op.transB != 0;
  g.m = int(ld.rows), g.n = int(ld.cols);
  g.k = int(op.transA ? la.rows : la.cols);
  g.batch = 1; // one at a time: the bias has its own batch stride
  g.lda = la.ld, g.ldb = lb.ld, g.ldc = ld.ld;
  g.math = op.computeType == kComputeFastTf32 ? snug::bundle::GemmMathTf32
                                              : snug::bundle::GemmMathDefault;
  g.alpha = *static_cast<const float *>(alpha);
  g.beta = *static_cast<const float *>(beta);
  bool bias = op.epilogue & kLtBias;
  bool relu = op.epilogue & kLtRelu, gelu = op.epilogue & kLtGelu;
  g.epilogue = bias ? (relu   ? snug::bundle::GemmEpilogueReluBias
                       : gelu ? snug::bundle::GemmEpilogueGeluBias
                              : snug::bundle::GemmEpilogueBias)
               : relu ? snug::bundle::GemmEpilogueRelu
               : gelu ? snug::bundle::GemmEpilogueGelu
                      : snug::bundle::GemmEpilogueNone;
  size_t size = snug::bundle::dtypeSize(g.dtype);
  const void *biasPointer = op.bias;
  int64_t biasStride = op.biasBatchStride;
  int batches = ld.batch;
  if (submit(stream, [=] {
        for (int p = 0; p < batches; ++p) {
          auto *out = static_cast<uint8_t *>(d) + p * ld.stride * size;
          if (c != d)
            for (int j = 0; j < g.n; ++j)
              std::memcpy(out + j * ld.ld * size,
                          static_cast<const uint8_t *>(c) +
                              (p * lc.stride + j * lc.ld) * size,
                          g.m * size);
          snug::cudasim::computeGemm(
              g, static_cast<const uint8_t *>(a) + p * la.stride * size,
              static_cast<const uint8_t *>(b) + p * lb.stride * size, out,
              bias ? static_cast<const uint8_t *>(biasPointer) +
                         p * biasStride * size
                   : nullptr);
        }
      }))
    return 13; // CUBLAS_STATUS_EXECUTION_FAILED
  return 0;
}

} // extern "C"
