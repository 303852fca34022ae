//===- DType.cpp - Element types of snug tensors --------------------------===//
//
// Name and size tables for DType. The enum order is the table order.
//
//===----------------------------------------------------------------------===//
#include "ir/DType.h"

#include "llvm/Support/ErrorHandling.h"

namespace snug {
namespace ir {

namespace {
struct DTypeInfo {
  DType type;
  const char *name;
  unsigned size;
};
} // namespace

static const DTypeInfo dtypeTable[] = {
    {DType::F32, "f32", 4}, {DType::F16, "f16", 2}, {DType::BF16, "bf16", 2},
    {DType::F64, "f64", 8}, {DType::I64, "i64", 8}, {DType::I32, "i32", 4},
    {DType::I16, "i16", 2}, {DType::I8, "i8", 1},   {DType::U8, "u8", 1},
    {DType::U16, "u16", 2}, {DType::U32, "u32", 4}, {DType::U64, "u64", 8},
    {DType::Bool, "bool", 1},
};

static const DTypeInfo &getInfo(DType type) {
  const DTypeInfo &info = dtypeTable[static_cast<unsigned>(type)];
  assert(info.type == type && "dtype table out of order");
  return info;
}

llvm::StringRef getDTypeName(DType type) { return getInfo(type).name; }

unsigned getDTypeSize(DType type) { return getInfo(type).size; }

llvm::Optional<DType> parseDType(llvm::StringRef name) {
  for (const DTypeInfo &info : dtypeTable)
    if (name == info.name)
      return info.type;
  return llvm::None;
}

bool isFloatDType(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 ||
         type == DType::F64;
}

bool isIntegerDType(DType type) {
  return type == DType::I64 || type == DType::I32 || type == DType::I16 ||
         type == DType::I8 || isUnsignedDType(type);
}

bool isUnsignedDType(DType type) {
  return type == DType::U8 || type == DType::U16 || type == DType::U32 ||
         type == DType::U64;
}

} // namespace ir
} // namespace snug
