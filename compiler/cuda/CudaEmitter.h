//===- CudaEmitter.h - A planned module as CUDA C++ and a launch plan -*- C++ -*-===//
//
// Walks a planned module in schedule order and asks each op's emitter
// (KernelEmitter.h) for device steps. The result is one CUDA C++
// translation unit (the prelude, then every distinct kernel once) and the
// device plan: kernel symbols and, per node, launches, cuBLAS GEMMs and
// copies, all addressed as offsets into the device arena and weights.
//
// The device arena is the plan's arena. Each GEMM's cuBLAS workspace is
// the scratch buffer plan-memory planned for its node (live at that step
// only, sized by passes/memory/ScratchRequest from the GEMM's shape), recorded on
// every Gemm step of the node; the emitter places nothing itself.
//
// Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity, inference Dropout)
// that the planner placed on their operand's bytes emit nothing; otherwise
// a copy.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_CUDAEMITTER_H
#define SNUG_COMPILER_CUDA_CUDAEMITTER_H

#include "compiler/bundle/BundleWriter.h"
#include "ir/Module.h"
#include "core/BundleFormat.h"
#include "core/DevicePlan.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snug {
namespace cuda {

struct CudaOptions {
  /// SM architectures to compile cubins for (80 = sm_80); PTX is added for
  /// the newest.
  std::vector<unsigned> archs = {80, 90};
  /// The largest value an emitted kernel's 32-bit index may reach
  /// (KernelEmitter.h's index rule). Only tests lower it (snug-opt
  /// --cuda-index32-limit), to run the 64-bit code on small tensors.
  int64_t index32Limit = INT32_MAX;
};

struct CudaProgram {
  std::string source; // the whole translation unit
  bundle::DevicePlan plan;
  /// For each kernel of plan.kernels: the node that first emitted it, and
  /// the lines [first, last] it occupies in `source` (1-based), so an NVRTC
  /// message can name the op.
  std::vector<std::string> kernelNodes;
  std::vector<std::pair<unsigned, unsigned>> kernelLines;
};


/// Emits CUDA C++ and the device plan for a planned module. Fails, naming
/// the node, on an op or dtype the CUDA backend does not support.
llvm::Expected<CudaProgram> emitCuda(const ir::Module &module,
                                     const WeightsLayout &weights,
                                     const CudaOptions &options);

/// The device plan as comment lines, one per step, for tests and
/// --dump-cuda: "// step 3 (node 'relu1' (Relu)): launch snug_relu_1
/// grid(2,1,1) block(256,1,1) args(arena+0, arena+512)".
std::string describeDevicePlan(const bundle::DevicePlan &plan);

/// The prelude every translation unit starts with.
llvm::StringRef getCudaPrelude();

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_CUDAEMITTER_H
