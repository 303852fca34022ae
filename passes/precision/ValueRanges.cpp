//===- ValueRanges.cpp - How large each float value can get ---------------===//
#include "passes/precision/ValueRanges.h"

#include "ir/Float16.h"
#include "ir/State.h"
#include "passes/fusion/FusePatterns.h"

#include "llvm/ADT/Optional.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace snug {

double ValueRange::magnitude() const {
  return std::max(std::fabs(lo), std::fabs(hi));
}

namespace {

using ir::OpCode;

constexpr double kInf = std::numeric_limits<double>::infinity();
const ValueRange kOrdinary{};
const ValueRange kUnbounded{-kInf, kInf};

ValueRange hull(const ValueRange &a, const ValueRange &b) {
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

/// a * b, with 0 * inf taken as 0 (a zero weight times anything is 0).
double times(double a, double b) {
  return a == 0 || b == 0 ? 0 : a * b;
}

ValueRange product(const ValueRange &a, const ValueRange &b) {
  double c[] = {times(a.lo, b.lo), times(a.lo, b.hi), times(a.hi, b.lo),
                times(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

ValueRange square(const ValueRange &a) {
  double m = a.magnitude();
  double least = a.lo <= 0 && a.hi >= 0 ? 0 : std::min(a.lo * a.lo, a.hi * a.hi);
  return {least, m * m};
}

/// x^p for a constant p: exact for integer p and for p > 0 over x >= 0
/// (which is all a non-integer power is defined on).
ValueRange power(const ValueRange &x, double p) {
  if (p == 0)
    return {1, 1};
  bool integer = std::floor(p) == p;
  if (p < 0 && x.lo <= 0 && x.hi >= 0)
    return kUnbounded; // 1/0 is in reach
  if (!integer) {
    double lo = std::max(x.lo, 0.0), hi = std::max(x.hi, 0.0);
    double a = std::pow(lo, p), b = std::pow(hi, p);
    return {std::min(a, b), std::max(a, b)};
  }
  double a = std::pow(x.lo, p), b = std::pow(x.hi, p);
  ValueRange r{std::min(a, b), std::max(a, b)};
  if (std::fmod(p, 2) == 0 && x.lo < 0 && x.hi > 0)
    r.lo = 0; // an even power of an interval across 0
  return r;
}

ValueRange scaled(const ValueRange &a, double n) {
  return {times(a.lo, n), times(a.hi, n)};
}

/// n / d for a divisor d computed at run time: the interval when d cannot
/// be 0 and the result is ordinary or narrower, else ordinary (see the
/// header: a normalisation's quotient is bounded by what no interval sees).
ValueRange byComputed(const ValueRange &n, const ValueRange &d) {
  if (d.lo <= 0 && d.hi >= 0)
    return kOrdinary;
  ValueRange r = product(n, {1 / d.hi, 1 / d.lo});
  return r.magnitude() <= kOrdinaryActivation ? r : kOrdinary;
}

/// The one number a single-element weight holds: a float one as the
/// fusion patterns read it, or an integer one (Pow's exponent may be).
llvm::Optional<double> scalarWeight(const ir::Module &module,
                                    const ir::Value *value) {
  if (llvm::Optional<float> f = readScalarWeight(module, value))
    return double(*f);
  if (!value || !value->isWeight() || value->isWeightElided() ||
      ir::isStateWeight(module, value) ||
      value->getType().getNumElements() != 1)
    return llvm::None;
  llvm::ArrayRef<uint8_t> data = module.getWeightData(value);
  ir::DType type = value->getType().getDType();
  if (type == ir::DType::I64 && data.size() == 8) {
    int64_t v;
    std::memcpy(&v, data.data(), 8);
    return double(v);
  }
  if (type == ir::DType::I32 && data.size() == 4) {
    int32_t v;
    std::memcpy(&v, data.data(), 4);
    return double(v);
  }
  return llvm::None;
}

/// The min and max of a float weight's finite data.
ValueRange weightRange(const ir::Module &module, const ir::Value *weight) {
  if (weight->isWeightElided() || ir::isStateWeight(module, weight))
    return kOrdinary;
  ir::DType type = weight->getType().getDType();
  llvm::ArrayRef<uint8_t> data = module.getWeightData(weight);
  double lo = kInf, hi = -kInf;
  // An infinity is one in 16 bits too (attention masks hold -inf).
  auto take = [&](double v) {
    if (!std::isfinite(v))
      return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  };
  if (type == ir::DType::F32) {
    for (size_t i = 0; i + 4 <= data.size(); i += 4) {
      float v;
      std::memcpy(&v, data.data() + i, 4);
      take(v);
    }
  } else if (type == ir::DType::F16 || type == ir::DType::BF16) {
    for (size_t i = 0; i + 2 <= data.size(); i += 2) {
      uint16_t bits;
      std::memcpy(&bits, data.data() + i, 2);
      take(type == ir::DType::F16 ? f16ToFloat(bits) : bf16ToFloat(bits));
    }
  } else if (type == ir::DType::F64) {
    for (size_t i = 0; i + 8 <= data.size(); i += 8) {
      double v;
      std::memcpy(&v, data.data() + i, 8);
      take(v);
    }
  } else {
    return kOrdinary;
  }
  if (lo > hi) // no finite element
    return {0, 0};
  return {lo, hi};
}

/// Elements of operand 0 per element of result 0: what a reduction sums.
double perResult(const ir::Node &node) {
  int64_t in = node.getOperand(0)->getType().getNumElements();
  int64_t out = node.getResult(0)->getType().getNumElements();
  return out > 0 && in > 0 ? double(in) / double(out) : 1;
}

/// Whether `value` is at least the max of `of` along some axes, broadcast
/// back over them: ReduceMax(of), a reshape or broadcast of one, or the Max
/// of one and anything (jax2tf writes max(-inf, ReduceMax(x)), reshaped and
/// broadcast). Then of - value is never positive.
bool isAtLeastMaxOf(const ir::Value *value, const ir::Value *of,
                    unsigned depth = 0) {
  const ir::Node *node = value->getDefiningNode();
  if (!node || depth > 8)
    return false;
  switch (node->getOpCode()) {
  case OpCode::ReduceMax:
    return node->getOperand(0) == of;
  case OpCode::Reshape:
  case OpCode::Expand:
  case OpCode::Unsqueeze:
  case OpCode::Squeeze:
  case OpCode::Flatten:
  case OpCode::Identity:
    return isAtLeastMaxOf(node->getOperand(0), of, depth + 1);
  case OpCode::Max:
    for (const ir::Value *operand : node->getOperands())
      if (operand && isAtLeastMaxOf(operand, of, depth + 1))
        return true;
    return false;
  default:
    return false;
  }
}

class Ranges {
public:
  explicit Ranges(const ir::Module &module) : module(module) {}

  llvm::DenseMap<const ir::Value *, ValueRange> run() {
    for (ir::Value *input : module.getInputs())
      if (isFloat(input))
        ranges[input] = kOrdinary;
    for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
      ValueRange range = resultRange(*node);
      for (unsigned i = 0; i < node->getNumResults(); ++i)
        if (isFloat(node->getResult(i)))
          ranges[node->getResult(i)] = range;
    }
    return std::move(ranges);
  }

private:
  static bool isFloat(const ir::Value *value) {
    return value && ir::isFloatDType(value->getType().getDType());
  }

  /// What the analysis knows of `value`: ordinary when nothing.
  ValueRange of(const ir::Value *value) {
    if (!value)
      return kOrdinary;
    auto known = ranges.find(value);
    if (known != ranges.end())
      return known->second;
    if (value->isWeight() && isFloat(value))
      return ranges[value] = weightRange(module, value);
    if (llvm::Optional<double> v = scalarWeight(module, value))
      return {*v, *v};
    return kOrdinary;
  }

  ValueRange operandsHull(const ir::Node &node, unsigned first = 0) {
    ValueRange r{kInf, -kInf};
    for (unsigned i = first; i < node.getNumOperands(); ++i)
      if (node.getOperand(i))
        r = hull(r, of(node.getOperand(i)));
    return r.lo > r.hi ? kOrdinary : r;
  }

  ValueRange quotient(const ir::Value *numerator, const ir::Value *divisor) {
    ValueRange n = of(numerator), d = of(divisor);
    if (llvm::Optional<double> c = scalarWeight(module, divisor))
      return *c == 0 ? kUnbounded : scaled(n, 1 / *c);
    return byComputed(n, d);
  }

  ValueRange resultRange(const ir::Node &node);

  const ir::Module &module;
  llvm::DenseMap<const ir::Value *, ValueRange> ranges;
};

ValueRange Ranges::resultRange(const ir::Node &node) {
  // Operand i, or null past the node's operands (Clip's bounds and
  // CumSum's axis may be attributes instead).
  auto operand = [&](unsigned i) -> const ir::Value * {
    return i < node.getNumOperands() ? node.getOperand(i) : nullptr;
  };
  auto x = [&](unsigned i = 0) { return of(operand(i)); };
  // A bound given as operand i or as the float attribute `name`.
  auto bound = [&](unsigned i, llvm::StringRef name) -> llvm::Optional<double> {
    if (operand(i))
      return scalarWeight(module, operand(i));
    const ir::Attribute *attr = node.getAttribute(name);
    if (attr && attr->getKind() == ir::Attribute::Kind::Float)
      return double(attr->getFloat());
    return llvm::None;
  };
  switch (node.getOpCode()) {
  // Moving or picking data: what it reads.
  case OpCode::Identity:
  case OpCode::Reshape:
  case OpCode::Flatten:
  case OpCode::Squeeze:
  case OpCode::Unsqueeze:
  case OpCode::Transpose:
  case OpCode::Expand:
  case OpCode::Tile:
  case OpCode::Slice:
  case OpCode::Split:
  case OpCode::Gather:
  case OpCode::GatherElements:
  case OpCode::GatherND:
  case OpCode::DepthToSpace:
  case OpCode::SpaceToDepth:
  case OpCode::Dropout:
  case OpCode::Resize:
  case OpCode::GridSample:
  case OpCode::TopK:
  case OpCode::MaxPool:
  case OpCode::AveragePool:
  case OpCode::GlobalAveragePool:
  case OpCode::GlobalMaxPool:
  case OpCode::ReduceMax:
  case OpCode::ReduceMin:
  case OpCode::ReduceMean:
  case OpCode::Cast:
  case OpCode::SnugCast:
  case OpCode::SnugOffload:
  case OpCode::SnugReload:
    return x();
  case OpCode::Concat:
  case OpCode::Max:
  case OpCode::Min:
  case OpCode::Mean:
  case OpCode::Pad: // the data and the padding value
    return operandsHull(node);
  case OpCode::Where:
    return hull(x(1), x(2));
  case OpCode::ScatterElements:
  case OpCode::ScatterND:
    return hull(x(0), x(2));
  // Arithmetic.
  case OpCode::Add:
  case OpCode::Sum: {
    ValueRange r{0, 0};
    for (const ir::Value *operand : node.getOperands())
      r = {r.lo + of(operand).lo, r.hi + of(operand).hi};
    return r;
  }
  case OpCode::Sub: {
    ValueRange a = x(0), b = x(1);
    if (operand(1) && isAtLeastMaxOf(operand(1), operand(0)))
      return {a.lo - a.hi, 0}; // a - max(a): never positive
    return {a.lo - b.hi, a.hi - b.lo};
  }
  case OpCode::Mul:
    if (operand(0) == operand(1))
      return square(x(0));
    return product(x(0), x(1));
  case OpCode::Div:
    if (!operand(1))
      return kOrdinary;
    return quotient(operand(0), operand(1));
  case OpCode::Reciprocal:
    return byComputed({1, 1}, x());
  case OpCode::Pow: {
    if (llvm::Optional<double> p = scalarWeight(module, operand(1)))
      return power(x(), *p);
    return kUnbounded;
  }
  case OpCode::Neg:
    return {-x().hi, -x().lo};
  case OpCode::Abs:
    return {x().lo <= 0 && x().hi >= 0 ? 0 : std::min(std::fabs(x().lo),
                                                      std::fabs(x().hi)),
            x().magnitude()};
  case OpCode::Relu:
    return {std::max(x().lo, 0.0), std::max(x().hi, 0.0)};
  case OpCode::Clip: {
    ValueRange r = x();
    if (llvm::Optional<double> lo = bound(1, "min"))
      r = {std::max(r.lo, *lo), std::max(r.hi, *lo)};
    if (llvm::Optional<double> hi = bound(2, "max"))
      r = {std::min(r.lo, *hi), std::min(r.hi, *hi)};
    return r;
  }
  case OpCode::Floor:
  case OpCode::Ceil:
  case OpCode::Round:
    return {std::floor(x().lo), std::ceil(x().hi)};
  case OpCode::Exp:
    return {std::exp(x().lo), std::exp(x().hi)};
  case OpCode::Sqrt:
    return {std::sqrt(std::max(x().lo, 0.0)), std::sqrt(std::max(x().hi, 0.0))};
  case OpCode::Log: {
    // Down to log of the least positive float.
    const double least = std::log(std::numeric_limits<float>::denorm_min());
    auto log = [&](double v) { return v > 0 ? std::log(v) : least; };
    return {log(x().lo), log(x().hi)};
  }
  case OpCode::Sinh:
    return {std::sinh(x().lo), std::sinh(x().hi)};
  case OpCode::Cosh: {
    double m = x().magnitude();
    return {1, std::cosh(m)};
  }
  case OpCode::Tan:
    return kUnbounded;
  // Activations no larger than what they read (and at most 0 below 0 by
  // a bounded amount: Elu, Selu, Celu, Mish, Gelu, HardSwish dip at most
  // their alpha, Selu's scale is 1.0507).
  case OpCode::LeakyRelu:
  case OpCode::PRelu:
  case OpCode::Elu:
  case OpCode::Celu:
  case OpCode::Selu:
  case OpCode::Gelu:
  case OpCode::HardSwish:
  case OpCode::Mish:
  case OpCode::ThresholdedRelu:
  case OpCode::Softplus: {
    double m = x().magnitude() * 1.0507 + 2;
    return {-m, m};
  }
  // Bounded.
  case OpCode::Sigmoid:
  case OpCode::HardSigmoid:
  case OpCode::Softmax:
  case OpCode::Hardmax:
    return {0, 1};
  case OpCode::Tanh:
  case OpCode::Erf:
  case OpCode::Sin:
  case OpCode::Cos:
  case OpCode::Sign:
  case OpCode::Softsign:
    return {-1, 1};
  case OpCode::Atan:
  case OpCode::Asin:
  case OpCode::Acos:
    return {-M_PI, M_PI};
  case OpCode::LogSoftmax: {
    // x - logsumexp(x) >= x - max(x) - log(axis length), the axis no
    // longer than the whole tensor.
    ValueRange a = x();
    double n = double(node.getOperand(0)->getType().getNumElements());
    return {a.lo - a.hi - std::log(std::max(n, 1.0)), 0};
  }
  case OpCode::Range: {
    // start up to limit (both scalars when folding left them as weights).
    llvm::Optional<double> start = scalarWeight(module, operand(0));
    llvm::Optional<double> limit = scalarWeight(module, operand(1));
    if (start && limit)
      return {std::min(*start, *limit), std::max(*start, *limit)};
    return kOrdinary;
  }
  // Sums over N elements per result.
  case OpCode::ReduceSum:
    return scaled(x(), perResult(node));
  case OpCode::ReduceSumSquare:
    return scaled(square(x()), perResult(node));
  case OpCode::ReduceL1:
    return {0, perResult(node) * x().magnitude()};
  case OpCode::ReduceL2:
    return {0, std::sqrt(perResult(node)) * x().magnitude()};
  case OpCode::ReduceLogSumExp:
    return {x().lo, x().hi + std::log(perResult(node))};
  case OpCode::ReduceProd: {
    double m = std::pow(std::max(x().magnitude(), 1.0), perResult(node));
    return {x().lo >= 0 ? 0 : -m, m};
  }
  case OpCode::CumSum: {
    // Up to the whole axis (operand 1), or every element when unread.
    double n = double(node.getOperand(0)->getType().getNumElements());
    const ir::TensorType &type = node.getOperand(0)->getType();
    llvm::Optional<double> axis;
    if (operand(1))
      axis = scalarWeight(module, operand(1));
    else if (const ir::Attribute *attr = node.getAttribute("axis"))
      if (attr->getKind() == ir::Attribute::Kind::Int)
        axis = double(attr->getInt());
    if (axis) {
      int64_t a = int64_t(*axis) < 0 ? int64_t(*axis) + type.getRank()
                                     : int64_t(*axis);
      if (a >= 0 && a < int64_t(type.getRank()))
        n = double(type.getDims()[a]);
    }
    ValueRange r = x();
    return {std::min(r.lo, times(r.lo, n)), std::max(r.hi, times(r.hi, n))};
  }
  default:
    // Contractions, normalisations, attention, and the ops without a rule:
    // ordinary (see the header).
    return kOrdinary;
  }
}

} // namespace

llvm::DenseMap<const ir::Value *, ValueRange>
computeValueRanges(const ir::Module &module) {
  return Ranges(module).run();
}

} // namespace snug
