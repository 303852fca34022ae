//===- CudaDriver.h - The CUDA driver and cuBLAS, loaded lazily -*- C++ -*-===//
//
// The runtime must start, and run the host executor, on machines without an
// NVIDIA driver, so it links neither libcuda nor libcublas: the first CUDA
// session dlopens libcuda.so.1 and resolves every entry point through
// cuGetProcAddress, which hands out the ABI version (cuMemAlloc_v2, ...)
// that matches the toolkit headers this file was compiled with; cuBLAS is
// dlopened only for plans that have a GEMM. The toolkit headers provide
// types only. cuBLASLt is dlopened only for plans with a GEMM that has an
// epilogue (DevicePlan.h). Both are looked up by major release, those the
// bundle and the driver allow (DeviceChecks.h getCublasMajors), never by an
// unversioned name. The tables are loaded once per process and never
// unloaded.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_CUDA_CUDADRIVER_H
#define SNUG_RUNTIME_CUDA_CUDADRIVER_H

#include "runtime/Status.h"

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>

#include <string>
#include <vector>

namespace snug {
namespace rt {
namespace cuda {

// Every driver function the runtime calls: (member, symbol). The symbol is
// the header's name, which cuda.h may map to a versioned one (cuMemAlloc ->
// cuMemAlloc_v2); the member's type follows that mapping, and so does the
// version cuGetProcAddress returns for CUDA_VERSION.
#define SNUG_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(GetErrorName, cuGetErrorName)                                              \
  X(GetErrorString, cuGetErrorString)                                          \
  X(Init, cuInit)                                                              \
  X(DeviceGetCount, cuDeviceGetCount)                                          \
  X(DeviceGet, cuDeviceGet)                                                    \
  X(DeviceGetName, cuDeviceGetName)                                            \
  X(DeviceGetAttribute, cuDeviceGetAttribute)                                  \
  X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)                          \
  X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease)                        \
  X(CtxGetCurrent, cuCtxGetCurrent)                                            \
  X(CtxGetDevice, cuCtxGetDevice)                                              \
  X(CtxPushCurrent, cuCtxPushCurrent)                                          \
  X(CtxPopCurrent, cuCtxPopCurrent)                                            \
  X(MemGetInfo, cuMemGetInfo)                                                  \
  X(MemAlloc, cuMemAlloc)                                                      \
  X(MemFree, cuMemFree)                                                        \
  X(MemHostAlloc, cuMemHostAlloc)                                              \
  X(MemFreeHost, cuMemFreeHost)                                                \
  X(MemcpyHtoDAsync, cuMemcpyHtoDAsync)                                        \
  X(MemcpyDtoHAsync, cuMemcpyDtoHAsync)                                        \
  X(MemcpyDtoDAsync, cuMemcpyDtoDAsync)                                        \
  X(ModuleLoadDataEx, cuModuleLoadDataEx)                                      \
  X(ModuleUnload, cuModuleUnload)                                              \
  X(ModuleGetFunction, cuModuleGetFunction)                                    \
  X(FuncGetAttribute, cuFuncGetAttribute)                                      \
  X(LaunchKernel, cuLaunchKernel)                                              \
  X(StreamCreate, cuStreamCreate)                                              \
  X(StreamDestroy, cuStreamDestroy)                                            \
  X(StreamSynchronize, cuStreamSynchronize)                                    \
  X(StreamBeginCapture, cuStreamBeginCapture)                                  \
  X(StreamEndCapture, cuStreamEndCapture)                                      \
  X(GraphInstantiateWithFlags, cuGraphInstantiateWithFlags)                    \
  X(GraphLaunch, cuGraphLaunch)                                                \
  X(GraphExecDestroy, cuGraphExecDestroy)                                      \
  X(GraphDestroy, cuGraphDestroy)                                              \
  X(EventCreate, cuEventCreate)                                                \
  X(EventDestroy, cuEventDestroy)                                              \
  X(EventRecord, cuEventRecord)                                                \
  X(EventSynchronize, cuEventSynchronize)                                      \
  X(EventElapsedTime, cuEventElapsedTime)

struct CudaDriver {
#define SNUG_CUDA_MEMBER(member, symbol) decltype(&::symbol) member = nullptr;
  SNUG_CUDA_DRIVER_FUNCTIONS(SNUG_CUDA_MEMBER)
#undef SNUG_CUDA_MEMBER
  /// Optional (driver 12.4+): loads a function's code now rather than at
  /// its first launch under lazy module loading. Null when absent.
  decltype(&::cuFuncLoad) FuncLoad = nullptr;
  /// Optional (driver 12.4+): a kernel parameter's offset and size, from
  /// the loaded image; CUDA_ERROR_INVALID_VALUE past the last one. Null
  /// when absent.
  decltype(&::cuFuncGetParamInfo) FuncGetParamInfo = nullptr;
  /// cuDriverGetVersion: 12080 for CUDA 12.8, as read when the driver was
  /// loaded.
  int version = 0;
  /// cuDriverGetVersion itself (exported by every driver), which each CUDA
  /// session asks again before it compares the bundle's minimum.
  decltype(&::cuDriverGetVersion) DriverGetVersion = nullptr;

