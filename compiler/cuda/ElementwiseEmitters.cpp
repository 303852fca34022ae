//===- ElementwiseEmitters.cpp - CUDA emitters: elementwise ops -----------===//
//
// Unary ops, broadcasting folds (Add ... Sum, Mean, variadic Min/Max), Pow,
// PRelu, comparisons, Where and Cast. Each node becomes one grid-stride
// kernel over the result's elements; every operand's element index is
// computed from the result index with the broadcast strides baked in, after
// collapsing the dims that need no index math of their own. When every
// operand is an f32 tensor of the result's shape (or an f32 scalar) and the
// bytes line up, the kernel moves 16-byte vectors instead.
//
// Arithmetic follows the host reference kernels (ElementwiseKernels.cpp):
// floats compute in float (double for f64, and for f32 where the host's
// double arithmetic rounds differently from float: Pow, Mean, Sum of more
// than two), integers in int64 with wrapping, host-defined division by zero
// and the host's NaN rules (std::min/std::max order, Relu keeping NaN).
// Add, Sub, Mul, Div, Min, Max, Mod, PRelu, compares, Where and Cast give
// the host's bits; transcendentals agree to a few ulps (forms that do not
// cancel in float where the host's formula would, see unaryStatements).
// Unary ops on integers compute in double and convert back as the host's
// storeDouble does (truncation, NaN to 0, pinned at the int64 range).
//
// The index and loop helpers at the top are shared with
// DataMovementEmitters.cpp, which declares them.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/KernelEmitter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace snug {
namespace cuda {

using namespace codegen;

namespace {

bool isFloat(ir::DType type) { return ir::isFloatDType(type); }
bool isNarrowFloat(ir::DType type) {
  return type == ir::DType::F32 || type == ir::DType::F16 ||
         type == ir::DType::BF16;
}

/// Where a value of type `a` meets one of type `b` (a comparison, a cast):
/// double when either is a float, as the host's loadDouble (float when
/// both are narrow floats, which converts and compares identically), int64
/// otherwise, as its loadInt.
std::string mixedComputeType(ir::DType a, ir::DType b) {
  if (isNarrowFloat(a) && isNarrowFloat(b))
    return "float";
  return isFloat(a) || isFloat(b) ? "double" : "int64_t";
}

/// The op's name as a symbol tag: "snug.cast" -> "cast".
std::string tagFor(llvm::StringRef opName) {
  std::string tag = opName.lower();
  llvm::erase_if(tag, [](char c) { return !std::isalnum((unsigned char)c); });
  if (llvm::StringRef(tag).startswith("snug") && tag.size() > 4)
    tag = tag.substr(4);
  return tag;
}

/// Writes emitted math in one compute type: float or double literals and
/// functions (expf or exp), and the std::min / std::max the host uses,
/// whose order decides what a NaN operand gives.
class Math {
public:
  explicit Math(std::string type) : type(std::move(type)) {}
  const std::string &computeType() const { return type; }
  bool isFloat() const { return type == "float"; }

