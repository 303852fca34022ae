//===- ElementwiseEmitters.cpp - CUDA emitters: Elementwise ops -----------------------===//
#include "compiler/cuda/KernelEmitter.h"

namespace snug {
namespace cuda {

llvm::ArrayRef<EmitterEntry> getElementwiseEmitters() { return {}; }

} // namespace cuda
} // namespace snug
