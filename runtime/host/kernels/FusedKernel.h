//===- FusedKernel.h - The host kernel of op bodies (snug.fused) -*- C++ -*-===//
//
// snug.fused runs its body per element through runtime/ScalarOps.h
// (FusedKernel.cpp says how). Registered in the kernel table like every
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

/// Ok when every op of `op`'s body binds to a host scalar op (its name, its
/// operand count, a compute type for its operand dtypes); otherwise an
/// SNUG_ERROR_UNSUPPORTED naming the op (at schedule position `index`) and
/// the body op.
Status checkFusedBody(const PlanOp &op, size_t index);

} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_HOST_KERNELS_FUSEDKERNEL_H