  std::string call(llvm::StringRef function, llvm::StringRef x) const {
    return function.str() + (isFloat() ? "f(" : "(") + x.str() + ")";
  }
  /// `value` rounded to the compute type (a hex float literal, f-suffixed
  /// for float).
  std::string lit(double value) const {
    if (std::isnan(value) || std::isinf(value))
      return "((" + type + ")" + cudaFloatLiteral(value) + ")";
    if (!isFloat())
      return cudaFloatLiteral(value);
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%a", double(float(value)));
    std::string text = std::string(buffer) + "f";
    return value < 0 ? "(" + text + ")" : text;
  }
  std::string nan() const { return "((" + type + ")snug_nan())"; }
  /// std::min(a, b): b if b < a, else a.
  static std::string min(llvm::StringRef a, llvm::StringRef b) {
    return "(" + b.str() + " < " + a.str() + " ? " + b.str() + " : " +
           a.str() + ")";
  }
  /// std::max(a, b): b if a < b, else a.
  static std::string max(llvm::StringRef a, llvm::StringRef b) {
    return "(" + a.str() + " < " + b.str() + " ? " + b.str() + " : " +
           a.str() + ")";
  }

private:
  std::string type;
};

//===----------------------------------------------------------------------===//
// The elementwise kernel builder
//===----------------------------------------------------------------------===//

/// One operand broadcast to the result. `raw` loads the element as stored
/// (Where's values); otherwise it is converted to the load type.
struct EwInput {
  const TensorRef *ref;
  bool raw = false;
};

/// An elementwise kernel: operands a0, a1 ... are loaded for each result
/// element, `compute` (statements) defines `r` from them, and `r` is stored
/// converted from `resultType` (or as is, when `rawStore`).
struct EwKernel {
  std::string tag;
  std::vector<EwInput> inputs;
  std::string loadType;   // compute type the operands are converted to
  std::string resultType; // type of r
  std::string setup;      // statements before the loop (parameter loads)
  std::vector<std::pair<std::string, const TensorRef *>> extraParams;
  std::string compute;
  bool rawStore = false;
};

/// `text`'s non-empty lines indented by `spaces`.
std::string indent(llvm::StringRef text, unsigned spaces) {
  std::string result;
  for (llvm::StringRef line : llvm::split(text, '\n'))
    if (!line.empty())
      result += std::string(spaces, ' ') + line.str() + "\n";
  return result;
}

/// True when the kernel can move float4-sized vectors: f32 everywhere,
/// every operand the result's shape or a scalar, whole vectors, and every
/// pointer 16-byte aligned.
bool canVectorize(const EwKernel &spec, const TensorRef &out) {
  if (out.dtype != ir::DType::F32 || out.numElements % 4 != 0 ||
      out.place.value % 16 != 0 || spec.rawStore)
    return false;
  bool anyFull = false;
  for (const EwInput &input : spec.inputs) {
    const TensorRef &ref = *input.ref;
    if (input.raw || ref.dtype != ir::DType::F32)
      return false;
    if (ref.numElements == 1)
      continue;
    if (ref.dims != out.dims || ref.place.value % 16 != 0)
      return false;
    anyFull = true;
  }
  return anyFull;
}

std::string loadExpression(const EwInput &input, llvm::StringRef loadType,
                           llvm::StringRef pointer) {
  if (input.raw)
    return "*(" + pointer.str() + ")";
  return "(" + loadType.str() + ")snug_load(" + pointer.str() + ")";
}

std::string declaredType(const EwInput &input, llvm::StringRef loadType) {
  return input.raw ? cudaTypeName(input.ref->dtype) : loadType.str();
}

/// The vectorized body: each thread loads 16 bytes of every full operand,
/// computes four lanes and stores 16 bytes (after all its loads, so in
/// place is safe).
std::string vectorBody(const EwKernel &spec, const TensorRef &out,
                       const char *indexType) {
  std::string text = "  struct alignas(16) snug_f32x4 { float v[4]; };\n";
  std::string lanes;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    std::string a = "a" + std::to_string(k), in = "in" + std::to_string(k);
    if (spec.inputs[k].ref->numElements == 1) {
      text += "  const " + spec.loadType + " " + a + " = " +
              loadExpression(spec.inputs[k], spec.loadType, in) + ";\n";
      continue;
    }
    lanes += "      const " + spec.loadType + " " + a + " = (" + spec.loadType +
             ")x" + std::to_string(k) + ".v[l];\n";
  }
  text += gridStrideLoop(indexType, out.numElements / 4);
  for (size_t k = 0; k < spec.inputs.size(); ++k)
    if (spec.inputs[k].ref->numElements != 1)
      text += "    const snug_f32x4 x" + std::to_string(k) +
              " = ((const snug_f32x4 *)in" + std::to_string(k) + ")[i];\n";
  text +=
      "    snug_f32x4 y;\n#pragma unroll\n    for (int l = 0; l < 4; ++l) {\n";
  text += lanes + spec.compute + "      y.v[l] = (float)(r);\n    }\n";
  text += "    ((snug_f32x4 *)out)[i] = y;\n  }\n";
  return text;
}

/// The general body: per result element, each operand's index from the
/// broadcast strides (dims collapsed), loads, compute, store.
std::string scalarBody(const EwKernel &spec, const TensorRef &out,
                       const char *indexType) {
  std::vector<int64_t> dims = out.dims;
  std::vector<std::vector<int64_t>> strides;
  for (const EwInput &input : spec.inputs) {
    strides.emplace_back();
    broadcastStrides(*input.ref, out.dims, strides.back());
  }
  collapseDims(dims, strides);
  std::string text, loopLoads;
  std::vector<std::vector<int64_t>> walked;
  std::vector<std::string> names;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const EwInput &input = spec.inputs[k];
    std::string a = "a" + std::to_string(k), in = "in" + std::to_string(k);
    std::string decl =
        "const " + declaredType(input, spec.loadType) + " " + a + " = ";
    // A broadcast scalar is loaded once, before the loop.
    if (llvm::all_of(strides[k], [](int64_t s) { return s == 0; })) {
      text += "  " + decl + loadExpression(input, spec.loadType, in) + ";\n";
      continue;
    }
    walked.push_back(strides[k]);
    names.push_back("o" + std::to_string(k));
    loopLoads += "    " + decl +
                 loadExpression(input, spec.loadType, in + " + o" +
                                                          std::to_string(k)) +
                 ";\n";
  }
  text += gridStrideLoop(indexType, out.numElements);
  text += emitOffsets(dims, walked, names, indexType, "i");
  text += loopLoads;
  text += spec.compute;
  if (spec.rawStore)
    text += "    out[i] = r;\n";
  else
    text += "    " + storeConverted(out.dtype, spec.resultType, "out + i", "r");
  text += "  }\n";
  return text;
}

