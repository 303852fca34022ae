//===- DType.cpp - Element types of snug tensors --------------------------===//
//
// The IR's view of core/DTypes.def (ir/DType.h).
//
//===----------------------------------------------------------------------===//
#include "ir/DType.h"

namespace snug {
namespace ir {

llvm::StringRef getDTypeName(DType type) { return getDTypeInfo(type).name; }

unsigned getDTypeSize(DType type) { return getDTypeInfo(type).bytes; }

llvm::Optional<DType> parseDType(llvm::StringRef name) {
  if (std::optional<DType> type =
          dtypeFromName(std::string_view(name.data(), name.size())))
    return *type;
  return llvm::None;
}

bool isFloatDType(DType type) {
  return getDTypeInfo(type).typeClass == DTypeClass::Float;
}

bool isIntegerDType(DType type) {
  DTypeClass typeClass = getDTypeInfo(type).typeClass;
  return typeClass == DTypeClass::Signed || typeClass == DTypeClass::Unsigned;
}

bool isUnsignedDType(DType type) {
  return getDTypeInfo(type).typeClass == DTypeClass::Unsigned;
}

} // namespace ir
} // namespace snug
