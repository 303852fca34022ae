//===- LtEpilogue.h - Which epilogues cuBLASLt runs itself ------*- C++ -*-===//
//
// cuBLASLt applies a few epilogues in its own GEMM kernel
// (cublasLtEpilogue_t: CUBLASLT_EPILOGUE_BIAS, RELU, RELU_BIAS, GELU,
// GELU_BIAS; CUDA 12 cuBLAS reference, section 3.3 "cuBLASLt datatypes"):
// a bias vector with one element per row of the column-major result (m:
// per column N of snug's row-major product), then ReLU or the tanh
// approximation of GELU. A product whose epilogue region (ir/Module.h) is
// exactly one of those keeps cuBLAS's kernels and split-K; any other
// epilogue runs as snug's tiled kernel (compiler/cuda/GemmEmitters.cpp).
//
// The one matching rule, shared by the three places that must agree:
// EpiloguePattern (a long-K product takes an epilogue only when it
// matches), ScratchRequest (a matching product keeps its cuBLAS workspace)
// and the emitter (a matching product becomes a cuBLASLt step).
//
// What matches, over the product's result x in its dtype (f32, f16, bf16):
//   Add(x, bias) or Add(bias, x)           -> Bias
//   that, then Relu                        -> ReluBias
//   that, then Gelu {approximate = "tanh"} -> GeluBias
//   Relu(x)                                -> Relu
//   Gelu(x) {approximate = "tanh"}         -> Gelu
// where bias has the product's dtype, N elements and last dim N (N the
// product's last dim): [N], [1,N], [1,1,N]. A bias of another length or
// broadcast along the rows ([M,1]) does not match, nor does the Erf Gelu
// (approximate "none": cuBLASLt's GELU is the tanh form), the Gelu the
// exporters decompose into Mul/Pow/Tanh nodes (the fuse pass leaves it
// decomposed), SiLU, Clip or a residual Add. Only MatMul, and Gemm without
// C, match: cuBLASLt adds beta * C before the bias, but a broadcast C
// would need its own copy kernel first, which the tiled kernel saves.
// Gemm's alpha scales the product before the bias, as in ONNX.
//
// It does not decide that the product is one strided-batched call (the
// emitter's planGemms does, and falls back to the tiled kernel when not).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_FUSION_LTEPILOGUE_H
#define SNUG_PASSES_FUSION_LTEPILOGUE_H

#include "ir/Module.h"

#include <cstdint>

namespace snug {

/// The cuBLASLt epilogue an epilogue region is, or None.
enum class LtEpilogue : uint8_t { None, Bias, ReluBias, GeluBias, Relu, Gelu };

/// "none", "bias", "relu_bias", "gelu_bias", "relu", "gelu".
const char *getLtEpilogueName(LtEpilogue epilogue);

struct LtEpilogueMatch {
  LtEpilogue kind = LtEpilogue::None;
  /// The product node's operand that is the bias (-1 without one).
  int biasOperand = -1;
};

/// The cuBLASLt epilogue of `product`, a MatMul or Gemm with an epilogue
/// region; None for any other node.
LtEpilogueMatch matchLtEpilogue(const ir::Node &product);

/// The cuBLASLt epilogue that `consumer` (one elementwise node or a
/// snug.fused group, reading the product as its operand `raw`) would be as
/// `producer`'s epilogue, before EpiloguePattern builds it.
LtEpilogue matchLtEpilogue(const ir::Node &producer, const ir::Node &consumer,
                           const ir::Value *raw);

} // namespace snug

#endif // SNUG_PASSES_FUSION_LTEPILOGUE_H
