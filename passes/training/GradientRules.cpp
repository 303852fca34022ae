//===- GradientRules.cpp - The graph builder and elementwise rules --------===//
//
// The builder every rule appends nodes with, the registry lookup, and the
// rules of elementwise ops. An elementwise rule multiplies the result's
// gradient by the op's derivative, written with the forward node's saved
// operand x or result y where that is cheaper (sigmoid' = y(1-y), tanh' =
// 1-y^2, exp' = y, sqrt' = 1/(2y)), then reduces it to each operand's shape.
// Relu's derivative at 0 is taken as 0 (PyTorch's choice).
//
//===----------------------------------------------------------------------===//
#include "passes/training/GradientRules.h"
#include "passes/simplify/HostAttributes.h"
#include "ir/ShapeFunctions.h"

#include "runtime/host/Kernels.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>

namespace snug {

using ir::OpCode;
using ir::Value;

llvm::Error gradientError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

llvm::Error setGradient(const GradientQuery &q, unsigned index,
                        llvm::Expected<Value *> gradient) {
  if (!gradient)
    return gradient.takeError();
  q.operandGradients[index] = *gradient;
  return llvm::Error::success();
}

GraphBuilder::GraphBuilder(ir::Module &module, llvm::StringRef constantPrefix)
    : module(module), constantPrefix(constantPrefix.str()) {}

llvm::Expected<ir::Node *>
GraphBuilder::emitNode(OpCode op, llvm::ArrayRef<Value *> operands,
                       ir::AttributeMap attributes, unsigned numResults) {
  llvm::SmallVector<const ir::TensorType *, 4> types;
  for (Value *operand : operands)
    types.push_back(operand ? &operand->getType() : nullptr);
  ShapeQuery query{op, types, attributes, numResults};
  auto resultTypes = inferResultTypes(query);
  if (!resultTypes) {
    std::string reason = toString(resultTypes.takeError());
    std::string where = subject ? subject->describe() + ": " : "";
    return gradientError(where + "cannot build " + ir::getOpInfo(op).name +
                         ": " + reason);
  }
  if (insertAt)
    return module.insertNode((*insertAt)++, op, operands, *resultTypes,
                             std::move(attributes));
  return module.addNode(op, operands, *resultTypes, std::move(attributes));
}

llvm::Expected<Value *> GraphBuilder::emit(OpCode op,
                                           llvm::ArrayRef<Value *> operands,
                                           ir::AttributeMap attributes) {
  auto node = emitNode(op, operands, std::move(attributes));
  if (!node)
    return node.takeError();
  return (*node)->getResult(0);
}

Value *GraphBuilder::constant(const ir::TensorType &type,
                              llvm::ArrayRef<double> values) {
  assert(int64_t(values.size()) == type.getNumElements());
  std::vector<uint8_t> bytes(type.getByteSize());
  uint8_t code = toBundleCode(type.getDType());
  for (size_t i = 0; i < values.size(); ++i)
    rt::storeDouble(bytes.data(), code, int64_t(i), values[i]);
  if (!takenNames) {
    takenNames.emplace();
    for (const std::unique_ptr<Value> &argument : module.getArguments())
      takenNames->insert(argument->getName());
    for (const std::unique_ptr<ir::Node> &node : module.getNodes())
      for (Value *result : node->getResults())
        takenNames->insert(result->getName());
  }
  std::string name;
  do
    name = constantPrefix + std::to_string(constantCount++);
  while (!takenNames->insert(name).second);
  return module.addWeight(name, type, bytes);
}

Value *GraphBuilder::scalar(double value, ir::DType dtype) {
  return constant(ir::TensorType(dtype, {}), {value});
}

llvm::Expected<Value *> GraphBuilder::reduceTo(Value *gradient,
                                               const ir::TensorType &type) {
  llvm::ArrayRef<int64_t> from = gradient->getType().getDims();
  llvm::ArrayRef<int64_t> to = type.getDims();
  if (from == to)
    return gradient;
  // numpy aligns dims at the right: leading dims were added, dims of 1
  // were stretched.
  size_t added = from.size() - to.size();
  llvm::SmallVector<int64_t, 4> axes;
  for (size_t i = 0; i < from.size(); ++i)
    if (i < added || (to[i - added] == 1 && from[i] != 1))
      axes.push_back(int64_t(i));
  Value *summed = gradient;
  if (!axes.empty()) {
    auto reduced = emit(OpCode::ReduceSum, {gradient},
                        {{"axes", ir::Attribute::getInts(axes)},
                         {"keepdims", ir::Attribute::getInt(0)}});
    if (!reduced)
      return reduced.takeError();
    summed = *reduced;
  }
  if (summed->getType().getDims() == to)
    return summed;
  return emit(OpCode::Reshape, {summed},
              {{"shape", ir::Attribute::getInts(to)}});
}

llvm::Expected<Value *> GraphBuilder::reshape(Value *value,
                                              llvm::ArrayRef<int64_t> dims) {
  if (value->getType().getDims() == dims)
    return value;
  return emit(OpCode::Reshape, {value},
              {{"shape", ir::Attribute::getInts(dims)}});
}

llvm::Expected<GraphBuilder::Moments>
GraphBuilder::moments(Value *x, llvm::ArrayRef<int64_t> axes, float epsilon) {
  ir::AttributeMap meanAttrs = {{"axes", ir::Attribute::getInts(axes)},
                                {"keepdims", ir::Attribute::getInt(1)}};
  auto mean = emit(OpCode::ReduceMean, {x}, meanAttrs);
  if (!mean)
    return mean.takeError();
  auto centered = emit(OpCode::Sub, {x, *mean});
  if (!centered)
    return centered.takeError();
  auto squared = emit(OpCode::Mul, {*centered, *centered});
  if (!squared)
    return squared.takeError();
  auto variance = emit(OpCode::ReduceMean, {*squared}, meanAttrs);
  if (!variance)
    return variance.takeError();
  auto shifted =
      emit(OpCode::Add, {*variance, scalar(epsilon, x->getType().getDType())});
  if (!shifted)
    return shifted.takeError();
  auto deviation = emit(OpCode::Sqrt, {*shifted});
  if (!deviation)
    return deviation.takeError();
  return Moments{*centered, *deviation, *mean, *variance};
}

llvm::Expected<Value *> GraphBuilder::fill(double value,
                                           const ir::TensorType &type) {
  Value *one = scalar(value, type.getDType());
  if (type.getRank() == 0)
    return one;
  return emit(OpCode::Expand, {one},
              {{"shape", ir::Attribute::getInts(type.getDims())}});
}

llvm::ArrayRef<llvm::ArrayRef<GradientRuleEntry>> getGradientRuleTables() {
  static const llvm::ArrayRef<GradientRuleEntry> tables[] = {
      getElementwiseGradientRules(), getLinalgGradientRules(),
      getDataMovementGradientRules(), getConvGradientRules()};
  return tables;
}

GradientRule findGradientRule(OpCode op) {
  static const llvm::DenseMap<unsigned, GradientRule> rules = [] {
    llvm::DenseMap<unsigned, GradientRule> map;
    for (auto table : getGradientRuleTables())
      for (const GradientRuleEntry &entry : table)
        map[unsigned(entry.op)] = entry.rule;
    return map;
  }();
  auto it = rules.find(unsigned(op));
  return it == rules.end() ? nullptr : it->second;
}

//===----------------------------------------------------------------------===//
// Elementwise rules
//===----------------------------------------------------------------------===//

namespace {

/// Sets operand `index`'s gradient to `gradient` reduced to its type, when
/// wanted.
llvm::Error setReduced(GraphBuilder &b, const GradientQuery &q, unsigned index,
                       llvm::Expected<Value *> gradient) {
  if (!gradient)
    return gradient.takeError();
  auto reduced = b.reduceTo(*gradient, q.node.getOperand(index)->getType());
  if (!reduced)
    return reduced.takeError();
  q.operandGradients[index] = *reduced;
  return llvm::Error::success();
}

Value *operand(const GradientQuery &q, unsigned index) {
  return q.node.getOperand(index);
}
Value *result(const GradientQuery &q) { return q.node.getResult(0); }
Value *seed(const GradientQuery &q) { return q.resultGradients[0]; }
ir::DType dtypeOf(const GradientQuery &q) {
  return result(q)->getType().getDType();
}

/// g * f(...) for the one operand of a unary op: f is built by `factor`.
template <class Factor>
llvm::Error unaryTimes(GraphBuilder &b, const GradientQuery &q, Factor factor) {
  if (!q.wanted[0])
    return llvm::Error::success();
  llvm::Expected<Value *> derivative = factor();
  if (!derivative)
    return derivative.takeError();
  return setReduced(b, q, 0, b.emit(OpCode::Mul, {seed(q), *derivative}));
}

llvm::Error identityRule(GraphBuilder &b, const GradientQuery &q) {
  if (q.wanted[0])
    return setReduced(b, q, 0, seed(q));
  return llvm::Error::success();
}

llvm::Error negRule(GraphBuilder &b, const GradientQuery &q) {
  if (q.wanted[0])
    return setReduced(b, q, 0, b.emit(OpCode::Neg, {seed(q)}));
  return llvm::Error::success();
}

llvm::Error expRule(GraphBuilder &b, const GradientQuery &q) {
  return unaryTimes(b, q,
                    [&]() -> llvm::Expected<Value *> { return result(q); });
}

llvm::Error logRule(GraphBuilder &b, const GradientQuery &q) {
  if (q.wanted[0])
    return setReduced(b, q, 0, b.emit(OpCode::Div, {seed(q), operand(q, 0)}));
  return llvm::Error::success();
}

llvm::Error sqrtRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  auto twiceY = b.emit(OpCode::Mul, {result(q), b.scalar(2, dtypeOf(q))});
  if (!twiceY)
    return twiceY.takeError();
  return setReduced(b, q, 0, b.emit(OpCode::Div, {seed(q), *twiceY}));
}

llvm::Error sigmoidRule(GraphBuilder &b, const GradientQuery &q) {
  return unaryTimes(b, q, [&]() -> llvm::Expected<Value *> {
    auto oneMinusY = b.emit(OpCode::Sub, {b.scalar(1, dtypeOf(q)), result(q)});
    if (!oneMinusY)
      return oneMinusY.takeError();
    return b.emit(OpCode::Mul, {result(q), *oneMinusY});
  });
}

llvm::Error tanhRule(GraphBuilder &b, const GradientQuery &q) {
  return unaryTimes(b, q, [&]() -> llvm::Expected<Value *> {
    auto ySquared = b.emit(OpCode::Mul, {result(q), result(q)});
    if (!ySquared)
      return ySquared.takeError();
    return b.emit(OpCode::Sub, {b.scalar(1, dtypeOf(q)), *ySquared});
  });
}

llvm::Error reluRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  Value *zero = b.scalar(0, dtypeOf(q));
  auto positive = b.emit(OpCode::Greater, {operand(q, 0), zero});
  if (!positive)
    return positive.takeError();
  return setReduced(b, q, 0, b.emit(OpCode::Where, {*positive, seed(q), zero}));
}