  /// cuDriverGetVersion's answer now (`version` if it fails).
  int queryVersion() const;

  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string describe(CUresult result) const;
};

/// The driver, loaded and cuInit-ed on the first call. Fails with
/// SNUG_ERROR_NO_DEVICE "no CUDA device: <why>" (no libcuda.so.1, too old a
/// driver, cuInit failing, no device); the outcome is cached.
Status getCudaDriver(const CudaDriver *&driver);

// cuBLAS functions by their exported (versioned) names. Types are spelled
// out because cublas_api.h overloads some of them in C++.
struct Cublas {
  cublasStatus_t (*Create)(cublasHandle_t *) = nullptr;
  cublasStatus_t (*Destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*SetStream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*SetWorkspace)(cublasHandle_t, void *, size_t) = nullptr;
  cublasStatus_t (*SetMathMode)(cublasHandle_t, cublasMath_t) = nullptr;
  cublasStatus_t (*GemmStridedBatchedEx)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k,
      const void *alpha, const void *a, cudaDataType aType, int lda,
      long long strideA, const void *b, cudaDataType bType, int ldb,
      long long strideB, const void *beta, void *c, cudaDataType cType, int ldc,
      long long strideC, int batchCount, cublasComputeType_t computeType,
      cublasGemmAlgo_t algo) = nullptr;
  /// The file that was loaded ("libcublas.so.13"), for messages.
  std::string library;
};

/// cuBLAS of the first of `majors` that loads (libcublas.so.12, then the
/// build's toolkit directory, then .13, ...: DeviceChecks.h
/// getCublasMajors says which majors a bundle and a driver allow, and in
/// which order). Fails with SNUG_ERROR_NO_DEVICE naming what was tried;
/// the outcome is cached per list of majors.
Status getCublas(const std::vector<int> &majors, const Cublas *&cublas);

// cuBLASLt functions by their exported names: the GEMMs with an epilogue
// (DeviceGemm::epilogue), which cublasGemmStridedBatchedEx cannot apply.
struct CublasLt {
  cublasStatus_t (*Create)(cublasLtHandle_t *) = nullptr;
  cublasStatus_t (*Destroy)(cublasLtHandle_t) = nullptr;
  cublasStatus_t (*MatmulDescCreate)(cublasLtMatmulDesc_t *,
                                     cublasComputeType_t,
                                     cudaDataType_t) = nullptr;
  cublasStatus_t (*MatmulDescDestroy)(cublasLtMatmulDesc_t) = nullptr;
  cublasStatus_t (*MatmulDescSetAttribute)(cublasLtMatmulDesc_t,
                                           cublasLtMatmulDescAttributes_t,
                                           const void *, size_t) = nullptr;
  cublasStatus_t (*MatrixLayoutCreate)(cublasLtMatrixLayout_t *, cudaDataType,
                                       uint64_t rows, uint64_t cols,
                                       int64_t ld) = nullptr;
  cublasStatus_t (*MatrixLayoutDestroy)(cublasLtMatrixLayout_t) = nullptr;
  cublasStatus_t (*MatrixLayoutSetAttribute)(cublasLtMatrixLayout_t,
                                             cublasLtMatrixLayoutAttribute_t,
                                             const void *, size_t) = nullptr;
  cublasStatus_t (*MatmulPreferenceCreate)(cublasLtMatmulPreference_t *) =
      nullptr;
  cublasStatus_t (*MatmulPreferenceDestroy)(cublasLtMatmulPreference_t) =
      nullptr;
  cublasStatus_t (*MatmulPreferenceSetAttribute)(
      cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
      const void *, size_t) = nullptr;
  cublasStatus_t (*MatmulAlgoGetHeuristic)(
      cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t a,
      cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
      cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t, int requested,
      cublasLtMatmulHeuristicResult_t results[], int *returned) = nullptr;
  cublasStatus_t (*Matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t,
                           const void *alpha, const void *a,
                           cublasLtMatrixLayout_t, const void *b,
                           cublasLtMatrixLayout_t, const void *beta,
                           const void *c, cublasLtMatrixLayout_t, void *d,
                           cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *,
                           void *workspace, size_t workspaceBytes,
                           cudaStream_t) = nullptr;
  /// The file that was loaded ("libcublasLt.so.13"), for messages.
  std::string library;
};

/// cuBLASLt of the first of `majors` that loads, as getCublas. Fails with
/// SNUG_ERROR_NO_DEVICE naming what was tried or the function it lacks;
/// the outcome is cached per list of majors.
Status getCublasLt(const std::vector<int> &majors, const CublasLt *&cublasLt);

/// "CUBLAS_STATUS_NOT_INITIALIZED" for a status.
const char *cublasStatusName(cublasStatus_t status);

} // namespace cuda
} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_CUDA_CUDADRIVER_H