llvm::Error emitElementwise(EmitContext &context, EwKernel spec) {
  const TensorRef &out = context.out();
  for (const EwInput &input : spec.inputs) {
    std::vector<int64_t> strides;
    if (!input.ref->present)
      return context.unsupported("an operand is absent");
    if (!broadcastStrides(*input.ref, out.dims, strides))
      return context.unsupported("operands do not broadcast to the result");
  }
  if (out.numElements == 0)
    return llvm::Error::success();
  Kernel kernel;
  kernel.tag = spec.tag;
  int64_t extent = out.numElements;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    kernel.addTensor("in" + std::to_string(k), *spec.inputs[k].ref, true);
    extent = std::max(extent, spec.inputs[k].ref->numElements);
  }
  for (const auto &[name, ref] : spec.extraParams)
    kernel.addTensor(name, *ref, true);
  kernel.addTensor("out", out, false);
  kernel.body = spec.setup;
  int64_t work = out.numElements;
  if (canVectorize(spec, out)) {
    work /= 4;
    spec.compute = indent(spec.compute, 6); // inside the lane loop
    kernel.body += vectorBody(spec, out, indexTypeFor(work, extent));
  } else {
    spec.compute = indent(spec.compute, 4);
    kernel.body += scalarBody(spec, out, indexTypeFor(work, extent));
  }
  launchGridStride(context, std::move(kernel), work);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Unary ops
//===----------------------------------------------------------------------===//

