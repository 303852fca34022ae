//===- DeviceLimits.cpp - What one block may take, per GPU architecture ---===//
//
// Sources:
//  - CUDA C++ Programming Guide, "Compute Capabilities", table "Technical
//    Specifications per Compute Capability": 1024 threads per block, block
//    (1024, 1024, 64), grid (2^31 - 1, 65535, 65535), 64 K 32-bit
//    registers per block, 48 KiB of static shared memory per block, the
//    opt-in maximum (7.5: 64 KiB, 8.0/8.7: 163 KiB, 8.6/8.9/12.0: 99 KiB,
//    9.0/10.0: 227 KiB) and the resident threads per SM (7.5: 1024,
//    8.6/8.7/8.9/12.0: 1536, 8.0/9.0/10.0: 2048).
//  - CUDA Occupancy Calculator: registers are allocated per warp in units
//    of 256.
//  - The SM counts: NVIDIA's data sheets of the largest part of each
//    architecture.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/DeviceLimits.h"

#include <iterator>

namespace snug {
namespace cuda {

namespace {

DeviceLimits makeLimits(unsigned arch, uint32_t sharedOptIn,
                        uint32_t threadsPerSm, uint32_t sms,
                        const char *gpu) {
  DeviceLimits limits;
  limits.arch = arch;
  limits.sharedOptInPerBlock = sharedOptIn;
  limits.threadsPerSm = threadsPerSm;
  limits.largestGpuSms = sms;
  limits.largestGpu = gpu;
  limits.reservedSharedInCubin = arch >= 90 ? 1024 : 0;
  return limits;
}

constexpr uint32_t kKiB = 1024;

// Oldest first; getDeviceLimits relies on the order.
const DeviceLimits kTable[] = {
    makeLimits(75, 64 * kKiB, 1024, 72, "Quadro RTX 8000"),
    makeLimits(80, 163 * kKiB, 2048, 108, "A100"),
    makeLimits(86, 99 * kKiB, 1536, 84, "RTX 3090 Ti / RTX A6000"),
    makeLimits(87, 163 * kKiB, 1536, 16, "Jetson AGX Orin"),
    makeLimits(89, 99 * kKiB, 1536, 142, "L40S / RTX 6000 Ada"),
    makeLimits(90, 227 * kKiB, 2048, 132, "H100 SXM / H200"),
    makeLimits(100, 227 * kKiB, 2048, 148, "B200"),
    makeLimits(120, 99 * kKiB, 1536, 188,
               "RTX PRO 6000 Blackwell"),
};

} // namespace

const DeviceLimits &getDeviceLimits(unsigned arch) {
  const DeviceLimits *best = &kTable[0];
  for (const DeviceLimits &row : kTable)
    if (row.arch == arch ||
        (row.arch / 10 == arch / 10 && row.arch <= arch))
      best = &row;
  return *best;
}

} // namespace cuda
} // namespace snug
