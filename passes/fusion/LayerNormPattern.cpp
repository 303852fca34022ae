//===- LayerNormPattern.cpp - Exporters' decomposed LayerNorm, as one op --===//
//
// Exporters older than opset 17 (and torch's at opset 13) write LayerNorm
// out as nine nodes:
//   mean = ReduceMean(x) {axes = A, keepdims = 1}
//   d    = Sub(x, mean)
//   var  = ReduceMean(Pow(d, 2)) {axes = A, keepdims = 1}
//   y    = Div(d, Sqrt(Add(var, eps))) * gamma + beta
// which runs as two reductions and several elementwise kernels, holding d
// and its square in the arena. LayerNormalization(x, gamma, beta) {axis,
// epsilon} computes the same formula (ONNX's definition: the mean and the
// biased variance over the dims from axis on, then (x - mean) /
// sqrt(var + epsilon) * scale + bias) in one kernel.
//
// What must hold, so that the rewrite means the same: A is the trailing
// dims of x (LayerNormalization normalizes [axis, rank)); both means are
// over A with keepdims; the exponent is the constant 2 and eps a constant
// scalar added to the variance before the square root (any other placement
// of eps is another function and is left alone); gamma and beta (beta may
// be absent) hold one value per normalized element, shaped as the trailing
// dims; every intermediate has exactly the users the pattern names and is
// no graph output. The result takes the final node's place and name.
//
// RMSNorm (HF's LlamaRMSNorm and T5LayerNorm, which torch exports as
//   var = ReduceMean(Pow(x, 2)) {axes = A, keepdims = 1}
//   y   = x * (1 / Sqrt(Add(var, eps))) * w   (or Reciprocal, or x / ...)
// ) becomes snug.rms_norm(x, w) {axis, epsilon} under the same rules: A
// the trailing dims, eps a constant scalar inside the root, the exponent
// the constant 2, w (optional) one value per normalized element, every
// intermediate read by the next node alone. x itself may have other
// readers (the residual), as it is the op's operand.
//
//===----------------------------------------------------------------------===//
#include "passes/fusion/FusePatterns.h"

#include "ir/Module.h"


#include <cstring>

namespace snug {

namespace {

using ir::OpCode;
using ir::Value;

/// The first normalized axis when `node` is a ReduceMean with keepdims over
/// the trailing dims of its operand.
llvm::Optional<int64_t> trailingMeanAxis(const ir::Node &node) {
  if (!node.is(OpCode::ReduceMean) || node.getNumOperands() != 1)
    return llvm::None;
  const ir::Attribute *keep = node.getAttribute("keepdims");
  const ir::Attribute *axes = node.getAttribute("axes");
  if (!keep || keep->getKind() != ir::Attribute::Kind::Int ||
      keep->getInt() != 1 || !axes ||
      axes->getKind() != ir::Attribute::Kind::Ints || axes->getInts().empty())
    return llvm::None;
  int64_t rank = node.getOperand(0)->getType().getRank();
  llvm::ArrayRef<int64_t> list = axes->getInts();
  int64_t first = rank - int64_t(list.size());
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i] != first + int64_t(i))
      return llvm::None;
  return first >= 0 ? llvm::Optional<int64_t>(first) : llvm::None;
}

/// Whether `value` holds one value per normalized element of `x`, shaped as
/// x's dims from `axis` on (leading 1s allowed).
bool holdsNormalizedShape(const Value *value, const Value *x, int64_t axis) {
  if (!value || value->getType().getDType() != x->getType().getDType())
    return false;
  llvm::ArrayRef<int64_t> dims = value->getType().getDims();
  llvm::ArrayRef<int64_t> normalized = x->getType().getDims().drop_front(axis);
  while (dims.size() > normalized.size() && dims.front() == 1)
    dims = dims.drop_front();
  return dims == normalized;
}

struct Match {
  Value *x, *gamma, *beta = nullptr;
  int64_t axis;
  float epsilon;
  llvm::SmallVector<ir::Node *, 9> nodes; // the last one is the result's
};