/// Statements computing unary `op` of `a0` into `r`, in m's compute type;
/// empty for an op this file does not know. Operands of the host's
/// std::min / std::max get names first, so that the ternaries repeat names
/// rather than expressions.
std::string unaryStatements(const EmitContext &context, llvm::StringRef op,
                            const Math &m) {
  const std::string x = "a0", T = m.computeType();
  auto lit = [&](double v) { return m.lit(v); };
  auto attr = [&](llvm::StringRef name, float fallback) {
    return lit(double(context.floatAttr(name, fallback)));
  };
  auto let = [&](llvm::StringRef name, llvm::StringRef value) {
    return "const " + T + " " + name.str() + " = " + value.str() + ";\n";
  };
  auto result = [&](llvm::StringRef value) { return let("r", value); };
  // log(1 + e^x), and x itself above 20 as the host.
  std::string softplus = "(" + x + " > " + lit(20) + " ? " + x + " : " +
                         m.call("log1p", m.call("exp", x)) + ")";
  for (const char *name : {"acos", "asin", "atan", "ceil", "cos", "erf", "exp",
                           "floor", "log", "sin", "sqrt", "tan", "tanh"})
    if (op.lower() == name)
      return result(m.call(name, x));
  if (op == "Abs")
    return result(m.call("fabs", x));
  if (op == "Neg")
    return result("-" + x);
  if (op == "Reciprocal")
    return result(lit(1) + " / " + x);
  if (op == "Relu") // NaN stays NaN
    return result(x + " > " + lit(0) + " ? " + x + " : (" + x + " != " + x +
                  " ? " + x + " : " + lit(0) + ")");
  if (op == "Round") // half to even, as nearbyint
    return result(m.call("rint", x));
  if (op == "Sigmoid")
    return result(lit(1) + " / (" + lit(1) + " + " + m.call("exp", "-" + x) +
                  ")");
  if (op == "Sign")
    return result(x + " > " + lit(0) + " ? " + lit(1) + " : (" + x + " < " +
                  lit(0) + " ? " + lit(-1) + " : " + x + ")");
  if (op == "Softplus")
    return result(softplus);
  if (op == "Softsign")
    return result(x + " / (" + lit(1) + " + " + m.call("fabs", x) + ")");
  if (op == "Mish")
    return result(x + " * " + m.call("tanh", softplus));
  if (op == "Not")
    return result(x + " == " + lit(0) + " ? " + lit(1) + " : " + lit(0));
  // Where the host's formula cancels (x / 6 + 1/2 near x = -3, e^x - 1
  // near 0, 1 + erf or 1 + tanh far below 0) float would lose every digit
  // that double keeps, so these use forms equal in exact arithmetic that do
  // not cancel: (x + 3) / 6, expm1, erfc and x * sigmoid(2u); fma rounds
  // alpha * x + beta once, as double does.
  if (op == "HardSwish")
    return let("t", "(" + x + " + " + lit(3) + ") / " + lit(6)) +
           let("u", Math::min(lit(1), "t")) +
           result(x + " * " + Math::max(lit(0), "u"));
  if (op == "HardSigmoid")
    return let("t", m.call("fma", attr("alpha", 0.2f) + ", " + x + ", " +
                                      attr("beta", 0.5f))) +
           let("u", Math::min(lit(1), "t")) + result(Math::max(lit(0), "u"));
  if (op == "Elu")
    return result(x + " >= " + lit(0) + " ? " + x + " : " +
                  attr("alpha", 1.0f) + " * " + m.call("expm1", x));
  if (op == "Celu") {
    std::string alpha = attr("alpha", 1.0f);
    return let("t", alpha + " * " + m.call("expm1", x + " / " + alpha)) +
           result(Math::max(lit(0), x) + " + " + Math::min(lit(0), "t"));
  }
  if (op == "Selu")
    return result(attr("gamma", 1.05070102214813232421875f) + " * (" + x +
                  " > " + lit(0) + " ? " + x + " : " +
                  attr("alpha", 1.67326319217681884765625f) + " * " +
                  m.call("expm1", x) + ")");
  if (op == "LeakyRelu")
    return result(x + " >= " + lit(0) + " ? " + x + " : " +
                  attr("alpha", 0.01f) + " * " + x);
  if (op == "ThresholdedRelu")
    return result(x + " > " + attr("alpha", 1.0f) + " ? " + x + " : " + lit(0));
  if (op == "Gelu") {
    // x/2 (1 + tanh(u)) = x / (1 + e^(-2u)); x/2 (1 + erf(z)) = x/2 erfc(-z).
    if (context.stringAttr("approximate", "none") == "tanh")
      return let("u", lit(0.7978845608028654) + " * (" + x + " + " +
                          lit(0.044715) + " * " + x + " * " + x + " * " + x +
                          ")") +
             result(x + " / (" + lit(1) + " + " +
                    m.call("exp", lit(-2) + " * u") + ")");
    return result(lit(0.5) + " * " + x + " * " +
                  m.call("erfc", "-" + x + " / " + lit(std::sqrt(2.0))));
  }
  if (op == "Clip") // bounds lo, hi from the setup; NaN passes through
    return let("t", Math::max("lo", x)) +
           result(x + " != " + x + " ? " + x + " : " + Math::min("hi", "t"));
  return "";
}