llvm::Error addRule(GraphBuilder &b, const GradientQuery &q) {
  for (unsigned i = 0; i < q.node.getNumOperands(); ++i)
    if (q.wanted[i])
      if (llvm::Error error = setReduced(b, q, i, seed(q)))
        return error;
  return llvm::Error::success();
}

llvm::Error subRule(GraphBuilder &b, const GradientQuery &q) {
  if (q.wanted[0])
    if (llvm::Error error = setReduced(b, q, 0, seed(q)))
      return error;
  if (q.wanted[1])
    return setReduced(b, q, 1, b.emit(OpCode::Neg, {seed(q)}));
  return llvm::Error::success();
}

llvm::Error mulRule(GraphBuilder &b, const GradientQuery &q) {
  for (unsigned i = 0; i < 2; ++i)
    if (q.wanted[i])
      if (llvm::Error error = setReduced(
              b, q, i, b.emit(OpCode::Mul, {seed(q), operand(q, 1 - i)})))
        return error;
  return llvm::Error::success();
}

// y = a / b: da = g / b, db = -g * y / b.
llvm::Error divRule(GraphBuilder &b, const GradientQuery &q) {
  auto gOverB = b.emit(OpCode::Div, {seed(q), operand(q, 1)});
  if (!gOverB)
    return gOverB.takeError();
  if (q.wanted[0])
    if (llvm::Error error = setReduced(b, q, 0, *gOverB))
      return error;
  if (!q.wanted[1])
    return llvm::Error::success();
  auto scaled = b.emit(OpCode::Mul, {*gOverB, result(q)});
  if (!scaled)
    return scaled.takeError();
  return setReduced(b, q, 1, b.emit(OpCode::Neg, {*scaled}));
}

