//===- HostAttributes.cpp - IR attributes as the runtime's ----------------===//
#include "passes/simplify/HostAttributes.h"

#include "ir/TensorType.h"

#include "llvm/Support/ErrorHandling.h"

namespace snug {

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
    host.tensorDType = toBundleCode(type.getDType());
    host.tensorDims.assign(type.getDims().begin(), type.getDims().end());
    host.tensorBytes.assign(attr.getTensorBytes().begin(),
                            attr.getTensorBytes().end());
    break;
  }
  }
  return host;
}

} // namespace snug