/// Unary ops compute like the host's mapUnary: in double for integers (and
/// f64), in float for f32, f16 and bf16.
llvm::Error emitUnary(EmitContext &context) {
  llvm::StringRef op = context.node.getOpName();
  if (!context.hasIn(0) || context.results.empty())
    return context.unsupported("expects one operand and one result");
  const TensorRef &x = context.in(0), &out = context.out();
  if (x.numElements != out.numElements)
    return context.unsupported("operand and result differ in size");
  bool narrow = isNarrowFloat(x.dtype) && isNarrowFloat(out.dtype);
  EwKernel spec;
  if (op == "Clip") {
    // Bounds from operands (scalars) override the attributes; the host
    // compares in double, which float matches when every bound is a
    // narrow float.
    for (unsigned i : {1u, 2u})
      if (context.hasIn(i) && context.in(i).numElements > 0)
        narrow &= isNarrowFloat(context.in(i).dtype);
  }
  Math m(narrow ? "float" : "double");
  if (op == "Clip") {
    const char *names[] = {"lo", "hi"};
    const char *attrs[] = {"min", "max"};
    for (unsigned i : {1u, 2u}) {
      std::string value = m.lit(i == 1 ? -INFINITY : INFINITY);
      if (context.hasAttr(attrs[i - 1]))
        value = m.lit(double(context.floatAttr(attrs[i - 1], 0)));
      if (context.hasIn(i) && context.in(i).numElements > 0) {
        std::string param = std::string(names[i - 1]) + "_p";
        spec.extraParams.push_back({param, &context.in(i)});
        value = "(" + m.computeType() + ")snug_load(" + param + ")";
      }
      spec.setup += "  const " + m.computeType() + " " + names[i - 1] + " = " +
                    value + ";\n";
    }
  }
  spec.compute = unaryStatements(context, op, m);
  if (spec.compute.empty())
    return context.unsupported("no CUDA expression for this unary op");
  spec.tag = tagFor(op);
  spec.inputs = {{&x}};
  spec.loadType = spec.resultType = m.computeType();
  return emitElementwise(context, std::move(spec));
}

//===----------------------------------------------------------------------===//
// Broadcasting folds, comparisons, Where
//===----------------------------------------------------------------------===//

enum class BinOp { Add, Sub, Mul, Div, Pow, Mod, FMod, Min, Max, And, Or, Xor,
                   PRelu };

