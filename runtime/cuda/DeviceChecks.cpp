//===- DeviceChecks.cpp - CUDA session checks that need no driver ---------===//
#include "runtime/cuda/DeviceChecks.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <utility>
#include <vector>

namespace snug {
namespace rt {
namespace cuda {

using bundle::DevicePlan;
using bundle::DeviceStep;

std::string smName(uint32_t arch) { return "sm_" + std::to_string(arch); }

namespace {

/// "12345 bytes (1.2 MiB)": the exact figure for scripts, the rounded one
/// for people.
std::string bytesString(uint64_t bytes) {
  std::string exact = std::to_string(bytes) + " bytes";
  if (bytes < 1024)
    return exact;
  const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = double(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 4)
    value /= 1024, ++unit;
  char rounded[32];
  std::snprintf(rounded, sizeof rounded, "%.1f %s", value, units[unit]);
  return exact + " (" + rounded + ")";
}

} // namespace

const KernelImageRef *selectKernelImage(const Bundle &bundle, uint32_t arch,
                                        const std::string &deviceName,
                                        Status &why) {
  const KernelImageRef *ptx = nullptr;
  for (const KernelImageRef &image : bundle.kernelImages) {
    if (image.kind == bundle::ImageCubin && image.arch == arch)
      return &image; // SASS for this very device: no JIT, no surprises
    // PTX of arch X runs on any device >= X; the newest such PTX lets the
    // JIT use the most features.
    if (image.kind == bundle::ImagePtx && image.arch <= arch &&
        (!ptx || image.arch > ptx->arch))
      ptx = &image;
  }
  if (ptx)
    return ptx;
  std::string cubins, ptxs;
  for (const KernelImageRef &image : bundle.kernelImages) {
    std::string &list = image.kind == bundle::ImageCubin ? cubins : ptxs;
    list += (list.empty() ? "" : ", ") +
            (image.kind == bundle::ImageCubin
                 ? smName(image.arch)
                 : "compute_" + std::to_string(image.arch));
  }
  std::string held = cubins.empty() && ptxs.empty()
                         ? "no kernel images"
                         : "cubins for " + (cubins.empty() ? "none" : cubins) +
                               " and PTX for " + (ptxs.empty() ? "none" : ptxs);
  why = Status(SNUG_ERROR_UNSUPPORTED,
               "bundle '" + bundle.path + "' has no kernel image for the " +
                   "CUDA device '" + deviceName + "' (" + smName(arch) +
                   "): it holds " + held + "; compile it for " + smName(arch) +
                   " (a cubin for that arch, or PTX for " + "an older one)");
  return nullptr;
}

Status checkDriverVersion(const Bundle &bundle, int driverVersion) {
  const bundle::KernelToolchain &toolchain = bundle.toolchain;
  if (!toolchain.isRecorded() ||
      driverVersion >= int64_t(toolchain.minDriverVersion))
    return Status::ok();
  using bundle::cudaVersionString;
  std::string made = "NVRTC " + cudaVersionString(toolchain.nvrtcVersion) +
                     ", nvJitLink " +
                     cudaVersionString(toolchain.jitLinkVersion);
  if (toolchain.ptxIsa)
    made += ", PTX ISA " + bundle::ptxIsaString(toolchain.ptxIsa);
  return Status(SNUG_ERROR_DRIVER_TOO_OLD,
                "bundle '" + bundle.path + "' needs a CUDA " +
                    cudaVersionString(toolchain.minDriverVersion) +
                    " driver (its kernels: " + made +
                    "); this driver is CUDA " +
                    cudaVersionString(uint32_t(std::max(driverVersion, 0))) +
                    " (cuDriverGetVersion " + std::to_string(driverVersion) +
                    "): update the NVIDIA driver, or run the bundle on the "
                    "host");
}

std::vector<int> getCublasMajors(const Bundle &bundle, int driverVersion) {
  int first = std::max(int(bundle.toolchain.minDriverVersion / 1000),
                       kOldestCublasMajor);
  std::vector<int> majors;
  for (int major = first; major <= driverVersion / 1000; ++major)
    majors.push_back(major);
  return majors;
}

Status checkCallerDeviceArena(const Bundle &bundle, const void *arena,
                              uint64_t arenaBytes) {
  if (!arena)
    return Status::ok();
  if (reinterpret_cast<uintptr_t>(arena) % kDeviceArenaAlignment)
    return invalidArgument("caller device arena is not aligned to " +
                           std::to_string(kDeviceArenaAlignment) + " bytes");
  // Without a device plan the size cannot be judged; the session fails
  // later, and more usefully, on the missing plan.
  if (bundle.hasDevicePlan && arenaBytes < bundle.devicePlan.arenaBytes)
    return invalidArgument(
        "caller device arena of " + std::to_string(arenaBytes) +
        " bytes is smaller than the " +
        std::to_string(bundle.devicePlan.arenaBytes) +
        " bytes the device plan of '" + bundle.path +
        "' needs (the host plan's arena plus the cuBLAS workspace)");
  return Status::ok();
}

Status checkDeviceMemory(const Bundle &bundle, uint64_t weights, uint64_t arena,
                         uint64_t freeBytes, uint64_t totalBytes,
                         const std::string &deviceName) {
  uint64_t required = weights + arena;
  if (required <= freeBytes)
    return Status::ok();
  const DevicePlan &plan = bundle.devicePlan;
  std::vector<std::pair<uint64_t, std::string>> parts;
  parts.push_back({weights, "weights " + bytesString(weights)});
  if (arena)
    parts.push_back(
        {arena, "arena " + bytesString(arena) +
                    (plan.getLargestWorkspaceBytes()
                         ? " with cuBLAS workspaces of up to " +
                               bytesString(plan.getLargestWorkspaceBytes()) +
                               " inside"
                         : std::string())});
  else
    parts.push_back({0, "arena owned by the caller"});
  std::stable_sort(
      parts.begin(), parts.end(),
      [](const auto &a, const auto &b) { return a.first > b.first; });
  std::string list;
  for (const auto &part : parts)
    list += (list.empty() ? "" : ", ") + part.second;
  return Status(SNUG_ERROR_OUT_OF_MEMORY,
                "bundle '" + bundle.path + "' needs " + bytesString(required) +
                    " on the CUDA device (" + list + "), the device '" +
                    deviceName + "' has " + bytesString(freeBytes) +
                    " free of " + bytesString(totalBytes));
}

Status checkGemmLimits(const Bundle &bundle) {
  const DevicePlan &plan = bundle.devicePlan;
  // The reader checked each GEMM's workspace (inside the arena, 256-byte
  // aligned, clear of the GEMM's operands).
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const DeviceStep &step = plan.steps[i];
    if (step.kind != bundle::StepGemm)
      continue;
    const bundle::DeviceGemm &g = step.gemm;
    // The reader bounded m, n, k and batch to int32 already; cuBLAS's
    // strided-batched API takes the leading dimensions as int too.
    for (int64_t ld : {g.lda, g.ldb, g.ldc})
      if (ld > INT_MAX)
        return Status(SNUG_ERROR_UNSUPPORTED,
                      "bundle '" + bundle.path + "': device step " +
                          std::to_string(i) + " of " +
                          bundle.ops[step.op].describe(step.op) +
                          ": GEMM leading dimension " + std::to_string(ld) +
                          " exceeds cuBLAS's 32-bit limit");
  }
  return Status::ok();
}

} // namespace cuda
} // namespace rt
} // namespace snug
