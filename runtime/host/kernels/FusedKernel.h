//===- FusedKernel.h - The host kernel of op bodies (snug.fused) -*- C++ -*-===//
//
// snug.fused runs its body per element through core/ScalarOps.h
// (FusedKernel.cpp says how); so does an epilogue, over its op's result. Registered in the kernel table like every
// family; the executor also checks, before it runs anything, that every
// body op has a scalar definition the host can bind.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_HOST_KERNELS_FUSEDKERNEL_H
#define SNUG_RUNTIME_HOST_KERNELS_FUSEDKERNEL_H

#include "runtime/host/Kernels.h"

namespace snug {
namespace rt {

void registerFusedKernels(KernelTable &table);

/// Applies the epilogue of `ctx`'s op (ir/Module.h) in place to its
/// result, which the op's kernel has written: per element, block argument
/// 0 is the result element and the others the epilogue's extra operands,
/// as snug.fused runs a body. The bits are the unfused nodes'.
Status applyEpilogue(KernelContext &ctx);

/// Ok when every op of `op`'s body binds to a host scalar op (its name, its
/// operand count, a compute type for its operand dtypes); otherwise an
/// SNUG_ERROR_UNSUPPORTED naming the op (at schedule position `index`) and
/// the body op.
Status checkFusedBody(const PlanOp &op, size_t index);

} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_HOST_KERNELS_FUSEDKERNEL_H
