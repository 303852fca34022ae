//===- Nvrtc.cpp - Compiling emitted CUDA ahead of time -------------------===//
#include "compiler/cuda/Nvrtc.h"
#include "compiler/cuda/CompileError.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

#ifdef SNUG_HAVE_NVRTC
#include "compiler/cuda/NvrtcLibrary.h"
#endif

namespace snug {
namespace cuda {

namespace {

#ifdef SNUG_HAVE_NVRTC
/// NVRTC's options for the PTX of compute_`arch`: part of the cache key of
/// that PTX and of every cubin assembled from it.
std::vector<std::string> getNvrtcOptions(unsigned arch) {
  return {"--gpu-architecture=compute_" + std::to_string(arch), "--std=c++17",
          "--fmad=true", "--device-as-default-execution-space"};
}

/// nvJitLink's options for the cubin of sm_`arch`. -verbose makes ptxas
/// log each kernel's spill stores, which the cubin does not record
/// (CubinInfo.h); it also names the flag in the cubin's toolkit note.
std::vector<std::string> getJitLinkOptions(unsigned arch) {
  return {"-arch=sm_" + std::to_string(arch), "-verbose"};
}

/// The versions of both compilers, read once per process: each library is
/// mapped for the moment it takes and closed again.
struct CompilerVersions {
  std::string nvrtc, jitLink; // "12.0"
  std::string nvrtcPath;      // the library that loaded
  std::vector<unsigned> archs; // what NVRTC compiles for
  std::string error;           // why a library would not load
};

const CompilerVersions &getCompilerVersions() {
  static const CompilerVersions versions = [] {
    CompilerVersions result;
    if (auto nvrtc = NvrtcLibrary::load()) {
      result.nvrtcPath = nvrtc->library.getPath();
      int major = 0, minor = 0;
      if (nvrtc->version(&major, &minor) == NVRTC_SUCCESS)
        result.nvrtc = std::to_string(major) + "." + std::to_string(minor);
      int count = 0;
      if (nvrtc->getNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
        std::vector<int> values(size_t(count), 0);
        if (nvrtc->getSupportedArchs(values.data()) == NVRTC_SUCCESS)
          result.archs.assign(values.begin(), values.end());
      }
    } else {
      result.error = llvm::toString(nvrtc.takeError());
      return result;
    }
    if (auto jitLink = JitLinkLibrary::load()) {
      result.jitLink = jitLink->getVersion();
    } else {
      result.error = llvm::toString(jitLink.takeError());
    }
    return result;
  }();
  return versions;
}

/// One image of the bundle: where it comes from and its cache key.
struct Slot {
  Slot(uint8_t kind, unsigned arch, size_t group, const KernelCache::Key &key)
      : group(group), key(key) {
    image.kind = kind;
    image.arch = arch;
  }
  bundle::KernelImage image;
  size_t group; // the PTX it is (or is assembled from)
  KernelCache::Key key;
  /// A cubin's ptxas log (CubinInfo.h reads its spills), cached in the
  /// same entry (packCubin).
  std::string log;
  bool cached = false;
};

/// A cubin's cache entry: its size (8 bytes, little-endian), the cubin,
/// then ptxas's log, so that a cached cubin keeps its log.
std::vector<uint8_t> packCubin(llvm::ArrayRef<uint8_t> cubin,
                               llvm::StringRef log) {
  std::vector<uint8_t> entry;
  entry.reserve(8 + cubin.size() + log.size());
  for (unsigned i = 0; i < 8; ++i)
    entry.push_back(uint8_t(uint64_t(cubin.size()) >> (8 * i)));
  entry.insert(entry.end(), cubin.begin(), cubin.end());
  entry.insert(entry.end(), log.begin(), log.end());
  return entry;
}

/// packCubin's inverse; false for an entry too short for its size.
bool unpackCubin(llvm::ArrayRef<uint8_t> entry, std::vector<uint8_t> &cubin,
                 std::string &log) {
  if (entry.size() < 8)
    return false;
  uint64_t size = 0;
  for (unsigned i = 0; i < 8; ++i)
    size |= uint64_t(entry[i]) << (8 * i);
  if (size > entry.size() - 8)
    return false;
  cubin.assign(entry.begin() + 8, entry.begin() + 8 + size);
  log.assign(entry.begin() + 8 + size, entry.end());
  return true;
}

/// The images of a compile in bundle order, a cubin per arch and then each
/// group's PTX, with what the cache already holds filled in.
struct Slots {
  std::vector<Slot> slots;
  std::vector<size_t> ptxOf; // group -> its PTX's slot

