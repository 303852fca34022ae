//===- GradientRulesDataMovement.cpp - Rules of views and Transpose -------===//
//
// Reshape, Flatten, Squeeze and Unsqueeze only relabel the operand's
// elements: the gradient is the result's gradient reshaped back to the
// operand's dims. Transpose's gradient is the result's gradient under the
// inverse permutation. Shape operands (a Reshape's second operand in
// non-canonical form) carry no gradient.
//
// Concat's operands get their stretch of the gradient back by Slice; Split's
// operand is the Concat of its results' gradients (zeros for a result no
// gradient reaches). Slice (steps of 1) pads the gradient with zeros back to
// the operand; Pad (constant mode, pads >= 0) slices it out. Gather sends
// each gradient row to the row its index names with ScatterElements
// (reduction=add, so a repeated index gets each row): the data viewed as
// (outer, axis dim, inner), the indices flattened and expanded across outer
// and inner. Dropout is the inference form the importer keeps: identity.
//
//===----------------------------------------------------------------------===//
#include "passes/training/GradientRules.h"
#include "ir/ShapeFunctions.h"

namespace snug {

using ir::Attribute;
using ir::OpCode;
using ir::Value;

namespace {

llvm::Error reshapeBackRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  llvm::ArrayRef<int64_t> dims = q.node.getOperand(0)->getType().getDims();
  return setGradient(q, 0,
                     b.emit(OpCode::Reshape, {q.resultGradients[0]},
                            {{"shape", Attribute::getInts(dims)}}));
}

llvm::Error transposeRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  int64_t rank = q.node.getOperand(0)->getType().getRank();
  llvm::SmallVector<int64_t, 4> perm;
  if (auto given = getIntsAttr(q.node.getAttributes(), "perm"))
    perm = *given;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  llvm::SmallVector<int64_t, 4> inverse(rank, 0);
  for (int64_t i = 0; i < rank; ++i)
    inverse[perm[i]] = i;
  return setGradient(q, 0,
                     b.emit(OpCode::Transpose, {q.resultGradients[0]},
                            {{"perm", Attribute::getInts(inverse)}}));
}

/// `value`'s elements [start, end) along `axis`.
llvm::Expected<Value *> sliceAlong(GraphBuilder &b, Value *value, int64_t axis,
                                   int64_t start, int64_t end) {
  return b.emit(OpCode::Slice, {value},
                {{"starts", Attribute::getInts({start})},
                 {"ends", Attribute::getInts({end})},
                 {"axes", Attribute::getInts({axis})},
                 {"steps", Attribute::getInts({1})}});
}

int64_t axisOf(const GradientQuery &q, int64_t rank, int64_t otherwise) {
  int64_t axis = getIntAttr(q.node.getAttributes(), "axis", otherwise);
  return axis < 0 ? axis + rank : axis;
}

llvm::Error concatRule(GraphBuilder &b, const GradientQuery &q) {
  int64_t axis = axisOf(q, q.node.getResult(0)->getType().getRank(), 0);
  int64_t offset = 0;
  for (unsigned i = 0; i < q.node.getNumOperands(); ++i) {
    int64_t size = q.node.getOperand(i)->getType().getDims()[axis];
    if (q.wanted[i])
      if (llvm::Error error = setGradient(
              q, i,
              sliceAlong(b, q.resultGradients[0], axis, offset, offset + size)))
        return error;
    offset += size;
  }
  return llvm::Error::success();
}

llvm::Error splitRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  int64_t axis = axisOf(q, q.node.getOperand(0)->getType().getRank(), 0);
  llvm::SmallVector<Value *, 4> parts;
  for (unsigned i = 0; i < q.node.getNumResults(); ++i) {
    Value *part = q.resultGradients[i];
    if (!part) {
      auto zeros = b.fill(0, q.node.getResult(i)->getType());
      if (!zeros)
        return zeros.takeError();
      part = *zeros;
    }
    parts.push_back(part);
  }
  return setGradient(
      q, 0, b.emit(OpCode::Concat, parts, {{"axis", Attribute::getInt(axis)}}));
}

