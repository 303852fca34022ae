//===- NvrtcLibrary.cpp - NVRTC and nvJitLink, loaded only while used -----===//
#include "compiler/cuda/NvrtcLibrary.h"
#include "compiler/cuda/CompileError.h"

#include <dlfcn.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace snug {
namespace cuda {

namespace {

std::string dlError() {
  const char *text = dlerror();
  return text ? text : "unknown error";
}

} // namespace

/// Under AddressSanitizer the libraries stay mapped after dlclose: NVRTC
/// and nvJitLink each keep about 145 KiB for the life of the process,
/// reachable from their own globals, and once those are unmapped
/// LeakSanitizer reports the blocks as the process's leaks. The release
/// build unmaps them, which is the point (about 53 MiB resident between
/// them); a long-lived process (the Python module) so leaks those few
/// hundred KiB per compile that runs a compiler.
#if defined(__SANITIZE_ADDRESS__)
static constexpr int kKeepMapped = RTLD_NODELETE;
#else
static constexpr int kKeepMapped = 0;
#endif

llvm::Expected<SharedLibrary>
SharedLibrary::open(const std::vector<std::string> &candidates,
                    llvm::StringRef what) {
  std::string errors;
  for (const std::string &candidate : candidates) {
    if (void *handle =
            dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL | kKeepMapped))
      return SharedLibrary(handle, candidate);
    errors += (errors.empty() ? "" : "; ") + dlError();
  }
  return makeError("cannot load " + what + " (" + errors +
                   "); the CUDA toolkit snugc was built with must be "
                   "installed to compile kernels, or use --target=host");
}

SharedLibrary::SharedLibrary(SharedLibrary &&other) noexcept
    : handle(other.handle), path(std::move(other.path)) {
  other.handle = nullptr;
}

SharedLibrary &SharedLibrary::operator=(SharedLibrary &&other) noexcept {
  if (this != &other) {
    if (handle)
      dlclose(handle);
    handle = other.handle;
    path = std::move(other.path);
    other.handle = nullptr;
  }
  return *this;
}

SharedLibrary::~SharedLibrary() {
  if (handle)
    dlclose(handle);
}

void *SharedLibrary::lookup(const char *name) const {
  return dlsym(handle, name);
}

void *SharedLibrary::lookupOptional(const char *name) const {
  void *symbol = dlsym(handle, name);
  (void)dlerror(); // a missing optional symbol is no error for later ones
  return symbol;
}

llvm::Error SharedLibrary::missing(const char *name) const {
  return makeError(path + " lacks " + name + " (" + dlError() +
                   "); it is not the CUDA toolkit snugc was built with");
}

llvm::Expected<NvrtcLibrary> NvrtcLibrary::load() {
  std::optional<SharedLibrary> builtins;
  if (*SNUG_NVRTC_BUILTINS_PATH) {
    auto opened = SharedLibrary::open({SNUG_NVRTC_BUILTINS_PATH},
                                      "NVRTC's builtins");
    if (opened)
      builtins.emplace(std::move(*opened));
    else // NVRTC may still find its own (another NVRTC on the loader path)
      llvm::consumeError(opened.takeError());
  }
  auto library = SharedLibrary::open({SNUG_NVRTC_PATH, SNUG_NVRTC_SONAME},
                                     "NVRTC");
  if (!library)
    return library.takeError();
  NvrtcLibrary n{std::move(builtins), std::move(*library)};
  auto with = [](auto *&function, const char *name) {
    return std::pair<decltype(function), const char *>(function, name);
  };
  if (llvm::Error error = n.library.bind(
          with(n.version, "nvrtcVersion"),
          with(n.getNumSupportedArchs, "nvrtcGetNumSupportedArchs"),
          with(n.getSupportedArchs, "nvrtcGetSupportedArchs"),
          with(n.getErrorString, "nvrtcGetErrorString"),
          with(n.createProgram, "nvrtcCreateProgram"),
          with(n.compileProgram, "nvrtcCompileProgram"),
          with(n.getProgramLogSize, "nvrtcGetProgramLogSize"),
          with(n.getProgramLog, "nvrtcGetProgramLog"),
          with(n.getPTXSize, "nvrtcGetPTXSize"), with(n.getPTX, "nvrtcGetPTX"),
          with(n.destroyProgram, "nvrtcDestroyProgram")))
    return error;
  return n;
}

llvm::Expected<JitLinkLibrary> JitLinkLibrary::load() {
  auto library = SharedLibrary::open(
      {SNUG_NVJITLINK_PATH, SNUG_NVJITLINK_SONAME}, "nvJitLink");
  if (!library)
    return library.takeError();
  JitLinkLibrary j{std::move(*library)};
  auto with = [](auto *&function, const char *name) {
    return std::pair<decltype(function), const char *>(function, name);
  };
  // The versioned names the toolkit's header calls (see the header).
#define SNUG_VERSIONED(name) "__" name SNUG_NVJITLINK_SUFFIX
  if (llvm::Error error = j.library.bind(
          with(j.create, SNUG_VERSIONED("nvJitLinkCreate")),
          with(j.addData, SNUG_VERSIONED("nvJitLinkAddData")),
          with(j.complete, SNUG_VERSIONED("nvJitLinkComplete")),
          with(j.getLinkedCubinSize,
               SNUG_VERSIONED("nvJitLinkGetLinkedCubinSize")),
          with(j.getLinkedCubin, SNUG_VERSIONED("nvJitLinkGetLinkedCubin")),
          with(j.getErrorLogSize, SNUG_VERSIONED("nvJitLinkGetErrorLogSize")),
          with(j.getErrorLog, SNUG_VERSIONED("nvJitLinkGetErrorLog")),
          with(j.getInfoLogSize, SNUG_VERSIONED("nvJitLinkGetInfoLogSize")),
          with(j.getInfoLog, SNUG_VERSIONED("nvJitLinkGetInfoLog")),
          with(j.destroy, SNUG_VERSIONED("nvJitLinkDestroy"))))
    return error;
#undef SNUG_VERSIONED
  j.version = reinterpret_cast<decltype(j.version)>(
      j.library.lookupOptional("nvJitLinkVersion"));
  return j;
}

std::string JitLinkLibrary::getVersion() const {
  unsigned major = 0, minor = 0;
  if (version && version(&major, &minor) == NVJITLINK_SUCCESS)
    return std::to_string(major) + "." + std::to_string(minor);
  // "_12_0" -> "12.0"
  std::string suffix = SNUG_NVJITLINK_SUFFIX;
  size_t split = suffix.rfind('_');
  return suffix.substr(1, split - 1) + "." + suffix.substr(split + 1);
}

void releaseFreeHeap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

} // namespace cuda
} // namespace snug
