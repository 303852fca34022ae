//===- DataMovementEmitters.cpp - CUDA emitters: DataMovement ops -----------------------===//
#include "compiler/cuda/KernelEmitter.h"

namespace snug {
namespace cuda {

llvm::ArrayRef<EmitterEntry> getDataMovementEmitters() { return {}; }

} // namespace cuda
} // namespace snug
