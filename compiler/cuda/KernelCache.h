//===- KernelCache.h - Compiled kernel images kept between compiles -*- C++ -*-===//
//
// A content-addressed store of what NVRTC produced, so that recompiling a
// model whose kernels did not change skips NVRTC. An entry's key is the
// SHA-256 of everything that decides the image: the translation unit,
// the options of NVRTC (and of nvJitLink, for a cubin), the image kind and
// architecture, and the compilers' versions.
// Its file (KEY.img in the directory) holds a magic, the key, the SHA-256
// of key and payload, and the payload, so a truncated or edited file, one
// written for another key (copied or renamed over this name) and a symbolic
// link are misses (and are rewritten), never a wrong image. Entries are written atomically
// (a temporary renamed over the target), so two compiles at once at worst
// both write the same bytes. A directory that cannot be created or written
// only costs the cache: the compile goes on. Nothing is evicted: delete the
// directory to reclaim its space.
//
// The default directory is $XDG_CACHE_HOME/snug/kernels, or
// $HOME/.cache/snug/kernels (the XDG base directory rule).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_KERNELCACHE_H
#define SNUG_COMPILER_CUDA_KERNELCACHE_H

#include "core/Sha256.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snug {
namespace cuda {

class KernelCache {
public:
  using Key = Sha256::Digest;

  /// A cache in `directory`; "" for none (every lookup misses, nothing is
  /// stored).
  explicit KernelCache(std::string directory = "")
      : directory(std::move(directory)) {}

  /// $XDG_CACHE_HOME/snug/kernels, else $HOME/.cache/snug/kernels, else ""
  /// (neither is set).
  static std::string getDefaultDirectory();

  static Key makeKey(llvm::StringRef source,
                     llvm::ArrayRef<std::string> options, uint8_t imageKind,
                     unsigned arch, llvm::StringRef compilerVersion);

  bool isEnabled() const { return !directory.empty(); }
  const std::string &getDirectory() const { return directory; }

  /// The image stored under `key`, if a whole, intact entry is there.
  llvm::Optional<std::vector<uint8_t>> lookup(const Key &key) const;
  /// Stores `image` under `key`; false when it could not be written (the
  /// caller goes on without the cache).
  bool store(const Key &key, llvm::ArrayRef<uint8_t> image) const;

private:
  std::string pathOf(const Key &key) const;

  std::string directory;
};

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_KERNELCACHE_H
