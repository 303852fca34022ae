//===- OnnxAttentionOps.cpp - Attention and RotaryEmbedding ---------------===//
//
// The transformer ops of opset 23 (Attention also at 24), imported as the
// table ops their ONNX function bodies and reference define them by, so
// folding, the host executor, the CUDA kernels and autodiff need nothing
// new, and the fuse pass makes the usual forms one kernel again
// (passes/fusion/AttentionPattern.cpp):
//
//   Attention(Q, K, V[, attn_mask, past_key, past_value, nonpad_kv_seqlen])
//     Q, K, V 3-d [batch, seq, heads * head] are split into heads (Reshape,
//     Transpose) to [batch, heads, seq, head]; past_key/past_value are
//     concatenated before K and V along seq (present_key, present_value);
//     with fewer K/V heads than Q heads (GQA, MQA) each K/V head serves
//     q_heads / kv_heads consecutive Q heads (Unsqueeze, Expand, Reshape);
//       s = MatMul(Q * sqrt(scale), Transpose(K * sqrt(scale)))
//       s = softcap * Tanh(s / softcap)                 (softcap > 0)
//       s = Where(causal, s, -inf)                      (is_causal)
//       s = s + bias                                    (mask, nonpad)
//       y = MatMul(Softmax(s), V)
//     scale defaults to 1/sqrt(head), and both factors are sqrt(scale), as
//     the spec asks against overflow in 16-bit types. The causal mask is a
//     constant bool [q_seq, total] keeping j <= i + past (upper-left
//     aligned, offset by the past), the form the fuse pass computes from
//     the indices instead of reading. The bias is attn_mask (a bool mask
//     as 0 / -inf, another type cast to Q's), padded with -inf up to the
//     total length when shorter, plus, from opset 24, -inf past each
//     batch's nonpad_kv_seqlen. softmax_precision casts around the
//     Softmax; qk_matmul_output is s after the product, the softcap, the
//     bias or the Softmax (qk_matmul_output_mode 0-3).
//
//   RotaryEmbedding(X, cos_cache, sin_cache[, position_ids])
//     X [batch, heads, seq, head] or 3-d [batch, seq, heads * head]
//     (reshaped to [batch, seq, heads, head]); the caches gathered at
//     position_ids (or given per batch and position) and broadcast over the
//     heads; the first rotary_embedding_dim values of each head rotated,
//     the rest passed through. Split halves as HF's apply_rotary_pos_emb
//     writes them, x * [cos, cos] + [-x2, x1] * [sin, sin], which rounds as
//     the spec's real/imaginary parts do and which the fuse pass makes
//     snug.rotary; interleaved pairs (x[2k], x[2k+1]) as the spec's
//     real/imaginary parts, zipped back by Unsqueeze, Concat, Reshape.
//
// Refused with an error naming the node: V of another type than Q (the
// spec allows it; the composition computes in Q's type), ranks other than
// 3 and 4, heads that do not divide, past_key without past_value or the
// reverse, nonpad_kv_seqlen beside a past, masks that do not broadcast to
// the scores or are longer than the keys, a scale that is not positive
// (its square root scales Q and K), a negative softcap; caches whose last
// dim is not rotary_embedding_dim / 2 (as the spec's reference refuses).
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"

#include "passes/simplify/HostAttributes.h"
#include "runtime/host/Kernels.h"

#include <cmath>
#include <limits>

namespace snug {
namespace onnx_import {

using ir::Attribute;
using ir::DType;
using ir::TensorType;

namespace {

/// Emits the single-result nodes of one ONNX node's composition. The first
/// failure is kept and every later emit skipped (it returns nullptr, which
/// the emits after it take as their cue), so an importer reads as the list
/// of its ops and checks once, at the end.
class Composer {
public:
  Composer(Importer &importer, const onnx::NodeProto &node)
      : importer(importer), node(node) {}

