//===- ShapeFunctionsInternal.h - Helpers shared by shape files -*- C++ -*-===//
//
// Private to ShapeFunctions.cpp and ShapeFunctionsNN.cpp: error and operand
// helpers, and the hook that adds the neural-network ops to the table.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_SHAPEFUNCTIONSINTERNAL_H
#define SNUG_PASSES_SHAPEFUNCTIONSINTERNAL_H

#include "passes/ShapeFunctions.h"
#include "runtime/CheckedArithmetic.h"

#include <array>
#include <string>

namespace snug {

llvm::Error shapeError(const llvm::Twine &message);
llvm::Expected<const ir::TensorType *> requireOperand(const ShapeQuery &query,
                                                      unsigned index);
llvm::Expected<llvm::SmallVector<int64_t, 4>>
requireInts(const ShapeQuery &query, llvm::StringRef name);
llvm::Expected<int64_t> requireAxis(const ShapeQuery &query,
                                    llvm::StringRef name, int64_t rank,
                                    int64_t defaultValue);

/// Signed int64 arithmetic over attribute values that remembers whether
/// any step overflowed, so that a shape formula reads as a formula:
/// `(CheckedInt(x) + padBegin + padEnd - extent).get()` is None when an
/// extreme attribute (pads of INT64_MAX) would wrap.
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
  llvm::Optional<int64_t> get() const {
    if (overflowed)
      return llvm::None;
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

/// The error for a shape formula that overflowed.
llvm::Error overflowError(const llvm::Twine &what);

using ShapeFunctionPtr = llvm::Expected<ResultTypes> (*)(const ShapeQuery &);
using ShapeFunctionTable =
    std::array<ShapeFunctionPtr, ir::getAllOpsCount()>;
void registerNNShapeFunctions(ShapeFunctionTable &map);

} // namespace snug

#endif // SNUG_PASSES_SHAPEFUNCTIONSINTERNAL_H