/// The decomposed LayerNorm whose first mean is `mean`, if it is one.
llvm::Optional<Match> matchAt(const ir::Module &module, ir::Node &mean) {
  llvm::Optional<int64_t> axis = trailingMeanAxis(mean);
  if (!axis)
    return llvm::None;
  Match match;
  match.x = mean.getOperand(0);
  match.axis = *axis;
  ir::DType type = match.x->getType().getDType();
  if (type != ir::DType::F32)
    return llvm::None;
  ir::Node *sub = soleUser(module, mean.getResult(0));
  if (!sub || !sub->is(OpCode::Sub) || sub->getOperand(0) != match.x ||
      sub->getOperand(1) != mean.getResult(0))
    return llvm::None;
  // d feeds the Pow and the Div, and nothing else.
  Value *d = sub->getResult(0);
  if (module.isOutput(d) || d->getUses().size() != 2)
    return llvm::None;
  ir::Node *pow = nullptr, *div = nullptr;
  for (const Value::Use &use : d->getUses()) {
    if (use.user->is(OpCode::Pow) && use.operandIndex == 0)
      pow = use.user;
    else if (use.user->is(OpCode::Div) && use.operandIndex == 0)
      div = use.user;
  }
  if (!pow || !div || pow == div)
    return llvm::None;
  llvm::Optional<float> exponent = readScalarWeight(module, pow->getOperand(1));
  if (!exponent || *exponent != 2.0f)
    return llvm::None;
  ir::Node *variance = soleUser(module, pow->getResult(0));
  if (!variance || trailingMeanAxis(*variance) != axis)
    return llvm::None;
  ir::Node *add = soleUser(module, variance->getResult(0));
  if (!add || !add->is(OpCode::Add))
    return llvm::None;
  llvm::Optional<float> epsilon =
      readScalarWeight(module, otherOperand(*add, variance->getResult(0)));
  if (!epsilon || !(*epsilon >= 0))
    return llvm::None;
  match.epsilon = *epsilon;
  ir::Node *sqrt = soleUser(module, add->getResult(0));
  if (!sqrt || !sqrt->is(OpCode::Sqrt) ||
      soleUser(module, sqrt->getResult(0)) != div ||
      div->getOperand(1) != sqrt->getResult(0))
    return llvm::None;
  ir::Node *mul = soleUser(module, div->getResult(0));
  if (!mul || !mul->is(OpCode::Mul))
    return llvm::None;
  match.gamma = otherOperand(*mul, div->getResult(0));
  if (!holdsNormalizedShape(match.gamma, match.x, match.axis))
    return llvm::None;
  match.nodes = {&mean, sub, pow, variance, add, sqrt, div, mul};
  ir::Node *bias = soleUser(module, mul->getResult(0));
  if (bias && bias->is(OpCode::Add)) {
    Value *beta = otherOperand(*bias, mul->getResult(0));
    if (holdsNormalizedShape(beta, match.x, match.axis)) {
      match.beta = beta;
      match.nodes.push_back(bias);
    }
  }
  // The result must keep x's type: the Mul or Add must not broadcast it to
  // more dims than x has.
  if (match.nodes.back()->getResult(0)->getType() != match.x->getType())
    return llvm::None;
  return match;
}

/// A decomposed RMSNorm: x / sqrt(mean(x^2) + eps) (* scale).
struct RmsMatch {
  Value *x, *scale = nullptr;
  int64_t axis;
  float epsilon;
  llvm::SmallVector<ir::Node *, 7> nodes; // the last one is the result's
};

