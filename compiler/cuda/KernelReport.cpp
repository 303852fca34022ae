//===- KernelReport.cpp - Each kernel's resources against the device limits ===//
#include "compiler/cuda/KernelReport.h"
#include "compiler/cuda/CompileError.h"
#include "compiler/cuda/DeviceLimits.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <algorithm>

namespace snug {
namespace cuda {

namespace {

/// Each plan kernel's largest launch, as a record without resources.
std::vector<KernelRecord> getLaunchShapes(const bundle::DevicePlan &plan,
                                          llvm::ArrayRef<std::string> nodes) {
  std::vector<KernelRecord> shapes(plan.kernels.size());
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    shapes[k].name = plan.kernels[k];
    if (k < nodes.size())
      shapes[k].node = nodes[k];
  }
  for (const bundle::DeviceStep &step : plan.steps) {
    if (step.kind != bundle::StepLaunch ||
        step.launch.kernel >= shapes.size())
      continue;
    const bundle::DeviceLaunch &launch = step.launch;
    KernelRecord &shape = shapes[launch.kernel];
    uint64_t threads =
        uint64_t(launch.block[0]) * launch.block[1] * launch.block[2];
    if (!shape.launches || threads > shape.getThreads())
      std::copy(launch.block, launch.block + 3, shape.block);
    for (unsigned d = 0; d < 3; ++d)
      shape.grid[d] = shape.launches ? std::max(shape.grid[d], launch.grid[d])
                                     : launch.grid[d];
    shape.dynamicSharedBytes =
        std::max<uint64_t>(shape.dynamicSharedBytes, launch.sharedBytes);
    ++shape.launches;
  }
  return shapes;
}

std::string describe(const KernelRecord &record) {
  std::string text = "kernel '" + record.name + "'";
  if (!record.node.empty())
    text += " of " + record.node;
  return text + " on sm_" + std::to_string(record.arch);
}

uint64_t roundUp(uint64_t value, uint64_t unit) {
  return (value + unit - 1) / unit * unit;
}

} // namespace

llvm::Expected<std::vector<KernelRecord>>
buildKernelRecords(const bundle::DevicePlan &plan,
                   llvm::ArrayRef<bundle::KernelImage> images,
                   llvm::ArrayRef<std::string> logs,
                   llvm::ArrayRef<std::string> nodes) {
  std::vector<KernelRecord> shapes = getLaunchShapes(plan, nodes);
  std::vector<KernelRecord> records;
  for (size_t i = 0; i < images.size(); ++i) {
    const bundle::KernelImage &image = images[i];
    if (image.kind != bundle::ImageCubin)
      continue;
    auto kernels = readCubinResources(image.bytes);
    if (!kernels)
      return makeError("the sm_" + llvm::Twine(image.arch) + " cubin: " +
                       llvm::toString(kernels.takeError()));
    llvm::StringMap<const KernelResources *> byName;
    for (const KernelResources &kernel : *kernels)
      byName[kernel.name] = &kernel;
    llvm::StringMap<uint64_t> spills =
        readSpillBytes(i < logs.size() ? llvm::StringRef(logs[i]) : "");
    for (const KernelRecord &shape : shapes) {
      if (!shape.launches)
        continue;
      const KernelResources *resources = byName.lookup(shape.name);
      if (!resources)
        return makeError("the sm_" + llvm::Twine(image.arch) +
                         " cubin has no kernel '" + shape.name + "'");
      KernelRecord record = shape;
      record.arch = image.arch;
      record.resources = *resources;
      record.spillBytes = spills.lookup(shape.name);
      records.push_back(std::move(record));
    }
  }
  return records;
}

llvm::Error checkKernelLimits(const KernelRecord &record) {
  const DeviceLimits &limits = getDeviceLimits(record.arch);
  auto refuse = [&](const llvm::Twine &what) {
    return makeError(describe(record) + ": " + what);
  };
  uint64_t threads = record.getThreads();
  if (threads > limits.maxThreadsPerBlock)
    return refuse("a block of " + llvm::Twine(threads) +
                  " threads is over the limit of " +
                  llvm::Twine(limits.maxThreadsPerBlock) + " per block");
  static const char *const kAxes[] = {"x", "y", "z"};
  for (unsigned d = 0; d < 3; ++d) {
    if (record.block[d] > limits.maxBlock[d])
      return refuse("blockDim." + llvm::Twine(kAxes[d]) + " = " +
                    llvm::Twine(record.block[d]) + " is over the limit of " +
                    llvm::Twine(limits.maxBlock[d]));
    if (record.grid[d] > limits.maxGrid[d])
      return refuse("gridDim." + llvm::Twine(kAxes[d]) + " = " +
                    llvm::Twine(record.grid[d]) + " is over the limit of " +
                    llvm::Twine(limits.maxGrid[d]));
  }
  if (record.resources.maxThreads && threads > record.resources.maxThreads)
    return refuse("a block of " + llvm::Twine(threads) +
                  " threads is over its __launch_bounds__ of " +
                  llvm::Twine(record.resources.maxThreads));
  // Per warp, in allocation units; a block takes whole warps.
  uint64_t perWarp =
      roundUp(uint64_t(record.resources.registers) * 32, limits.registerUnit);
  uint64_t registers = perWarp * roundUp(threads, 32) / 32;
  if (registers > limits.registersPerBlock)
    return refuse(llvm::Twine(record.resources.registers) +
                  " registers x " + llvm::Twine(threads) + " threads need " +
                  llvm::Twine(registers) +
                  " registers (allocated per warp in units of " +
                  llvm::Twine(limits.registerUnit) + "), over the limit of " +
                  llvm::Twine(limits.registersPerBlock) + " per block");
  uint64_t sharedLimit =
      uint64_t(limits.sharedPerBlock) + limits.reservedSharedInCubin;
  std::string reserved =
      limits.reservedSharedInCubin
          ? " with " + std::to_string(limits.reservedSharedInCubin) +
                " reserved"
          : std::string();
  if (record.getSharedBytes() > sharedLimit)
    return refuse(llvm::Twine(record.getSharedBytes()) +
                  " bytes of shared memory (" +
                  llvm::Twine(record.resources.sharedBytes) + " static" +
                  reserved + ", " + llvm::Twine(record.dynamicSharedBytes) +
                  " dynamic) are over the limit of " +
                  llvm::Twine(sharedLimit) +
                  " per block without the cuFuncSetAttribute opt-in");
  return llvm::Error::success();
}

llvm::Error checkKernelLimits(llvm::ArrayRef<KernelRecord> records) {
  for (const KernelRecord &record : records)
    if (llvm::Error error = checkKernelLimits(record))
      return error;
  return llvm::Error::success();
}

LocalMemoryReservation
computeLocalMemoryReservation(llvm::ArrayRef<KernelRecord> records) {
  LocalMemoryReservation worst;
  worst.known = !records.empty();
  uint64_t worstLocal = 0;
  for (const KernelRecord &record : records) {
    if (!record.resources.localBytes)
      continue;
    const DeviceLimits &limits = getDeviceLimits(record.arch);
    uint64_t perThread = roundUp(record.resources.localBytes + 512, 256);
    uint64_t bytes =
        perThread * limits.threadsPerSm * uint64_t(limits.largestGpuSms);
    // Of kernels that round alike, the one with the largest stack.
    if (bytes < worst.bytes ||
        (bytes == worst.bytes && record.resources.localBytes <= worstLocal))
      continue;
    worstLocal = record.resources.localBytes;
    worst.bytes = bytes;
    worst.kernel = record.name;
    worst.arch = record.arch;
    worst.bytesPerThread = perThread;
    worst.threadsPerSm = limits.threadsPerSm;
    worst.sms = limits.largestGpuSms;
    worst.gpu = limits.largestGpu;
  }
  return worst;
}

void printKernelReportJson(llvm::ArrayRef<KernelRecord> records,
                           llvm::raw_ostream &os) {
  auto dims = [](const uint32_t (&d)[3]) {
    return llvm::json::Array{int64_t(d[0]), int64_t(d[1]), int64_t(d[2])};
  };
  llvm::json::Array list;
  for (const KernelRecord &record : records)
    list.push_back(llvm::json::Object{
        {"name", record.name},
        // A model's names may hold any bytes; llvm::json asserts on
        // those that are not UTF-8.
        {"node", llvm::json::isUTF8(record.node)
                     ? record.node
                     : llvm::json::fixUTF8(record.node)},
        {"arch", "sm_" + std::to_string(record.arch)},
        {"registers", int64_t(record.resources.registers)},
        {"threads", int64_t(record.getThreads())},
        {"block", dims(record.block)},
        {"grid", dims(record.grid)},
        {"launch_bounds", int64_t(record.resources.maxThreads)},
        {"shared_bytes", int64_t(record.getSharedBytes())},
        {"local_bytes", int64_t(record.resources.localBytes)},
        {"spill_bytes", int64_t(record.spillBytes)},
        {"launches", int64_t(record.launches)}});
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(list))) << '\n';
}

} // namespace cuda
} // namespace snug
