//===- GradientRulesLinalg.cpp - Rules of MatMul, Gemm, softmax, reductions
//===//
//
// Products: for Y = A B, dA = dY B^T and dB = A^T dY (batch dims of a
// broadcast operand summed back, GraphBuilder::reduceTo). Gemm's rules are
// Gemms again, with the transposes folded into transA/transB and alpha
// carried over, so no Transpose node is built for it. 1-d MatMul operands
// (numpy's promoted vectors) are refused: the zoo has none, and their
// gradient needs a reshape on both sides.
//
// Softmax along an axis: dx = y * (dy - sum(dy * y)); LogSoftmax: dx = dy -
// exp(y) * sum(dy), sums along the axis, kept as a dim of 1 (the forms of
// Griewank & Walther's ch. 3 worked for the normalized exponential).
// LayerNormalization's rule recomputes the row statistics from x (see
// layerNormRule for the formula). Reductions send the gradient back to every
// reduced element: reshaped to the kept dims, expanded to the operand's,
// divided by the count for a mean.
//
//===----------------------------------------------------------------------===//
#include "passes/training/GradientRules.h"
#include "ir/ShapeFunctions.h"

namespace snug {

using ir::Attribute;
using ir::OpCode;
using ir::Value;

namespace {

/// `value` with its last two dims swapped.
llvm::Expected<Value *> transposeLast(GraphBuilder &b, Value *value) {
  unsigned rank = value->getType().getRank();
  llvm::SmallVector<int64_t, 4> perm;
  for (unsigned i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 2], perm[rank - 1]);
  return b.emit(OpCode::Transpose, {value},
                {{"perm", Attribute::getInts(perm)}});
}

llvm::Error matMulRule(GraphBuilder &b, const GradientQuery &q) {
  Value *a = q.node.getOperand(0), *bv = q.node.getOperand(1);
  Value *g = q.resultGradients[0];
  if (a->getType().getRank() < 2 || bv->getType().getRank() < 2)
    return gradientError("a 1-d MatMul operand has no gradient rule yet");
  // dA = dY B^T, dB = A^T dY, each summed back over broadcast batch dims.
  for (unsigned i = 0; i < 2; ++i) {
    if (!q.wanted[i])
      continue;
    auto other = transposeLast(b, i == 0 ? bv : a);
    if (!other)
      return other.takeError();
    auto product = i == 0 ? b.emit(OpCode::MatMul, {g, *other})
                          : b.emit(OpCode::MatMul, {*other, g});
    if (!product)
      return product.takeError();
    if (llvm::Error error = setGradient(
            q, i, b.reduceTo(*product, q.node.getOperand(i)->getType())))
      return error;
  }
  return llvm::Error::success();
}

ir::AttributeMap gemmAttrs(float alpha, bool transA, bool transB) {
  return {{"alpha", Attribute::getFloat(alpha)},
          {"beta", Attribute::getFloat(1.0f)},
          {"transA", Attribute::getInt(transA)},
          {"transB", Attribute::getInt(transB)}};
}

// Y = alpha op(A) op(B) + beta C, op transposing when transA/transB say so.
// With A' = op(A), B' = op(B): dA' = alpha dY B'^T, dB' = alpha A'^T dY,
// and dA = dA'^T when transA (likewise B), written as one Gemm each.
llvm::Error gemmRule(GraphBuilder &b, const GradientQuery &q) {
  const ir::AttributeMap &attrs = q.node.getAttributes();
  float alpha = getFloatAttr(attrs, "alpha", 1.0f);
  float beta = getFloatAttr(attrs, "beta", 1.0f);
  bool transA = getIntAttr(attrs, "transA", 0);
  bool transB = getIntAttr(attrs, "transB", 0);
  Value *a = q.node.getOperand(0), *bv = q.node.getOperand(1);
  Value *g = q.resultGradients[0];
  if (q.wanted[0]) {
    auto da =
        transA
            ? b.emit(OpCode::Gemm, {bv, g}, gemmAttrs(alpha, transB, true))
            : b.emit(OpCode::Gemm, {g, bv}, gemmAttrs(alpha, false, !transB));
    if (llvm::Error error = setGradient(q, 0, std::move(da)))
      return error;
  }
  if (q.wanted[1]) {
    auto db =
        transB ? b.emit(OpCode::Gemm, {g, a}, gemmAttrs(alpha, true, transA))
               : b.emit(OpCode::Gemm, {a, g}, gemmAttrs(alpha, !transA, false));
    if (llvm::Error error = setGradient(q, 1, std::move(db)))
      return error;
  }
  if (q.node.getNumOperands() < 3 || !q.node.getOperand(2) || !q.wanted[2])
    return llvm::Error::success();
  Value *scaled = g;
  if (beta != 1.0f) {
    auto product =
        b.emit(OpCode::Mul, {g, b.scalar(beta, g->getType().getDType())});
    if (!product)
      return product.takeError();
    scaled = *product;
  }
  return setGradient(q, 2, b.reduceTo(scaled, q.node.getOperand(2)->getType()));
}

/// ReduceSum of `value` along the node's `axis`, the dim kept.
llvm::Expected<Value *> sumAlongAxis(GraphBuilder &b, const GradientQuery &q,
                                     Value *value) {
  int64_t axis = getIntAttr(q.node.getAttributes(), "axis", -1);
  return b.emit(OpCode::ReduceSum, {value},
                {{"axes", Attribute::getInts({axis})},
                 {"keepdims", Attribute::getInt(1)}});
}

llvm::Error softmaxRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  Value *y = q.node.getResult(0), *g = q.resultGradients[0];
  auto gy = b.emit(OpCode::Mul, {g, y});
  if (!gy)
    return gy.takeError();
  auto sum = sumAlongAxis(b, q, *gy);
  if (!sum)
    return sum.takeError();
  auto centered = b.emit(OpCode::Sub, {g, *sum});
  if (!centered)
    return centered.takeError();
  return setGradient(q, 0, b.emit(OpCode::Mul, {y, *centered}));
}

