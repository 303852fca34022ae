//===- KernelLibrary.h - Emitted CUDA built as a host library -----*- C++ -*-===//
//
// Builds CUDA source (a prelude plus kernels, as the emitter writes it) into
// a shared object with compile_kernels.sh, for SimKernels to load. Libraries
// are cached in `cacheDir` under a hash of everything they depend on (the
// source, the extra compiler flags, CudaSim.h and the script), since ctest
// runs every test in its own process; a library appears by rename, so a
// concurrent test never loads half a file.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_CUDASIM_KERNELLIBRARY_H
#define SNUG_TESTS_CUDASIM_KERNELLIBRARY_H

#include <string>

namespace snug {
namespace cudasim {

/// The path of the built library, or "" with `error` set (the command that
/// failed, or the file-system error).
std::string buildKernelLibrary(const std::string &source,
                               const std::string &extraFlags,
                               const std::string &cacheDir,
                               const std::string &prefix, std::string &error);

} // namespace cudasim
} // namespace snug

#endif // SNUG_TESTS_CUDASIM_KERNELLIBRARY_H
