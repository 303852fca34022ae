//===- AttentionPattern.cpp - Scaled dot-product attention, as one op -----===//
//
// Exporters write attention as
//   s = MatMul(Q, Kt)                      scores [..., Sq, Skv]
//   s = Mul(s, c) | Mul(c, s) | Div(s, c)  optional, c a constant scalar
//   s = Add(s, mask) | Add(mask, s)        optional additive mask, or
//   s = Where(m, fill, s) | Where(m, s, fill)  a bool mask, fill a constant
//   s = Add(Where(...), mask) | Add(mask, Where(...))  both (HF GPT-2's
//       causal Where on a constant bool buffer, then the padding mask
//       [batch, 1, 1, Skv] added: mask = "where_add", the bool mask fills
//       before the additive one adds, as the nodes did)
//   s = Add(Add(s, mask), mask2)  two additive masks in that order (Swin's
//       relative position bias, then its shifted windows' mask, which
//       ReshapePairPattern.cpp took out of the Reshapes it was added
//       between): mask = "add_add"
//   s = Where(m, fill, Add(s, bias))  an additive mask, then a bool one
//       (DeBERTa's disentangled position bias, then its padding mask):
//       mask = "add_where"
//   p = Softmax(s) {axis = last}
//   p = Where(m, 0, p) | Where(m, p, 0)  optional, m the mask that filled,
//       zero where it filled (DeBERTa's XSoftmax): zero_filled = 1
//   y = MatMul(p, V)
// which stores the scores and the probabilities, each heads x Sq x Skv: at
// sequence 1024 they are the largest values of a transformer.
// snug.attention(Q, K, V[, mask[, additive mask]]) computes y without them
// (core/Ops.def):
// the host kernel a row block of scores at a time, the CUDA kernel a tile
// at a time with an online softmax.
//
// Around that core the pattern also takes in what the exports put on its
// operands and result when nothing else reads it: a constant scale on Q
// (torch's MultiheadAttention divides q by sqrt(d) before the product) or
// on Kᵀ (DeBERTa divides the transposed keys) joins the scale, and the
// Transposes that split the heads of Q, K and V
// and merge them in the result become the op's perms (q_perm, k_perm,
// v_perm, y_perm): the kernels read and write through strides, so those
// copies are never made. The Reshapes around them are views and stay. f32,
// or f16 and bf16 as lower-precision (which runs before fusion) leaves
// them, the scale's constant then in the same type.
//
// What must hold: every intermediate (scores, scaled, masked,
// probabilities) has exactly one user, the next node, and is no graph
// output (otherwise it must be stored anyway, and the rewrite would compute
// the scores twice); the Softmax is over the last axis; the scale is a
// one-element constant; the mask broadcasts to the scores without
// widening them (the Add's or Where's result has the scores' type); Q, K
// and V have one rank and the same batch dims (core/AttentionShape.h).
// Everything is matched by structure, never by names. The result takes the
// final MatMul's place and name.
//
// Rotary embeddings (HF's apply_rotary_pos_emb: x * cos +
// rotate_half(x) * sin, rotate_half the Concat of the negated upper half
// of the last dim and the lower half, Slice, Neg, Concat, Mul, Mul, Add)
// become snug.rotary(x, cos, sin) under the same rules: every
// intermediate read by the next node alone, the slices exactly the two
// halves of the last dim, cos and sin broadcast to x without widening it.
// They run before the attentions, whose Q and K they compute.
//
// A bool mask that is a constant lower triangle over the scores (GPT-2's
// registered torch.tril buffer, sq x skv bytes of weights: 1 MiB at
// sequence 1024) is not kept: mask "causal" fills score (i, j) where
// j > i + k, computed from the indices, and "causal_add" adds the padding
// mask after it (operand 3). The constant then has no reader and goes.
//
// Not recognized: a scale after the mask (another function unless the
// mask is 0/-inf), a Where after two added masks, a zeroing Where by
// another mask than the one that filled (or of another constant than 0,
// or in the other polarity), a causal
// mask built inside the graph from Trilu, and Q, K or V that broadcast
// over batch dims.
//
//===----------------------------------------------------------------------===//
#include "passes/fusion/FusePatterns.h"

#include "ir/Module.h"
#include "ir/ShapeFunctions.h"


