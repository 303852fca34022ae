//===- ElementwiseKernels.cpp - Unary, binary, compare, Where, Clip -------===//
//
// Elementwise ops over any snug dtype. Floats compute in double and round
// once on store (for f32 add/sub/mul/div that equals float arithmetic, since
// double holds the exact product); integers compute in int64 (division
// truncates, as in onnxruntime; division by zero gives 0 instead of a trap).
// Broadcasting follows numpy. A result may alias an operand of its own size:
// every loop reads element i of all operands before it writes element i.
//
//===----------------------------------------------------------------------===//
#include "runtime/host/Kernels.h"

#include <cmath>
#include <limits>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

template <typename F> Status mapUnary(KernelContext &ctx, F f) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  if (x.numElements != y.numElements)
    return ctx.error("operand and result differ in size");
  for (int64_t i = 0; i < y.numElements; ++i)
    storeDouble(y.data, y.dtype, i, f(loadDouble(x.data, x.dtype, i)));
  return Status::ok();
}

#define SNUG_UNARY(NAME, EXPR)                                                 \
  Status NAME(KernelContext &ctx) {                                            \
    return mapUnary(ctx, [&](double x) -> double { return EXPR; });            \
  }

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }

SNUG_UNARY(absKernel, std::fabs(x))
SNUG_UNARY(acosKernel, std::acos(x))
SNUG_UNARY(asinKernel, std::asin(x))
SNUG_UNARY(atanKernel, std::atan(x))
SNUG_UNARY(ceilKernel, std::ceil(x))
SNUG_UNARY(cosKernel, std::cos(x))
SNUG_UNARY(erfKernel, std::erf(x))
SNUG_UNARY(expKernel, std::exp(x))
SNUG_UNARY(floorKernel, std::floor(x))
SNUG_UNARY(logKernel, std::log(x))
SNUG_UNARY(negKernel, -x)
SNUG_UNARY(reciprocalKernel, 1.0 / x)
SNUG_UNARY(reluKernel, x > 0 ? x : (std::isnan(x) ? x : 0.0))
SNUG_UNARY(roundKernel, std::nearbyint(x)) // half to even (default mode)
SNUG_UNARY(sigmoidKernel, sigmoid(x))
SNUG_UNARY(signKernel, sign(x))
SNUG_UNARY(sinKernel, std::sin(x))
SNUG_UNARY(softplusKernel, x > 20 ? x : std::log1p(std::exp(x)))
SNUG_UNARY(softsignKernel, x / (1.0 + std::fabs(x)))
SNUG_UNARY(sqrtKernel, std::sqrt(x))
SNUG_UNARY(tanKernel, std::tan(x))
SNUG_UNARY(tanhKernel, std::tanh(x))
SNUG_UNARY(mishKernel, x * std::tanh(x > 20 ? x : std::log1p(std::exp(x))))
SNUG_UNARY(notKernel, x == 0 ? 1.0 : 0.0)
SNUG_UNARY(hardSwishKernel, x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)))

Status eluKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 1.0f);
  return mapUnary(ctx, [&](double x) {
    return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
  });
}

Status celuKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 1.0f);
  return mapUnary(ctx, [&](double x) {
    return std::max(0.0, x) +
           std::min(0.0, alpha * (std::exp(x / alpha) - 1.0));
  });
}

Status seluKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 1.67326319217681884765625f);
  double gamma = ctx.getFloat("gamma", 1.05070102214813232421875f);
  return mapUnary(ctx, [&](double x) {
    return gamma * (x > 0 ? x : alpha * (std::exp(x) - 1.0));
  });
}

Status leakyReluKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 0.01f);
  return mapUnary(ctx, [&](double x) { return x >= 0 ? x : alpha * x; });
}

Status thresholdedReluKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 1.0f);
  return mapUnary(ctx, [&](double x) { return x > alpha ? x : 0.0; });
}

