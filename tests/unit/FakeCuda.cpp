//===- FakeCuda.cpp - A CUDA driver and cuBLAS that run on the CPU --------===//
//
// Built as libcuda.so.1 (with libcublas.so.13 a link to the same file) in a
// directory that snug-fake-cuda-tests puts first on LD_LIBRARY_PATH, so the
// runtime's lazy loader finds it instead of a real driver. It implements
// exactly what the CUDA executor calls, with host memory as "device"
// memory, a few named host "kernels" (snug_add, snug_leaky,
// snug_check_labels), column-major f32/f64 GEMM, streams
// that execute at once, and capture/graph replay as recorded closures. It
// counts everything (fakeCudaStats) so tests can check that a run
// allocates nothing, graphs are used as planned and destruction frees all.
//
// Failure injection by kernel name: snug_fail fails its launch; snug_heavy
// allows only 128 threads per block.
//
//===----------------------------------------------------------------------===//
#include "FakeCuda.h"

#include <cuda.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

// The driver's opaque handle types, defined here.
struct CUctx_st {
  int device = 0;
};
struct CUstream_st {
  bool capturing = false;
  std::vector<std::function<void()>> captured;
};
struct CUmod_st {
  int unused = 0;
};
struct CUfunc_st {
  std::string name;
};
struct CUgraph_st {
  std::vector<std::function<void()>> ops;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> ops;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point at;
};

