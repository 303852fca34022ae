//===- CheckedArithmetic.h - Sizes, offsets and counts that cannot wrap -*- C++ -*-===//
//
// The one place that multiplies, adds and rounds up sizes, offsets, element
// counts and strides. Every size that comes from outside (an ONNX dims list,
// a bundle manifest, a .npy header, a flag) goes through these before it is
// used to allocate, index or compare, so a crafted 2^64-1 cannot wrap to a
// small number and pass a bounds check. Used by the importer, the passes,
// the bundle writer and reader, the runtime's plan verifier and the tools.
//
// Each function returns std::nullopt on overflow (or on a negative dim, for
// the dims helpers) and never aborts; the caller turns that into an error
// naming the file, node or flag. kMaxTensorBytes is the largest tensor snug
// accepts anywhere (1 PiB): far above any device, far below 2^64, so sums of
// a few sizes and an alignment can be checked against it without wrapping.
//
// Std-only (shared with the runtime, which has no LLVM).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_CHECKEDARITHMETIC_H
#define SNUG_CORE_CHECKEDARITHMETIC_H

#include <cstddef>
#include <cstdint>
#include <optional>

namespace snug {

/// The largest byte size of one tensor, buffer or arena snug accepts (1 PiB).
constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 50;

/// a + b, or nullopt when it wraps.
inline std::optional<uint64_t> checkedAdd(uint64_t a, uint64_t b) {
  uint64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    return std::nullopt;
  return sum;
}

/// a * b, or nullopt when it wraps.
inline std::optional<uint64_t> checkedMul(uint64_t a, uint64_t b) {
  uint64_t product;
  if (__builtin_mul_overflow(a, b, &product))
    return std::nullopt;
  return product;
}

/// Signed a + b and a * b, or nullopt when they leave int64_t.
inline std::optional<int64_t> checkedAddSigned(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    return std::nullopt;
  return sum;
}
inline std::optional<int64_t> checkedMulSigned(int64_t a, int64_t b) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product))
    return std::nullopt;
  return product;
}

/// `value` rounded up to a multiple of `alignment` (0 and 1 mean no
/// rounding), or nullopt when the round-up wraps.
inline std::optional<uint64_t> checkedAlignUp(uint64_t value,
                                              uint64_t alignment) {
  if (alignment <= 1)
    return value;
  uint64_t remainder = value % alignment;
  if (remainder == 0)
    return value;
  return checkedAdd(value, alignment - remainder);
}

/// The element count of `dims` (1 for rank 0), or nullopt when a dim is
/// negative or the product passes `limit`. A zero dim makes the count 0
/// whatever the others are, as long as none is negative.
inline std::optional<uint64_t>
checkedElementCount(const int64_t *dims, size_t rank,
                    uint64_t limit = kMaxTensorBytes) {
  uint64_t count = 1;
  bool overflowed = false;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return std::nullopt;
    if (dims[i] == 0)
      count = 0;
    if (overflowed || count == 0)
      continue;
    std::optional<uint64_t> product = checkedMul(count, uint64_t(dims[i]));
    if (!product || *product > limit)
      overflowed = true;
    else
      count = *product;
  }
  if (count == 0)
    return uint64_t(0);
  if (overflowed)
    return std::nullopt;
  return count;
}

/// The byte size of a tensor of `dims` with `elementBytes`-byte elements, or
/// nullopt when a dim is negative or the size passes `limit`.
inline std::optional<uint64_t>
checkedByteSize(const int64_t *dims, size_t rank, uint64_t elementBytes,
                uint64_t limit = kMaxTensorBytes) {
  std::optional<uint64_t> count = checkedElementCount(dims, rank, limit);
  if (!count)
    return std::nullopt;
  std::optional<uint64_t> bytes = checkedMul(*count, elementBytes);
  if (!bytes || *bytes > limit)
    return std::nullopt;
  return bytes;
}

/// Whether [offset, offset + size) lies inside [0, extent), without wrapping.
inline bool isRangeInside(uint64_t offset, uint64_t size, uint64_t extent) {
  return offset <= extent && size <= extent - offset;
}

/// Signed a - b, or nullopt when it leaves int64_t.
inline std::optional<int64_t> checkedSubSigned(int64_t a, int64_t b) {
  int64_t difference;
  if (__builtin_sub_overflow(a, b, &difference))
    return std::nullopt;
  return difference;
}

/// Signed int64 arithmetic that remembers whether any step overflowed, so
/// that a shape formula over untrusted attribute values reads as a formula:
/// `(CheckedInt(x) + padBegin + padEnd - extent).get()` is nullopt when an
/// extreme value (pads of INT64_MAX) would wrap.
class CheckedInt {
public:
  CheckedInt(int64_t value) : value(value) {}
  CheckedInt operator+(CheckedInt other) const {
    return combine(other, checkedAddSigned(value, other.value));
  }
  CheckedInt operator-(CheckedInt other) const {
    return combine(other, checkedSubSigned(value, other.value));
  }
  CheckedInt operator*(CheckedInt other) const {
    return combine(other, checkedMulSigned(value, other.value));
  }
  std::optional<int64_t> get() const {
    if (overflowed)
      return std::nullopt;
    return value;
  }

private:
  CheckedInt combine(const CheckedInt &other,
                     std::optional<int64_t> result) const {
    CheckedInt out(result.value_or(0));
    out.overflowed = overflowed || other.overflowed || !result;
    return out;
  }
  int64_t value;
  bool overflowed = false;
};

/// Whether `count` indices start, start + step, ... all lie in [0, extent),
/// without wrapping: the bound of a strided read such as Slice's (the plan
/// verifier, the host kernel and the CUDA emitter all ask it). An empty
/// range is inside; a range of one never steps, so any step is allowed.
inline bool isStridedRangeInside(int64_t start, int64_t step, int64_t count,
                                 int64_t extent) {
  if (count <= 0)
    return count == 0;
  std::optional<int64_t> span = checkedMulSigned(count - 1, step);
  std::optional<int64_t> last =
      span ? checkedAddSigned(start, *span) : std::nullopt;
  return start >= 0 && start < extent && last && *last >= 0 && *last < extent;
}

} // namespace snug

#endif // SNUG_CORE_CHECKEDARITHMETIC_H