Status hardSigmoidKernel(KernelContext &ctx) {
  double alpha = ctx.getFloat("alpha", 0.2f), beta = ctx.getFloat("beta", 0.5f);
  return mapUnary(ctx, [&](double x) {
    return std::max(0.0, std::min(1.0, alpha * x + beta));
  });
}

Status geluKernel(KernelContext &ctx) {
  if (ctx.getString("approximate", "none") == "tanh")
    return mapUnary(ctx, [](double x) {
      return 0.5 * x *
             (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    });
  return mapUnary(
      ctx, [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); });
}

/// Clip: bounds from `min`/`max` attributes (opset < 11, or as the importer
/// canonicalizes them) or from operands 1 and 2 (scalar weights).
Status clipKernel(KernelContext &ctx) {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  if (ctx.getAttr("min"))
    low = ctx.getFloat("min", 0);
  if (ctx.getAttr("max"))
    high = ctx.getFloat("max", 0);
  if (ctx.hasInput(1) && ctx.in(1).numElements > 0)
    low = loadDouble(ctx.in(1).data, ctx.in(1).dtype, 0);
  if (ctx.hasInput(2) && ctx.in(2).numElements > 0)
    high = loadDouble(ctx.in(2).data, ctx.in(2).dtype, 0);
  return mapUnary(ctx, [&](double x) {
    if (std::isnan(x))
      return x;
    return std::min(high, std::max(low, x));
  });
}

//===----------------------------------------------------------------------===//
// Broadcasting ops
//===----------------------------------------------------------------------===//

enum class BinOp { Add, Sub, Mul, Div, Pow, Mod, FMod, Min, Max, And, Or, Xor, PRelu };

double applyFloat(BinOp op, double a, double b) {
  switch (op) {
  case BinOp::Add: return a + b;
  case BinOp::Sub: return a - b;
  case BinOp::Mul: return a * b;
  case BinOp::Div: return a / b;
  case BinOp::Pow: return std::pow(a, b);
  case BinOp::Mod: { // Python-style (sign of the divisor)
    double r = std::fmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
  case BinOp::FMod: return std::fmod(a, b);
  case BinOp::Min: return (std::isnan(a) || std::isnan(b)) ? NAN : std::min(a, b);
  case BinOp::Max: return (std::isnan(a) || std::isnan(b)) ? NAN : std::max(a, b);
  case BinOp::And: return (a != 0) && (b != 0);
  case BinOp::Or: return (a != 0) || (b != 0);
  case BinOp::Xor: return (a != 0) != (b != 0);
  case BinOp::PRelu: return a >= 0 ? a : a * b;
  }
  return 0;
}

int64_t applyInt(BinOp op, int64_t a, int64_t b) {
  // Wrapping arithmetic through uint64 keeps overflow defined.
  auto ua = uint64_t(a), ub = uint64_t(b);
  switch (op) {
  case BinOp::Add: return int64_t(ua + ub);
  case BinOp::Sub: return int64_t(ua - ub);
  case BinOp::Mul: return int64_t(ua * ub);
  case BinOp::Div:
    if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1))
      return 0;
    return a / b;
  case BinOp::Pow: {
    if (b < 0)
      return a == 1 ? 1 : (a == -1 ? (b % 2 ? -1 : 1) : 0);
    uint64_t result = 1, base = ua;
    for (int64_t e = b; e > 0; e >>= 1, base *= base)
      if (e & 1)
        result *= base;
    return int64_t(result);
  }
  case BinOp::Mod: {
    if (b == 0 || b == -1)
      return 0;
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
  }
  case BinOp::FMod:
    return (b == 0 || b == -1) ? 0 : a % b;
  case BinOp::Min: return std::min(a, b);
  case BinOp::Max: return std::max(a, b);
  case BinOp::And: return (a != 0) && (b != 0);
  case BinOp::Or: return (a != 0) || (b != 0);
  case BinOp::Xor: return (a != 0) != (b != 0);
  case BinOp::PRelu: return a >= 0 ? a : int64_t(ua * ub);
  }
  return 0;
}

