//===- NvrtcLibrary.h - NVRTC and nvJitLink, loaded only while used -*- C++ -*-===//
//
// The CUDA toolkit's two compilers, opened with dlopen by the compile that
// needs them and closed when it is done, one at a time: NVRTC turns the
// translation unit into PTX, nvJitLink assembles PTX into a cubin. Only
// mapping libnvrtc (109 MB) makes about 28 MiB resident, its relocations
// and initialisers, and nvJitLink about 25 MiB more. A compile whose images
// all come from the kernel cache maps each only for the moment it takes to
// read its version (part of the cache key), a --target=host compile maps
// neither, and a cold compile never holds both, nor NVRTC's working memory
// beside ptxas's (see Nvrtc.cpp for the figures).
//
// Each library is looked for where the build found it (the pinned CUDA 12.0
// wheels in .venv, else the toolkit: compiler/cuda/CMakeLists.txt), then by
// its soname on the loader's path: the path first, so that a newer NVRTC
// on the loader's path does not replace the pinned one (its PTX would need
// a newer driver; Nvrtc.cpp refuses PTX newer than ISA 8.0 whichever
// loads). Only Nvrtc.cpp includes this header; it is compiled against the
// headers of the libraries the build found.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_NVRTCLIBRARY_H
#define SNUG_COMPILER_CUDA_NVRTCLIBRARY_H

#include "llvm/Support/Error.h"

#include <nvJitLink.h>
#include <nvrtc.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace snug {
namespace cuda {

/// A dlopen'ed library, closed (unmapped) when this goes away.
class SharedLibrary {
public:
  /// The first of `candidates` (paths or sonames) that loads; the error
  /// names every one tried and why it failed.
  static llvm::Expected<SharedLibrary>
  open(const std::vector<std::string> &candidates, llvm::StringRef what);

  SharedLibrary(SharedLibrary &&other) noexcept;
  SharedLibrary &operator=(SharedLibrary &&other) noexcept;
  SharedLibrary(const SharedLibrary &) = delete;
  SharedLibrary &operator=(const SharedLibrary &) = delete;
  ~SharedLibrary();

  /// Binds each (function pointer, symbol) pair; an error naming the
  /// library and the first symbol it lacks.
  template <typename... Bindings>
  llvm::Error bind(Bindings &&...bindings) const {
    const char *absent = nullptr;
    (bindOne(absent, bindings.first, bindings.second), ...);
    return absent ? missing(absent) : llvm::Error::success();
  }

  const std::string &getPath() const { return path; }
  /// The symbol `name`, or null when the library lacks it.
  void *lookupOptional(const char *name) const;

private:
  SharedLibrary(void *handle, std::string path)
      : handle(handle), path(std::move(path)) {}
  template <typename Function>
  void bindOne(const char *&absent, Function *&function,
               const char *name) const {
    function = reinterpret_cast<Function *>(lookup(name));
    if (!function && !absent)
      absent = name;
  }
  void *lookup(const char *name) const;
  llvm::Error missing(const char *name) const;

  void *handle = nullptr;
  std::string path;
};

/// The NVRTC entry points snug calls.
struct NvrtcLibrary {
  /// NVRTC's builtins (libnvrtc-builtins.so.X.Y), loaded from beside the
  /// NVRTC the build found before NVRTC itself, when the build knows the
  /// file. NVRTC dlopens them by soname at its first compile and relies on
  /// its RUNPATH ($ORIGIN) to find them beside itself; under
  /// AddressSanitizer the interposed dlopen searches the sanitizer
  /// runtime's paths instead, and the pinned wheels' directory is on no
  /// loader path, so the compile failed ("failed to open
  /// libnvrtc-builtins.so.12.0"). Loaded first, the soname matches the
  /// mapped copy. Declared before `library` so that it is closed after it.
  std::optional<SharedLibrary> builtins;
  SharedLibrary library;
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) getNumSupportedArchs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) getSupportedArchs = nullptr;
  decltype(&::nvrtcGetErrorString) getErrorString = nullptr;
  decltype(&::nvrtcCreateProgram) createProgram = nullptr;
  decltype(&::nvrtcCompileProgram) compileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) getProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) getProgramLog = nullptr;
  decltype(&::nvrtcGetPTXSize) getPTXSize = nullptr;
  decltype(&::nvrtcGetPTX) getPTX = nullptr;
  decltype(&::nvrtcDestroyProgram) destroyProgram = nullptr;

  static llvm::Expected<NvrtcLibrary> load();
};

/// The nvJitLink entry points snug calls. Its header maps each call to a
/// symbol named for the library's version (__nvJitLinkCreate_12_0); the
/// build reads that suffix from the header it compiles against.
struct JitLinkLibrary {
  SharedLibrary library;
  /// nvJitLinkVersion, which nvJitLink has from CUDA 12.3 on; null before
  /// (12.0's), whose version the symbol suffix then is (getVersion).
  nvJitLinkResult (*version)(unsigned *major, unsigned *minor) = nullptr;
  decltype(&::nvJitLinkCreate) create = nullptr;
  decltype(&::nvJitLinkAddData) addData = nullptr;
  decltype(&::nvJitLinkComplete) complete = nullptr;
  decltype(&::nvJitLinkGetLinkedCubinSize) getLinkedCubinSize = nullptr;
  decltype(&::nvJitLinkGetLinkedCubin) getLinkedCubin = nullptr;
  decltype(&::nvJitLinkGetErrorLogSize) getErrorLogSize = nullptr;
  decltype(&::nvJitLinkGetErrorLog) getErrorLog = nullptr;
  decltype(&::nvJitLinkGetInfoLogSize) getInfoLogSize = nullptr;
  decltype(&::nvJitLinkGetInfoLog) getInfoLog = nullptr;
  decltype(&::nvJitLinkDestroy) destroy = nullptr;

  static llvm::Expected<JitLinkLibrary> load();
  /// "12.0": nvJitLinkVersion's answer, or without it the version its
  /// symbols are named for.
  std::string getVersion() const;
};

/// Hands the heap's free pages back to the system (glibc keeps them
/// otherwise), so what NVRTC freed does not stay resident under ptxas.
void releaseFreeHeap();

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_NVRTCLIBRARY_H
