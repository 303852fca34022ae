//===- CudaSupport.cpp - The CUDA target in snugc -------------------------===//
#include "tools/snugc/CudaSupport.h"
#include "tools/snugc/SnugcCommands.h"

#include "compiler/Driver.h"
#include "compiler/bundle/BundleWriter.h"
#include "compiler/cuda/KernelReport.h"
#include "compiler/cuda/Nvrtc.h"
#include "compiler/FileAccessLLVM.h"
#include "core/CheckedArithmetic.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>

namespace cl = llvm::cl;

namespace snug {
namespace snugc {

static cl::OptionCategory &getTargetCategory() {
  static cl::OptionCategory category("snugc target options");
  return category;
}

static cl::opt<std::string> target(
    "target",
    cl::desc("cuda (kernels, device plan, runs on the host too) or host "
             "(host executor only, no NVRTC)"),
    cl::init(cuda::isNvrtcAvailable() ? "cuda" : "host"), InPlanningCommands(),
    cl::cat(getTargetCategory()));
static cl::opt<std::string>
    archList("arch",
             cl::desc("GPU architectures to compile cubins for, comma "
                      "separated; PTX is added for the newest"),
             cl::value_desc("sm_80,sm_90"), cl::init("sm_80,sm_90"),
             InPlanningCommands(), cl::cat(getTargetCategory()));
static cl::opt<uint64_t> cublasWorkspace(
    "cublas-workspace",
    cl::desc("The most cuBLAS workspace one GEMM may get, in bytes (a "
             "multiple of 256, at least 16384); each GEMM's is planned in the "
             "arena from its shape, at least cuBLAS's 16 KiB minimum"),
    cl::init(4u << 20), InPlanningCommands(), cl::cat(getTargetCategory()));
static cl::opt<std::string>
    dumpCuda("dump-cuda",
             cl::desc("Write the emitted CUDA C++ and device plan to "
                      "DIR/<model>.cu, and each cubin to "
                      "DIR/<model>.sm_XX.cubin"),
             cl::value_desc("DIR"), cl::init(""),
             cl::sub(getCompileCommand()), cl::sub(getTrainCommand()),
             cl::cat(getTargetCategory()));

static cl::opt<std::string> kernelReport(
    "kernel-report",
    cl::desc("Write each kernel's registers, launch shape, shared, local and "
             "spill bytes per cubin arch to FILE as JSON"),
    cl::value_desc("FILE.json"), cl::init(""), cl::sub(getCompileCommand()),
    cl::sub(getTrainCommand()), cl::cat(getTargetCategory()));

static cl::opt<bool> noKernelCache(
    "no-kernel-cache",
    cl::desc("Compile every kernel image with NVRTC, neither reading nor "
             "writing the kernel cache ($XDG_CACHE_HOME/snug/kernels)"),
    cl::sub(getCompileCommand()), cl::sub(getTrainCommand()),
    cl::cat(getTargetCategory()));

static llvm::Error userError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str());
}

/// The architectures of --arch as numbers (sm_80 -> 80), sorted, unique.
static llvm::Expected<std::vector<unsigned>> parseArchs() {
  std::vector<unsigned> archs;
  llvm::SmallVector<llvm::StringRef, 4> items;
  llvm::StringRef(archList).split(items, ',', -1, false);
  for (llvm::StringRef item : items) {
    llvm::StringRef digits = item.trim();
    digits.consume_front("sm_");
    unsigned arch;
    if (digits.getAsInteger(10, arch) || arch < 75 || arch > 129)
      return userError("--arch: '" + item.trim() +
                       "' is not an architecture of the form sm_XY with "
                       "75 <= XY < 130");
    archs.push_back(arch);
  }
  if (archs.empty())
    return userError("--arch: no architecture given");
  // Asking NVRTC maps it for a moment: only when kernels will be compiled.
  std::vector<unsigned> supported =
      target == "cuda" ? cuda::getNvrtcArchs() : std::vector<unsigned>();
  for (unsigned arch : archs)
    if (!supported.empty() &&
        std::find(supported.begin(), supported.end(), arch) == supported.end()) {
      std::string list;
      for (unsigned known : supported)
        list += (list.empty() ? "sm_" : ", sm_") + std::to_string(known);
      return userError("--arch: this NVRTC cannot compile for sm_" +
                       std::to_string(arch) + " (it knows " + list + ")");
    }
  std::sort(archs.begin(), archs.end());
  archs.erase(std::unique(archs.begin(), archs.end()), archs.end());
  return archs;
}

llvm::Error checkTargetFlags() {
  if (target != "cuda" && target != "host")
    return userError("--target must be cuda or host, not '" + target + "'");
  if (target == "cuda" && !cuda::isNvrtcAvailable())
    return userError("--target=cuda: this snugc was built without NVRTC (no "
                     "CUDA toolkit); use --target=host");
  if (cublasWorkspace % 256)
    return userError("--cublas-workspace must be a multiple of 256");
  if (cublasWorkspace > kMaxTensorBytes)
    return userError("--cublas-workspace=" + std::to_string(cublasWorkspace) +
                     " is more than 1 PiB (" +
                     std::to_string(kMaxTensorBytes) + " bytes)");
  if (!dumpCuda.empty() && target != "cuda")
    return userError("--dump-cuda needs --target=cuda");
  if (!kernelReport.empty() && target != "cuda")
    return userError("--kernel-report needs --target=cuda");
  return parseArchs().takeError();
}