llvm::Error logSoftmaxRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  Value *g = q.resultGradients[0];
  auto softmax = b.emit(OpCode::Exp, {q.node.getResult(0)});
  if (!softmax)
    return softmax.takeError();
  auto sum = sumAlongAxis(b, q, g);
  if (!sum)
    return sum.takeError();
  auto spread = b.emit(OpCode::Mul, {*softmax, *sum});
  if (!spread)
    return spread.takeError();
  return setGradient(q, 0, b.emit(OpCode::Sub, {g, *spread}));
}

/// ReduceSum and ReduceMean: the gradient reshaped to the kept dims and
/// expanded over the reduced ones (divided by their count for the mean).
llvm::Error reduceRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  if (q.node.getNumOperands() > 1 && q.node.getOperand(1))
    return gradientError("axes given as an operand: only the canonical "
                         "form (axes as an attribute) is differentiated");
  const ir::AttributeMap &attrs = q.node.getAttributes();
  const ir::TensorType &xType = q.node.getOperand(0)->getType();
  llvm::ArrayRef<int64_t> xDims = xType.getDims();
  llvm::SmallVector<int64_t, 4> axes =
      getIntsAttr(attrs, "axes").getValueOr(llvm::SmallVector<int64_t, 4>());
  bool reduceAll =
      axes.empty() && !getIntAttr(attrs, "noop_with_empty_axes", 0);
  llvm::SmallVector<int64_t, 4> kept(xDims.begin(), xDims.end());
  int64_t count = 1;
  for (size_t i = 0; i < kept.size(); ++i) {
    bool reduced = reduceAll;
    for (int64_t axis : axes)
      reduced |= normalizeAxis(axis, kept.size()).getValueOr(-1) == int64_t(i);
    if (reduced) {
      count *= kept[i];
      kept[i] = 1;
    }
  }
  Value *g = q.resultGradients[0];
  if (g->getType().getDims() != llvm::ArrayRef<int64_t>(kept)) {
    auto reshaped =
        b.emit(OpCode::Reshape, {g}, {{"shape", Attribute::getInts(kept)}});
    if (!reshaped)
      return reshaped.takeError();
    g = *reshaped;
  }
  if (q.node.is(OpCode::ReduceMean) && count != 1) {
    auto scaled = b.emit(OpCode::Mul,
                         {g, b.scalar(1.0 / double(count), xType.getDType())});
    if (!scaled)
      return scaled.takeError();
    g = *scaled;
  }
  if (g->getType().getDims() == xDims)
    return setGradient(q, 0, g);
  return setGradient(
      q, 0,
      b.emit(OpCode::Expand, {g}, {{"shape", Attribute::getInts(xDims)}}));
}