// y = a^b: da = g b a^(b - 1), db = g y ln a (a > 0 where it is wanted,
// as PyTorch's pow). LayerNorm and Gelu exported below opset 17 square with
// Pow(x, 2).
llvm::Error powRule(GraphBuilder &b, const GradientQuery &q) {
  Value *base = operand(q, 0), *exponent = operand(q, 1);
  if (exponent->getType().getDType() != dtypeOf(q))
    return gradientError("Pow with an exponent of type " +
                         exponent->getType().str() + " on " +
                         base->getType().str() + " has no gradient rule");
  if (q.wanted[0]) {
    auto lowered =
        b.emit(OpCode::Sub, {exponent, b.scalar(1, dtypeOf(q))});
    if (!lowered)
      return lowered.takeError();
    auto power = b.emit(OpCode::Pow, {base, *lowered});
    if (!power)
      return power.takeError();
    auto derivative = b.emit(OpCode::Mul, {*power, exponent});
    if (!derivative)
      return derivative.takeError();
    if (llvm::Error error = setReduced(
            b, q, 0, b.emit(OpCode::Mul, {seed(q), *derivative})))
      return error;
  }
  if (!q.wanted[1])
    return llvm::Error::success();
  auto logBase = b.emit(OpCode::Log, {base});
  if (!logBase)
    return logBase.takeError();
  auto derivative = b.emit(OpCode::Mul, {result(q), *logBase});
  if (!derivative)
    return derivative.takeError();
  return setReduced(b, q, 1, b.emit(OpCode::Mul, {seed(q), *derivative}));
}

