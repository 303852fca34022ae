//===- AttentionShape.h - The sizes of one snug.attention -------*- C++ -*-===//
//
// snug.attention(Q, K, V[, mask]) computes softmax(scale * Q Kᵀ (+ mask)) V
// over the last axis without storing the scores (ir/Ops.def). Its shape
// rule is here, std-only, so that the shape function, the cost model, the
// scratch request, the host kernel and the CUDA emitter read the same
// sizes from the same dims:
//   Q [B..., Sq, D]; K [B..., D, Skv] when kTransposed (the operand the
//   MatMul read), else [B..., Skv, D]; V [B..., Skv, Dv]; the result
//   [B..., Sq, Dv]; the scores [B..., Sq, Skv].
// Q, K and V have the same batch dims B... (the zoo's exports never
// broadcast them; the pattern only forms nodes that hold this). The mask
// broadcasts to the scores by numpy's rules (right-aligned, each dim 1 or
// the score's); maskStrides are its element strides per score dim, 0 where
// it broadcasts, so element (b, i, j) of the scores reads the mask at
// sum(index[d] * maskStrides[d]).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_ATTENTIONSHAPE_H
#define SNUG_RUNTIME_ATTENTIONSHAPE_H

#include <cstdint>
#include <string>
#include <vector>

namespace snug {

struct AttentionShape {
  /// The product of the batch dims, and the dims themselves.
  int64_t batch = 1;
  std::vector<int64_t> batchDims;
  int64_t sq = 0, skv = 0, d = 0, dv = 0;
  /// Per score dim (batch dims, then Sq, Skv); empty without a mask.
  std::vector<int64_t> maskStrides;
  /// Empty when the dims fit; otherwise why not.
  std::string error;

  bool isValid() const { return error.empty(); }
  /// The scores' dims [B..., Sq, Skv].
  std::vector<int64_t> scoreDims() const {
    std::vector<int64_t> dims = batchDims;
    dims.push_back(sq);
    dims.push_back(skv);
    return dims;
  }
  /// The mask's element offset for batch item `b`: the batch part of
  /// sum(index[d] * maskStrides[d]).
  int64_t maskBatchOffset(int64_t b) const {
    int64_t offset = 0;
    for (size_t d = batchDims.size(); d-- > 0;) {
      offset += (b % batchDims[d]) * maskStrides[d];
      b /= batchDims[d];
    }
    return offset;
  }
  int64_t maskRowStride() const { return maskStrides[batchDims.size()]; }
  int64_t maskColumnStride() const {
    return maskStrides[batchDims.size() + 1];
  }
};

/// The host kernel computes this many rows of scores at a time; its
/// scratch holds them (f32), and is all it needs beyond the result.
constexpr int64_t kAttentionRowBlock = 16;

/// The bytes of the host kernel's scratch: one row block of scores.
inline uint64_t getAttentionScratchBytes(const AttentionShape &shape) {
  int64_t rows = shape.sq < kAttentionRowBlock ? shape.sq : kAttentionRowBlock;
  return uint64_t(rows) * uint64_t(shape.skv) * sizeof(float);
}

inline std::string attentionDimsText(const std::vector<int64_t> &dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

/// The sizes of an attention over operands of dims q, k, v and, when
/// `mask` is not null, a mask of dims *mask.
inline AttentionShape getAttentionShape(const std::vector<int64_t> &q,
                                        const std::vector<int64_t> &k,
                                        const std::vector<int64_t> &v,
                                        const std::vector<int64_t> *mask,
                                        bool kTransposed) {
  AttentionShape shape;
  size_t rank = q.size();
  if (rank < 2 || k.size() != rank || v.size() != rank) {
    shape.error = "Q " + attentionDimsText(q) + ", K " + attentionDimsText(k) +
                  " and V " + attentionDimsText(v) +
                  " must have one rank, at least 2";
    return shape;
  }
  shape.batchDims.assign(q.begin(), q.end() - 2);
  for (size_t i = 0; i + 2 < rank; ++i)
    if (k[i] != q[i] || v[i] != q[i]) {
      shape.error = "Q " + attentionDimsText(q) + ", K " +
                    attentionDimsText(k) + " and V " + attentionDimsText(v) +
                    " differ in their batch dims";
      return shape;
    }
  for (int64_t dim : shape.batchDims)
    shape.batch *= dim;
  shape.sq = q[rank - 2];
  shape.d = q[rank - 1];
  int64_t kd = kTransposed ? k[rank - 2] : k[rank - 1];
  shape.skv = kTransposed ? k[rank - 1] : k[rank - 2];
  shape.dv = v[rank - 1];
  if (kd != shape.d || v[rank - 2] != shape.skv) {
    shape.error = "Q " + attentionDimsText(q) + ", K " + attentionDimsText(k) +
                  (kTransposed ? " (transposed)" : "") + " and V " +
                  attentionDimsText(v) + " do not chain";
    return shape;
  }
  if (!mask)
    return shape;
  std::vector<int64_t> scores = shape.scoreDims();
  if (mask->size() > scores.size()) {
    shape.error = "mask " + attentionDimsText(*mask) + " has more dims than " +
                  "the scores " + attentionDimsText(scores);
    return shape;
  }
  shape.maskStrides.assign(scores.size(), 0);
  size_t lead = scores.size() - mask->size();
  int64_t stride = 1;
  for (size_t i = mask->size(); i-- > 0;) {
    int64_t dim = (*mask)[i];
    if (dim != 1 && dim != scores[lead + i]) {
      shape.error = "mask " + attentionDimsText(*mask) +
                    " does not broadcast to the scores " +
                    attentionDimsText(scores);
      return shape;
    }
    shape.maskStrides[lead + i] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  return shape;
}

} // namespace snug

#endif // SNUG_RUNTIME_ATTENTIONSHAPE_H
