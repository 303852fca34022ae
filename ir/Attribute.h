//===- Attribute.h - Typed node attributes ----------------------*- C++ -*-===//
//
// Node and module attributes: the ONNX attribute kinds snug keeps (int, float,
// string, their lists, and tensor). Floats are float32, as in ONNX. A tensor
// attribute owns its bytes (attributes are small; weights live in the
// module's blob instead).
//
// Textual forms: 3, 0.5, "s", [1, 2], [0.5, 1.0], ["a", "b"],
// dense<i64[2] [1, 2]>. A float always prints with a '.', an exponent, or as
// nan/inf, so the kind survives a round trip. An empty list is an int list.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_ATTRIBUTE_H
#define SNUG_IR_ATTRIBUTE_H

#include "ir/TensorType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace snug {
namespace ir {

class Attribute {
public:
  enum class Kind { Int, Float, String, Ints, Floats, Strings, Tensor };

  static Attribute getInt(int64_t value);
  static Attribute getFloat(float value);
  static Attribute getString(llvm::StringRef value);
  static Attribute getInts(llvm::ArrayRef<int64_t> values);
  static Attribute getFloats(llvm::ArrayRef<float> values);
  static Attribute getStrings(llvm::ArrayRef<std::string> values);
  static Attribute getTensor(const TensorType &type,
                             llvm::ArrayRef<uint8_t> bytes);

  Kind getKind() const { return kind; }
  int64_t getInt() const;
  float getFloat() const;
  llvm::StringRef getString() const;
  llvm::ArrayRef<int64_t> getInts() const;
  llvm::ArrayRef<float> getFloats() const;
  llvm::ArrayRef<std::string> getStrings() const;
  const TensorType &getTensorType() const;
  llvm::ArrayRef<uint8_t> getTensorBytes() const;

  void print(llvm::raw_ostream &os) const;
  bool operator==(const Attribute &other) const;
  bool operator!=(const Attribute &other) const { return !(*this == other); }

private:
  Kind kind = Kind::Int;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  TensorType tensorType;
  std::vector<uint8_t> bytes;
};

/// Prints the elements of a tensor of `type` stored in `bytes` as
/// `[e0, e1, ...]` (flat). Floats print so that they read back bit-exact
/// (NaN payloads excepted); f16 and bf16 print their exact float value.
void printElements(llvm::raw_ostream &os, DType type,
                   llvm::ArrayRef<uint8_t> bytes);
/// Prints a float so that it reads back as the same float and as a float.
void printFloat(llvm::raw_ostream &os, double value, bool isDouble);
/// Quotes and escapes a string for the textual IR.
void printQuoted(llvm::raw_ostream &os, llvm::StringRef text);

/// The kinds by their bare names, as the attribute tables spell them
/// (core/Ops.def's ATTR lines, compiler/onnx/OnnxAttrs.def): a table's
/// reader says `using namespace attr_kinds;` before including it.
namespace attr_kinds {
constexpr Attribute::Kind Int = Attribute::Kind::Int;
constexpr Attribute::Kind Float = Attribute::Kind::Float;
constexpr Attribute::Kind String = Attribute::Kind::String;
constexpr Attribute::Kind Ints = Attribute::Kind::Ints;
constexpr Attribute::Kind Floats = Attribute::Kind::Floats;
constexpr Attribute::Kind Strings = Attribute::Kind::Strings;
constexpr Attribute::Kind Tensor = Attribute::Kind::Tensor;
} // namespace attr_kinds

} // namespace ir
} // namespace snug

#endif // SNUG_IR_ATTRIBUTE_H