// y = where(c, a, b): the gradient goes to a where c holds, to b elsewhere
// (masked_fill's path in attention); the condition has none.
llvm::Error whereRule(GraphBuilder &b, const GradientQuery &q) {
  Value *zero = b.scalar(0, dtypeOf(q));
  for (unsigned i = 1; i < 3; ++i) {
    if (!q.wanted[i])
      continue;
    Value *taken = i == 1 ? seed(q) : zero, *other = i == 1 ? zero : seed(q);
    if (llvm::Error error = setReduced(
            b, q, i,
            b.emit(OpCode::Where, {operand(q, 0), taken, other})))
      return error;
  }
  return llvm::Error::success();
}

// Clip passes the gradient where min <= x <= max (PyTorch's clamp), the
// bounds as attributes (canonical) or operands; bounds get no gradient.
llvm::Error clipRule(GraphBuilder &b, const GradientQuery &q) {
  for (unsigned i = 1; i < q.node.getNumOperands(); ++i)
    if (q.node.getOperand(i) && q.wanted[i])
      return gradientError("Clip's min and max operands have no gradient");
  if (!q.wanted[0])
    return llvm::Error::success();
  const ir::AttributeMap &attrs = q.node.getAttributes();
  Value *x = operand(q, 0);
  Value *passed = seed(q), *zero = b.scalar(0, dtypeOf(q));
  for (unsigned i = 1; i < 3; ++i) {
    Value *bound = nullptr;
    if (i < q.node.getNumOperands() && q.node.getOperand(i))
      bound = q.node.getOperand(i);
    else if (attrs.count(i == 1 ? "min" : "max"))
      bound =
          b.scalar(getFloatAttr(attrs, i == 1 ? "min" : "max", 0), dtypeOf(q));
    if (!bound)
      continue;
    auto inside = b.emit(i == 1 ? OpCode::GreaterOrEqual : OpCode::LessOrEqual,
                         {x, bound});
    if (!inside)
      return inside.takeError();
    auto masked = b.emit(OpCode::Where, {*inside, passed, zero});
    if (!masked)
      return masked.takeError();
    passed = *masked;
  }
  return setReduced(b, q, 0, passed);
}

