//===- HostAttributes.cpp - IR attributes as the runtime's ----------------===//
#include "passes/HostAttributes.h"

#include "ir/TensorType.h"

#include "llvm/Support/ErrorHandling.h"

namespace snug {

uint8_t getHostDTypeCode(ir::DType type) {
  switch (type) {
  case ir::DType::F32: return bundle::DTypeF32;
  case ir::DType::F16: return bundle::DTypeF16;
  case ir::DType::BF16: return bundle::DTypeBF16;
  case ir::DType::F64: return bundle::DTypeF64;
  case ir::DType::I64: return bundle::DTypeI64;
  case ir::DType::I32: return bundle::DTypeI32;
  case ir::DType::I16: return bundle::DTypeI16;
  case ir::DType::I8: return bundle::DTypeI8;
  case ir::DType::U8: return bundle::DTypeU8;
  case ir::DType::U16: return bundle::DTypeU16;
  case ir::DType::U32: return bundle::DTypeU32;
  case ir::DType::U64: return bundle::DTypeU64;
  case ir::DType::Bool: return bundle::DTypeBool;
  }
  llvm_unreachable("unknown dtype");
}

rt::Attr toHostAttr(const ir::Attribute &attr) {
  using Kind = ir::Attribute::Kind;
  rt::Attr host;
  switch (attr.getKind()) {
  case Kind::Int:
    host.kind = bundle::AttrInt;
    host.i = attr.getInt();
    break;
  case Kind::Float:
    host.kind = bundle::AttrFloat;
    host.f = attr.getFloat();
    break;
  case Kind::String:
    host.kind = bundle::AttrString;
    host.s = attr.getString().str();
    break;
  case Kind::Ints:
    host.kind = bundle::AttrInts;
    host.ints.assign(attr.getInts().begin(), attr.getInts().end());
    break;
  case Kind::Floats:
    host.kind = bundle::AttrFloats;
    host.floats.assign(attr.getFloats().begin(), attr.getFloats().end());
    break;
  case Kind::Strings:
    host.kind = bundle::AttrStrings;
    host.strings.assign(attr.getStrings().begin(), attr.getStrings().end());
    break;
  case Kind::Tensor: {
    const ir::TensorType &type = attr.getTensorType();
    host.kind = bundle::AttrTensor;
    host.tensorDType = getHostDTypeCode(type.getDType());
    host.tensorDims.assign(type.getDims().begin(), type.getDims().end());
    host.tensorBytes.assign(attr.getTensorBytes().begin(),
                            attr.getTensorBytes().end());
    break;
  }
  }
  return host;
}

} // namespace snug