  Slots(const CudaProgram &program,
        const std::vector<std::vector<unsigned>> &groups,
        const CompilerVersions &versions, const KernelCache &cache) {
    for (size_t g = 0; g < groups.size(); ++g)
      for (unsigned arch : groups[g]) {
        std::vector<std::string> options = getNvrtcOptions(groups[g].front());
        for (std::string &option : getJitLinkOptions(arch))
          options.push_back(std::move(option));
        slots.emplace_back(
            bundle::ImageCubin, arch, g,
            KernelCache::makeKey(program.source, options, bundle::ImageCubin,
                                 arch,
                                 "nvrtc " + versions.nvrtc + " nvJitLink " +
                                     versions.jitLink));
      }
    for (size_t g = 0; g < groups.size(); ++g) {
      ptxOf.push_back(slots.size());
      unsigned arch = groups[g].front();
      slots.emplace_back(bundle::ImagePtx, arch, g,
                         KernelCache::makeKey(program.source,
                                              getNvrtcOptions(arch),
                                              bundle::ImagePtx, arch,
                                              "nvrtc " + versions.nvrtc));
    }
    for (Slot &slot : slots) {
      auto bytes = cache.lookup(slot.key);
      if (!bytes)
        continue;
      if (slot.image.kind != bundle::ImageCubin)
        slot.image.bytes = std::move(*bytes);
      else if (!unpackCubin(*bytes, slot.image.bytes, slot.log))
        continue;
      slot.cached = true;
    }
  }