/// Folds operands left to right: y = op(op(x0, x1), x2) ...; `mean` divides
/// the sum by the operand count at the end.
Status foldBroadcast(KernelContext &ctx, BinOp op, bool mean = false) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &y = ctx.out(0);
  std::vector<const std::vector<int64_t> *> dims;
  for (const TensorView &x : ctx.inputs) {
    if (!x.present)
      return ctx.error("absent operand");
    dims.push_back(x.dims);
  }
  Broadcast broadcast(*y.dims, dims);
  if (!broadcast.isValid())
    return ctx.error("operands do not broadcast to the result");
  bool floatMath = isFloatCode(y.dtype);
  const auto &inputs = ctx.inputs;
  // Pow keeps the base's type; the exponent may be of another type.
  if (op == BinOp::Pow && isFloatCode(inputs[1].dtype))
    floatMath = true;
  size_t count = inputs.size();
  broadcast.forEach([&](int64_t index, const int64_t *offsets) {
    if (floatMath) {
      double acc = loadDouble(inputs[0].data, inputs[0].dtype, offsets[0]);
      for (size_t k = 1; k < count; ++k)
        acc = applyFloat(op, acc,
                         loadDouble(inputs[k].data, inputs[k].dtype, offsets[k]));
      if (mean)
        acc /= double(count);
      storeDouble(y.data, y.dtype, index, acc);
    } else {
      int64_t acc = loadInt(inputs[0].data, inputs[0].dtype, offsets[0]);
      for (size_t k = 1; k < count; ++k)
        acc = applyInt(op, acc,
                       loadInt(inputs[k].data, inputs[k].dtype, offsets[k]));
      if (mean)
        acc /= int64_t(count);
      storeInt(y.data, y.dtype, index, acc);
    }
  });
  return Status::ok();
}

#define SNUG_BINARY(NAME, OP)                                                  \
  Status NAME(KernelContext &ctx) { return foldBroadcast(ctx, BinOp::OP); }
SNUG_BINARY(addKernel, Add)
SNUG_BINARY(subKernel, Sub)
SNUG_BINARY(mulKernel, Mul)
SNUG_BINARY(divKernel, Div)
SNUG_BINARY(powKernel, Pow)
SNUG_BINARY(minKernel, Min)
SNUG_BINARY(maxKernel, Max)
SNUG_BINARY(sumKernel, Add)
SNUG_BINARY(andKernel, And)
SNUG_BINARY(orKernel, Or)
SNUG_BINARY(xorKernel, Xor)
SNUG_BINARY(preluKernel, PRelu)
Status meanKernel(KernelContext &ctx) {
  return foldBroadcast(ctx, BinOp::Add, true);
}
Status modKernel(KernelContext &ctx) {
  return foldBroadcast(ctx, ctx.getInt("fmod", 0) ? BinOp::FMod : BinOp::Mod);
}

enum class CmpOp { Eq, Gt, Ge, Lt, Le };

Status compare(KernelContext &ctx, CmpOp op) {
  if (Status s = ctx.expect(2, 1))
    return s;
  const TensorView &a = ctx.in(0), &b = ctx.in(1), &y = ctx.out(0);
  Broadcast broadcast(*y.dims, {a.dims, b.dims});
  if (!broadcast.isValid())
    return ctx.error("operands do not broadcast to the result");
  bool floatMath = isFloatCode(a.dtype) || isFloatCode(b.dtype);
  broadcast.forEach([&](int64_t index, const int64_t *offsets) {
    bool result;
    if (floatMath) {
      double x = loadDouble(a.data, a.dtype, offsets[0]);
      double z = loadDouble(b.data, b.dtype, offsets[1]);
      result = op == CmpOp::Eq   ? x == z
               : op == CmpOp::Gt ? x > z
               : op == CmpOp::Ge ? x >= z
               : op == CmpOp::Lt ? x < z
                                 : x <= z;
    } else {
      int64_t x = loadInt(a.data, a.dtype, offsets[0]);
      int64_t z = loadInt(b.data, b.dtype, offsets[1]);
      result = op == CmpOp::Eq   ? x == z
               : op == CmpOp::Gt ? x > z
               : op == CmpOp::Ge ? x >= z
               : op == CmpOp::Lt ? x < z
                                 : x <= z;
    }
    storeInt(y.data, y.dtype, index, result);
  });
  return Status::ok();
}

