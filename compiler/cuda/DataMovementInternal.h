//===- DataMovementInternal.h - Data-movement emitters' shared --*- C++ -*-===//
//
// Private to DataMovementEmitters.cpp, ResizeEmitter.cpp and
// FillEmitters.cpp: the opaque-unit helpers the copies and the fills both
// use (defined in DataMovementEmitters.cpp), and the emitters of the other
// two files, which DataMovementEmitters.cpp's table registers.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_DATAMOVEMENTINTERNAL_H
#define SNUG_COMPILER_CUDA_DATAMOVEMENTINTERNAL_H

#include "compiler/cuda/KernelEmitter.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace snug {
namespace cuda {

// Opaque units (DataMovementEmitters.cpp; each documented there).
unsigned elementBytes(const TensorRef &ref);
std::string tagOf(const EmitContext &context);
std::string unitType(unsigned bytes);
std::string addUnitPointer(Kernel &kernel, const std::string &name,
                           const TensorRef &ref, uint64_t byteOffset,
                           bool readOnly, unsigned bytes);
unsigned widestUnit(unsigned minimum, uint64_t runBytes,
                    llvm::ArrayRef<uint64_t> addresses);

/// Resize (ResizeEmitter.cpp).
llvm::Error emitResize(EmitContext &context);

// The fills (FillEmitters.cpp).
llvm::Error emitShape(EmitContext &context);
llvm::Error emitSize(EmitContext &context);
llvm::Error emitConstant(EmitContext &context);
llvm::Error emitDropout(EmitContext &context);
llvm::Error emitRange(EmitContext &context);
llvm::Error emitDropoutMask(EmitContext &context);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_DATAMOVEMENTINTERNAL_H
