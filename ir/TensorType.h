//===- TensorType.h - Static tensor types -----------------------*- C++ -*-===//
//
// A TensorType is an element type plus static dimensions. snug binds every
// symbolic dimension at import, so a dim is a non-negative integer; a scalar
// has no dims. Printed as `f32[1,3,224,224]`, a scalar as `f32[]`.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_TENSORTYPE_H
#define SNUG_IR_TENSORTYPE_H

#include "ir/DType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace snug {
namespace ir {

class TensorType {
public:
  TensorType() = default;
  TensorType(DType dtype, llvm::ArrayRef<int64_t> dims)
      : dtype(dtype), dims(dims.begin(), dims.end()) {}

  DType getDType() const { return dtype; }
  llvm::ArrayRef<int64_t> getDims() const { return dims; }
  unsigned getRank() const { return dims.size(); }
  int64_t getNumElements() const;
  /// Storage bytes of the whole tensor (elements times element size).
  uint64_t getByteSize() const;

  void print(llvm::raw_ostream &os) const;
  std::string str() const;

  bool operator==(const TensorType &other) const {
    return dtype == other.dtype && dims == other.dims;
  }
  bool operator!=(const TensorType &other) const { return !(*this == other); }

private:
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t, 4> dims;
};

inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os,
                                     const TensorType &type) {
  type.print(os);
  return os;
}

} // namespace ir
} // namespace snug

#endif // SNUG_IR_TENSORTYPE_H
