//===- DeviceLimits.h - What one block may take, per GPU architecture -*- C++ -*-===//
//
// The launch limits of each compute capability snug compiles for, in one
// table (DeviceLimits.cpp), from the CUDA C++ Programming Guide's
// "Features and Technical Specifications" table (compute capabilities 7.5
// to 12.0) and the CUDA Occupancy Calculator's register allocation rule.
// The largest GPU of each architecture (its SM count) sizes the local
// memory the driver reserves (KernelReport.h); it is named in the table.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_DEVICELIMITS_H
#define SNUG_COMPILER_CUDA_DEVICELIMITS_H

#include <cstdint>

namespace snug {
namespace cuda {

struct DeviceLimits {
  unsigned arch = 0; // 80 for sm_80
  uint32_t maxThreadsPerBlock = 1024;
  uint32_t maxBlock[3] = {1024, 1024, 64};
  uint32_t maxGrid[3] = {0x7fffffffu, 65535, 65535};
  /// 32-bit registers one block may hold, allocated per warp in units of
  /// registerUnit (the occupancy calculator's "register allocation unit
  /// size", warp granularity).
  uint32_t registersPerBlock = 65536;
  uint32_t registerUnit = 256;
  /// Static shared memory per block; dynamic shared memory above it needs
  /// cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
  /// up to sharedOptInPerBlock.
  uint32_t sharedPerBlock = 48 * 1024;
  uint32_t sharedOptInPerBlock = 0;
  /// The shared memory the system reserves per block that a cubin's
  /// `.nv.shared.NAME` counts in (1 KiB from sm_90 on: ptxas 13 sizes the
  /// section 1024 B larger there, not on sm_80..sm_89), on top of
  /// sharedPerBlock (the guide's reservedSharedMemPerBlock).
  uint32_t reservedSharedInCubin = 0;
  /// Resident threads per SM, and the SMs of the largest GPU of the arch.
  uint32_t threadsPerSm = 0;
  uint32_t largestGpuSms = 0;
  const char *largestGpu = "";
};

/// The limits of sm_`arch`: its own row, else the row of the newest
/// listed arch of the same major version at or below it, else the oldest
/// row (sm_75).
const DeviceLimits &getDeviceLimits(unsigned arch);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_DEVICELIMITS_H
