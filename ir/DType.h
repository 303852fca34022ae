//===- DType.h - Element types of snug tensors ------------------*- C++ -*-===//
//
// The element types a tensor can hold, as the IR asks about them (LLVM
// strings and optionals). The enum and its table are core/DTypes.def's: the
// set mirrors the ONNX TensorProto types snug supports; names are the short
// forms used in the textual IR (f32, bf16, i64, u32, bool, ...). Sizes are
// storage sizes in bytes; bool is one byte, as in ONNX.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_DTYPE_H
#define SNUG_IR_DTYPE_H

#include "core/DType.h"

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace snug {
namespace ir {

/// The one dtype enum (core/DTypes.def), named ir::DType here as in every
/// IR signature.
using DType = snug::DType;

/// Short textual name ("f32", "bf16", "bool").
llvm::StringRef getDTypeName(DType type);
/// Inverse of getDTypeName; None for an unknown name.
llvm::Optional<DType> parseDType(llvm::StringRef name);
/// Storage size of one element in bytes.
unsigned getDTypeSize(DType type);
bool isFloatDType(DType type);
/// Signed and unsigned integers (not bool).
bool isIntegerDType(DType type);
/// u8, u16, u32, u64.
bool isUnsignedDType(DType type);

} // namespace ir
} // namespace snug

#endif // SNUG_IR_DTYPE_H
