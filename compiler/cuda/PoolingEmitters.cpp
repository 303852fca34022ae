//===- PoolingEmitters.cpp - CUDA emitters: Pooling ops -----------------------===//
#include "compiler/cuda/KernelEmitter.h"

namespace snug {
namespace cuda {

llvm::ArrayRef<EmitterEntry> getPoolingEmitters() { return {}; }

} // namespace cuda
} // namespace snug
