//===- AttentionShape.h - The sizes and layout of one snug.attention -*- C++
//-*-===//
//
// snug.attention(Q, K, V[, mask[, additive mask]]) computes
// softmax(scale * Q Kᵀ (+ mask)) V over the last axis without storing the
// scores (core/Ops.def); with mask = "where_add" a bool mask fills, then an
// additive mask (operand 4) is added, with "add_add" two additive masks
// (operands 3 and 4) are added in that order, and with "add_where" an
// additive mask is added, then a bool one (operand 4) fills. Its shape
// rule is here, std-only, so that the shape function, the cost model, the
// scratch request, the host kernel and the CUDA emitter read the same
// sizes and strides from the same dims.
//
// Each of Q, K, V is read through a permutation of its dims (q_perm,
// k_perm, v_perm: logical dim i is the operand's dim perm[i]; none:
// identity), which is how the op takes in the Transposes that split the
// heads. Logically
//   Q [B..., Sq, D]; K as the MatMul read it, Kᵀ [B..., D, Skv];
//   V [B..., Skv, Dv]; the result [B..., Sq, Dv]; the scores [B..., Sq, Skv]
// and the result is stored through y_perm (stored dim i is logical dim
// y_perm[i]), which is how it takes in the Transpose that merges the heads.
// Q, K and V have the same batch dims B... (the zoo's exports never
// broadcast them). The mask broadcasts to the scores by numpy's rules
// (right-aligned, each dim 1 or the score's), stored as it is; so does the
// second mask (operand 4).
//
// The strides say where logical element (b..., x, y) of each operand lies:
// sum of index * stride in elements of the operand's own memory, 0 where
// the mask broadcasts.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_ATTENTIONSHAPE_H
#define SNUG_CORE_ATTENTIONSHAPE_H

#include <cstdint>
#include <string>
#include <vector>

namespace snug {

struct AttentionShape {
  /// The product of the batch dims, and the dims themselves.
  int64_t batch = 1;
  std::vector<int64_t> batchDims;
  int64_t sq = 0, skv = 0, d = 0, dv = 0;
  /// Per logical dim (the batch dims, then the two matrix dims), in
  /// elements of each operand's memory; maskStrides is empty without a
  /// mask (operand 3), biasStrides without a second one (operand 4).
  std::vector<int64_t> qStrides, kStrides, vStrides, yStrides, maskStrides,
      biasStrides;
  /// The result's dims as stored (through y_perm).
  std::vector<int64_t> resultDims;
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
  /// Where batch item `b` (row-major over batchDims) starts in an operand
  /// with these strides.
  int64_t batchOffset(int64_t b, const std::vector<int64_t> &strides) const {
    int64_t offset = 0;
    for (size_t d = batchDims.size(); d-- > 0;) {
      offset += (b % batchDims[d]) * strides[d];
      b /= batchDims[d];
    }
    return offset;
  }
  /// The strides of the two matrix dims (rows, then columns).
  static int64_t rowStride(const std::vector<int64_t> &strides) {
    return strides[strides.size() - 2];
  }
  static int64_t columnStride(const std::vector<int64_t> &strides) {
    return strides.back();
  }
};

/// What snug.attention's mask attribute (core/Ops.def) puts where; one
/// reading for the shape rule, the host kernel, the CUDA emitter, the
/// cost model and the fusion report. Per score, in this order: a causal
/// fill (mask "causal" and "causal_add": score (i, j) becomes `fill` where
/// j > i + causal, the diagonal offset attribute, computed, never stored),
/// a bool mask (operand 3 of "where" and "where_add": `fill` where it
/// equals fill_if), an additive mask (operand 3 of "add", "add_add",
/// "add_where" and "causal_add"), then operand 4: an additive mask after
/// the first mask ("where_add" and "add_add"), or a bool mask filling
/// after the additive one ("add_where": DeBERTa's relative-position bias
/// added, then the padding mask's fill).
///
/// With zero_filled = 1 (kinds that fill), the probability of every score
/// a fill replaced is 0 after the softmax, which still normalizes over
/// every score (DeBERTa's XSoftmax: Where(m, 0, Softmax(Where(m, fill,
/// s)))); a row whose scores were all filled gives 0, not the mean of V.
struct AttentionMaskKind {
  bool valid = false;
  bool causal = false;
  bool where = false;
  bool additive = false;
  /// Operand 4 is an additive mask (after operand 3).
  bool bias = false;
  /// Operand 4 is a bool mask filling after operand 3, an additive one.
  bool whereAfter = false;
  /// Whether operand 3 is a mask (bool for `where`, else Q's type).
  bool hasMaskOperand() const { return where || additive; }
  /// Whether operand 4 is a mask (bool for `whereAfter`, else Q's type).
  bool hasSecondMask() const { return bias || whereAfter; }
  /// Whether some score may be replaced by `fill`.
  bool fills() const { return causal || where || whereAfter; }
};

/// The valid mask kinds, for messages.
inline const char *attentionMaskKindsText() {
  return "'none', 'add', 'add_add', 'add_where', 'where', 'where_add', "
         "'causal' and 'causal_add'";
}

inline AttentionMaskKind getAttentionMaskKind(const std::string &name) {
  AttentionMaskKind kind;
  kind.valid = true;
  if (name == "add")
    kind.additive = true;
  else if (name == "where")
    kind.where = true;
  else if (name == "where_add")
    kind.where = kind.bias = true;
  else if (name == "add_add")
    kind.additive = kind.bias = true;
  else if (name == "add_where")
    kind.additive = kind.whereAfter = true;
  else if (name == "causal")
    kind.causal = true;
  else if (name == "causal_add")
    kind.causal = kind.additive = true;
  else if (name != "none")
    kind.valid = false;
  return kind;
}

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

/// One operand as stored, and the permutation it is read through (null:
/// identity).
struct AttentionOperand {
  const std::vector<int64_t> *dims = nullptr;
  const std::vector<int64_t> *perm = nullptr;
};

namespace attention_detail {
inline std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}
/// Whether `perm` is a permutation of 0 .. rank-1 (null is the identity).
inline bool isPermutation(const std::vector<int64_t> *perm, size_t rank) {
  if (!perm)
    return true;
  if (perm->size() != rank)
    return false;
  std::vector<bool> seen(rank, false);
  for (int64_t axis : *perm) {
    if (axis < 0 || axis >= int64_t(rank) || seen[size_t(axis)])
      return false;
    seen[size_t(axis)] = true;
  }
  return true;
}
/// The logical dims of `operand` and their strides in its memory.
inline void readThrough(const AttentionOperand &operand,
                        std::vector<int64_t> &dims,
                        std::vector<int64_t> &strides) {
  std::vector<int64_t> stored = rowMajorStrides(*operand.dims);
  dims.clear(), strides.clear();
  for (size_t i = 0; i < operand.dims->size(); ++i) {
    size_t from = operand.perm ? size_t((*operand.perm)[i]) : i;
    dims.push_back((*operand.dims)[from]);
    strides.push_back(stored[from]);
  }
}
} // namespace attention_detail