/// Statements setting r = op(p, q) (p may be r itself: each reads p and q
/// before it writes r): in m's float type when `floatMath`, in int64
/// (wrapping through uint64, as the host) otherwise.
std::string foldStep(BinOp op, bool floatMath, const Math &m,
                     const std::string &p, const std::string &q) {
  const std::string T = m.computeType();
  auto set = [](const std::string &value) { return "r = " + value + ";\n"; };
  auto logical = [&](const char *relation) {
    return set("(" + T + ")((" + p + " != 0) " + relation + " (" + q +
               " != 0))");
  };
  if (floatMath) {
    switch (op) {
    case BinOp::Add: return set(p + " + " + q);
    case BinOp::Sub: return set(p + " - " + q);
    case BinOp::Mul: return set(p + " * " + q);
    case BinOp::Div: return set(p + " / " + q);
    case BinOp::Pow: return set(m.call("pow", p + ", " + q));
    case BinOp::Mod: // Python's: the sign of the divisor
      return "{\n  const " + T + " f = " + m.call("fmod", p + ", " + q) +
             ";\n  r = (f != 0 && ((f < 0) != (" + q + " < 0))) ? f + " + q +
             " : f;\n}\n";
    case BinOp::FMod: return set(m.call("fmod", p + ", " + q));
    case BinOp::Min:
      return set("(" + p + " != " + p + " || " + q + " != " + q + ") ? " +
                 m.nan() + " : " + Math::min(p, q));
    case BinOp::Max:
      return set("(" + p + " != " + p + " || " + q + " != " + q + ") ? " +
                 m.nan() + " : " + Math::max(p, q));
    case BinOp::And: return logical("&&");
    case BinOp::Or: return logical("||");
    case BinOp::Xor: return logical("!=");
    case BinOp::PRelu: return set(p + " >= 0 ? " + p + " : " + p + " * " + q);
    }
  }
  auto wrap = [&](const char *sign) {
    return set("(int64_t)((uint64_t)" + p + " " + sign + " (uint64_t)" + q +
               ")");
  };
  switch (op) {
  case BinOp::Add: return wrap("+");
  case BinOp::Sub: return wrap("-");
  case BinOp::Mul: return wrap("*");
  case BinOp::Div: // 0 where the division would trap, as the host
    return set("(" + q + " == 0 || (" + p + " == (-9223372036854775807LL - 1)"
               " && " + q + " == -1)) ? 0 : " + p + " / " + q);
  case BinOp::Pow: // by squaring, wrapping; negative exponents as the host
    return "if (" + q + " < 0) {\n  r = " + p + " == 1 ? 1 : (" + p +
           " == -1 ? (" + q + " % 2 ? -1 : 1) : 0);\n} else {\n"
           "  uint64_t power = 1, base = (uint64_t)" + p + ";\n"
           "  for (int64_t e = " + q + "; e > 0; e >>= 1, base *= base)\n"
           "    if (e & 1)\n      power *= base;\n"
           "  r = (int64_t)power;\n}\n";
  case BinOp::Mod:
    return "if (" + q + " == 0 || " + q + " == -1) {\n  r = 0;\n} else {\n"
           "  const int64_t f = " + p + " % " + q + ";\n"
           "  r = (f != 0 && ((f < 0) != (" + q + " < 0))) ? f + " + q +
           " : f;\n}\n";
  case BinOp::FMod:
    return set("(" + q + " == 0 || " + q + " == -1) ? 0 : " + p + " % " + q);
  case BinOp::Min: return set(Math::min(p, q));
  case BinOp::Max: return set(Math::max(p, q));
  case BinOp::And: return logical("&&");
  case BinOp::Or: return logical("||");
  case BinOp::Xor: return logical("!=");
  case BinOp::PRelu:
    return set(p + " >= 0 ? " + p + " : (int64_t)((uint64_t)" + p +
               " * (uint64_t)" + q + ")");
  }
  return "";
}

/// y = op(...op(op(x0, x1), x2)...), divided by the operand count for Mean.
llvm::Error emitFold(EmitContext &context, BinOp op, bool mean) {
  if (context.results.empty() || context.operands.empty())
    return context.unsupported("expects operands and a result");
  const TensorRef &out = context.out();
  size_t count = context.operands.size();
  bool floatMath = isFloat(out.dtype);
  // Pow keeps the base's type; a float exponent makes the math float.
  if (op == BinOp::Pow && count == 2 && isFloat(context.in(1).dtype))
    floatMath = true;
  bool anyF64 = llvm::any_of(context.operands, [](const TensorRef &ref) {
    return ref.dtype == ir::DType::F64;
  });
  // f32 computes in float where that is what double-then-round gives (one
  // IEEE operation); Pow's and longer sums' roundings differ, so those use
  // double as the host.
  bool f32NeedsDouble =
      out.dtype == ir::DType::F32 &&
      (op == BinOp::Pow || mean || (op == BinOp::Add && count > 2));
  std::string type = !floatMath ? "int64_t"
                     : (!isNarrowFloat(out.dtype) || anyF64 || f32NeedsDouble)
                         ? "double"
                         : "float";
  Math m(type);
  EwKernel spec;
  spec.tag = tagFor(context.node.getOpName());
  spec.loadType = spec.resultType = type;
  for (const TensorRef &ref : context.operands)
    spec.inputs.push_back({&ref});
  spec.compute = type + " r" + (count == 1 ? " = a0" : "") + ";\n";
  for (size_t k = 1; k < count; ++k)
    spec.compute += foldStep(op, floatMath, m, k == 1 ? "a0" : "r",
                             "a" + std::to_string(k));
  if (mean)
    spec.compute += "r = r / (" + type + ")" + std::to_string(count) + ";\n";
  return emitElementwise(context, std::move(spec));
}