bool targetsCuda() { return target == "cuda"; }

uint64_t getCublasWorkspaceCap() { return cublasWorkspace; }

std::string getTargetDescription() {
  return targetsCuda() ? "cuda " + archList.getValue() : target.getValue();
}

llvm::Expected<llvm::Optional<cuda::CudaProgram>>
emitForTarget(const ir::Module &module) {
  if (!targetsCuda())
    return llvm::Optional<cuda::CudaProgram>();
  auto archs = parseArchs();
  if (!archs)
    return archs.takeError();
  auto program = emitCudaProgram(module, *archs);
  if (!program)
    return program.takeError();
  return llvm::Optional<cuda::CudaProgram>(std::move(*program));
}

static std::string getDumpCudaPath(llvm::StringRef stem) {
  llvm::SmallString<256> path(dumpCuda);
  llvm::sys::path::append(path, stem + ".cu");
  return path.str().str();
}

/// DIR/<stem>.sm_XX.cubin: --dump-cuda's copy of a cubin, for cuobjdump
/// and nvdisasm.
static std::string getDumpCubinPath(llvm::StringRef stem, unsigned arch) {
  llvm::SmallString<256> path(dumpCuda);
  llvm::sys::path::append(path, stem + ".sm_" + llvm::Twine(arch) + ".cubin");
  return path.str().str();
}

void addTargetOutputs(llvm::StringRef stem, std::vector<NamedPath> &outputs) {
  if (!dumpCuda.empty()) {
    outputs.push_back({getDumpCudaPath(stem), "--dump-cuda"});
    if (auto archs = parseArchs())
      for (unsigned arch : *archs)
        outputs.push_back({getDumpCubinPath(stem, arch), "--dump-cuda"});
    else
      llvm::consumeError(archs.takeError()); // checkTargetFlags reports it
  }
  if (!kernelReport.empty() && kernelReport != "-")
    outputs.push_back({kernelReport, "--kernel-report"});
}

bool wantsKernelReport() { return !kernelReport.empty(); }

/// Reads every cubin's kernels, refuses a launch over its arch's limits
/// (before anything is written), then writes --kernel-report.
static llvm::Expected<LocalMemoryReservation>
checkKernels(const cuda::CudaProgram &program,
             llvm::ArrayRef<bundle::KernelImage> images,
             llvm::ArrayRef<std::string> logs) {
  auto records = cuda::buildKernelRecords(program.plan, images, logs,
                                          program.kernelNodes);
  if (!records)
    return userError("internal error: reading the compiled kernels: " +
                     llvm::toString(records.takeError()));
  if (llvm::Error error = cuda::checkKernelLimits(*records))
    return userError("a launch is over its GPU's limits: " +
                     llvm::toString(std::move(error)));
  if (!kernelReport.empty()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    cuda::printKernelReportJson(*records, os);
    if (llvm::Error error = writeOutputFile(kernelReport, os.str()))
      return error;
  }
  return cuda::computeLocalMemoryReservation(*records);
}

llvm::Expected<std::vector<bundle::KernelImage>>
compileForTarget(const cuda::CudaProgram &program, llvm::StringRef stem,
                 LocalMemoryReservation &localMemory,
                 llvm::function_ref<void()> beforeCompiling) {
  if (!dumpCuda.empty()) {
    if (std::error_code error = llvm::sys::fs::create_directories(dumpCuda))
      return userError("--dump-cuda: cannot create '" + dumpCuda +
                       "': " + error.message());
    std::string text =
        program.source + "\n" + cuda::describeDevicePlan(program.plan);
    // A name snug chose inside the directory: a link there is replaced,
    // not written through.
    if (llvm::Error error =
            writeOutputFile(getDumpCudaPath(stem), text, LinkPolicy::Replace))
      return error;
  }
  auto archs = parseArchs();
  if (!archs)
    return archs.takeError();
  cuda::KernelCache cache(noKernelCache
                              ? std::string()
                              : cuda::KernelCache::getDefaultDirectory());
  cuda::CompileStatistics statistics;
  std::vector<std::string> logs;
  auto images = cuda::compileCudaProgram(program, *archs, cache, &statistics,
                                         beforeCompiling, &logs);
  if (images)
    llvm::errs() << "kernels: " << statistics.compiled
                 << " images compiled by NVRTC, " << statistics.fromCache
                 << " from the kernel cache"
                 << (cache.isEnabled() ? " (" + cache.getDirectory() + ")"
                                       : std::string(" (off)"))
                 << '\n';
  if (!images)
    return images.takeError();
  if (!dumpCuda.empty())
    for (const bundle::KernelImage &image : *images)
      if (image.kind == bundle::ImageCubin)
        if (llvm::Error error = writeOutputFile(
                getDumpCubinPath(stem, image.arch),
                llvm::toStringRef(image.bytes), LinkPolicy::Replace))
          return error;
  auto reservation = checkKernels(program, *images, logs);
  if (!reservation)
    return reservation.takeError();
  localMemory = *reservation;
  return images;
}

} // namespace snugc
} // namespace snug