namespace snug {

namespace {

using ir::OpCode;
using ir::Value;

struct Match {
  Value *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;
  /// Operand 4: the additive mask after a Where or an Add (mask
  /// "where_add", "add_add"), or the bool mask after an Add ("add_where").
  Value *bias = nullptr;
  /// Empty: as stored (core/Ops.def's q_perm, k_perm, v_perm, y_perm).
  std::vector<int64_t> qPerm, kPerm, vPerm, yPerm;
  float scale = 1.0f;
  std::string maskKind = "none";
  float fill = 0.0f;
  bool fillIfTrue = true;
  /// The diagonal offset of mask "causal" and "causal_add".
  int64_t causal = 0;
  /// The filled probabilities are zeroed after the Softmax (zero_filled).
  bool zeroFilled = false;
  llvm::SmallVector<ir::Node *, 8> nodes; // the last one is the result's
};

/// `node` as operand * factor, when it is Mul(x, c), Mul(c, x) or
/// Div(x, c) with c a constant scalar.
struct Scaling {
  Value *operand;
  float factor;
};
llvm::Optional<Scaling> asScaling(const ir::Module &module,
                                  const ir::Node &node) {
  if ((!node.is(OpCode::Mul) && !node.is(OpCode::Div)) ||
      node.getNumOperands() != 2)
    return llvm::None;
  if (llvm::Optional<float> c = readScalarWeight(module, node.getOperand(1)))
    return Scaling{node.getOperand(0), node.is(OpCode::Div) ? 1.0f / *c : *c};
  if (node.is(OpCode::Mul))
    if (llvm::Optional<float> c = readScalarWeight(module, node.getOperand(0)))
      return Scaling{node.getOperand(1), *c};
  return llvm::None;
}

/// The node defining `value` when `value` is read by `user` alone: an
/// intermediate the match may take in.
ir::Node *privateDefiner(const ir::Module &module, const Value *value,
                         const ir::Node *user) {
  ir::Node *definer = value->getDefiningNode();
  return definer && soleUser(module, value) == user ? definer : nullptr;
}

/// When `value` is a Transpose's result read by `user` alone: takes the
/// Transpose into the match (its perm into `perm`) and returns its
/// operand; otherwise `value`.
Value *readThroughTranspose(const ir::Module &module, Value *value,
                            ir::Node *user, std::vector<int64_t> &perm,
                            Match &match) {
  ir::Node *transpose = privateDefiner(module, value, user);
  if (!transpose || !transpose->is(OpCode::Transpose) ||
      transpose->getNumOperands() != 1)
    return value;
  const ir::Attribute *axes = transpose->getAttribute("perm");
  if (!axes || axes->getKind() != ir::Attribute::Kind::Ints)
    return value;
  perm.assign(axes->getInts().begin(), axes->getInts().end());
  match.nodes.push_back(transpose);
  return transpose->getOperand(0);
}

/// Matches the scores and their optional scale, ending at `value` (read
/// by `user` alone): value = [scale](MatMul(Q, Kt)).
bool matchScores(const ir::Module &module, Value *value, ir::Node *user,
                 Match &match) {
  ir::Node *node = privateDefiner(module, value, user);
  if (!node)
    return false;
  if (!node->is(OpCode::MatMul)) {
    llvm::Optional<Scaling> scaling = asScaling(module, *node);
    if (!scaling)
      return false;
    match.scale *= scaling->factor;
    match.nodes.push_back(node);
    user = node;
    node = privateDefiner(module, scaling->operand, user);
    if (!node || !node->is(OpCode::MatMul))
      return false;
  }
  if (node->getNumOperands() != 2 ||
      node->getResult(0)->getType().getRank() < 2)
    return false;
  match.nodes.push_back(node);
  match.q = node->getOperand(0);
  match.k = node->getOperand(1);
  // A constant scale on Q read by this product alone, and the Transposes
  // that split the heads of Q and K.
  ir::Node *qUser = node;
  if (ir::Node *qScale = privateDefiner(module, match.q, node))
    if (llvm::Optional<Scaling> scaling = asScaling(module, *qScale)) {
      match.scale *= scaling->factor;
      match.q = scaling->operand;
      match.nodes.push_back(qScale);
      qUser = qScale;
    }
  // Likewise on Kᵀ (DeBERTa divides the transposed keys by its scale).
  ir::Node *kUser = node;
  if (ir::Node *kScale = privateDefiner(module, match.k, node))
    if (llvm::Optional<Scaling> scaling = asScaling(module, *kScale)) {
      match.scale *= scaling->factor;
      match.k = scaling->operand;
      match.nodes.push_back(kScale);
      kUser = kScale;
    }
  match.q = readThroughTranspose(module, match.q, qUser, match.qPerm, match);
  match.k = readThroughTranspose(module, match.k, kUser, match.kPerm, match);
  return true;
}

bool matchAdded(const ir::Module &module, Value *value, ir::Node *user,
                Match &match);

/// Matches value = Where(m, fill, s) | Where(m, s, fill) over the scores
/// (read by `user` alone), fill a constant scalar, into `match` (mask
/// "where"); with `afterAdded`, s may also be the scores plus an additive
/// mask (mask "add_where", m then operand 4: DeBERTa's bias, then its
/// padding mask).
bool matchWhere(const ir::Module &module, Value *value, ir::Node *user,
                Match &match, bool afterAdded) {
  ir::Node *node = privateDefiner(module, value, user);
  if (!node || !node->is(OpCode::Where) || node->getNumOperands() != 3)
    return false;
  for (unsigned i = 1; i < 3; ++i) {
    llvm::Optional<float> fill =
        readScalarWeight(module, node->getOperand(3 - i));
    Match attempt = match;
    if (!fill)
      continue;
    bool added = false;
    if (!matchScores(module, node->getOperand(i), node, attempt)) {
      added = afterAdded &&
              matchAdded(module, node->getOperand(i), node, attempt);
      if (!added)
        continue;
    }
    if (node->getOperand(i)->getType() != value->getType())
      return false;
    if (added) {
      attempt.bias = node->getOperand(0);
      attempt.maskKind = "add_where";
    } else {
      attempt.mask = node->getOperand(0);
      attempt.maskKind = "where";
    }
    attempt.fill = *fill;
    // Where(m, fill, s) fills where m holds; Where(m, s, fill) where not.
    attempt.fillIfTrue = i == 2;
    attempt.nodes.push_back(node);
    match = std::move(attempt);
    return true;
  }
  return false;
}

/// Matches value = Add(s, mask) | Add(mask, s) over the scores (read by
/// `user` alone) into `match` (mask "add"): the first of two additive
/// masks (Swin's relative position bias, then its shifted windows' mask).
bool matchAdded(const ir::Module &module, Value *value, ir::Node *user,
                Match &match) {
  ir::Node *node = privateDefiner(module, value, user);
  if (!node || !node->is(OpCode::Add) || node->getNumOperands() != 2)
    return false;
  for (unsigned i = 0; i < 2; ++i) {
    Match attempt = match;
    if (!matchScores(module, node->getOperand(i), node, attempt))
      continue;
    if (node->getOperand(i)->getType() != value->getType())
      return false;
    attempt.mask = node->getOperand(1 - i);
    attempt.maskKind = "add";
    attempt.nodes.push_back(node);
    match = std::move(attempt);
    return true;
  }
  return false;
}

/// Matches what feeds the Softmax: [mask]([scale](MatMul(Q, Kt))), the
/// mask an Add, a Where, an Add after a Where (HF GPT-2: the causal
/// Where, then the padding mask added), or an Add after an Add (Swin).
bool matchLogits(const ir::Module &module, Value *logits, ir::Node *softmax,
                 Match &match) {
  if (matchScores(module, logits, softmax, match))
    return true;
  ir::Node *node = privateDefiner(module, logits, softmax);
  if (!node || logits->getType() != softmax->getResult(0)->getType())
    return false;
  if (node->is(OpCode::Add) && node->getNumOperands() == 2) {
    for (unsigned i = 0; i < 2; ++i) {
      Match attempt = match;
      bool scores = matchScores(module, node->getOperand(i), node, attempt);
      bool where = !scores && matchWhere(module, node->getOperand(i), node,
                                         attempt, /*afterAdded=*/false);
      if (!scores && !where &&
          !matchAdded(module, node->getOperand(i), node, attempt))
        continue;
      // The scores keep their type: the mask does not widen them.
      if (node->getOperand(i)->getType() != logits->getType())
        return false;
      if (scores) {
        attempt.mask = node->getOperand(1 - i);
        attempt.maskKind = "add";
      } else {
        attempt.bias = node->getOperand(1 - i);
        attempt.maskKind = where ? "where_add" : "add_add";
      }
      attempt.nodes.push_back(node);
      match = std::move(attempt);
      return true;
    }
    return false;
  }
  return matchWhere(module, logits, softmax, match, /*afterAdded=*/true);
}

/// k when `mask` is a constant bool lower triangle over the scores [...,
/// sq, skv] (leading dims 1): the Where fills score (i, j) exactly where
/// j > i + k, k >= 0 (torch.tril(ones) as GPT-2's exports store it, under
/// either polarity). Such a mask is computed from the indices instead of
/// read (mask "causal"), and the constant, sq x skv bytes, goes.
llvm::Optional<int64_t> causalDiagonal(const ir::Module &module,
                                       const Value *mask, bool fillIfTrue,
                                       int64_t sq, int64_t skv) {
  if (!mask->isWeight() || mask->isWeightElided() ||
      ir::isStateWeight(module, mask) ||
      mask->getType().getDType() != ir::DType::Bool)
    return llvm::None;
  llvm::ArrayRef<int64_t> dims = mask->getType().getDims();
  if (dims.size() < 2 || dims[dims.size() - 2] != sq || dims.back() != skv ||
      mask->getType().getNumElements() != sq * skv)
    return llvm::None;
  llvm::ArrayRef<uint8_t> data = module.getWeightData(mask);
  if (data.size() != size_t(sq * skv))
    return llvm::None;
  auto filled = [&](int64_t i, int64_t j) {
    return (data[size_t(i * skv + j)] != 0) == fillIfTrue;
  };
  int64_t kept = 0;
  while (kept < skv && !filled(0, kept))
    ++kept;
  if (kept == 0)
    return llvm::None;
  int64_t k = kept - 1;
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < skv; ++j)
      if (filled(i, j) != (j > i + k))
        return llvm::None;
  return k;
}

/// The attention whose probabilities `softmax` computes, if it is one.
llvm::Optional<Match> matchAt(const ir::Module &module, ir::Node &softmax) {
  if (!softmax.is(OpCode::Softmax) || softmax.getNumOperands() != 1)
    return llvm::None;
  Value *logits = softmax.getOperand(0);
  int64_t rank = logits->getType().getRank();
  const ir::Attribute *axis = softmax.getAttribute("axis");
  int64_t last = axis && axis->getKind() == ir::Attribute::Kind::Int
                     ? axis->getInt()
                     : -1;
  if (rank < 2 || (last != rank - 1 && last != -1))
    return llvm::None;
  // f16 and bf16 after lower-precision: the op keeps their storage and
  // accumulates in f32 where the unfused nodes rounded each intermediate.
  ir::DType type = logits->getType().getDType();
  if (type != ir::DType::F32 && type != ir::DType::F16 &&
      type != ir::DType::BF16)
    return llvm::None;
  ir::Node *output = soleUser(module, softmax.getResult(0));
  // DeBERTa's XSoftmax zeroes the filled probabilities: Where(m, 0, p) or
  // Where(m, p, 0), m the mask that filled.
  ir::Node *zeroing = nullptr;
  Value *probabilities = softmax.getResult(0);
  if (output && output->is(OpCode::Where) && output->getNumOperands() == 3 &&
      output->getResult(0)->getType() == probabilities->getType()) {
    zeroing = output;
    probabilities = zeroing->getResult(0);
    output = soleUser(module, probabilities);
  }
  if (!output || !output->is(OpCode::MatMul) ||
      output->getNumOperands() != 2 || output->getOperand(0) != probabilities)
    return llvm::None;
  Match match;
  if (!matchLogits(module, logits, &softmax, match))
    return llvm::None;
  match.nodes.push_back(&softmax);
  if (zeroing) {
    AttentionMaskKind kind = getAttentionMaskKind(match.maskKind);
    Value *filledBy = kind.where ? match.mask : kind.whereAfter ? match.bias
                                                                : nullptr;
    // The fill mask, in the polarity it filled: the zero where it filled.
    unsigned zeroAt = match.fillIfTrue ? 1 : 2;
    llvm::Optional<float> zero =
        readScalarWeight(module, zeroing->getOperand(zeroAt));
    if (!filledBy || zeroing->getOperand(0) != filledBy || !zero ||
        *zero != 0.0f ||
        zeroing->getOperand(3 - zeroAt) != softmax.getResult(0))
      return llvm::None;
    match.zeroFilled = true;
    match.nodes.push_back(zeroing);
  }
  match.v = readThroughTranspose(module, output->getOperand(1), output,
                                 match.vPerm, match);
  match.nodes.push_back(output);
  // The Transpose that merges the heads again, when it alone reads the
  // result: the op stores its result through that perm.
  if (ir::Node *merge = soleUser(module, output->getResult(0)))
    if (merge->is(OpCode::Transpose) && merge->getNumOperands() == 1)
      if (const ir::Attribute *axes = merge->getAttribute("perm");
          axes && axes->getKind() == ir::Attribute::Kind::Ints) {
        match.yPerm.assign(axes->getInts().begin(), axes->getInts().end());
        match.nodes.push_back(merge);
      }
  // A constant causal bool mask is computed in the kernels instead; the
  // additive mask after it, if any, becomes operand 3.
  if (getAttentionMaskKind(match.maskKind).where) {
    llvm::ArrayRef<int64_t> scores = logits->getType().getDims();
    if (llvm::Optional<int64_t> k =
            causalDiagonal(module, match.mask, match.fillIfTrue,
                           scores[scores.size() - 2], scores.back())) {
      match.causal = *k;
      match.mask = match.bias;
      match.bias = nullptr;
      match.maskKind = match.mask ? "causal_add" : "causal";
    }
  }
  // Q, K, V must fit the op's shape rule, the scores be the Softmax's and
  // the result the last node's.
  auto dimsOf = [](const Value *value) {
    return std::vector<int64_t>(value->getType().getDims().begin(),
                                value->getType().getDims().end());
  };
  auto permOf = [](const std::vector<int64_t> &perm) {
    return perm.empty() ? nullptr : &perm;
  };
  std::vector<int64_t> q = dimsOf(match.q), k = dimsOf(match.k),
                       v = dimsOf(match.v), maskDims, biasDims;
  if (match.mask)
    maskDims = dimsOf(match.mask);
  if (match.bias)
    biasDims = dimsOf(match.bias);
  AttentionShape shape = getAttentionShape(
      {&q, permOf(match.qPerm)}, {&k, permOf(match.kPerm)},
      {&v, permOf(match.vPerm)}, match.mask ? &maskDims : nullptr,
      permOf(match.yPerm), match.bias ? &biasDims : nullptr);
  if (!shape.isValid() || shape.scoreDims() != dimsOf(logits) ||
      shape.resultDims != dimsOf(match.nodes.back()->getResult(0)) ||
      match.q->getType().getDType() != type ||
      match.v->getType().getDType() != type ||
      (match.bias &&
       match.bias->getType().getDType() !=
           (getAttentionMaskKind(match.maskKind).whereAfter ? ir::DType::Bool
                                                            : type)))
    return llvm::None;
  return match;
}

/// HF's rotary embedding, matched at its sum:
///   y = Add(Mul(x, cos), Mul(Concat(Neg(Slice(x, h:D)), Slice(x, 0:h)), sin))
/// over the last dim D = 2h of x (either operand order of the Muls and
/// the Add).
struct RotaryMatch {
  Value *x = nullptr, *cos = nullptr, *sin = nullptr;
  llvm::SmallVector<ir::Node *, 7> nodes; // the last one is the result's
};

/// [start, end) when `node` is a Slice of `x`'s last dim with step 1.
llvm::Optional<std::pair<int64_t, int64_t>> lastDimSlice(const ir::Node &node,
                                                         const Value *x) {
  if (!node.is(OpCode::Slice) || node.getOperand(0) != x)
    return llvm::None;
  int64_t rank = x->getType().getRank(), d = x->getType().getDims().back();
  auto ints = [&](const char *name) -> llvm::ArrayRef<int64_t> {
    const ir::Attribute *a = node.getAttribute(name);
    return a && a->getKind() == ir::Attribute::Kind::Ints
               ? a->getInts()
               : llvm::ArrayRef<int64_t>();
  };
  llvm::ArrayRef<int64_t> axes = ints("axes"), starts = ints("starts"),
                          ends = ints("ends"), steps = ints("steps");
  if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 ||
      (axes[0] != rank - 1 && axes[0] != -1) ||
      (!steps.empty() && (steps.size() != 1 || steps[0] != 1)))
    return llvm::None;
  auto clamp = [d](int64_t v) {
    return v < 0 ? std::max<int64_t>(0, v + d) : std::min(v, d);
  };
  return std::make_pair(clamp(starts[0]), clamp(ends[0]));
}

