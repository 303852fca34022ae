//===- CudaContext.cpp - The CUDA context a session works in --------------===//
#include "runtime/cuda/CudaContext.h"

namespace snug {
namespace rt {
namespace cuda {

Status CudaContext::acquire(const CudaDriver &driver,
                            std::unique_ptr<CudaContext> &out) {
  std::unique_ptr<CudaContext> result(new CudaContext(driver));
  CUcontext current = nullptr;
  if (CUresult r = driver.CtxGetCurrent(&current))
    return Status(SNUG_ERROR_NO_DEVICE,
                  "no CUDA device: cuCtxGetCurrent failed: " +
                      driver.describe(r));
  if (current) {
    if (CUresult r = driver.CtxGetDevice(&result->device))
      return Status(SNUG_ERROR_NO_DEVICE,
                    "no CUDA device: the current CUDA context has no "
                    "usable device: " +
                        driver.describe(r));
    result->context = current;
  } else {
    if (CUresult r = driver.DeviceGet(&result->device, 0))
      return Status(SNUG_ERROR_NO_DEVICE,
                    "no CUDA device: cuDeviceGet(0) failed: " +
                        driver.describe(r));
    if (CUresult r =
            driver.DevicePrimaryCtxRetain(&result->context, result->device))
      return Status(SNUG_ERROR_NO_DEVICE,
                    "no CUDA device: cannot create a context on device 0: " +
                        driver.describe(r));
    result->retainedPrimary = true;
  }
  out = std::move(result);
  return Status::ok();
}

CudaContext::~CudaContext() {
  if (retainedPrimary)
    (void)driver.DevicePrimaryCtxRelease(device);
}

ContextScope::ContextScope(const CudaDriver &driver, CUcontext context)
    : driver(driver), result(driver.CtxPushCurrent(context)) {}

ContextScope::~ContextScope() {
  if (result == CUDA_SUCCESS) {
    CUcontext popped;
    (void)driver.CtxPopCurrent(&popped);
  }
}

Status getDeviceMemoryInfo(uint64_t &freeBytes, uint64_t &totalBytes) {
  const CudaDriver *driver;
  if (Status s = getCudaDriver(driver))
    return s;
  std::unique_ptr<CudaContext> context;
  if (Status s = CudaContext::acquire(*driver, context))
    return s;
  ContextScope scope(*driver, context->get());
  if (scope.getResult())
    return Status(SNUG_ERROR_RUNTIME, "cannot make the CUDA context current: " +
                                          driver->describe(scope.getResult()));
  size_t free = 0, total = 0;
  if (CUresult r = driver->MemGetInfo(&free, &total))
    return Status(SNUG_ERROR_RUNTIME,
                  "cuMemGetInfo failed: " + driver->describe(r));
  freeBytes = free;
  totalBytes = total;
  return Status::ok();
}

} // namespace cuda
} // namespace rt
} // namespace snug