template <BinOp Op> llvm::Error emitBinary(EmitContext &context) {
  return emitFold(context, Op, false);
}

llvm::Error emitMean(EmitContext &context) {
  return emitFold(context, BinOp::Add, true);
}

llvm::Error emitMod(EmitContext &context) {
  return emitFold(context,
                  context.intAttr("fmod", 0) ? BinOp::FMod : BinOp::Mod, false);
}

/// Equal, Greater ...: both sides in mixedComputeType, a bool result.
llvm::Error emitCompare(EmitContext &context) {
  if (context.operands.size() != 2 || context.results.empty())
    return context.unsupported("expects two operands and one result");
  const TensorRef &a = context.in(0), &b = context.in(1);
  std::string type = mixedComputeType(a.dtype, b.dtype);
  std::string relation =
      llvm::StringSwitch<std::string>(context.node.getOpName())
          .Case("Equal", "==")
          .Case("Greater", ">")
          .Case("GreaterOrEqual", ">=")
          .Case("Less", "<")
          .Default("<=");
  EwKernel spec;
  spec.tag = tagFor(context.node.getOpName());
  spec.inputs = {{&a}, {&b}};
  spec.loadType = type;
  spec.resultType = "int64_t";
  spec.compute = "const bool r = a0 " + relation + " a1;";
  return emitElementwise(context, std::move(spec));
}

