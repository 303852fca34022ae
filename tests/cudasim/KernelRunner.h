//===- KernelRunner.h - Emitted kernels run block by block -------*- C++ -*-===//
//
// The kernels of a bundle, built as host C++ by compile_kernels.sh: the
// library's snug_cudasim_launch (CudaSim.h's block scheduler, the threads of
// a block as fibers) and one SYM_sim thunk per kernel, taking
// cuLaunchKernel's argument array. The one way to run an emitted kernel on
// the host: the simulator's step loop (SimExecutor) and the fake CUDA
// driver's cuLaunchKernel (tests/unit/FakeCuda) both launch through it.
// Runtime headers only (no LLVM).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_CUDASIM_KERNELRUNNER_H
#define SNUG_TESTS_CUDASIM_KERNELRUNNER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace snug {
namespace cudasim {

class KernelLibrary {
public:
  using Thunk = void (*)(void **);
  using LaunchFn = int (*)(Thunk, void **, const unsigned *, const unsigned *,
                           const char *, unsigned, char *, size_t);

  KernelLibrary() = default;
  KernelLibrary(const KernelLibrary &) = delete;
  KernelLibrary &operator=(const KernelLibrary &) = delete;
  ~KernelLibrary();

  /// dlopens `path` and checks it was built against this CudaSim.h.
  bool open(const std::string &path, std::string &error);
  /// A kernel's thunk (SYM_sim), or null when the library lacks it.
  Thunk find(const std::string &symbol) const;
  /// open(), then every symbol's thunk; an error names the missing ones.
  bool load(const std::string &path, const std::vector<std::string> &symbols,
            std::string &error);

  /// Runs `thunk` (kernel `name`) over `grid` x `block` with `args` (one
  /// pointer per parameter, as cuLaunchKernel takes them); false with
  /// `error` set (naming the kernel) on a barrier deadlock, divergence or
  /// trap.
  bool run(Thunk thunk, const char *name, void **args, const uint32_t grid[3],
           const uint32_t block[3], unsigned flags, std::string &error);
  /// Runs kernel `index` of load()'s symbols.
  bool launch(size_t index, void **args, const uint32_t grid[3],
              const uint32_t block[3], unsigned flags, std::string &error) {
    return run(thunks[index], symbols[index].c_str(), args, grid, block, flags,
               error);
  }
  /// Barrier rounds so far.
  unsigned long long rounds() const { return roundsFn ? roundsFn() : 0; }
  /// The simulator's position inside a launch, for crash reports ("" when
  /// outside one). Async-signal tolerable (snprintf of integers).
  int where(char *out, size_t size) const {
    return whereFn ? whereFn(out, size) : 0;
  }
  /// The library opened last (still loaded), for the crash handler.
  static const KernelLibrary *getActive() { return active; }

  std::vector<std::string> symbols;

private:
  static const KernelLibrary *active;
  std::string path;
  void *handle = nullptr;
  LaunchFn launchFn = nullptr;
  int (*whereFn)(char *, size_t) = nullptr;
  unsigned long long (*roundsFn)() = nullptr;
  std::vector<Thunk> thunks;
};

} // namespace cudasim
} // namespace snug

#endif // SNUG_TESTS_CUDASIM_KERNELRUNNER_H
