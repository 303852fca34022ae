//===- CompileError.h - The error of a failed kernel compile -----*- C++ -*-===//
//
// One helper for the CUDA compile's llvm::Error messages (NVRTC, nvJitLink,
// the kernel report), where each file had its own copy.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_COMPILEERROR_H
#define SNUG_COMPILER_CUDA_COMPILEERROR_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace snug {
namespace cuda {

/// An llvm::Error carrying `message` (no error code).
inline llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str());
}

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_COMPILEERROR_H