llvm::Error sliceRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  const ir::AttributeMap &attrs = q.node.getAttributes();
  llvm::ArrayRef<int64_t> dims = q.node.getOperand(0)->getType().getDims();
  llvm::SmallVector<int64_t, 8> pads(2 * dims.size(), 0);
  auto starts = *getIntsAttr(attrs, "starts"),
       axes = *getIntsAttr(attrs, "axes");
  auto steps = *getIntsAttr(attrs, "steps");
  llvm::ArrayRef<int64_t> kept = q.node.getResult(0)->getType().getDims();
  for (size_t i = 0; i < axes.size(); ++i) {
    if (steps[i] != 1)
      return gradientError("a Slice step other than 1 has no gradient rule");
    // Canonical starts are clamped to [0, dim] (ShapeFunctions.cpp).
    pads[axes[i]] = kept[axes[i]] ? starts[i] : 0;
    pads[axes[i] + dims.size()] = dims[axes[i]] - kept[axes[i]] - pads[axes[i]];
  }
  return setGradient(q, 0,
                     b.emit(OpCode::Pad, {q.resultGradients[0]},
                            {{"pads", Attribute::getInts(pads)}}));
}

llvm::Error padRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  const ir::AttributeMap &attrs = q.node.getAttributes();
  if (getStringAttr(attrs, "mode", "constant") != "constant")
    return gradientError("only constant-mode Pad has a gradient rule");
  llvm::ArrayRef<int64_t> dims = q.node.getOperand(0)->getType().getDims();
  auto pads = *getIntsAttr(attrs, "pads");
  llvm::SmallVector<int64_t, 4> starts, ends, axes, steps;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (pads[i] < 0 || pads[i + dims.size()] < 0)
      return gradientError("a negative pad has no gradient rule");
    starts.push_back(pads[i]);
    ends.push_back(pads[i] + dims[i]);
    axes.push_back(int64_t(i));
    steps.push_back(1);
  }
  return setGradient(q, 0,
                     b.emit(OpCode::Slice, {q.resultGradients[0]},
                            {{"starts", Attribute::getInts(starts)},
                             {"ends", Attribute::getInts(ends)},
                             {"axes", Attribute::getInts(axes)},
                             {"steps", Attribute::getInts(steps)}}));
}

llvm::Error gatherRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  Value *data = q.node.getOperand(0), *indices = q.node.getOperand(1);
  llvm::ArrayRef<int64_t> dims = data->getType().getDims();
  int64_t axis = axisOf(q, dims.size(), 0);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < int64_t(dims.size()); ++i)
    (i < axis ? outer : inner) *= i == axis ? 1 : dims[i];
  int64_t picks = indices->getType().getNumElements();
  auto zeros = b.fill(0, ir::TensorType(data->getType().getDType(),
                                        {outer, dims[axis], inner}));
  auto column = b.reshape(indices, {1, picks, 1});
  auto rows = b.reshape(q.resultGradients[0], {outer, picks, inner});
  for (auto *value : {&zeros, &column, &rows})
    if (!*value)
      return value->takeError();
  auto spread = b.emit(OpCode::Expand, {*column},
                       {{"shape", Attribute::getInts({outer, picks, inner})}});
  if (!spread)
    return spread.takeError();
  auto scattered = b.emit(OpCode::ScatterElements, {*zeros, *spread, *rows},
                          {{"axis", Attribute::getInt(1)},
                           {"reduction", Attribute::getString("add")}});
  if (!scattered)
    return scattered.takeError();
  return setGradient(q, 0, b.reshape(*scattered, dims));
}

llvm::Error dropoutRule(GraphBuilder &b, const GradientQuery &q) {
  if (q.wanted[0])
    return setGradient(q, 0, q.resultGradients[0]);
  return llvm::Error::success();
}

} // namespace

llvm::ArrayRef<GradientRuleEntry> getDataMovementGradientRules() {
  static const GradientRuleEntry rules[] = {
      {OpCode::Flatten, reshapeBackRule},
      {OpCode::Reshape, reshapeBackRule},
      {OpCode::Squeeze, reshapeBackRule},
      {OpCode::Transpose, transposeRule},
      {OpCode::Unsqueeze, reshapeBackRule},
      {OpCode::Concat, concatRule},
      {OpCode::Dropout, dropoutRule},
      {OpCode::Gather, gatherRule},
      {OpCode::Pad, padRule},
      {OpCode::Slice, sliceRule},
      {OpCode::Split, splitRule},
  };
  return rules;
}

} // namespace snug
