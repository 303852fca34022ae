//===- KernelRunner.cpp - Emitted kernels run block by block --------------===//
#include "tests/cudasim/KernelRunner.h"

#include <dlfcn.h>

namespace snug {
namespace cudasim {

const KernelLibrary *KernelLibrary::active = nullptr;

//===----------------------------------------------------------------------===//
// KernelLibrary
//===----------------------------------------------------------------------===//

KernelLibrary::~KernelLibrary() {
  if (active == this)
    active = nullptr;
  if (handle)
    dlclose(handle);
}

bool KernelLibrary::open(const std::string &libraryPath, std::string &error) {
  path = libraryPath;
  // A name without a slash would be searched for on the library path.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    error = "cannot load kernels '" + path + "': " + (why ? why : "?");
    return false;
  }
  auto abi = reinterpret_cast<int (*)()>(dlsym(handle, "snug_cudasim_abi_version"));
  launchFn = reinterpret_cast<LaunchFn>(dlsym(handle, "snug_cudasim_launch"));
  whereFn = reinterpret_cast<int (*)(char *, size_t)>(
      dlsym(handle, "snug_cudasim_where"));
  roundsFn = reinterpret_cast<unsigned long long (*)()>(
      dlsym(handle, "snug_cudasim_rounds"));
  if (!abi || !launchFn) {
    error = "'" + path + "' has no snug_cudasim_launch: build it with "
            "tests/cudasim/compile_kernels.sh (g++ -include CudaSim.h)";
    return false;
  }
  if (abi() != 1) {
    error = "'" + path + "' was built against CudaSim.h ABI version " +
            std::to_string(abi()) + ", this simulator expects 1; rebuild it";
    return false;
  }
  active = this;
  return true;
}

KernelLibrary::Thunk KernelLibrary::find(const std::string &symbol) const {
  return handle ? reinterpret_cast<Thunk>(
                      dlsym(handle, (symbol + "_sim").c_str()))
                : nullptr;
}

bool KernelLibrary::load(const std::string &libraryPath,
                         const std::vector<std::string> &kernelSymbols,
                         std::string &error) {
  if (!open(libraryPath, error))
    return false;
  symbols = kernelSymbols;
  std::string missing;
  unsigned missingCount = 0;
  for (const std::string &symbol : symbols) {
    Thunk thunk = find(symbol);
    if (!thunk && missingCount++ < 5)
      missing += (missing.empty() ? "" : ", ") + symbol + "_sim";
    thunks.push_back(thunk);
  }
  if (missingCount) {
    error = "'" + path + "' lacks " + std::to_string(missingCount) +
            " kernel thunk(s) of the device plan: " + missing +
            (missingCount > 5 ? ", ..." : "") +
            " (built from another model's source?)";
    return false;
  }
  return true;
}

bool KernelLibrary::run(Thunk thunk, const char *name, void **args,
                        const uint32_t grid[3], const uint32_t block[3],
                        unsigned flags, std::string &error) {
  char message[2048];
  if (launchFn(thunk, args, grid, block, name, flags, message,
               sizeof message)) {
    error = message;
    return false;
  }
  return true;
}

} // namespace cudasim
} // namespace snug