llvm::Error leakyReluRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  float alpha = getFloatAttr(q.node.getAttributes(), "alpha", 0.01f);
  auto positive =
      b.emit(OpCode::Greater, {operand(q, 0), b.scalar(0, dtypeOf(q))});
  if (!positive)
    return positive.takeError();
  auto leaked = b.emit(OpCode::Mul, {seed(q), b.scalar(alpha, dtypeOf(q))});
  if (!leaked)
    return leaked.takeError();
  return setReduced(b, q, 0,
                    b.emit(OpCode::Where, {*positive, seed(q), *leaked}));
}

/// c exp(-x^2 / s): the Gaussian factor of erf' (c = 2/sqrt(pi), s = 1)
/// and of the exact Gelu' (c = 1/sqrt(2 pi), s = 2).
llvm::Expected<Value *> gaussian(GraphBuilder &b, const GradientQuery &q,
                                 double c, double s) {
  Value *x = operand(q, 0);
  auto squared = b.emit(OpCode::Mul, {x, x});
  if (!squared)
    return squared.takeError();
  auto exponent = b.emit(OpCode::Mul, {*squared, b.scalar(-1 / s, dtypeOf(q))});
  if (!exponent)
    return exponent.takeError();
  auto e = b.emit(OpCode::Exp, {*exponent});
  if (!e)
    return e.takeError();
  return b.emit(OpCode::Mul, {*e, b.scalar(c, dtypeOf(q))});
}

const double pi = 3.14159265358979323846;

llvm::Error erfRule(GraphBuilder &b, const GradientQuery &q) {
  return unaryTimes(b, q, [&] { return gaussian(b, q, 2 / std::sqrt(pi), 1); });
}

// Exact Gelu, y = x Phi(x): y' = Phi(x) + x phi(x), Phi(x) = (1 + erf(x /
// sqrt 2)) / 2.
llvm::Error geluRule(GraphBuilder &b, const GradientQuery &q) {
  if (getStringAttr(q.node.getAttributes(), "approximate", "none") != "none")
    return gradientError("the tanh approximation of Gelu has no gradient "
                         "rule");
  return unaryTimes(b, q, [&]() -> llvm::Expected<Value *> {
    Value *x = operand(q, 0);
    auto scaled =
        b.emit(OpCode::Mul, {x, b.scalar(1 / std::sqrt(2.0), dtypeOf(q))});
    if (!scaled)
      return scaled.takeError();
    auto erf = b.emit(OpCode::Erf, {*scaled});
    if (!erf)
      return erf.takeError();
    auto onePlus = b.emit(OpCode::Add, {*erf, b.scalar(1, dtypeOf(q))});
    if (!onePlus)
      return onePlus.takeError();
    auto cdf = b.emit(OpCode::Mul, {*onePlus, b.scalar(0.5, dtypeOf(q))});
    if (!cdf)
      return cdf.takeError();
    auto density = gaussian(b, q, 1 / std::sqrt(2 * pi), 2);
    if (!density)
      return density.takeError();
    auto xDensity = b.emit(OpCode::Mul, {x, *density});
    if (!xDensity)
      return xDensity.takeError();
    return b.emit(OpCode::Add, {*cdf, *xDensity});
  });
}

} // namespace

llvm::ArrayRef<GradientRuleEntry> getElementwiseGradientRules() {
  static const GradientRuleEntry rules[] = {
      {OpCode::Exp, expRule},
      {OpCode::Identity, identityRule},
      {OpCode::Log, logRule},
      {OpCode::Neg, negRule},
      {OpCode::Relu, reluRule},
      {OpCode::Sigmoid, sigmoidRule},
      {OpCode::Sqrt, sqrtRule},
      {OpCode::Tanh, tanhRule},
      {OpCode::Add, addRule},
      {OpCode::Div, divRule},
      {OpCode::Mul, mulRule},
      {OpCode::Sub, subRule},
      {OpCode::Sum, addRule},
      {OpCode::Clip, clipRule},
      {OpCode::Erf, erfRule},
      {OpCode::Gelu, geluRule},
      {OpCode::LeakyRelu, leakyReluRule},
      {OpCode::Pow, powRule},
      {OpCode::Where, whereRule},
  };
  return rules;
}

} // namespace snug
