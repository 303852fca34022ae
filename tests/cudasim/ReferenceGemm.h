//===- ReferenceGemm.h - cuBLAS's GEMM, computed on the host -----*- C++ -*-===//
//
// The arithmetic of one cuBLAS/cuBLASLt strided-batched GEMM (column-major;
// op(A) m x k, op(B) k x n; C = alpha * op(A) op(B) + beta * C, C not read
// when beta is 0, then cuBLASLt's epilogue), accumulating in double; f16 and
// bf16 through float; TF32 operands rounded as the host kernels round them.
// Shared by the simulator's step loop (SimExecutor, which checks the
// operands against the arena first) and the fake cuBLAS of
// tests/unit/FakeCuda, so a plan run through either gets the same bits.
// Takes resolved addresses and does no checking of its own.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_CUDASIM_REFERENCEGEMM_H
#define SNUG_TESTS_CUDASIM_REFERENCEGEMM_H

#include "core/DevicePlan.h"

#include <cstdint>

namespace snug {
namespace cudasim {

/// Computes `g` (its shape, dtype, math, alpha, beta, epilogue; its operand
/// arguments are ignored) on `a`, `b`, `c` and `bias` (null without a
/// bias). m, n or batch below 1 computes nothing.
void computeGemm(const bundle::DeviceGemm &g, const uint8_t *a,
                 const uint8_t *b, uint8_t *c, const uint8_t *bias);

} // namespace cudasim
} // namespace snug

#endif // SNUG_TESTS_CUDASIM_REFERENCEGEMM_H