// LayerNormalization over the dims from `axis` on: y = xhat * scale + bias,
// xhat = (x - mean) * r, r = 1 / sqrt(var + epsilon). The statistics are
// recomputed from x (the node's mean and inverse-deviation results are
// optional and usually absent). With dxhat = dy * scale and means over the
// normalized dims: dx = r * (dxhat - mean(dxhat) - xhat * mean(dxhat *
// xhat)); dscale = sum of dy * xhat over the leading dims; dbias = sum of dy.
llvm::Error layerNormRule(GraphBuilder &b, const GradientQuery &q) {
  for (unsigned i = 1; i < q.resultGradients.size(); ++i)
    if (q.resultGradients[i])
      return gradientError("the gradient through the mean and inverse "
                           "deviation results is not implemented");
  const ir::AttributeMap &attrs = q.node.getAttributes();
  Value *x = q.node.getOperand(0), *scale = q.node.getOperand(1);
  Value *g = q.resultGradients[0];
  llvm::ArrayRef<int64_t> dims = x->getType().getDims();
  ir::DType dtype = x->getType().getDType();
  int64_t rank = dims.size();
  int64_t axis =
      normalizeAxis(getIntAttr(attrs, "axis", -1), rank).getValueOr(rank - 1);
  llvm::SmallVector<int64_t, 4> normalized, leading;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? leading : normalized).push_back(i);
  llvm::ArrayRef<int64_t> inner = dims.drop_front(axis);
  ir::AttributeMap meanAttrs = {{"axes", Attribute::getInts(normalized)},
                                {"keepdims", Attribute::getInt(1)}};
  auto stats = b.moments(x, normalized, getFloatAttr(attrs, "epsilon", 1e-5f));
  if (!stats)
    return stats.takeError();
  Value *centered = stats->centered;
  auto r = b.emit(OpCode::Div, {b.scalar(1, dtype), stats->deviation});
  if (!r)
    return r.takeError();
  auto xhat = b.emit(OpCode::Mul, {centered, *r});
  if (!xhat)
    return xhat.takeError();
  if (q.wanted[0]) {
    auto scaleInner = b.reshape(scale, inner);
    if (!scaleInner)
      return scaleInner.takeError();
    auto dxhat = b.emit(OpCode::Mul, {g, *scaleInner});
    if (!dxhat)
      return dxhat.takeError();
    auto meanDxhat = b.emit(OpCode::ReduceMean, {*dxhat}, meanAttrs);
    if (!meanDxhat)
      return meanDxhat.takeError();
    auto product = b.emit(OpCode::Mul, {*dxhat, *xhat});
    if (!product)
      return product.takeError();
    auto meanProduct = b.emit(OpCode::ReduceMean, {*product}, meanAttrs);
    if (!meanProduct)
      return meanProduct.takeError();
    auto projected = b.emit(OpCode::Mul, {*xhat, *meanProduct});
    if (!projected)
      return projected.takeError();
    auto first = b.emit(OpCode::Sub, {*dxhat, *meanDxhat});
    if (!first)
      return first.takeError();
    auto second = b.emit(OpCode::Sub, {*first, *projected});
    if (!second)
      return second.takeError();
    if (llvm::Error error =
            setGradient(q, 0, b.emit(OpCode::Mul, {*second, *r})))
      return error;
  }
  // dscale and dbias: dy (times xhat) summed over the leading dims, in the
  // operand's own shape.
  for (unsigned i = 1; i < 3 && i < q.node.getNumOperands(); ++i) {
    if (!q.node.getOperand(i) || !q.wanted[i])
      continue;
    Value *summand = g;
    if (i == 1) {
      auto product = b.emit(OpCode::Mul, {g, *xhat});
      if (!product)
        return product.takeError();
      summand = *product;
    }
    if (!leading.empty()) {
      auto summed = b.emit(OpCode::ReduceSum, {summand},
                           {{"axes", Attribute::getInts(leading)},
                            {"keepdims", Attribute::getInt(0)}});
      if (!summed)
        return summed.takeError();
      summand = *summed;
    }
    if (llvm::Error error = setGradient(
            q, i,
            b.reshape(summand, q.node.getOperand(i)->getType().getDims())))
      return error;
  }
  return llvm::Error::success();
}

} // namespace

llvm::ArrayRef<GradientRuleEntry> getLinalgGradientRules() {
  static const GradientRuleEntry rules[] = {
      {OpCode::Gemm, gemmRule},
      {OpCode::MatMul, matMulRule},
      {OpCode::LayerNormalization, layerNormRule},
      {OpCode::LogSoftmax, logSoftmaxRule},
      {OpCode::Softmax, softmaxRule},
      {OpCode::ReduceMean, reduceRule},
      {OpCode::ReduceSum, reduceRule},
  };
  return rules;
}

} // namespace snug
