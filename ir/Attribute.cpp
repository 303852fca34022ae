//===- Attribute.cpp - Typed node attributes ------------------------------===//
#include "ir/Attribute.h"
#include "ir/Float16.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <cstring>

namespace snug {
namespace ir {

Attribute Attribute::getInt(int64_t value) {
  Attribute attr;
  attr.kind = Kind::Int;
  attr.ints = {value};
  return attr;
}

Attribute Attribute::getFloat(float value) {
  Attribute attr;
  attr.kind = Kind::Float;
  attr.floats = {value};
  return attr;
}

Attribute Attribute::getString(llvm::StringRef value) {
  Attribute attr;
  attr.kind = Kind::String;
  attr.strings = {value.str()};
  return attr;
}

Attribute Attribute::getInts(llvm::ArrayRef<int64_t> values) {
  Attribute attr;
  attr.kind = Kind::Ints;
  attr.ints.assign(values.begin(), values.end());
  return attr;
}

Attribute Attribute::getFloats(llvm::ArrayRef<float> values) {
  Attribute attr;
  attr.kind = Kind::Floats;
  attr.floats.assign(values.begin(), values.end());
  return attr;
}

Attribute Attribute::getStrings(llvm::ArrayRef<std::string> values) {
  Attribute attr;
  attr.kind = Kind::Strings;
  attr.strings.assign(values.begin(), values.end());
  return attr;
}

Attribute Attribute::getTensor(const TensorType &type,
                               llvm::ArrayRef<uint8_t> bytes) {
  assert(bytes.size() == type.getByteSize() && "tensor bytes/type mismatch");
  Attribute attr;
  attr.kind = Kind::Tensor;
  attr.tensorType = type;
  attr.bytes.assign(bytes.begin(), bytes.end());
  return attr;
}

int64_t Attribute::getInt() const {
  assert(kind == Kind::Int);
  return ints.front();
}
float Attribute::getFloat() const {
  assert(kind == Kind::Float);
  return floats.front();
}
llvm::StringRef Attribute::getString() const {
  assert(kind == Kind::String);
  return strings.front();
}
llvm::ArrayRef<int64_t> Attribute::getInts() const {
  assert(kind == Kind::Ints);
  return ints;
}
llvm::ArrayRef<float> Attribute::getFloats() const {
  assert(kind == Kind::Floats);
  return floats;
}
llvm::ArrayRef<std::string> Attribute::getStrings() const {
  assert(kind == Kind::Strings);
  return strings;
}
const TensorType &Attribute::getTensorType() const {
  assert(kind == Kind::Tensor);
  return tensorType;
}
llvm::ArrayRef<uint8_t> Attribute::getTensorBytes() const {
  assert(kind == Kind::Tensor);
  return bytes;
}

bool Attribute::operator==(const Attribute &other) const {
  if (kind != other.kind || ints != other.ints || strings != other.strings ||
      tensorType != other.tensorType || bytes != other.bytes ||
      floats.size() != other.floats.size())
    return false;
  // Compare floats bitwise so that NaN equals itself.
  return floats.empty() || std::memcmp(floats.data(), other.floats.data(),
                                       floats.size() * sizeof(float)) == 0;
}

void printFloat(llvm::raw_ostream &os, double value, bool isDouble) {
  if (std::isnan(value)) {
    os << "nan";
    return;
  }
  if (std::isinf(value)) {
    os << (value < 0 ? "-inf" : "inf");
    return;
  }
  char buffer[40];
  // 9 significant digits round-trip any float, 17 any double; try the short
  // form first so that 0.5 prints as 0.5, not 0.500000000.
  for (int digits = isDouble ? 15 : 6; digits <= (isDouble ? 17 : 9);
       ++digits) {
    snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
    double back = strtod(buffer, nullptr);
    if (isDouble ? back == value
                 : static_cast<float>(back) == static_cast<float>(value))
      break;
  }
  llvm::StringRef text(buffer);
  os << text;
  if (text.find_first_of(".e") == llvm::StringRef::npos)
    os << ".0";
}

void printQuoted(llvm::raw_ostream &os, llvm::StringRef text) {
  os << '"';
  for (unsigned char c : text) {
    if (c == '"' || c == '\\')
      os << '\\' << c;
    else if (c >= 0x20 && c < 0x7f)
      os << c;
    else
      os << '\\' << llvm::hexdigit(c >> 4) << llvm::hexdigit(c & 15);
  }
  os << '"';
}

template <typename T> static T load(const uint8_t *data) {
  T value;
  std::memcpy(&value, data, sizeof(T));
  return value;
}

static void printElement(llvm::raw_ostream &os, DType type,
                         const uint8_t *data) {
  switch (type) {
  case DType::F32:
    printFloat(os, load<float>(data), false);
    return;
  case DType::F64:
    printFloat(os, load<double>(data), true);
    return;
  case DType::F16:
    printFloat(os, f16ToFloat(load<uint16_t>(data)), false);
    return;
  case DType::BF16:
    printFloat(os, bf16ToFloat(load<uint16_t>(data)), false);
    return;
  case DType::I64:
    os << load<int64_t>(data);
    return;
  case DType::I32:
    os << load<int32_t>(data);
    return;
  case DType::I16:
    os << load<int16_t>(data);
    return;
  case DType::I8:
    os << static_cast<int>(load<int8_t>(data));
    return;
  case DType::U8:
    os << static_cast<unsigned>(load<uint8_t>(data));
    return;
  case DType::U16:
    os << static_cast<unsigned>(load<uint16_t>(data));
    return;
  case DType::U32:
    os << load<uint32_t>(data);
    return;
  case DType::U64:
    os << load<uint64_t>(data);
    return;
  case DType::Bool:
    os << (data[0] ? "true" : "false");
    return;
  }
  llvm_unreachable("unknown dtype");
}

void printElements(llvm::raw_ostream &os, DType type,
                   llvm::ArrayRef<uint8_t> bytes) {
  unsigned size = getDTypeSize(type);
  os << '[';
  for (size_t offset = 0; offset + size <= bytes.size(); offset += size) {
    if (offset)
      os << ", ";
    printElement(os, type, bytes.data() + offset);
  }
  os << ']';
}

void Attribute::print(llvm::raw_ostream &os) const {
  switch (kind) {
  case Kind::Int:
    os << ints.front();
    return;
  case Kind::Float:
    printFloat(os, floats.front(), false);
    return;
  case Kind::String:
    printQuoted(os, strings.front());
    return;
  case Kind::Ints:
    os << '[';
    for (size_t i = 0; i < ints.size(); ++i)
      os << (i ? ", " : "") << ints[i];
    os << ']';
    return;
  case Kind::Floats:
    os << '[';
    for (size_t i = 0; i < floats.size(); ++i) {
      if (i)
        os << ", ";
      printFloat(os, floats[i], false);
    }
    os << ']';
    return;
  case Kind::Strings:
    os << '[';
    for (size_t i = 0; i < strings.size(); ++i) {
      if (i)
        os << ", ";
      printQuoted(os, strings[i]);
    }
    os << ']';
    return;
  case Kind::Tensor:
    os << "dense<" << tensorType << ' ';
    printElements(os, tensorType.getDType(), bytes);
    os << '>';
    return;
  }
  llvm_unreachable("unknown attribute kind");
}

} // namespace ir
} // namespace snug
