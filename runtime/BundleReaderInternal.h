//===- BundleReaderInternal.h - Shared by the bundle decoders ---*- C++ -*-===//
//
// Private to BundleReader.cpp, BundleReaderHostPlan.cpp and
// BundleReaderDevicePlan.cpp: the bounds-checked cursor every section is
// read through, the location reader and dims checks the manifest and the
// host plan share, and the section readers the driver (decodeBundle)
// calls.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_BUNDLEREADERINTERNAL_H
#define SNUG_RUNTIME_BUNDLEREADERINTERNAL_H

#include "runtime/BundleReader.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace snug {
namespace rt {

inline uint32_t readU32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
inline uint64_t readU64(const uint8_t *p) {
  return uint64_t(readU32(p)) | uint64_t(readU32(p + 4)) << 32;
}

/// A bounds-checked reader over one section; the first failure sticks.
class Cursor {
public:
  Cursor(const uint8_t *data, uint64_t size, std::string where)
      : data(data), size(size), where(std::move(where)) {}

  bool failed() const { return !error.empty(); }
  const std::string &getError() const { return error; }
  uint64_t remaining() const { return size - position; }
  bool fail(const std::string &message) {
    if (error.empty())
      error = where + ": " + message + " at byte " + std::to_string(position);
    return false;
  }

  bool bytes(const uint8_t *&out, uint64_t count) {
    if (failed())
      return false;
    if (count > remaining())
      return fail("truncated (needs " + std::to_string(count) +
                  " bytes, has " + std::to_string(remaining()) + ")");
    out = data + position;
    position += count;
    return true;
  }
  bool u8(uint8_t &out) {
    const uint8_t *p = nullptr;
    if (!bytes(p, 1))
      return false;
    out = *p;
    return true;
  }
  bool u16(uint16_t &out) {
    const uint8_t *p = nullptr;
    if (!bytes(p, 2))
      return false;
    out = uint16_t(p[0] | p[1] << 8);
    return true;
  }
  bool u32(uint32_t &out) {
    const uint8_t *p = nullptr;
    if (!bytes(p, 4))
      return false;
    out = readU32(p);
    return true;
  }
  bool u64(uint64_t &out) {
    const uint8_t *p = nullptr;
    if (!bytes(p, 8))
      return false;
    out = readU64(p);
    return true;
  }
  bool i64(int64_t &out) {
    uint64_t value;
    if (!u64(value))
      return false;
    std::memcpy(&out, &value, 8);
    return true;
  }
  bool f32(float &out) {
    uint32_t value;
    if (!u32(value))
      return false;
    std::memcpy(&out, &value, 4);
    return true;
  }
  bool string(std::string &out) {
    uint32_t length;
    const uint8_t *p = nullptr;
    if (!u32(length) || !bytes(p, length))
      return false;
    out.assign(reinterpret_cast<const char *>(p), length);
    return true;
  }
  /// A list count; each element takes at least `minBytes`.
  bool count(uint32_t &out, uint64_t minBytes) {
    if (!u32(out))
      return false;
    if (uint64_t(out) * minBytes > remaining())
      return fail("count " + std::to_string(out) + " exceeds the section");
    return true;
  }

private:
  const uint8_t *data;
  uint64_t size;
  uint64_t position = 0;
  std::string where;
  std::string error;
};

// BundleReader.cpp (each documented there).
std::string dimsText(const std::vector<int64_t> &dims);
bool hasBoundedDims(const std::vector<int64_t> &dims);
bool readLocation(Cursor &cursor, Location &location, const Bundle &b,
                  const std::string &what);

/// The host plan section (BundleReaderHostPlan.cpp).
bool readHostPlan(Cursor &cursor, Bundle &b);

// The device plan and kernel images sections (BundleReaderDevicePlan.cpp).
bool readDevicePlan(Cursor &cursor, Bundle &b);
bool readKernelImages(Cursor &cursor, Bundle &b);

} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_BUNDLEREADERINTERNAL_H
