//===- KernelCache.cpp - Compiled kernel images kept between compiles -----===//
#include "compiler/cuda/KernelCache.h"

#include "core/FileAccess.h"

#include "llvm/Support/FileSystem.h"

#include <cstdlib>
#include <cstring>

#include <sys/stat.h>

namespace snug {
namespace cuda {

namespace {
/// An entry: this magic, its key, the SHA-256 of key and payload, the
/// payload. The key inside is what makes a file found under another key's
/// name (copied, renamed or linked there) a miss; version 1 entries (magic
/// SNUGKIM1, no key) are misses too, and are rewritten.
constexpr char kMagic[8] = {'S', 'N', 'U', 'G', 'K', 'I', 'M', '2'};
constexpr size_t kKeyOffset = sizeof kMagic;
constexpr size_t kDigestOffset = kKeyOffset + 32;
constexpr size_t kHeaderBytes = kDigestOffset + 32;
/// No image NVRTC writes for a model comes near this; a larger file is not
/// an entry of ours.
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;

std::string hex(const KernelCache::Key &key) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  for (uint8_t byte : key) {
    text += digits[byte >> 4];
    text += digits[byte & 15];
  }
  return text;
}

void hashField(Sha256 &hasher, llvm::StringRef field) {
  // Length-prefixed, so that no two field lists hash alike.
  uint64_t size = field.size();
  uint8_t length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = uint8_t(size >> (8 * i));
  hasher.update(length, sizeof length);
  hasher.update(reinterpret_cast<const uint8_t *>(field.data()), field.size());
}

/// The digest an entry stores: over its key and its payload.
Sha256::Digest entryDigest(const KernelCache::Key &key, const uint8_t *payload,
                           size_t size) {
  Sha256 hasher;
  hasher.update(key.data(), key.size());
  hasher.update(payload, size);
  return hasher.finish();
}
} // namespace

std::string KernelCache::getDefaultDirectory() {
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg == '/')
    return std::string(xdg) + "/snug/kernels";
  const char *home = std::getenv("HOME");
  if (home && *home == '/')
    return std::string(home) + "/.cache/snug/kernels";
  return "";
}

KernelCache::Key KernelCache::makeKey(llvm::StringRef source,
                                      llvm::ArrayRef<std::string> options,
                                      uint8_t imageKind, unsigned arch,
                                      llvm::StringRef compilerVersion) {
  Sha256 hasher;
  hashField(hasher, "snug kernel image v1");
  hashField(hasher, compilerVersion);
  hashField(hasher, std::to_string(imageKind) + ":" + std::to_string(arch));
  for (const std::string &option : options)
    hashField(hasher, option);
  hashField(hasher, source);
  return hasher.finish();
}

std::string KernelCache::pathOf(const Key &key) const {
  return directory + "/" + hex(key) + ".img";
}

llvm::Optional<std::vector<uint8_t>>
KernelCache::lookup(const Key &key) const {
  if (!isEnabled())
    return llvm::None;
  // A link in the cache is not an entry snug wrote (it renames regular
  // files into place): a miss, never followed.
  std::string path = pathOf(key);
  struct stat info;
  if (lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return llvm::None;
  std::vector<uint8_t> bytes;
  std::string error;
  if (!readWholeRegularFile(path, bytes, kMaxEntryBytes, error) ||
      bytes.size() < kHeaderBytes ||
      std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0 ||
      std::memcmp(bytes.data() + kKeyOffset, key.data(), key.size()) != 0)
    return llvm::None;
  Sha256::Digest digest = entryDigest(key, bytes.data() + kHeaderBytes,
                                      bytes.size() - kHeaderBytes);
  if (std::memcmp(digest.data(), bytes.data() + kDigestOffset, 32) != 0)
    return llvm::None;
  return std::vector<uint8_t>(bytes.begin() + kHeaderBytes, bytes.end());
}

bool KernelCache::store(const Key &key, llvm::ArrayRef<uint8_t> image) const {
  if (!isEnabled() || llvm::sys::fs::create_directories(directory))
    return false;
  Sha256::Digest digest = entryDigest(key, image.data(), image.size());
  std::vector<uint8_t> bytes(kHeaderBytes + image.size());
  std::memcpy(bytes.data(), kMagic, sizeof kMagic);
  std::memcpy(bytes.data() + kKeyOffset, key.data(), key.size());
  std::memcpy(bytes.data() + kDigestOffset, digest.data(), digest.size());
  if (!image.empty())
    std::memcpy(bytes.data() + kHeaderBytes, image.data(), image.size());
  // A link planted under an entry's name is replaced by the entry, never
  // written through.
  std::string error;
  return writeFileAtomically(pathOf(key), bytes.data(), bytes.size(), error,
                             LinkPolicy::Replace);
}

} // namespace cuda
} // namespace snug