/// The rotary embedding whose sum is `add`, if it is one.
llvm::Optional<RotaryMatch> matchRotaryAt(const ir::Module &module,
                                          ir::Node &add) {
  if (!add.is(OpCode::Add) || add.getNumOperands() != 2)
    return llvm::None;
  for (unsigned i = 0; i < 2; ++i) {
    ir::Node *direct = privateDefiner(module, add.getOperand(i), &add);
    ir::Node *rotated = privateDefiner(module, add.getOperand(1 - i), &add);
    if (!direct || !rotated || !direct->is(OpCode::Mul) ||
        !rotated->is(OpCode::Mul) || direct == rotated)
      continue;
    for (unsigned j = 0; j < 2; ++j) {
      ir::Node *concat =
          privateDefiner(module, rotated->getOperand(j), rotated);
      if (!concat || !concat->is(OpCode::Concat) ||
          concat->getNumOperands() != 2)
        continue;
      ir::Node *neg = privateDefiner(module, concat->getOperand(0), concat);
      ir::Node *low = privateDefiner(module, concat->getOperand(1), concat);
      if (!neg || !low || !neg->is(OpCode::Neg))
        continue;
      ir::Node *high = privateDefiner(module, neg->getOperand(0), neg);
      Value *x = low->getOperand(0);
      if (!high || !x || x->getType() != add.getResult(0)->getType() ||
          x->getType().getDType() != ir::DType::F32 ||
          x->getType().getRank() == 0)
        continue;
      int64_t d = x->getType().getDims().back();
      const ir::Attribute *axis = concat->getAttribute("axis");
      int64_t rank = x->getType().getRank();
      if (d % 2 || !axis || axis->getKind() != ir::Attribute::Kind::Int ||
          (axis->getInt() != rank - 1 && axis->getInt() != -1))
        continue;
      auto lowRange = lastDimSlice(*low, x), highRange = lastDimSlice(*high, x);
      if (!lowRange || !highRange ||
          *lowRange != std::make_pair(int64_t(0), d / 2) ||
          *highRange != std::make_pair(d / 2, d))
        continue;
      Value *cos = otherOperand(*direct, x);
      Value *sin = otherOperand(*rotated, concat->getResult(0));
      // Each table broadcasts to x without widening it: the Muls keep x's
      // type.
      if (!cos || !sin || cos == x ||
          direct->getResult(0)->getType() != x->getType() ||
          rotated->getResult(0)->getType() != x->getType() ||
          cos->getType().getDType() != ir::DType::F32 ||
          sin->getType().getDType() != ir::DType::F32)
        continue;
      RotaryMatch match;
      match.x = x;
      match.cos = cos;
      match.sin = sin;
      match.nodes = {low, high, neg, concat, direct, rotated, &add};
      return match;
    }
  }
  return llvm::None;
}

} // namespace