/// Where(c, a, b): moves a's or b's element as stored (no conversion). The
/// condition is true when its integer value (floats truncate) is nonzero.
llvm::Error emitWhere(EmitContext &context) {
  if (context.operands.size() != 3 || context.results.empty() ||
      !context.hasIn(0) || !context.hasIn(1) || !context.hasIn(2))
    return context.unsupported("expects three operands and one result");
  const TensorRef &c = context.in(0), &a = context.in(1), &b = context.in(2);
  if (a.dtype != context.out().dtype || b.dtype != context.out().dtype)
    return context.unsupported("value operands and result differ in dtype");
  EwKernel spec;
  spec.tag = "where";
  bool floatCondition = isFloat(c.dtype);
  spec.inputs = {{&c}, {&a, true}, {&b, true}};
  spec.loadType = floatCondition ? "double" : "int64_t";
  spec.rawStore = true;
  std::string take = floatCondition ? "(a0 >= 1 || a0 <= -1)" : "a0 != 0";
  spec.compute = "const " + std::string(cudaTypeName(a.dtype)) + " r = " +
                 take + " ? a1 : a2;";
  return emitElementwise(context, std::move(spec));
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// Cast / snug.cast: through mixedComputeType, stored as the host's
/// storeDouble / storeInt (float -> double -> float being exact, narrow
/// floats convert through float alone).
llvm::Error emitCast(EmitContext &context) {
  if (!context.hasIn(0) || context.results.empty())
    return context.unsupported("expects one operand and one result");
  const TensorRef &x = context.in(0), &out = context.out();
  if (x.numElements != out.numElements)
    return context.unsupported("operand and result differ in size");
  if (x.dtype == out.dtype) {
    context.copy(out.place, x.place, out.bytes);
    return llvm::Error::success();
  }
  if (x.sameAs(out) &&
      ir::getDTypeSize(x.dtype) != ir::getDTypeSize(out.dtype))
    return context.unsupported("an in-place cast between element sizes "
                               "would race across threads");
  std::string type = mixedComputeType(x.dtype, out.dtype);
  EwKernel spec;
  spec.tag = "cast";
  spec.inputs = {{&x}};
  spec.loadType = spec.resultType = type;
  spec.compute = "const " + type + " r = a0;";
  return emitElementwise(context, std::move(spec));
}

const EmitterEntry kElementwiseEmitters[] = {
    // Unary.
    {ir::OpCode::Abs, emitUnary},
    {ir::OpCode::Acos, emitUnary},
    {ir::OpCode::Asin, emitUnary},
    {ir::OpCode::Atan, emitUnary},
    {ir::OpCode::Ceil, emitUnary},
    {ir::OpCode::Celu, emitUnary},
    {ir::OpCode::Clip, emitUnary},
    {ir::OpCode::Cos, emitUnary},
    {ir::OpCode::Elu, emitUnary},
    {ir::OpCode::Erf, emitUnary},
    {ir::OpCode::Exp, emitUnary},
    {ir::OpCode::Floor, emitUnary},
    {ir::OpCode::Gelu, emitUnary},
    {ir::OpCode::HardSigmoid, emitUnary},
    {ir::OpCode::HardSwish, emitUnary},
    {ir::OpCode::LeakyRelu, emitUnary},
    {ir::OpCode::Log, emitUnary},
    {ir::OpCode::Mish, emitUnary},
    {ir::OpCode::Neg, emitUnary},
    {ir::OpCode::Not, emitUnary},
    {ir::OpCode::Reciprocal, emitUnary},
    {ir::OpCode::Relu, emitUnary},
    {ir::OpCode::Round, emitUnary},
    {ir::OpCode::Selu, emitUnary},
    {ir::OpCode::Sigmoid, emitUnary},
    {ir::OpCode::Sign, emitUnary},
    {ir::OpCode::Sin, emitUnary},
    {ir::OpCode::Softplus, emitUnary},
    {ir::OpCode::Softsign, emitUnary},
    {ir::OpCode::Sqrt, emitUnary},
    {ir::OpCode::Tan, emitUnary},
    {ir::OpCode::Tanh, emitUnary},
    {ir::OpCode::ThresholdedRelu, emitUnary},
    // Broadcasting folds.
    {ir::OpCode::Add, emitBinary<BinOp::Add>},
    {ir::OpCode::And, emitBinary<BinOp::And>},
    {ir::OpCode::Div, emitBinary<BinOp::Div>},
    {ir::OpCode::Max, emitBinary<BinOp::Max>},
    {ir::OpCode::Mean, emitMean},
    {ir::OpCode::Min, emitBinary<BinOp::Min>},
    {ir::OpCode::Mod, emitMod},
    {ir::OpCode::Mul, emitBinary<BinOp::Mul>},
    {ir::OpCode::Or, emitBinary<BinOp::Or>},
    {ir::OpCode::Pow, emitBinary<BinOp::Pow>},
    {ir::OpCode::PRelu, emitBinary<BinOp::PRelu>},
    {ir::OpCode::Sub, emitBinary<BinOp::Sub>},
    {ir::OpCode::Sum, emitBinary<BinOp::Add>},
    {ir::OpCode::Xor, emitBinary<BinOp::Xor>},
    // Comparisons and selection.
    {ir::OpCode::Equal, emitCompare},
    {ir::OpCode::Greater, emitCompare},
    {ir::OpCode::GreaterOrEqual, emitCompare},
    {ir::OpCode::Less, emitCompare},
    {ir::OpCode::LessOrEqual, emitCompare},
    {ir::OpCode::Where, emitWhere},
    // Conversions.
    {ir::OpCode::Cast, emitCast},
    {ir::OpCode::SnugCast, emitCast},
};

} // namespace

llvm::ArrayRef<EmitterEntry> getElementwiseEmitters() {
  return kElementwiseEmitters;
}

} // namespace cuda
} // namespace snug
