//===- DType.h - The one dtype enum and its table ----------------*- C++ -*-===//
//
// DTypes.def as data, std-only: the enum every layer names element types
// with (ir:: re-exports it, ir/DType.h), its names, sizes and classes, and
// the mapping to and from the bundle's dtype codes (core/BundleFormat.h),
// which the compiler writes and the runtime reads. Nothing else converts
// between the two.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_DTYPE_H
#define SNUG_CORE_DTYPE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace snug {

enum class DType : uint8_t {
#define DTYPE(ID, NAME, BYTES, BUNDLE_CODE, CLASS) ID,
#include "core/DTypes.def"
};

/// How many dtypes there are (DType values are 0 .. kNumDTypes-1).
constexpr unsigned kNumDTypes = 0
#define DTYPE(ID, NAME, BYTES, BUNDLE_CODE, CLASS) +1
#include "core/DTypes.def"
    ;

enum class DTypeClass : uint8_t { Float, Signed, Unsigned, Bool };

struct DTypeInfo {
  DType type;
  const char *name;
  unsigned bytes;
  uint8_t bundleCode;
  DTypeClass typeClass;
};

namespace detail {
// inline: one table for the program, so that every inline function below
// walks the same array (a per-unit copy would let dtypesBegin and dtypesEnd
// come from different units after linking).
inline constexpr DTypeInfo kDTypeTable[] = {
#define DTYPE(ID, NAME, BYTES, BUNDLE_CODE, CLASS)                             \
  {DType::ID, NAME, BYTES, BUNDLE_CODE, DTypeClass::CLASS},
#include "core/DTypes.def"
};

/// Bundle code -> index into kDTypeTable, 0xff for a code that is no
/// dtype: fromBundleCode is one load, as the switch it replaced was (the
/// host kernels ask an element's size per element).
constexpr std::array<uint8_t, 256> makeBundleCodeIndex() {
  std::array<uint8_t, 256> index{};
  for (uint8_t &entry : index)
    entry = 0xff;
  for (unsigned i = 0; i < kNumDTypes; ++i)
    index[kDTypeTable[i].bundleCode] = uint8_t(i);
  return index;
}
inline constexpr std::array<uint8_t, 256> kDTypeByBundleCode =
    makeBundleCodeIndex();
} // namespace detail

constexpr const DTypeInfo &getDTypeInfo(DType type) {
  return detail::kDTypeTable[static_cast<unsigned>(type)];
}
/// Every dtype, in enum order.
constexpr const DTypeInfo *dtypesBegin() { return detail::kDTypeTable; }
constexpr const DTypeInfo *dtypesEnd() {
  return detail::kDTypeTable + kNumDTypes;
}

/// The code the bundle stores for `type` (ONNX's TensorProto number).
constexpr uint8_t toBundleCode(DType type) {
  return getDTypeInfo(type).bundleCode;
}
/// The dtype of bundle code `code`; nullopt for a code snug does not know.
constexpr std::optional<DType> fromBundleCode(uint8_t code) {
  uint8_t index = detail::kDTypeByBundleCode[code];
  if (index == 0xff)
    return std::nullopt;
  return DType(index);
}
/// The dtype named `name` ("f32"); nullopt for an unknown name.
inline std::optional<DType> dtypeFromName(std::string_view name) {
  for (const DTypeInfo *info = dtypesBegin(); info != dtypesEnd(); ++info)
    if (name == info->name)
      return info->type;
  return std::nullopt;
}

} // namespace snug

#endif // SNUG_CORE_DTYPE_H