/// The decomposed RMSNorm whose square is `pow`, if it is one.
llvm::Optional<RmsMatch> matchRmsAt(const ir::Module &module, ir::Node &pow) {
  if (!pow.is(OpCode::Pow) || pow.getNumOperands() != 2)
    return llvm::None;
  llvm::Optional<float> exponent = readScalarWeight(module, pow.getOperand(1));
  if (!exponent || *exponent != 2.0f)
    return llvm::None;
  RmsMatch match;
  match.x = pow.getOperand(0);
  if (!match.x || match.x->getType().getDType() != ir::DType::F32)
    return llvm::None;
  ir::Node *mean = soleUser(module, pow.getResult(0));
  llvm::Optional<int64_t> axis = mean ? trailingMeanAxis(*mean) : llvm::None;
  if (!axis)
    return llvm::None;
  match.axis = *axis;
  ir::Node *add = soleUser(module, mean->getResult(0));
  if (!add || !add->is(OpCode::Add))
    return llvm::None;
  llvm::Optional<float> epsilon =
      readScalarWeight(module, otherOperand(*add, mean->getResult(0)));
  if (!epsilon || !(*epsilon >= 0))
    return llvm::None;
  match.epsilon = *epsilon;
  ir::Node *sqrt = soleUser(module, add->getResult(0));
  if (!sqrt || !sqrt->is(OpCode::Sqrt))
    return llvm::None;
  match.nodes = {&pow, mean, add, sqrt};
  // x / root, or x * (1 / root) with the reciprocal as Div or Reciprocal.
  ir::Node *next = soleUser(module, sqrt->getResult(0));
  if (!next)
    return llvm::None;
  ir::Node *norm = nullptr;
  Value *root = sqrt->getResult(0);
  if (next->is(OpCode::Div) && next->getNumOperands() == 2 &&
      next->getOperand(0) == match.x && next->getOperand(1) == root) {
    norm = next;
  } else {
    llvm::Optional<float> one =
        next->is(OpCode::Div) && next->getNumOperands() == 2 &&
                next->getOperand(1) == root
            ? readScalarWeight(module, next->getOperand(0))
            : llvm::None;
    bool reciprocal = next->is(OpCode::Reciprocal) || (one && *one == 1.0f);
    if (!reciprocal)
      return llvm::None;
    match.nodes.push_back(next);
    norm = soleUser(module, next->getResult(0));
    if (!norm || !norm->is(OpCode::Mul) ||
        otherOperand(*norm, next->getResult(0)) != match.x)
      return llvm::None;
  }
  match.nodes.push_back(norm);
  if (ir::Node *mul = soleUser(module, norm->getResult(0));
      mul && mul->is(OpCode::Mul)) {
    Value *scale = otherOperand(*mul, norm->getResult(0));
    if (holdsNormalizedShape(scale, match.x, match.axis)) {
      match.scale = scale;
      match.nodes.push_back(mul);
    }
  }
  // The result keeps x's type (nothing broadcast it wider).
  if (match.nodes.back()->getResult(0)->getType() != match.x->getType())
    return llvm::None;
  return match;
}

} // namespace

unsigned rewriteDecomposedRmsNorms(ir::Module &module) {
  return rewriteMatches(
      module, OpCode::SnugRmsNorm, matchRmsAt,
      [](const RmsMatch &match, auto current) {
        std::pair<llvm::SmallVector<Value *, 4>, ir::AttributeMap> node;
        node.first = {current(match.x)};
        if (match.scale)
          node.first.push_back(current(match.scale));
        node.second["axis"] = ir::Attribute::getInt(match.axis);
        node.second["epsilon"] = ir::Attribute::getFloat(match.epsilon);
        return node;
      });
}

unsigned rewriteDecomposedLayerNorms(ir::Module &module) {
  return rewriteMatches(
      module, OpCode::LayerNormalization, matchAt,
      [](const Match &match, auto current) {
        std::pair<llvm::SmallVector<Value *, 4>, ir::AttributeMap> node;
        node.first = {current(match.x), current(match.gamma)};
        if (match.beta)
          node.first.push_back(current(match.beta));
        node.second["axis"] = ir::Attribute::getInt(match.axis);
        node.second["epsilon"] = ir::Attribute::getFloat(match.epsilon);
        return node;
      });
}

} // namespace snug
