//===- CudaDriver.cpp - The CUDA driver and cuBLAS, loaded lazily ---------===//
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/DeviceChecks.h"

#include <dlfcn.h>

#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

namespace snug {
namespace rt {
namespace cuda {

namespace {

Status noDevice(const std::string &why) {
  return Status(SNUG_ERROR_NO_DEVICE, "no CUDA device: " + why);
}

/// dlerror() as a string (it is cleared by reading).
std::string dlError() {
  const char *error = dlerror();
  return error ? error : "unknown error";
}

// cuGetProcAddress before CUDA 12 had no symbolStatus parameter; drivers
// from 11.3 on export it under this name.
using GetProcAddressV1 = CUresult (*)(const char *, void **, int, cuuint64_t);
using GetProcAddressV2 = decltype(&::cuGetProcAddress);

Status loadDriver(CudaDriver &driver) {
  // RTLD_LOCAL: the driver's symbols stay out of the global namespace, so
  // an application that links libcuda itself sees no interference.
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    std::string error = dlError();
    if (error.find("No such file") != std::string::npos ||
        error.find("cannot open shared object") != std::string::npos)
      return noDevice("libcuda.so.1 not found (no NVIDIA driver)");
    return noDevice("cannot load libcuda.so.1: " + error);
  }
  auto getVersion = reinterpret_cast<decltype(&::cuDriverGetVersion)>(
      dlsym(library, "cuDriverGetVersion"));
  if (!getVersion)
    return noDevice("libcuda.so.1 has no cuDriverGetVersion");
  driver.DriverGetVersion = getVersion;
  if (CUresult r = getVersion(&driver.version))
    return noDevice(r == CUDA_ERROR_STUB_LIBRARY
                        ? "libcuda.so.1 is the CUDA toolkit's stub library, "
                          "not an NVIDIA driver"
                        : "cuDriverGetVersion failed (CUresult " +
                              std::to_string(int(r)) + ")");
  auto getProc2 =
      reinterpret_cast<GetProcAddressV2>(dlsym(library, "cuGetProcAddress_v2"));
  auto getProc1 =
      reinterpret_cast<GetProcAddressV1>(dlsym(library, "cuGetProcAddress"));
  if (!getProc2 && !getProc1)
    return noDevice("the NVIDIA driver (CUDA " +
                    std::to_string(driver.version / 1000) + "." +
                    std::to_string(driver.version % 1000 / 10) +
                    ") is too old: it has no cuGetProcAddress");
  // Asking for the headers' CUDA_VERSION returns, per symbol, the ABI
  // version those headers declare (an older driver returns its newest,
  // which for the functions used here has the same signature).
  auto resolve = [&](const char *symbol, void **function) {
    *function = nullptr;
    CUresult result;
    if (getProc2) {
      CUdriverProcAddressQueryResult found =
          CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      result = getProc2(symbol, function, CUDA_VERSION,
                        CU_GET_PROC_ADDRESS_DEFAULT, &found);
      if (found != CU_GET_PROC_ADDRESS_SUCCESS)
        *function = nullptr;
    } else {
      result =
          getProc1(symbol, function, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT);
    }
    if (result != CUDA_SUCCESS)
      *function = nullptr;
    return *function != nullptr;
  };
#define SNUG_CUDA_RESOLVE(member, symbol)                                      \
  if (!resolve(#symbol, reinterpret_cast<void **>(&driver.member)))            \
    return noDevice("the NVIDIA driver (version " +                            \
                    std::to_string(driver.version) + ") lacks " #symbol);
  SNUG_CUDA_DRIVER_FUNCTIONS(SNUG_CUDA_RESOLVE)
#undef SNUG_CUDA_RESOLVE
  (void)resolve("cuFuncLoad", reinterpret_cast<void **>(&driver.FuncLoad));
  (void)resolve("cuFuncGetParamInfo",
                reinterpret_cast<void **>(&driver.FuncGetParamInfo));

  if (CUresult result = driver.Init(0))
    return noDevice("cuInit failed: " + driver.describe(result));
  int count = 0;
  if (CUresult result = driver.DeviceGetCount(&count))
    return noDevice("cuDeviceGetCount failed: " + driver.describe(result));
  if (count == 0)
    return noDevice("the NVIDIA driver reports no devices");
  return Status::ok();
}

} // namespace

int CudaDriver::queryVersion() const {
  int now = version;
  if (!DriverGetVersion || DriverGetVersion(&now) != CUDA_SUCCESS)
    return version;
  return now;
}

std::string CudaDriver::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (GetErrorName)
    (void)GetErrorName(result, &name);
  if (GetErrorString)
    (void)GetErrorString(result, &text);
  std::string out = name ? name : "CUresult " + std::to_string(int(result));
  if (text)
    out += std::string(" (") + text + ")";
  return out;
}

Status getCudaDriver(const CudaDriver *&out) {
  static CudaDriver driver;
  static Status status;
  static std::once_flag once;
  std::call_once(once, [] { status = loadDriver(driver); });
  out = status.isOk() ? &driver : nullptr;
  return status;
}

namespace {

/// dlopens libNAME.so.<major> for the first of `majors` that loads (each
/// by soname, then from the build's toolkit directory); `loaded` names it.
/// Null, with `errors` listing each try, when none does. Unversioned names
/// are not tried: their major, and so the driver they need, is unknown.
void *openLibrary(const std::string &name, const std::vector<int> &majors,
                  std::string &loaded, std::string &errors, size_t &tried) {
  std::vector<std::string> candidates;
  for (int major : majors) {
    std::string file = "lib" + name + ".so." + std::to_string(major);
    candidates.push_back(file);
#ifdef SNUG_CUDA_LIBRARY_DIR
    // The build machine's toolkit, for trees run in place without the
    // toolkit's directory on the loader path.
    candidates.push_back(SNUG_CUDA_LIBRARY_DIR "/" + file);
#endif
  }
  tried = candidates.size();
  for (const std::string &candidate : candidates) {
    if (void *library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      loaded = candidate;
      return library;
    }
    errors += (errors.empty() ? "" : "; ") + dlError();
  }
  if (majors.empty())
    errors = "the driver is older than CUDA " +
             std::to_string(kOldestCublasMajor) +
             ", the oldest cuBLAS snug calls";
  return nullptr;
}

/// Binds `function` to `symbol` of `library`; whether it is there.
template <typename Function>
bool bindSymbol(void *library, const char *symbol, Function &function) {
  function = reinterpret_cast<Function>(dlsym(library, symbol));
  return function != nullptr;
}

Status loadCublas(Cublas &cublas, const std::vector<int> &majors) {
  std::string errors;
  size_t tried = 0;
  void *library = openLibrary("cublas", majors, cublas.library, errors, tried);
  if (!library)
    return Status(SNUG_ERROR_NO_DEVICE,
                  "no cuBLAS: cannot load libcuBLAS (tried " +
                      std::to_string(tried) + " names: " + errors + ")");
  auto bind = [&](const char *symbol, auto &function) {
    return bindSymbol(library, symbol, function);
  };
  if (!bind("cublasCreate_v2", cublas.Create) ||
      !bind("cublasDestroy_v2", cublas.Destroy) ||
      !bind("cublasSetStream_v2", cublas.SetStream) ||
      !bind("cublasSetWorkspace_v2", cublas.SetWorkspace) ||
      !bind("cublasSetMathMode", cublas.SetMathMode) ||
      !bind("cublasGemmStridedBatchedEx", cublas.GemmStridedBatchedEx))
    return Status(SNUG_ERROR_NO_DEVICE, "no cuBLAS: " + cublas.library +
                                            " lacks a function (" + dlError() +
                                            "); cuBLAS 12 or newer is needed");
  return Status::ok();
}

Status loadCublasLt(CublasLt &lt, const std::vector<int> &majors) {
  std::string errors;
  size_t tried = 0;
  void *library = openLibrary("cublasLt", majors, lt.library, errors, tried);
  if (!library)
    return Status(SNUG_ERROR_NO_DEVICE,
                  "no cuBLASLt: cannot load libcublasLt (tried " +
                      std::to_string(tried) + " names: " + errors + ")");
  // Each symbol named, so that a missing one is named in the error.
  const char *missing = nullptr;
  auto bind = [&](const char *symbol, auto &function) {
    if (!missing && !bindSymbol(library, symbol, function))
      missing = symbol;
  };
  bind("cublasLtCreate", lt.Create);
  bind("cublasLtDestroy", lt.Destroy);
  bind("cublasLtMatmulDescCreate", lt.MatmulDescCreate);
  bind("cublasLtMatmulDescDestroy", lt.MatmulDescDestroy);
  bind("cublasLtMatmulDescSetAttribute", lt.MatmulDescSetAttribute);
  bind("cublasLtMatrixLayoutCreate", lt.MatrixLayoutCreate);
  bind("cublasLtMatrixLayoutDestroy", lt.MatrixLayoutDestroy);
  bind("cublasLtMatrixLayoutSetAttribute", lt.MatrixLayoutSetAttribute);
  bind("cublasLtMatmulPreferenceCreate", lt.MatmulPreferenceCreate);
  bind("cublasLtMatmulPreferenceDestroy", lt.MatmulPreferenceDestroy);
  bind("cublasLtMatmulPreferenceSetAttribute",
       lt.MatmulPreferenceSetAttribute);
  bind("cublasLtMatmulAlgoGetHeuristic", lt.MatmulAlgoGetHeuristic);
  bind("cublasLtMatmul", lt.Matmul);
  if (missing)
    return Status(SNUG_ERROR_NO_DEVICE,
                  "no cuBLASLt: " + lt.library + " lacks " + missing +
                      "; cuBLAS 12 or newer is needed");
  return Status::ok();
}

/// The table `load` fills for `majors`, loaded once per process for each
/// list of majors (the driver's version is fixed, so a process sees one or
/// two lists: one per bundle release); never unloaded.
template <typename Table>
Status getLoaded(const std::vector<int> &majors,
                 Status (*load)(Table &, const std::vector<int> &),
                 const Table *&out) {
  static std::mutex mutex;
  static std::map<std::vector<int>, std::pair<std::unique_ptr<Table>, Status>>
      loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = loaded.find(majors);
  if (found == loaded.end()) {
    auto table = std::make_unique<Table>();
    Status status = load(*table, majors);
    found = loaded.emplace(majors, std::make_pair(std::move(table), status))
                .first;
  }
  out = found->second.second.isOk() ? found->second.first.get() : nullptr;
  return found->second.second;
}

} // namespace

Status getCublasLt(const std::vector<int> &majors, const CublasLt *&out) {
  return getLoaded<CublasLt>(majors, loadCublasLt, out);
}

Status getCublas(const std::vector<int> &majors, const Cublas *&out) {
  return getLoaded<Cublas>(majors, loadCublas, out);
}

const char *cublasStatusName(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cuBLAS status";
}

} // namespace cuda
} // namespace rt
} // namespace snug