  ir::Value *op(llvm::StringRef name, llvm::ArrayRef<ir::Value *> operands,
                ir::AttributeMap attributes, llvm::StringRef suffix) {
    if (!failure.empty())
      return nullptr;
    for (ir::Value *operand : operands)
      assert(operand && "a nullptr operand only follows a failure");
    auto results =
        importer.emit(node, name, operands, std::move(attributes), 1, suffix);
    if (!results) {
      failure = llvm::toString(results.takeError());
      return nullptr;
    }
    return (*results)[0];
  }
  ir::Value *scalar(llvm::StringRef suffix, DType dtype, double value) {
    return addScalarWeight(importer, node, suffix, dtype, value);
  }
  ir::Value *reshape(ir::Value *x, llvm::ArrayRef<int64_t> dims,
                     llvm::StringRef suffix) {
    return op("Reshape", {x}, {{"shape", Attribute::getInts(dims)}}, suffix);
  }
  ir::Value *transpose(ir::Value *x, llvm::ArrayRef<int64_t> perm,
                       llvm::StringRef suffix) {
    return op("Transpose", {x}, {{"perm", Attribute::getInts(perm)}}, suffix);
  }
  ir::Value *cast(ir::Value *x, DType to, llvm::StringRef suffix) {
    return op("Cast", {x}, {{"to", Attribute::getString(ir::getDTypeName(to))}},
              suffix);
  }
  /// x[..., start:end:step] over the last axis.
  ir::Value *sliceLast(ir::Value *x, int64_t start, int64_t end, int64_t step,
                       llvm::StringRef suffix) {
    if (!x)
      return nullptr; // an earlier emit failed
    // Slice's canonical axes are non-negative.
    int64_t last = int64_t(x->getType().getRank()) - 1;
    return op("Slice", {x},
              {{"starts", Attribute::getInts({start})},
               {"ends", Attribute::getInts({end})},
               {"axes", Attribute::getInts({last})},
               {"steps", Attribute::getInts({step})}},
              suffix);
  }
  ir::Value *concatLast(llvm::ArrayRef<ir::Value *> parts,
                        llvm::StringRef suffix) {
    return op("Concat", parts, {{"axis", Attribute::getInt(-1)}}, suffix);
  }
  /// Binds the ONNX node's outputs (nullptr where an output is unnamed)
  /// unless an emit failed; the first failure otherwise.
  llvm::Error finish(llvm::ArrayRef<ir::Value *> outputs) {
    if (!failure.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(), failure);
    importer.bindOutputs(node, outputs);
    return llvm::Error::success();
  }

private:
  Importer &importer;
  const onnx::NodeProto &node;
  std::string failure;
};

std::string dimsString(llvm::ArrayRef<int64_t> dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

/// Whether `dims` broadcast to `target` without widening it.
bool broadcastsTo(llvm::ArrayRef<int64_t> dims,
                  llvm::ArrayRef<int64_t> target) {
  if (dims.size() > target.size())
    return false;
  size_t offset = target.size() - dims.size();
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1 && dims[i] != target[offset + i])
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// The dims of Attention's operands once they are 4-d.
struct AttentionDims {
  int64_t batch = 0, qHeads = 0, kvHeads = 0, qSeq = 0, kvSeq = 0, past = 0,
          head = 0, vHead = 0;
  int64_t total() const { return past + kvSeq; }
};

/// Checks Q, K, V (and the past) against one another and the head
/// attributes; their dims as 4-d.
llvm::Expected<AttentionDims>
readAttentionDims(Importer &importer, const onnx::NodeProto &node, ir::Value *q,
                  ir::Value *k, ir::Value *v, ir::Value *pastKey,
                  ir::Value *pastValue) {
  const TensorType &qType = q->getType(), &kType = k->getType(),
                   &vType = v->getType();
  int64_t rank = qType.getRank();
  if ((rank != 3 && rank != 4) || kType.getRank() != rank ||
      vType.getRank() != rank)
    return importer.error(node, "Q " + qType.str() + ", K " + kType.str() +
                                    " and V " + vType.str() +
                                    " are not all 3-d or all 4-d");
  const onnx::AttributeProto *qHeadsAttr = findAttr(node, "q_num_heads");
  const onnx::AttributeProto *kvHeadsAttr = findAttr(node, "kv_num_heads");
  llvm::ArrayRef<int64_t> qDims = qType.getDims(), kDims = kType.getDims(),
                          vDims = vType.getDims();
  AttentionDims dims;
  dims.batch = qDims[0];
  if (rank == 3) {
    if (!qHeadsAttr || !kvHeadsAttr)
      return importer.error(node,
                            "3-d Q, K and V need q_num_heads and kv_num_heads");
    dims.qHeads = attrInt(node, "q_num_heads", 0);
    dims.kvHeads = attrInt(node, "kv_num_heads", 0);
    if (dims.qHeads <= 0 || dims.kvHeads <= 0)
      return importer.error(node, "q_num_heads " + std::to_string(dims.qHeads) +
                                      " and kv_num_heads " +
                                      std::to_string(dims.kvHeads) +
                                      " must be positive");
    if (qDims[2] % dims.qHeads || kDims[2] % dims.kvHeads ||
        vDims[2] % dims.kvHeads)
      return importer.error(node, "hidden sizes of Q " + qType.str() + ", K " +
                                      kType.str() + " and V " + vType.str() +
                                      " do not divide into " +
                                      std::to_string(dims.qHeads) + " and " +
                                      std::to_string(dims.kvHeads) + " heads");
    dims.qSeq = qDims[1];
    dims.kvSeq = kDims[1];
    dims.head = qDims[2] / dims.qHeads;
    if (kDims[2] / dims.kvHeads != dims.head)
      return importer.error(node, "K " + kType.str() + " has heads of " +
                                      std::to_string(kDims[2] / dims.kvHeads) +
                                      ", Q " + qType.str() + " of " +
                                      std::to_string(dims.head));
    dims.vHead = vDims[2] / dims.kvHeads;
    if (vDims[1] != dims.kvSeq || kDims[0] != dims.batch ||
        vDims[0] != dims.batch)
      return importer.error(node, "Q " + qType.str() + ", K " + kType.str() +
                                      " and V " + vType.str() +
                                      " disagree in batch or K/V length");
  } else {
    dims.qHeads = qDims[1];
    dims.kvHeads = kDims[1];
    dims.qSeq = qDims[2];
    dims.kvSeq = kDims[2];
    dims.head = qDims[3];
    dims.vHead = vDims[3];
    if (kDims[0] != dims.batch || vDims[0] != dims.batch ||
        vDims[1] != dims.kvHeads || vDims[2] != dims.kvSeq ||
        kDims[3] != dims.head)
      return importer.error(node, "Q " + qType.str() + ", K " + kType.str() +
                                      " and V " + vType.str() +
                                      " disagree in batch, heads, K/V length "
                                      "or head size");
    if ((qHeadsAttr && attrInt(node, "q_num_heads", 0) != dims.qHeads) ||
        (kvHeadsAttr && attrInt(node, "kv_num_heads", 0) != dims.kvHeads))
      return importer.error(node, "q_num_heads and kv_num_heads disagree "
                                  "with the heads of 4-d Q " +
                                      qType.str() + " and K " + kType.str());
  }
  if (dims.qHeads % dims.kvHeads)
    return importer.error(node, std::to_string(dims.qHeads) +
                                    " query heads are not a multiple of " +
                                    std::to_string(dims.kvHeads) +
                                    " key/value heads");
  if (!pastKey != !pastValue)
    return importer.error(node,
                          "past_key and past_value must be given together");
  if (pastKey) {
    llvm::ArrayRef<int64_t> pk = pastKey->getType().getDims(),
                            pv = pastValue->getType().getDims();
    if (pk.size() != 4 || pv.size() != 4 || pk[0] != dims.batch ||
        pv[0] != dims.batch || pk[1] != dims.kvHeads || pv[1] != dims.kvHeads ||
        pk[2] != pv[2] || pk[3] != dims.head || pv[3] != dims.vHead)
      return importer.error(
          node, "past_key " + pastKey->getType().str() + " and past_value " +
                    pastValue->getType().str() + " are not [" +
                    std::to_string(dims.batch) + "," +
                    std::to_string(dims.kvHeads) + ",past," +
                    std::to_string(dims.head) + "] and [...," +
                    std::to_string(dims.vHead) + "]");
    dims.past = pk[2];
  }
  return dims;
}

/// A 3-d [batch, seq, heads * head] operand as [batch, heads, seq, head].
ir::Value *splitHeads(Composer &c, ir::Value *x, int64_t heads,
                      llvm::StringRef suffix) {
  llvm::ArrayRef<int64_t> dims = x->getType().getDims();
  ir::Value *split = c.reshape(x, {dims[0], dims[1], heads, dims[2] / heads},
                               (suffix + "_split").str());
  return c.transpose(split, {0, 2, 1, 3}, (suffix + "_heads").str());
}

/// [batch, kv_heads, seq, d] with each head repeated `repeats` times in
/// place (head h of the result is head h / repeats of x).
ir::Value *repeatHeads(Composer &c, ir::Value *x, int64_t repeats,
                       llvm::StringRef suffix) {
  if (!x)
    return nullptr; // an earlier emit failed
  llvm::ArrayRef<int64_t> d = x->getType().getDims();
  ir::Value *wide = c.op("Unsqueeze", {x}, {{"axes", Attribute::getInts({2})}},
                         (suffix + "_unsqueezed").str());
  ir::Value *expanded =
      c.op("Expand", {wide},
           {{"shape", Attribute::getInts({d[0], d[1], repeats, d[2], d[3]})}},
           (suffix + "_repeated").str());
  return c.reshape(expanded, {d[0], d[1] * repeats, d[2], d[3]},
                   (suffix + "_gqa").str());
}

/// Checks attn_mask and nonpad_kv_seqlen against the scores
/// [batch, q_heads, q_seq, total].
llvm::Error checkBiasInputs(Importer &importer, const onnx::NodeProto &node,
                            ir::Value *mask, ir::Value *nonpad,
                            const AttentionDims &dims) {
  if (mask) {
    const TensorType &type = mask->getType();
    llvm::ArrayRef<int64_t> maskDims = type.getDims();
    if (maskDims.empty() || maskDims.back() > dims.total())
      return importer.error(node, "attn_mask " + type.str() +
                                      " is longer than the " +
                                      std::to_string(dims.total()) + " keys");
    llvm::SmallVector<int64_t, 4> padded(maskDims.begin(), maskDims.end());
    padded.back() = dims.total();
    llvm::SmallVector<int64_t, 4> scores{dims.batch, dims.qHeads, dims.qSeq,
                                         dims.total()};
    if (!broadcastsTo(padded, scores))
      return importer.error(node, "attn_mask " + type.str() +
                                      " does not broadcast to the scores " +
                                      dimsString(scores));
  }
  if (nonpad) {
    const TensorType &type = nonpad->getType();
    if (type.getDType() != DType::I64 || type.getRank() != 1 ||
        type.getDims()[0] != dims.batch)
      return importer.error(node, "nonpad_kv_seqlen " + type.str() +
                                      " is not i64[" +
                                      std::to_string(dims.batch) + "]");
    if (dims.past)
      return importer.error(node, "nonpad_kv_seqlen cannot be used with "
                                  "past_key and past_value");
  }
  return llvm::Error::success();
}

/// The additive bias of attn_mask and nonpad_kv_seqlen (checked by
/// checkBiasInputs), or nullptr when neither is given.
ir::Value *buildBias(Importer &importer, const onnx::NodeProto &node,
                     Composer &c, ir::Value *mask, ir::Value *nonpad,
                     const AttentionDims &dims, DType dtype) {
  double inf = std::numeric_limits<double>::infinity();
  ir::Value *bias = nullptr;
  if (mask) {
    DType maskType = mask->getType().getDType();
    if (maskType == DType::Bool)
      bias = c.op(
          "Where",
          {mask, c.scalar(".keep", dtype, 0), c.scalar(".drop", dtype, -inf)},
          {}, ".mask_bias");
    else if (maskType != dtype)
      bias = c.cast(mask, dtype, ".mask_bias");
    else
      bias = mask;
    // A shorter mask leaves the keys past its end out (the spec pads it
    // with -inf, or false).
    llvm::ArrayRef<int64_t> maskDims = mask->getType().getDims();
    if (int64_t missing = dims.total() - maskDims.back()) {
      llvm::SmallVector<int64_t, 8> pads(2 * maskDims.size(), 0);
      pads.back() = missing;
      bias =
          c.op("Pad", {bias},
               {{"pads", Attribute::getInts(pads)},
                {"value",
                 Attribute::getFloat(-std::numeric_limits<float>::infinity())}},
               ".mask_padded");
    }
  }
  if (nonpad) {
    // Key j of batch b takes part where j < nonpad_kv_seqlen[b].
    TensorType rangeType(DType::I64, {dims.total()});
    std::vector<uint8_t> bytes(rangeType.getByteSize());
    for (int64_t j = 0; j < dims.total(); ++j)
      rt::storeDouble(bytes.data(), toBundleCode(DType::I64), j, double(j));
    ir::Value *keys =
        importer.module.addWeight(node.output(0) + ".keys", rangeType, bytes);
    ir::Value *lengths =
        c.reshape(nonpad, {dims.batch, 1, 1, 1}, ".nonpad_lengths");
    ir::Value *valid = c.op("Less", {keys, lengths}, {}, ".nonpad");
    ir::Value *padding = c.op("Where",
                              {valid, c.scalar(".nonpad_keep", dtype, 0),
                               c.scalar(".nonpad_drop", dtype, -inf)},
                              {}, ".nonpad_bias");
    bias = bias ? c.op("Add", {bias, padding}, {}, ".bias") : padding;
  }
  return bias;
}

/// The constant causal mask: true (kept) where key j <= query i + past.
ir::Value *causalMask(Importer &importer, const onnx::NodeProto &node,
                      const AttentionDims &dims) {
  TensorType type(DType::Bool, {dims.qSeq, dims.total()});
  std::vector<uint8_t> bytes(type.getByteSize(), 0);
  for (int64_t i = 0; i < dims.qSeq; ++i)
    for (int64_t j = 0; j < dims.total() && j <= i + dims.past; ++j)
      bytes[size_t(i * dims.total() + j)] = 1;
  return importer.module.addWeight(node.output(0) + ".causal", type, bytes);
}

llvm::Error importAttention(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  inputs->resize(std::max<size_t>(inputs->size(), 7), nullptr);
  ir::Value *q = (*inputs)[0], *k = (*inputs)[1], *v = (*inputs)[2],
            *mask = (*inputs)[3], *pastKey = (*inputs)[4],
            *pastValue = (*inputs)[5], *nonpad = (*inputs)[6];
  if (!q || !k || !v)
    return importer.error(node, "needs Q, K and V");
  if (node.output_size() > 4)
    return importer.error(node, "has " + std::to_string(node.output_size()) +
                                    " outputs; Attention has at most 4");
  DType dtype = q->getType().getDType();
  if (!ir::isFloatDType(dtype))
    return importer.error(node,
                          "Q " + q->getType().str() + " is not a float tensor");
  for (ir::Value *operand : {k, v, pastKey, pastValue})
    if (operand && operand->getType().getDType() != dtype)
      return importer.error(node, "K, V and the past must have Q's type " +
                                      ir::getDTypeName(dtype).str() + ", not " +
                                      operand->getType().str());
  auto dims = readAttentionDims(importer, node, q, k, v, pastKey, pastValue);
  if (!dims)
    return dims.takeError();

  int64_t mode = attrInt(node, "qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3)
    return importer.error(node, "qk_matmul_output_mode " +
                                    std::to_string(mode) + " is not 0 to 3");
  double softcap = attrFloat(node, "softcap", 0.0f);
  if (softcap < 0)
    return importer.error(node, "softcap " + std::to_string(softcap) +
                                    " is negative");
  DType softmaxType = dtype;
  if (findAttr(node, "softmax_precision")) {
    int64_t code = attrInt(node, "softmax_precision", 0);
    auto converted = convertDType(int(code));
    if (!converted || !ir::isFloatDType(*converted))
      return importer.error(node, "softmax_precision " +
                                      onnxDTypeName(int(code)) +
                                      " is not a float type snug supports");
    softmaxType = *converted;
  }
  double scale = findAttr(node, "scale")
                     ? double(attrFloat(node, "scale", 1.0f))
                     : 1.0 / std::sqrt(double(dims->head));
  if (!(scale > 0))
    return importer.error(node, "scale " + std::to_string(scale) +
                                    " is not positive (the spec scales Q and "
                                    "K by its square root)");

  if (llvm::Error error = checkBiasInputs(importer, node, mask, nonpad, *dims))
    return error;

  Composer c(importer, node);
  bool split = q->getType().getRank() == 3;
  ir::Value *q4 = split ? splitHeads(c, q, dims->qHeads, ".q") : q;
  ir::Value *k4 = split ? splitHeads(c, k, dims->kvHeads, ".k") : k;
  ir::Value *v4 = split ? splitHeads(c, v, dims->kvHeads, ".v") : v;
  auto axis2 = ir::AttributeMap{{"axis", Attribute::getInt(2)}};
  ir::Value *keys =
      pastKey ? c.op("Concat", {pastKey, k4}, axis2, ".present_key") : k4;
  ir::Value *values =
      pastValue ? c.op("Concat", {pastValue, v4}, axis2, ".present_value") : v4;

  ir::Value *factor = c.scalar(".scale", dtype, std::sqrt(scale));
  ir::Value *qScaled = c.op("Mul", {q4, factor}, {}, ".q_scaled");
  ir::Value *kScaled = c.op("Mul", {keys, factor}, {}, ".k_scaled");
  int64_t repeats = dims->qHeads / dims->kvHeads;
  ir::Value *kRead =
      repeats > 1 ? repeatHeads(c, kScaled, repeats, ".k") : kScaled;
  ir::Value *vRead =
      repeats > 1 ? repeatHeads(c, values, repeats, ".v") : values;
  ir::Value *kT = c.transpose(kRead, {0, 1, 3, 2}, ".k_transposed");
  ir::Value *scores = c.op("MatMul", {qScaled, kT}, {}, ".scores");

  ir::Value *capped = scores;
  if (softcap > 0) {
    ir::Value *cap = c.scalar(".softcap", dtype, softcap);
    ir::Value *divided = c.op("Div", {scores, cap}, {}, ".softcap_divided");
    ir::Value *tanh = c.op("Tanh", {divided}, {}, ".softcap_tanh");
    capped = c.op("Mul", {tanh, cap}, {}, ".softcapped");
  }
  ir::Value *logits = capped;
  if (attrInt(node, "is_causal", 0))
    logits = c.op("Where",
                  {causalMask(importer, node, *dims), logits,
                   c.scalar(".causal_fill", dtype,
                            -std::numeric_limits<double>::infinity())},
                  {}, ".causal_masked");
  if (ir::Value *bias =
          buildBias(importer, node, c, mask, nonpad, *dims, dtype))
    logits = c.op("Add", {logits, bias}, {}, ".masked");

  ir::Value *softmaxInput = softmaxType != dtype
                                ? c.cast(logits, softmaxType, ".softmax_input")
                                : logits;
  ir::Value *probs = c.op("Softmax", {softmaxInput},
                          {{"axis", Attribute::getInt(-1)}}, ".probs");
  if (softmaxType != dtype)
    probs = c.cast(probs, dtype, ".probs_cast");
  ir::Value *y = c.op("MatMul", {probs, vRead}, {}, ".y");
  if (split) {
    ir::Value *merged = c.transpose(y, {0, 2, 1, 3}, ".y_merged");
    y = c.reshape(merged, {dims->batch, dims->qSeq, dims->qHeads * dims->vHead},
                  ".y_flat");
  }

  // Outputs that would name one of the node's inputs get a node of their
  // own (present_key is K itself without a past).
  auto own = [&](ir::Value *value, llvm::StringRef suffix) {
    return llvm::is_contained(*inputs, value)
               ? c.op("Identity", {value}, {}, suffix)
               : value;
  };
  llvm::SmallVector<ir::Value *, 4> outputs(size_t(node.output_size()),
                                            nullptr);
  auto named = [&](int index) {
    return index < node.output_size() && !node.output(index).empty();
  };
  outputs[0] = y;
  if (named(1))
    outputs[1] = own(keys, ".present_key");
  if (named(2))
    outputs[2] = own(values, ".present_value");
  if (named(3)) {
    ir::Value *const byMode[] = {scores, capped, logits, probs};
    outputs[3] = byMode[mode];
  }
  return c.finish(outputs);
}

//===----------------------------------------------------------------------===//
// RotaryEmbedding
//===----------------------------------------------------------------------===//

llvm::Error importRotaryEmbedding(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  inputs->resize(std::max<size_t>(inputs->size(), 4), nullptr);
  ir::Value *x = (*inputs)[0], *cos = (*inputs)[1], *sin = (*inputs)[2],
            *positions = (*inputs)[3];
  if (!x || !cos || !sin)
    return importer.error(node, "needs X, cos_cache and sin_cache");
  const TensorType &type = x->getType();
  DType dtype = type.getDType();
  if (!ir::isFloatDType(dtype))
    return importer.error(node, "X " + type.str() + " is not a float tensor");
  if (cos->getType().getDType() != dtype || sin->getType().getDType() != dtype)
    return importer.error(node, "cos_cache " + cos->getType().str() +
                                    " and sin_cache " + sin->getType().str() +
                                    " must have X's type");
  int64_t rank = type.getRank();
  if (rank != 3 && rank != 4)
    return importer.error(node, "X " + type.str() + " is not 3-d or 4-d");
  llvm::ArrayRef<int64_t> xDims = type.getDims();
  int64_t heads = attrInt(node, "num_heads", 0);
  // Heads and positions lie at [batch, heads, seq, head] for 4-d X and at
  // [batch, seq, heads, head] for 3-d X split into heads.
  int64_t batch = xDims[0], seq = rank == 4 ? xDims[2] : xDims[1];
  int64_t headAxis = rank == 4 ? 1 : 2;
  if (rank == 3) {
    if (heads <= 0 || xDims[2] % heads)
      return importer.error(node, "3-d X " + type.str() +
                                      " needs num_heads dividing its hidden "
                                      "size, not " +
                                      std::to_string(heads));
  } else if (heads && heads != xDims[1]) {
    return importer.error(node, "num_heads " + std::to_string(heads) +
                                    " disagrees with 4-d X " + type.str());
  }
  int64_t head = rank == 4 ? xDims[3] : xDims[2] / heads;
  int64_t rotary = attrInt(node, "rotary_embedding_dim", 0);
  if (rotary == 0)
    rotary = head;
  if (rotary < 0 || rotary > head || rotary % 2)
    return importer.error(node, "rotary_embedding_dim " +
                                    std::to_string(rotary) +
                                    " is not even and at most the head size " +
                                    std::to_string(head));
  int64_t half = rotary / 2;
  if (cos->getType() != sin->getType())
    return importer.error(node, "cos_cache " + cos->getType().str() +
                                    " and sin_cache " + sin->getType().str() +
                                    " differ");
  llvm::ArrayRef<int64_t> cacheDims = cos->getType().getDims();
  if (positions) {
    const TensorType &posType = positions->getType();
    if (!ir::isIntegerDType(posType.getDType()) || posType.getRank() != 2 ||
        !broadcastsTo(posType.getDims(), {batch, seq}))
      return importer.error(
          node, "position_ids " + posType.str() + " is not an integer [" +
                    std::to_string(batch) + "," + std::to_string(seq) + "]");
    if (cacheDims.size() != 2 || cacheDims[1] != half)
      return importer.error(node, "cos_cache " + cos->getType().str() +
                                      " is not [positions," +
                                      std::to_string(half) + "]");
  } else if (cacheDims.size() != 3 || cacheDims[2] != half ||
             !broadcastsTo(cacheDims.take_front(2), {batch, seq})) {
    return importer.error(
        node, "cos_cache " + cos->getType().str() +
                  " without position_ids is not [" + std::to_string(batch) +
                  "," + std::to_string(seq) + "," + std::to_string(half) + "]");
  }

  Composer c(importer, node);
  ir::Value *x4 =
      rank == 4 ? x : c.reshape(x, {batch, seq, heads, head}, ".split");
  // The tables [batch, seq, half], then with a 1 at the heads axis.
  auto table = [&](ir::Value *cache, llvm::StringRef name) {
    ir::Value *rows =
        positions ? c.op("Gather", {cache, positions},
                         {{"axis", Attribute::getInt(0)}}, ("." + name).str())
                  : cache;
    return c.op("Unsqueeze", {rows}, {{"axes", Attribute::getInts({headAxis})}},
                ("." + name + "_heads").str());
  };
  ir::Value *cosHalf = table(cos, "cos"), *sinHalf = table(sin, "sin");
  ir::Value *rotated =
      rotary < head ? c.sliceLast(x4, 0, rotary, 1, ".rotated") : x4;
  ir::Value *result;
  if (attrInt(node, "interleaved", 0)) {
    ir::Value *even = c.sliceLast(rotated, 0, rotary, 2, ".even");
    ir::Value *odd = c.sliceLast(rotated, 1, rotary, 2, ".odd");
    ir::Value *real = c.op("Sub",
                           {c.op("Mul", {cosHalf, even}, {}, ".cos_even"),
                            c.op("Mul", {sinHalf, odd}, {}, ".sin_odd")},
                           {}, ".real");
    ir::Value *imag = c.op("Add",
                           {c.op("Mul", {sinHalf, even}, {}, ".sin_even"),
                            c.op("Mul", {cosHalf, odd}, {}, ".cos_odd")},
                           {}, ".imag");
    auto pairAxis = ir::AttributeMap{{"axes", Attribute::getInts({4})}};
    ir::Value *pairs =
        c.concatLast({c.op("Unsqueeze", {real}, pairAxis, ".real_pair"),
                      c.op("Unsqueeze", {imag}, pairAxis, ".imag_pair")},
                     ".pairs");
    llvm::SmallVector<int64_t, 4> rotatedDims{batch, 0, 0, rotary};
    rotatedDims[1] = rank == 4 ? xDims[1] : seq;
    rotatedDims[2] = rank == 4 ? seq : heads;
    result = c.reshape(pairs, rotatedDims, ".zipped");
  } else {
    ir::Value *cosFull = c.concatLast({cosHalf, cosHalf}, ".cos_full");
    ir::Value *sinFull = c.concatLast({sinHalf, sinHalf}, ".sin_full");
    ir::Value *low = c.sliceLast(rotated, 0, half, 1, ".low");
    ir::Value *high = c.sliceLast(rotated, half, rotary, 1, ".high");
    ir::Value *turned = c.concatLast(
        {c.op("Neg", {high}, {}, ".high_negated"), low}, ".turned");
    result = c.op("Add",
                  {c.op("Mul", {rotated, cosFull}, {}, ".direct"),
                   c.op("Mul", {turned, sinFull}, {}, ".turned_sin")},
                  {}, ".rotary");
  }
  if (rotary < head)
    result = c.concatLast({result, c.sliceLast(x4, rotary, head, 1, ".passed")},
                          ".joined");
  if (rank == 3)
    result = c.reshape(result, xDims, ".merged");
  return c.finish({result});
}

} // namespace

void registerAttentionOpImporters(llvm::StringMap<OpImporter> &map) {
  map["Attention"] = importAttention;
  map["RotaryEmbedding"] = importRotaryEmbedding;
}

} // namespace onnx_import
} // namespace snug