/// The sizes and strides of an attention over these operands, the mask of
/// dims *mask when not null, the result stored through *yPerm when not
/// null, and the second mask (operand 4: "where_add", "add_add",
/// "add_where") of dims *bias when not null.
inline AttentionShape
getAttentionShape(AttentionOperand q, AttentionOperand k, AttentionOperand v,
                  const std::vector<int64_t> *mask,
                  const std::vector<int64_t> *yPerm,
                  const std::vector<int64_t> *bias = nullptr) {
  using namespace attention_detail;
  AttentionShape shape;
  size_t rank = q.dims->size();
  auto describe = [&]() {
    return "Q " + attentionDimsText(*q.dims) + ", K " +
           attentionDimsText(*k.dims) + " and V " +
           attentionDimsText(*v.dims);
  };
  if (rank < 2 || k.dims->size() != rank || v.dims->size() != rank) {
    shape.error = describe() + " must have one rank, at least 2";
    return shape;
  }
  if (!isPermutation(q.perm, rank) || !isPermutation(k.perm, rank) ||
      !isPermutation(v.perm, rank) || !isPermutation(yPerm, rank)) {
    shape.error = "a perm of " + describe() + " is no permutation of their " +
                  std::to_string(rank) + " dims";
    return shape;
  }
  std::vector<int64_t> qd, kd, vd;
  readThrough(q, qd, shape.qStrides);
  readThrough(k, kd, shape.kStrides);
  readThrough(v, vd, shape.vStrides);
  shape.batchDims.assign(qd.begin(), qd.end() - 2);
  for (size_t i = 0; i + 2 < rank; ++i)
    if (kd[i] != qd[i] || vd[i] != qd[i]) {
      shape.error = describe() + " differ in their batch dims";
      return shape;
    }
  for (int64_t dim : shape.batchDims)
    shape.batch *= dim;
  shape.sq = qd[rank - 2];
  shape.d = qd[rank - 1];
  shape.skv = kd[rank - 1];
  shape.dv = vd[rank - 1];
  if (kd[rank - 2] != shape.d || vd[rank - 2] != shape.skv) {
    shape.error = describe() + " do not chain";
    return shape;
  }
  // The result: logical [B..., Sq, Dv], stored dim i = logical yPerm[i].
  std::vector<int64_t> logical = shape.batchDims;
  logical.push_back(shape.sq);
  logical.push_back(shape.dv);
  shape.resultDims = logical;
  if (yPerm)
    for (size_t i = 0; i < rank; ++i)
      shape.resultDims[i] = logical[size_t((*yPerm)[i])];
  std::vector<int64_t> stored = rowMajorStrides(shape.resultDims);
  shape.yStrides.assign(rank, 0);
  for (size_t i = 0; i < rank; ++i)
    shape.yStrides[yPerm ? size_t((*yPerm)[i]) : i] = stored[i];
  std::vector<int64_t> scores = shape.scoreDims();
  // Each mask's strides over the scores, 0 where it broadcasts.
  auto broadcastTo = [&](const std::vector<int64_t> &dims, const char *what,
                         std::vector<int64_t> &strides) {
    if (dims.size() > scores.size()) {
      shape.error = std::string(what) + " " + attentionDimsText(dims) +
                    " has more dims than the scores " +
                    attentionDimsText(scores);
      return false;
    }
    strides.assign(scores.size(), 0);
    size_t lead = scores.size() - dims.size();
    int64_t stride = 1;
    for (size_t i = dims.size(); i-- > 0;) {
      if (dims[i] != 1 && dims[i] != scores[lead + i]) {
        shape.error = std::string(what) + " " + attentionDimsText(dims) +
                      " does not broadcast to the scores " +
                      attentionDimsText(scores);
        return false;
      }
      strides[lead + i] = dims[i] == 1 ? 0 : stride;
      stride *= dims[i];
    }
    return true;
  };
  if (mask && !broadcastTo(*mask, "mask", shape.maskStrides))
    return shape;
  if (bias && !broadcastTo(*bias, "second mask", shape.biasStrides))
    return shape;
  return shape;
}

} // namespace snug

#endif // SNUG_CORE_ATTENTIONSHAPE_H