unsigned rewriteRotaries(ir::Module &module) {
  return rewriteMatches(
      module, OpCode::SnugRotary, matchRotaryAt,
      [](const RotaryMatch &match, auto current) {
        std::pair<llvm::SmallVector<Value *, 4>, ir::AttributeMap> node;
        node.first = {current(match.x), current(match.cos), current(match.sin)};
        return node;
      });
}

unsigned rewriteAttentions(ir::Module &module) {
  return rewriteMatches(
      module, OpCode::SnugAttention, matchAt,
      [](const Match &match, auto current) {
        std::pair<llvm::SmallVector<Value *, 4>, ir::AttributeMap> node;
        node.first = {current(match.q), current(match.k), current(match.v)};
        if (match.mask)
          node.first.push_back(current(match.mask));
        if (match.bias)
          node.first.push_back(current(match.bias));
        ir::AttributeMap &attributes = node.second;
        attributes["scale"] = ir::Attribute::getFloat(match.scale);
        for (auto [name, perm] :
             {std::make_pair("q_perm", &match.qPerm),
              std::make_pair("k_perm", &match.kPerm),
              std::make_pair("v_perm", &match.vPerm),
              std::make_pair("y_perm", &match.yPerm)})
          if (!perm->empty())
            attributes[name] = ir::Attribute::getInts(*perm);
        attributes["mask"] = ir::Attribute::getString(match.maskKind);
        AttentionMaskKind kind = getAttentionMaskKind(match.maskKind);
        if (kind.fills())
          attributes["fill"] = ir::Attribute::getFloat(match.fill);
        if (kind.where || kind.whereAfter)
          attributes["fill_if"] = ir::Attribute::getInt(match.fillIfTrue);
        if (kind.causal)
          attributes["causal"] = ir::Attribute::getInt(match.causal);
        if (match.zeroFilled)
          attributes["zero_filled"] = ir::Attribute::getInt(1);
        return node;
      });
}

} // namespace snug
