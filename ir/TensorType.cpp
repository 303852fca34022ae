//===- TensorType.cpp - Static tensor types -------------------------------===//
#include "ir/TensorType.h"

namespace snug {
namespace ir {

int64_t TensorType::getNumElements() const {
  int64_t count = 1;
  for (int64_t dim : dims)
    count *= dim;
  return count;
}

uint64_t TensorType::getByteSize() const {
  return static_cast<uint64_t>(getNumElements()) * getDTypeSize(dtype);
}

void TensorType::print(llvm::raw_ostream &os) const {
  os << getDTypeName(dtype) << '[';
  for (size_t i = 0; i < dims.size(); ++i)
    os << (i ? "," : "") << dims[i];
  os << ']';
}

std::string TensorType::str() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  print(os);
  return os.str();
}

} // namespace ir
} // namespace snug