Status equalKernel(KernelContext &ctx) { return compare(ctx, CmpOp::Eq); }
Status greaterKernel(KernelContext &ctx) { return compare(ctx, CmpOp::Gt); }
Status greaterEqualKernel(KernelContext &ctx) { return compare(ctx, CmpOp::Ge); }
Status lessKernel(KernelContext &ctx) { return compare(ctx, CmpOp::Lt); }
Status lessEqualKernel(KernelContext &ctx) { return compare(ctx, CmpOp::Le); }

Status whereKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(3, 1))
    return s;
  const TensorView &c = ctx.in(0), &a = ctx.in(1), &b = ctx.in(2),
                   &y = ctx.out(0);
  if (a.dtype != y.dtype || b.dtype != y.dtype)
    return ctx.error("value operands and result differ in dtype");
  Broadcast broadcast(*y.dims, {c.dims, a.dims, b.dims});
  if (!broadcast.isValid())
    return ctx.error("operands do not broadcast to the result");
  unsigned size = y.elementSize();
  broadcast.forEach([&](int64_t index, const int64_t *offsets) {
    bool take = loadInt(c.data, c.dtype, offsets[0]) != 0;
    const uint8_t *src =
        take ? a.data + offsets[1] * size : b.data + offsets[2] * size;
    std::memmove(y.data + index * size, src, size);
  });
  return Status::ok();
}

} // namespace

void registerElementwiseKernels(KernelTable &t) {
  t["Abs"] = absKernel;
  t["Acos"] = acosKernel;
  t["Asin"] = asinKernel;
  t["Atan"] = atanKernel;
  t["Ceil"] = ceilKernel;
  t["Celu"] = celuKernel;
  t["Clip"] = clipKernel;
  t["Cos"] = cosKernel;
  t["Elu"] = eluKernel;
  t["Erf"] = erfKernel;
  t["Exp"] = expKernel;
  t["Floor"] = floorKernel;
  t["Gelu"] = geluKernel;
  t["HardSigmoid"] = hardSigmoidKernel;
  t["HardSwish"] = hardSwishKernel;
  t["LeakyRelu"] = leakyReluKernel;
  t["Log"] = logKernel;
  t["Mish"] = mishKernel;
  t["Neg"] = negKernel;
  t["Not"] = notKernel;
  t["Reciprocal"] = reciprocalKernel;
  t["Relu"] = reluKernel;
  t["Round"] = roundKernel;
  t["Selu"] = seluKernel;
  t["Sigmoid"] = sigmoidKernel;
  t["Sign"] = signKernel;
  t["Sin"] = sinKernel;
  t["Softplus"] = softplusKernel;
  t["Softsign"] = softsignKernel;
  t["Sqrt"] = sqrtKernel;
  t["Tan"] = tanKernel;
  t["Tanh"] = tanhKernel;
  t["ThresholdedRelu"] = thresholdedReluKernel;
  t["Add"] = addKernel;
  t["And"] = andKernel;
  t["Div"] = divKernel;
  t["Max"] = maxKernel;
  t["Mean"] = meanKernel;
  t["Min"] = minKernel;
  t["Mod"] = modKernel;
  t["Mul"] = mulKernel;
  t["Or"] = orKernel;
  t["Pow"] = powKernel;
  t["PRelu"] = preluKernel;
  t["Sub"] = subKernel;
  t["Sum"] = sumKernel;
  t["Xor"] = xorKernel;
  t["Equal"] = equalKernel;
  t["Greater"] = greaterKernel;
  t["GreaterOrEqual"] = greaterEqualKernel;
  t["Less"] = lessKernel;
  t["LessOrEqual"] = lessEqualKernel;
  t["Where"] = whereKernel;
}

} // namespace rt
} // namespace snug
