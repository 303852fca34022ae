//===- Nvrtc.cpp - Compiling emitted CUDA ahead of time -------------------===//
#include "compiler/cuda/Nvrtc.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <thread>

#ifdef SNUG_HAVE_NVRTC
#include <nvrtc.h>
#endif

namespace snug {
namespace cuda {

namespace {

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str());
}

#ifdef SNUG_HAVE_NVRTC
struct Job {
  bundle::KernelImage image;
  std::string log;
  std::string failure;
};

/// NVRTC's options for one image: part of the cache key.
std::vector<std::string> getOptions(const bundle::KernelImage &image) {
  std::string arch = (image.kind == bundle::ImagePtx ? "compute_" : "sm_") +
                     std::to_string(image.arch);
  return {"--gpu-architecture=" + arch, "--std=c++17", "--fmad=true",
          "--device-as-default-execution-space"};
}

std::string getNvrtcVersion() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

void compileOne(const std::string &source, Job &job) {
  nvrtcProgram program;
  nvrtcResult result = nvrtcCreateProgram(&program, source.c_str(), "snug.cu",
                                          0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS) {
    job.failure = nvrtcGetErrorString(result);
    return;
  }
  std::vector<std::string> optionText = getOptions(job.image);
  std::vector<const char *> options;
  for (const std::string &option : optionText)
    options.push_back(option.c_str());
  result = nvrtcCompileProgram(program, int(options.size()), options.data());
  size_t logSize = 0;
  if (nvrtcGetProgramLogSize(program, &logSize) == NVRTC_SUCCESS &&
      logSize > 1) {
    job.log.resize(logSize);
    nvrtcGetProgramLog(program, job.log.data());
    job.log.resize(logSize - 1);
  }
  if (result != NVRTC_SUCCESS) {
    job.failure = nvrtcGetErrorString(result);
    nvrtcDestroyProgram(&program);
    return;
  }
  size_t size = 0;
  if (job.image.kind == bundle::ImagePtx) {
    nvrtcGetPTXSize(program, &size);
    job.image.bytes.resize(size);
    result = nvrtcGetPTX(program, reinterpret_cast<char *>(job.image.bytes.data()));
  } else {
    nvrtcGetCUBINSize(program, &size);
    job.image.bytes.resize(size);
    result = nvrtcGetCUBIN(program, reinterpret_cast<char *>(job.image.bytes.data()));
  }
  if (result != NVRTC_SUCCESS)
    job.failure = nvrtcGetErrorString(result);
  nvrtcDestroyProgram(&program);
}

/// "node 'conv1' (Conv)" for the kernels NVRTC's log points at (lines
/// "snug.cu(123): error ...").
std::string blameKernels(const CudaProgram &program, llvm::StringRef log) {
  std::vector<std::string> nodes;
  llvm::SmallVector<llvm::StringRef, 16> lines;
  log.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (!line.consume_front("snug.cu(") || !line.contains("error"))
      continue;
    unsigned number;
    if (line.consumeInteger(10, number))
      continue;
    for (size_t i = 0; i < program.kernelLines.size(); ++i)
      if (number >= program.kernelLines[i].first &&
          number <= program.kernelLines[i].second &&
          std::find(nodes.begin(), nodes.end(), program.kernelNodes[i]) ==
              nodes.end())
        nodes.push_back(program.kernelNodes[i]);
  }
  if (nodes.empty())
    return "the prelude or an unknown kernel";
  return llvm::join(nodes, ", ");
}
#endif

} // namespace

std::vector<unsigned> getNvrtcArchs() {
  std::vector<unsigned> archs;
#ifdef SNUG_HAVE_NVRTC
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0)
    return archs;
  std::vector<int> values(size_t(count), 0);
  if (nvrtcGetSupportedArchs(values.data()) != NVRTC_SUCCESS)
    return archs;
  archs.assign(values.begin(), values.end());
#endif
  return archs;
}

bool isNvrtcAvailable() {
#ifdef SNUG_HAVE_NVRTC
  return true;
#else
  return false;
#endif
}

llvm::Expected<std::vector<bundle::KernelImage>>
compileCudaProgram(const CudaProgram &program, llvm::ArrayRef<unsigned> archs,
                   const KernelCache &cache, CompileStatistics *statistics) {
#ifndef SNUG_HAVE_NVRTC
  (void)program, (void)archs, (void)cache, (void)statistics;
  return makeError("this snugc was built without NVRTC (no CUDA toolkit); "
                   "compile with --target=host");
#else
  if (archs.empty())
    return makeError("no CUDA architecture given");
  std::vector<Job> jobs(archs.size() + 1);
  for (size_t i = 0; i < archs.size(); ++i)
    jobs[i].image = {bundle::ImageCubin, archs[i], {}};
  jobs.back().image = {bundle::ImagePtx,
                       *std::max_element(archs.begin(), archs.end()), {}};
  std::string version = getNvrtcVersion();
  std::vector<KernelCache::Key> keys;
  std::vector<Job *> toCompile;
  for (Job &job : jobs) {
    keys.push_back(KernelCache::makeKey(program.source, getOptions(job.image),
                                        job.image.kind, job.image.arch,
                                        version));
    if (auto cached = cache.lookup(keys.back()))
      job.image.bytes = std::move(*cached);
    else
      toCompile.push_back(&job);
  }
  std::vector<std::thread> threads;
  unsigned parallel = std::max(1u, std::thread::hardware_concurrency());
  for (size_t first = 0; first < toCompile.size(); first += parallel) {
    threads.clear();
    for (size_t i = first; i < std::min(toCompile.size(), first + parallel); ++i)
      threads.emplace_back(compileOne, std::cref(program.source),
                           std::ref(*toCompile[i]));
    for (std::thread &thread : threads)
      thread.join();
  }
  if (statistics) {
    statistics->fromCache = unsigned(jobs.size() - toCompile.size());
    statistics->compiled = unsigned(toCompile.size());
  }
  std::vector<bundle::KernelImage> images;
  for (Job &job : jobs) {
    if (!job.failure.empty())
      return makeError(
          "internal error: NVRTC could not compile the kernels of " +
          blameKernels(program, job.log) + " for " +
          (job.image.kind == bundle::ImagePtx ? "compute_" : "sm_") +
          llvm::Twine(job.image.arch) + " (" + job.failure + "):\n" + job.log);
    // What NVRTC compiled goes to the cache (a failure has returned above).
    if (std::find(toCompile.begin(), toCompile.end(), &job) != toCompile.end())
      cache.store(keys[size_t(&job - jobs.data())], job.image.bytes);
    images.push_back(std::move(job.image));
  }
  return images;
#endif
}

} // namespace cuda
} // namespace snug
