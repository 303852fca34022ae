//===- CudaContext.h - The CUDA context a session works in ------*- C++ -*-===//
//
// A session binds to one context when it is created and makes it current
// around each of its calls only, so that it neither depends on nor disturbs
// the calling thread's own CUDA state: any thread may drive the session, and
// an application using the CUDA runtime keeps its current device.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_CUDA_CUDACONTEXT_H
#define SNUG_RUNTIME_CUDA_CUDACONTEXT_H

#include "runtime/cuda/CudaDriver.h"

#include <cstdint>
#include <memory>

namespace snug {
namespace rt {
namespace cuda {

class CudaContext {
public:
  /// The calling thread's current context when there is one (an application
  /// of the CUDA runtime has its device's primary context current, and a
  /// caller's stream belongs to it), else device 0's primary context,
  /// retained until the object dies.
  static Status acquire(const CudaDriver &driver,
                        std::unique_ptr<CudaContext> &out);
  ~CudaContext();
  CudaContext(const CudaContext &) = delete;
  CudaContext &operator=(const CudaContext &) = delete;

  CUcontext get() const { return context; }
  CUdevice getDevice() const { return device; }

private:
  explicit CudaContext(const CudaDriver &driver) : driver(driver) {}
  const CudaDriver &driver;
  CUcontext context = nullptr;
  CUdevice device = 0;
  bool retainedPrimary = false;
};

/// Makes `context` current for the scope and restores the previous one.
class ContextScope {
public:
  ContextScope(const CudaDriver &driver, CUcontext context);
  ~ContextScope();
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;
  /// Whether the push worked; the executor refuses to work otherwise.
  CUresult getResult() const { return result; }

private:
  const CudaDriver &driver;
  CUresult result;
};

/// Free and total device memory (cuMemGetInfo) in the context a session
/// created now on this thread would use. For tests: a run must not change
/// the free memory.
Status getDeviceMemoryInfo(uint64_t &freeBytes, uint64_t &totalBytes);

} // namespace cuda
} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_CUDA_CUDACONTEXT_H