namespace {

constexpr uint64_t kTotal = uint64_t(1) << 30;

FakeCudaStats stats;
std::set<void *> allocations;
uint64_t allocatedBytes = 0;
CUctx_st primary;
thread_local std::vector<CUcontext> contextStack;

/// Runs `op` now, or records it when `stream` is being captured.
void submit(CUstream stream, std::function<void()> op) {
  if (stream && stream != CU_STREAM_LEGACY && stream != CU_STREAM_PER_THREAD &&
      stream->capturing) {
    stream->captured.push_back(std::move(op));
    return;
  }
  op();
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

CUresult getErrorName(CUresult error, const char **name) {
  switch (error) {
  case CUDA_SUCCESS:
    *name = "CUDA_SUCCESS";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND:
    *name = "CUDA_ERROR_NOT_FOUND";
    return CUDA_SUCCESS;
  case CUDA_ERROR_LAUNCH_FAILED:
    *name = "CUDA_ERROR_LAUNCH_FAILED";
    return CUDA_SUCCESS;
  default:
    *name = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult getErrorString(CUresult error, const char **text) {
  *text = error == CUDA_ERROR_LAUNCH_FAILED ? "unspecified launch failure"
                                            : "fake error";
  return CUDA_SUCCESS;
}
CUresult init(unsigned) { return CUDA_SUCCESS; }
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
  if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    *value = 9;
  else if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    *value = 0;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
CUresult primaryRetain(CUcontext *context, CUdevice) {
  ++stats.primaryRetains;
  *context = &primary;
  return CUDA_SUCCESS;
}
CUresult primaryRelease(CUdevice) {
  --stats.primaryRetains;
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
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  *pointer = std::malloc(bytes);
  if (!*pointer)
    return CUDA_ERROR_OUT_OF_MEMORY;
  stats.pinnedBytes[*pointer] = bytes;
  return CUDA_SUCCESS;
}
CUresult memFreeHost(void *pointer) {
  if (!stats.pinnedBytes.erase(pointer))
    return CUDA_ERROR_INVALID_VALUE;
  std::free(pointer);
  return CUDA_SUCCESS;
}
CUresult copyHtoD(CUdeviceptr to, const void *from, size_t bytes,
                  CUstream stream) {
  ++stats.hostToDevice;
  submit(stream,
         [=] { std::memcpy(reinterpret_cast<void *>(to), from, bytes); });
  return CUDA_SUCCESS;
}
CUresult copyDtoH(void *to, CUdeviceptr from, size_t bytes, CUstream stream) {
  ++stats.deviceToHost;
  submit(stream,
         [=] { std::memcpy(to, reinterpret_cast<const void *>(from), bytes); });
  return CUDA_SUCCESS;
}
CUresult copyDtoD(CUdeviceptr to, CUdeviceptr from, size_t bytes,
                  CUstream stream) {
  ++stats.deviceToDevice;
  submit(stream, [=] {
    std::memmove(reinterpret_cast<void *>(to),
                 reinterpret_cast<const void *>(from), bytes);
  });
  return CUDA_SUCCESS;
}
CUresult moduleLoad(CUmodule *module, const void *image, unsigned,
                    CUjit_option *, void **) {
  if (std::strncmp(static_cast<const char *>(image), "FAKE", 4))
    return CUDA_ERROR_INVALID_IMAGE;
  *module = new CUmod_st;
  ++stats.modules;
  return CUDA_SUCCESS;
}
CUresult moduleUnload(CUmodule module) {
  delete module;
  --stats.modules;
  return CUDA_SUCCESS;
}
std::map<std::string, CUfunc_st> functions;
CUresult moduleGetFunction(CUfunction *function, CUmodule, const char *name) {
  static const std::set<std::string> known = {
      "snug_add", "snug_leaky", "snug_fail", "snug_heavy", "snug_check_labels"};
  if (!known.count(name))
    return CUDA_ERROR_NOT_FOUND;
  CUfunc_st &f = functions[name];
  f.name = name;
  *function = &f;
  return CUDA_SUCCESS;
}
CUresult funcGetAttribute(int *value, CUfunction_attribute attribute,
                          CUfunction function) {
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
    return CUDA_ERROR_INVALID_VALUE;
  *value = function->name == "snug_heavy" ? 128 : 1024;
  return CUDA_SUCCESS;
}
CUresult funcLoad(CUfunction) {
  ++stats.functionsLoaded;
  return CUDA_SUCCESS;
}
CUresult launchKernel(CUfunction f, unsigned, unsigned, unsigned, unsigned,
                      unsigned, unsigned, unsigned, CUstream stream,
                      void **params, void **) {
  if (f->name == "snug_fail")
    return CUDA_ERROR_LAUNCH_FAILED;
  bool check = f->name == "snug_check_labels";
  void (*kernel)(void **) = check                   ? kernelCheckLabels
                            : f->name == "snug_add" ? kernelAdd
                                                    : kernelLeaky;
  // The parameters are copied at launch (and at capture), as CUDA does.
  size_t count = check ? 6 : 4;
  std::vector<uint64_t> values(count);
  for (size_t i = 0; i < count; ++i)
    std::memcpy(&values[i], params[i], 8);
  bool capturing = stream && stream->capturing;
  if (!capturing)
    ++stats.directLaunches;
  submit(stream, [=]() mutable {
    std::vector<void *> pointers;
    for (uint64_t &value : values)
      pointers.push_back(&value);
    kernel(pointers.data());
  });
  return CUDA_SUCCESS;
}
CUresult streamCreate(CUstream *stream, unsigned) {
  *stream = new CUstream_st;
  ++stats.streams;
  return CUDA_SUCCESS;
}
CUresult streamDestroy(CUstream stream) {
  delete stream;
  --stats.streams;
  return CUDA_SUCCESS;
}
CUresult streamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult beginCapture(CUstream stream, CUstreamCaptureMode) {
  if (!stream || stream->capturing)
    return CUDA_ERROR_INVALID_VALUE;
  stream->capturing = true;
  stream->captured.clear();
  return CUDA_SUCCESS;
}
CUresult endCapture(CUstream stream, CUgraph *graph) {
  if (!stream->capturing)
    return CUDA_ERROR_INVALID_VALUE;
  stream->capturing = false;
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
CUresult graphLaunch(CUgraphExec exec, CUstream) {
  ++stats.graphLaunches;
  for (auto &op : exec->ops)
    op();
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
CUresult eventRecord(CUevent event, CUstream) {
  event->at = std::chrono::steady_clock::now();
  return CUDA_SUCCESS;
}
CUresult eventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult eventElapsed(float *ms, CUevent start, CUevent end) {
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

template <typename T>
void gemm(bool ta, bool tb, int m, int n, int k, T alpha, const T *a, int lda,
          long long sa, const T *b, int ldb, long long sb, T beta, T *c,
          int ldc, long long sc, int batch) {
  for (int p = 0; p < batch; ++p)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < m; ++i) {
        T sum = 0;
        for (int l = 0; l < k; ++l) {
          T x = ta ? a[p * sa + i * lda + l] : a[p * sa + l * lda + i];
          T y = tb ? b[p * sb + l * ldb + j] : b[p * sb + j * ldb + l];
          sum += x * y;
        }
        T &out = c[p * sc + j * ldc + i];
        out = alpha * sum + (beta == 0 ? 0 : beta * out);
      }
}

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

float ltActivation(uint32_t epilogue, float x) {
  if (epilogue & kLtRelu)
    return x < 0 ? 0 : x;
  if (epilogue & kLtGelu)
    return 0.5f * x *
           (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
  return x;
}

} // namespace

extern "C" {

FAKE_CUDA_API const FakeCudaStats *fakeCudaStats(void) { return &stats; }

FAKE_CUDA_API CUresult cuDriverGetVersion(int *version) {
  *version = 13000;
  return CUDA_SUCCESS;
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
  if (aType != bType || aType != cType || (aType != 0 && aType != 1))
    return 15; // CUBLAS_STATUS_NOT_SUPPORTED
  ++stats.gemms;
  stats.lastComputeType = computeType;
  stats.gemmWorkspaces.push_back({h->workspace, h->workspaceBytes});
  if (aType == 0) {
    float al = *static_cast<const float *>(alpha);
    float be = *static_cast<const float *>(beta);
    submit(h->stream, [=] {
      gemm<float>(ta, tb, m, n, k, al, static_cast<const float *>(a), lda, sa,
                  static_cast<const float *>(b), ldb, sb, be,
                  static_cast<float *>(c), ldc, sc, batch);
    });
  } else {
    double al = *static_cast<const double *>(alpha);
    double be = *static_cast<const double *>(beta);
    submit(h->stream, [=] {
      gemm<double>(ta, tb, m, n, k, al, static_cast<const double *>(a), lda, sa,
                   static_cast<const double *>(b), ldb, sb, be,
                   static_cast<double *>(c), ldc, sc, batch);
    });
  }
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
  if (stats.ltNoAlgorithm)
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
  if (la.type != 0 || lb.type != 0 || lc.type != 0 || ld.type != 0 ||
      op.scaleType != 0 || !algo || algo[0] != 42)
    return 15; // f32 only; an algorithm from the heuristic
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
  float al = *static_cast<const float *>(alpha);
  float be = *static_cast<const float *>(beta);
  int m = int(ld.rows), n = int(ld.cols);
  int k = int(op.transA ? la.rows : la.cols);
  FakeLtDesc ops = op;
  submit(stream, [=] {
    float *out = static_cast<float *>(d);
    if (c != d)
      for (int p = 0; p < ld.batch; ++p)
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < m; ++i)
            out[p * ld.stride + j * ld.ld + i] =
                static_cast<const float *>(c)[p * lc.stride + j * lc.ld + i];
    gemm<float>(ops.transA != 0, ops.transB != 0, m, n, k, al,
                static_cast<const float *>(a), int(la.ld), la.stride,
                static_cast<const float *>(b), int(lb.ld), lb.stride, be, out,
                int(ld.ld), ld.stride, ld.batch);
    const float *bias = static_cast<const float *>(ops.bias);
    for (int p = 0; p < ld.batch; ++p)
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          float &x = out[p * ld.stride + j * ld.ld + i];
          if (ops.epilogue & kLtBias)
            x += bias[p * ops.biasBatchStride + i];
          x = ltActivation(ops.epilogue, x);
        }
  });
  return 0;
}

} // extern "C"