  bool anyMissing(uint8_t kind) const {
    return std::any_of(slots.begin(), slots.end(), [&](const Slot &slot) {
      return !slot.cached && slot.image.kind == kind;
    });
  }
};

/// Compiles the source to PTX for compute_`arch`; the log (warnings too)
/// goes to `log`.
llvm::Expected<std::vector<uint8_t>> compilePtx(const NvrtcLibrary &nvrtc,
                                                const std::string &source,
                                                unsigned arch,
                                                std::string &log) {
  nvrtcProgram program;
  nvrtcResult result = nvrtc.createProgram(&program, source.c_str(),
                                           "snug.cu", 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS)
    return makeError(nvrtc.getErrorString(result));
  std::vector<std::string> optionText = getNvrtcOptions(arch);
  std::vector<const char *> options;
  for (const std::string &option : optionText)
    options.push_back(option.c_str());
  result = nvrtc.compileProgram(program, int(options.size()), options.data());
  size_t logSize = 0;
  if (nvrtc.getProgramLogSize(program, &logSize) == NVRTC_SUCCESS &&
      logSize > 1) {
    log.resize(logSize);
    nvrtc.getProgramLog(program, log.data());
    log.resize(logSize - 1);
  }
  std::vector<uint8_t> ptx;
  size_t size = 0;
  if (result == NVRTC_SUCCESS &&
      (result = nvrtc.getPTXSize(program, &size)) == NVRTC_SUCCESS) {
    ptx.resize(size);
    result = nvrtc.getPTX(program, reinterpret_cast<char *>(ptx.data()));
  }
  nvrtc.destroyProgram(&program);
  if (result != NVRTC_SUCCESS)
    return makeError(nvrtc.getErrorString(result));
  return ptx;
}

/// Assembles PTX into the cubin of sm_`arch`; ptxas's verbose log goes to
/// `infoLog`.
llvm::Expected<std::vector<uint8_t>>
assembleCubin(const JitLinkLibrary &jitLink, llvm::ArrayRef<uint8_t> ptx,
              unsigned arch, std::string &infoLog) {
  std::vector<std::string> optionText = getJitLinkOptions(arch);
  std::vector<const char *> options;
  for (const std::string &option : optionText)
    options.push_back(option.c_str());
  nvJitLinkHandle handle;
  nvJitLinkResult result =
      jitLink.create(&handle, uint32_t(options.size()), options.data());
  if (result != NVJITLINK_SUCCESS)
    return makeError("nvJitLink error " + llvm::Twine(int(result)));
  std::vector<uint8_t> cubin;
  size_t size = 0, logSize = 0;
  // The PTX image ends in its NUL, which nvJitLink does not take as text.
  size_t ptxBytes = ptx.size() - (!ptx.empty() && ptx.back() == 0);
  if ((result = jitLink.addData(handle, NVJITLINK_INPUT_PTX, ptx.data(),
                                ptxBytes, "snug.ptx")) == NVJITLINK_SUCCESS &&
      (result = jitLink.complete(handle)) == NVJITLINK_SUCCESS &&
      (result = jitLink.getLinkedCubinSize(handle, &size)) ==
          NVJITLINK_SUCCESS) {
    cubin.resize(size);
    result = jitLink.getLinkedCubin(handle, cubin.data());
  }
  if (result == NVJITLINK_SUCCESS &&
      jitLink.getInfoLogSize(handle, &logSize) == NVJITLINK_SUCCESS &&
      logSize > 1) {
    infoLog.resize(logSize);
    jitLink.getInfoLog(handle, infoLog.data());
    infoLog.resize(logSize - 1);
  }
  std::string log;
  if (result != NVJITLINK_SUCCESS &&
      jitLink.getErrorLogSize(handle, &logSize) == NVJITLINK_SUCCESS &&
      logSize > 1) {
    log.resize(logSize);
    jitLink.getErrorLog(handle, log.data());
    log.resize(logSize - 1);
  }
  jitLink.destroy(&handle);
  if (result != NVJITLINK_SUCCESS)
    return makeError("nvJitLink error " + llvm::Twine(int(result)) + ":\n" +
                     log);
  return cubin;
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

/// Every group's PTX is at most kMaxPtxIsa, whether NVRTC wrote it now or
/// the cache held it: else the error names the group, the ISA and the
/// NVRTC that wrote it.
llvm::Error checkPtxIsa(const Slots &slots, const CompilerVersions &versions) {
  for (size_t index : slots.ptxOf) {
    const Slot &ptx = slots.slots[index];
    llvm::Optional<unsigned> isa = getPtxIsa(ptx.image.bytes);
    if (isa && *isa <= kMaxPtxIsa)
      continue;
    std::string archs;
    for (const Slot &slot : slots.slots)
      if (slot.image.kind == bundle::ImageCubin && slot.group == ptx.group)
        archs += (archs.empty() ? "sm_" : ", sm_") +
                 std::to_string(slot.image.arch);
    std::string what = "the PTX of compute_" +
                       std::to_string(ptx.image.arch) + " (kernels for " +
                       archs + ")";
    if (!isa)
      return makeError("internal error: " + what +
                       " has no .version directive");
    return makeError(
        what + " is PTX ISA " + bundle::ptxIsaString(*isa) +
        ", newer than ISA " + bundle::ptxIsaString(kMaxPtxIsa) +
        ", which every CUDA 12.0 or newer driver loads: NVRTC " +
        versions.nvrtc + " (" + versions.nvrtcPath +
        ") wrote it, where snug pins NVRTC and nvJitLink 12.0 (the "
        "nvidia-cuda-nvrtc-cu12 and nvidia-nvjitlink-cu12 wheels: run "
        "tools/install-deps.sh and reconfigure the build)");
  }
  return llvm::Error::success();
}

/// NVRTC's step: the PTX of every group the cache lacks. NVRTC is mapped
/// only if there is one, and unmapped on return.
llvm::Error compileMissingPtx(const CudaProgram &program, Slots &slots) {
  if (!slots.anyMissing(bundle::ImagePtx))
    return llvm::Error::success();
  auto nvrtc = NvrtcLibrary::load();
  if (!nvrtc)
    return nvrtc.takeError();
  for (size_t index : slots.ptxOf) {
    Slot &slot = slots.slots[index];
    if (slot.cached)
      continue;
    std::string log;
    auto ptx = compilePtx(*nvrtc, program.source, slot.image.arch, log);
    if (!ptx)
      return makeError("internal error: NVRTC could not compile the kernels "
                       "of " +
                       blameKernels(program, log) + " for compute_" +
                       llvm::Twine(slot.image.arch) + " (" +
                       llvm::toString(ptx.takeError()) + "):\n" + log);
    slot.image.bytes = std::move(*ptx);
  }
  return llvm::Error::success();
}

/// ptxas's step: every cubin the cache lacks, from its group's PTX.
/// nvJitLink is mapped only if there is one, and unmapped on return.
llvm::Error assembleMissingCubins(Slots &slots) {
  if (!slots.anyMissing(bundle::ImageCubin))
    return llvm::Error::success();
  auto jitLink = JitLinkLibrary::load();
  if (!jitLink)
    return jitLink.takeError();
  for (Slot &slot : slots.slots) {
    if (slot.cached || slot.image.kind != bundle::ImageCubin)
      continue;
    auto cubin = assembleCubin(
        *jitLink, slots.slots[slots.ptxOf[slot.group]].image.bytes,
        slot.image.arch, slot.log);
    if (!cubin)
      return makeError("internal error: nvJitLink could not assemble the "
                       "kernels' PTX for sm_" +
                       llvm::Twine(slot.image.arch) + " (" +
                       llvm::toString(cubin.takeError()) + ")");
    slot.image.bytes = std::move(*cubin);
  }
  return llvm::Error::success();
}
#endif

/// The values of `__CUDA_ARCH__` the source compares against (800 for
/// `__CUDA_ARCH__ >= 800`): GPUs on the same side of every one compile
/// the same code, so one PTX serves them all. None when the source tests
/// the macro some other way (==, >, ...): then every arch gets its own.
llvm::Optional<std::vector<unsigned>>
getArchThresholds(llvm::StringRef source) {
  std::vector<unsigned> thresholds;
  static constexpr llvm::StringLiteral kMacro = "__CUDA_ARCH__";
  for (size_t at = source.find(kMacro); at != llvm::StringRef::npos;
       at = source.find(kMacro, at + kMacro.size())) {
    llvm::StringRef before = source.substr(0, at).rtrim(" \t(");
    // Whether it is defined is the same on every GPU.
    if (before.endswith("defined") || before.endswith("#ifdef") ||
        before.endswith("#ifndef"))
      continue;
    llvm::StringRef after = source.substr(at + kMacro.size()).ltrim(" \t");
    if (!after.consume_front(">=") && !after.consume_front("<"))
      return llvm::None;
    unsigned value;
    if (after.ltrim(" \t").consumeInteger(10, value))
      return llvm::None;
    thresholds.push_back(value);
  }
  return thresholds;
}

} // namespace

std::vector<std::vector<unsigned>>
groupArchsByPtx(llvm::ArrayRef<unsigned> archs, llvm::StringRef source) {
  auto thresholds = getArchThresholds(source);
  auto level = [&](unsigned arch) {
    return size_t(std::count_if(
        thresholds->begin(), thresholds->end(),
        [&](unsigned threshold) { return arch * 10 >= threshold; }));
  };
  std::vector<std::vector<unsigned>> groups;
  for (unsigned arch : archs)
    if (groups.empty() || !thresholds ||
        level(arch) != level(groups.back().front()))
      groups.push_back({arch});
    else
      groups.back().push_back(arch);
  return groups;
}

llvm::Optional<unsigned> getPtxIsa(llvm::ArrayRef<uint8_t> ptx) {
  llvm::StringRef text(reinterpret_cast<const char *>(ptx.data()),
                       ptx.size());
  // The directive starts a line, after NVRTC's comment header.
  for (size_t at = text.find(".version"); at != llvm::StringRef::npos;
       at = text.find(".version", at + 1)) {
    if (at != 0 && text[at - 1] != '\n')
      continue;
    llvm::StringRef rest = text.substr(at + 8).ltrim(" \t");
    unsigned major, minor;
    if (rest.consumeInteger(10, major) || !rest.consume_front(".") ||
        rest.consumeInteger(10, minor) || minor > 9)
      return llvm::None;
    return major * 10 + minor;
  }
  return llvm::None;
}

unsigned getDriverVersionForPtxIsa(unsigned isa) {
  unsigned major = isa / 10, minor = isa % 10;
  // ISA 8.6 came with CUDA 12.7, 8.7 with 12.8, 8.8 with 12.9; before,
  // ISA 7.x with CUDA 11.x and 8.x with 12.x; 9.x with 13.x.
  if (major == 8 && minor >= 6)
    return 12000 + 10 * (minor + 1);
  if (major < 7)
    return 10000; // CUDA 10 and older: every driver snug supports
  return (major + 4) * 1000 + 10 * minor;
}

llvm::Expected<bundle::KernelToolchain>
getKernelToolchain(llvm::ArrayRef<bundle::KernelImage> images) {
  bundle::KernelToolchain toolchain;
#ifdef SNUG_HAVE_NVRTC
  const CompilerVersions &versions = getCompilerVersions();
  if (!versions.error.empty())
    return makeError(versions.error);
  // "12.0" -> 12000, cuDriverGetVersion's encoding.
  auto encode = [](llvm::StringRef version) {
    std::pair<llvm::StringRef, llvm::StringRef> parts = version.split('.');
    unsigned major = 0, minor = 0;
    (void)parts.first.getAsInteger(10, major);
    (void)parts.second.getAsInteger(10, minor);
    return major * 1000 + minor * 10;
  };
  toolchain.nvrtcVersion = encode(versions.nvrtc);
  toolchain.jitLinkVersion = encode(versions.jitLink);
  for (const bundle::KernelImage &image : images)
    if (image.kind == bundle::ImagePtx)
      if (llvm::Optional<unsigned> isa = getPtxIsa(image.bytes))
        toolchain.ptxIsa = std::max(toolchain.ptxIsa, *isa);
  // The driver must compile the PTX and load the cubins: CUDA's minor
  // version compatibility lets any driver of a major release load the
  // cubins of that release's ptxas, not of a newer one.
  toolchain.minDriverVersion =
      std::max({toolchain.ptxIsa ? getDriverVersionForPtxIsa(toolchain.ptxIsa)
                                 : 0u,
                toolchain.nvrtcVersion / 1000 * 1000,
                toolchain.jitLinkVersion / 1000 * 1000});
#else
  (void)images;
#endif
  return toolchain;
}

std::vector<unsigned> getNvrtcArchs() {
#ifdef SNUG_HAVE_NVRTC
  return getCompilerVersions().archs;
#else
  return {};
#endif
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
                   const KernelCache &cache, CompileStatistics *statistics,
                   llvm::function_ref<void()> beforeCompiling,
                   std::vector<std::string> *assemblerLogs) {
#ifndef SNUG_HAVE_NVRTC
  (void)program, (void)archs, (void)cache, (void)statistics,
      (void)beforeCompiling, (void)assemblerLogs;
  return makeError("this snugc was built without NVRTC (no CUDA toolkit); "
                   "compile with --target=host");
#else
  if (archs.empty())
    return makeError("no CUDA architecture given");
  const CompilerVersions &versions = getCompilerVersions();
  if (!versions.error.empty())
    return makeError(versions.error);
  std::vector<unsigned> sorted(archs.begin(), archs.end());
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<std::vector<unsigned>> groups =
      groupArchsByPtx(sorted, program.source);

  Slots slots(program, groups, versions, cache);
  if (beforeCompiling && (slots.anyMissing(bundle::ImagePtx) ||
                          slots.anyMissing(bundle::ImageCubin)))
    beforeCompiling();
  // One compiler mapped at a time, and NVRTC's heap handed back before
  // ptxas runs: a cold compile peaks at the larger of the two, not their
  // sum (squeezenet: 115 MiB peak RSS when NVRTC made the cubins itself,
  // 86 MiB so).
  if (llvm::Error error = compileMissingPtx(program, slots))
    return error;
  releaseFreeHeap();
  // Before ptxas: a cubin of PTX the bundle may not carry is no use either.
  if (llvm::Error error = checkPtxIsa(slots, versions))
    return error;
  if (llvm::Error error = assembleMissingCubins(slots))
    return error;
  releaseFreeHeap();

  std::vector<bundle::KernelImage> images;
  unsigned compiled = 0;
  for (Slot &slot : slots.slots) {
    // What was compiled goes to the cache (a failure has returned above).
    if (!slot.cached) {
      cache.store(slot.key, slot.image.kind == bundle::ImageCubin
                                ? packCubin(slot.image.bytes, slot.log)
                                : slot.image.bytes);
      ++compiled;
    }
    if (assemblerLogs)
      assemblerLogs->push_back(std::move(slot.log));
    images.push_back(std::move(slot.image));
  }
  if (statistics) {
    statistics->fromCache = unsigned(images.size()) - compiled;
    statistics->compiled = compiled;
  }
  return images;
#endif
}

} // namespace cuda
} // namespace snug
