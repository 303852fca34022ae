//===- DeviceChecks.h - CUDA session checks that need no driver -*- C++ -*-===//
//
// The decisions a CUDA session makes before it touches the device, as pure
// functions of the bundle, the options and a few numbers the driver reports:
// whether the driver is new enough for the bundle's kernels, which kernel
// image fits the device, whether the caller's arena is usable,
// whether the plan fits the free device memory, whether every GEMM fits the
// 32-bit cuBLAS API. Kept free of CUDA headers so that they build, and are
// tested, on machines without the toolkit or a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_CUDA_DEVICECHECKS_H
#define SNUG_RUNTIME_CUDA_DEVICECHECKS_H

#include "runtime/BundleReader.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snug {
namespace rt {
namespace cuda {

/// The alignment cudaMalloc guarantees; the device plan's offsets assume it.
constexpr uint64_t kDeviceArenaAlignment = 256;
/// The largest host-to-device copy of weights at once: bounds the driver's
/// staging of pageable memory without a second host copy.
constexpr uint64_t kUploadChunkBytes = uint64_t(64) << 20;

/// "sm_90" for 90.
std::string smName(uint32_t arch);

/// The image to load on a device of compute capability `arch` (90 for
/// sm_90): the cubin for exactly that arch, else the newest PTX not newer
/// than the device (the driver JIT-compiles it). Null when none fits;
/// `why` then names the device and the bundle's archs.
const KernelImageRef *selectKernelImage(const Bundle &bundle, uint32_t arch,
                                        const std::string &deviceName,
                                        Status &why);

/// The driver (cuDriverGetVersion's `driverVersion`, 12080 for 12.8) must
/// be at least the bundle's recorded minimum (KernelToolchain; none
/// recorded: any): else SNUG_ERROR_DRIVER_TOO_OLD naming both versions and
/// the toolchain that set the minimum.
Status checkDriverVersion(const Bundle &bundle, int driverVersion);

/// The oldest cuBLAS major release snug's GEMM calls need.
constexpr int kOldestCublasMajor = 12;

/// The cuBLAS (and cuBLASLt) major releases a session may load, in the
/// order to try them: the release of the bundle's kernels first (the major
/// of its recorded minimum driver; 12, the oldest, when none is recorded),
/// then each newer one up to the driver's own. Never one newer than the
/// driver: cuBLAS N runs only on a CUDA N driver (cuBLAS 13 fails in
/// cublasCreate on a 12.x driver), while an older cuBLAS runs on a newer
/// driver. Empty when the driver is older than kOldestCublasMajor.
std::vector<int> getCublasMajors(const Bundle &bundle, int driverVersion);

/// A caller-owned device arena must hold the device arena and be aligned to
/// kDeviceArenaAlignment (a device pointer, so only its value is checked).
Status checkCallerDeviceArena(const Bundle &bundle, const void *arena,
                              uint64_t arenaBytes);

/// Whether `weights` + `arena` bytes (the arena 0 when the caller owns it)
/// fit in `freeBytes` of the device's `totalBytes`; the out-of-memory error
/// names the parts, largest first.
Status checkDeviceMemory(const Bundle &bundle, uint64_t weights, uint64_t arena,
                         uint64_t freeBytes, uint64_t totalBytes,
                         const std::string &deviceName);

/// Every GEMM's leading dimensions fit cuBLAS's int parameters, and the
/// cuBLAS workspace is aligned as cuBLAS requires.
Status checkGemmLimits(const Bundle &bundle);

} // namespace cuda
} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_CUDA_DEVICECHECKS_H
