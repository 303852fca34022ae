//===- GradientRulesTest.cpp - Every gradient rule against finite differences
//
// Each case builds a small f64 module: parameters p0, p1, ... (weights with
// random values), one or a few nodes of the op under test, and the loss
// sum(result * r) with r a random f64 weight, so every result element gets
// a different adjoint. The autodiff pass (wrt the parameters) gives the
// analytic gradients; central differences (L(p + h) - L(p - h)) / 2h, each
// L run by the host kernels (evaluateModule), give the numeric ones. The
// host kernels compute f64 in double (runtime/host), so with h = 1e-6 the
// difference's truncation error (~h^2) and rounding error (~1e-16 / h) both
// stay under 1e-8; the tolerance is 1e-6 relative to max(1, |gradient|).
// Inputs stay off the kinks and poles of the ops (Relu's 0, Log's and
// Sqrt's non-positive, Div's 0).
//
// MatMul, Gemm, Conv and AveragePool (whose gradient is a ConvTranspose) are
// the exception: their host kernels round operands and results through f32
// (FloatInput, runtime/host/Kernels.h), so an f64 difference quotient with
// h = 1e-6 would see only rounding. Their loss is linear in each parameter,
// so a central difference is exact for any h: h = 0.1 keeps the f32
// rounding (~6e-8 |L| / h) near 1e-6, and the tolerance is 1e-4. MaxPool's
// kinks (ties in a window) are avoided by the random inputs and h = 1e-6.
//
//===----------------------------------------------------------------------===//
#include "passes/training/GradientRules.h"
#include "passes/simplify/ConstantEval.h"
#include "passes/Passes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <set>

namespace snug {
namespace {

using ir::Attribute;
using ir::DType;
using ir::OpCode;
using ir::TensorType;
using ir::Value;

enum class Range { Any, Positive, AwayFromZero };

using BuildFn = std::function<llvm::Expected<Value *>(GraphBuilder &,
                                                      llvm::ArrayRef<Value *>)>;

struct Case {
  std::string name;
  std::vector<std::vector<int64_t>> params;
  BuildFn build;
  Range range = Range::Any;
  /// The difference step and relative tolerance (see the banner).
  double step = 1e-6, tolerance = 1e-6;
  /// A pass run on the built module before the loss is taken (a rewrite
  /// whose result autodiff differentiates), or empty.
  std::string before = {};
};

/// A case with one node of `op` on the parameters.
Case single(std::string name, OpCode op,
            std::vector<std::vector<int64_t>> params,
            ir::AttributeMap attrs = {}, Range range = Range::Any) {
  BuildFn build = [op, attrs](GraphBuilder &b, llvm::ArrayRef<Value *> p) {
    return b.emit(op, p, attrs);
  };
  return {std::move(name), std::move(params), build, range};
}

std::vector<uint8_t> toBytes(llvm::ArrayRef<double> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(double));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<double> toDoubles(llvm::ArrayRef<uint8_t> bytes) {
  std::vector<double> values(bytes.size() / sizeof(double));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

int64_t count(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// The module of `c` with parameter values `values`; nullptr after a
/// failed expectation.
std::unique_ptr<ir::Module>
buildModule(const Case &c, llvm::ArrayRef<std::vector<double>> values,
            llvm::ArrayRef<double> weights) {
  auto module = std::make_unique<ir::Module>(c.name);
  std::vector<Value *> params;
  for (size_t i = 0; i < c.params.size(); ++i)
    params.push_back(module->addWeight("p" + std::to_string(i),
                                       TensorType(DType::F64, c.params[i]),
                                       toBytes(values[i])));
  GraphBuilder b(*module, "test.c");
  auto result = c.build(b, params);
  if (!result) {
    ADD_FAILURE() << c.name << ": " << toString(result.takeError());
    return nullptr;
  }
  const TensorType &type = (*result)->getType();
  Value *r = b.constant(type, weights.take_front(type.getNumElements()));
  llvm::SmallVector<int64_t, 4> axes;
  for (unsigned i = 0; i < type.getRank(); ++i)
    axes.push_back(i);
  auto weighted = b.emit(OpCode::Mul, {*result, r});
  auto loss = b.emit(
      OpCode::ReduceSum, {*weighted},
      {{"axes", Attribute::getInts(axes)}, {"keepdims", Attribute::getInt(0)}});
  if (!loss) {
    ADD_FAILURE() << c.name << ": " << toString(loss.takeError());
    return nullptr;
  }
  (*loss)->setName("loss");
  module->setOutputs({*loss});
  if (!c.before.empty()) {
    auto changed = createPassByName(c.before)->run(*module);
    if (!changed) {
      ADD_FAILURE() << c.name << ": " << toString(changed.takeError());
      return nullptr;
    }
  }
  return module;
}

llvm::Expected<std::vector<std::vector<uint8_t>>>
evaluate(const ir::Module &module) {
  return evaluateModule(module, {});
}

double evaluateLoss(const Case &c, llvm::ArrayRef<std::vector<double>> values,
                    llvm::ArrayRef<double> weights) {
  auto module = buildModule(c, values, weights);
  if (!module)
    return NAN;
  auto outputs = evaluate(*module);
  if (!outputs) {
    ADD_FAILURE() << toString(outputs.takeError());
    return NAN;
  }
  return toDoubles((*outputs)[0])[0];
}

void checkCase(const Case &c) {
  SCOPED_TRACE(c.name);
  std::mt19937 random(1234);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::vector<double>> values;
  for (const auto &dims : c.params) {
    values.emplace_back();
    for (int64_t i = 0; i < count(dims); ++i) {
      double u = unit(random);
      switch (c.range) {
      case Range::Any:
        values.back().push_back(2 * u - 1);
        break;
      case Range::Positive:
        values.back().push_back(0.5 + 1.5 * u);
        break;
      case Range::AwayFromZero:
        values.back().push_back((i % 2 ? -1 : 1) * (0.2 + 0.8 * u));
        break;
      }
    }
  }
  std::vector<double> weights;
  for (int i = 0; i < 256; ++i)
    weights.push_back(2 * unit(random) - 1);

  auto module = buildModule(c, values, weights);
  ASSERT_TRUE(module);
  std::unique_ptr<Pass> autodiff = createPassByName("autodiff");
  ASSERT_FALSE(bool(autodiff->setOption("loss", "loss")));
  std::string wrt;
  for (size_t i = 0; i < c.params.size(); ++i)
    wrt += (i ? ",p" : "p") + std::to_string(i);
  ASSERT_FALSE(bool(autodiff->setOption("wrt", wrt)));
  auto changed = autodiff->run(*module);
  ASSERT_TRUE(bool(changed)) << toString(changed.takeError());
  auto outputs = evaluate(*module);
  ASSERT_TRUE(bool(outputs)) << toString(outputs.takeError());
  // The loss, what the `before` pass added (batchnorm-batch-stats' running
  // statistics), then the gradients.
  ASSERT_GE(outputs->size(), c.params.size() + 1);
  size_t first = outputs->size() - c.params.size();

  const double h = c.step;
  for (size_t p = 0; p < c.params.size(); ++p) {
    EXPECT_EQ(module->getOutputs()[first + p]->getName(),
              "grad.p" + std::to_string(p));
    std::vector<double> analytic = toDoubles((*outputs)[first + p]);
    ASSERT_EQ(int64_t(analytic.size()), count(c.params[p]));
    for (size_t i = 0; i < analytic.size(); ++i) {
      std::vector<std::vector<double>> plus = values, minus = values;
      plus[p][i] += h;
      minus[p][i] -= h;
      double numeric =
          (evaluateLoss(c, plus, weights) - evaluateLoss(c, minus, weights)) /
          (2 * h);
      EXPECT_NEAR(analytic[i], numeric,
                  c.tolerance * std::max(1.0, std::fabs(numeric)))
          << "d loss / d p" << p << "[" << i << "]";
    }
  }
}

ir::AttributeMap axes(std::vector<int64_t> list, int64_t keepDims) {
  return {{"axes", Attribute::getInts(list)},
          {"keepdims", Attribute::getInt(keepDims)}};
}

ir::AttributeMap gemm(bool transA, bool transB) {
  return {{"alpha", Attribute::getFloat(0.5f)},
          {"beta", Attribute::getFloat(2.0f)},
          {"transA", Attribute::getInt(transA)},
          {"transB", Attribute::getInt(transB)}};
}

/// Conv-style window attributes: kernel `k`, strides `s`, pads `p` (begin
/// and end values), dilations `d`, and `group` when given.
ir::AttributeMap window(std::vector<int64_t> k, std::vector<int64_t> s,
                        std::vector<int64_t> p, std::vector<int64_t> d,
                        int64_t group = 0) {
  ir::AttributeMap attrs = {{"kernel_shape", Attribute::getInts(k)},
                            {"strides", Attribute::getInts(s)},
                            {"pads", Attribute::getInts(p)},
                            {"dilations", Attribute::getInts(d)}};
  if (group)
    attrs["group"] = Attribute::getInt(group);
  return attrs;
}

ir::AttributeMap slice(std::vector<int64_t> starts, std::vector<int64_t> ends,
                       std::vector<int64_t> axes) {
  return {{"starts", Attribute::getInts(starts)},
          {"ends", Attribute::getInts(ends)},
          {"axes", Attribute::getInts(axes)},
          {"steps", Attribute::getInts(std::vector<int64_t>(axes.size(), 1))}};
}

/// A Gather of the parameter by the constant i64 `indices` of `dims`.
Case gather(std::string name, std::vector<int64_t> data,
            std::vector<int64_t> dims, std::vector<double> indices,
            int64_t axis) {
  return {
      std::move(name), {data}, [=](GraphBuilder &b, llvm::ArrayRef<Value *> p) {
        Value *i = b.constant(TensorType(DType::I64, dims), indices);
        return b.emit(OpCode::Gather, {p[0], i},
                      {{"axis", Attribute::getInt(axis)}});
      }};
}

/// A MatMul or Gemm case (f32 kernels, see the banner).
Case linear(Case c) {
  c.step = 0.1;
  c.tolerance = 1e-4;
  return c;
}

std::vector<Case> getCases() {
  std::vector<Case> cases;
  std::vector<std::vector<int64_t>> x = {{2, 3}};
  cases.push_back(single("Exp", OpCode::Exp, x));
  cases.push_back(single("Identity", OpCode::Identity, x));
  cases.push_back(single("Log", OpCode::Log, x, {}, Range::Positive));
  cases.push_back(single("Neg", OpCode::Neg, x));
  cases.push_back(single("Relu", OpCode::Relu, x, {}, Range::AwayFromZero));
  cases.push_back(single("Sigmoid", OpCode::Sigmoid, x));
  cases.push_back(single("Sqrt", OpCode::Sqrt, x, {}, Range::Positive));
  cases.push_back(single("Tanh", OpCode::Tanh, x));
  cases.push_back(single("Add", OpCode::Add, {{2, 3}, {3}}));
  cases.push_back(single("Sub", OpCode::Sub, {{2, 3}, {2, 1}}));
  cases.push_back(single("Mul", OpCode::Mul, {{1, 3}, {2, 1}}));
  cases.push_back(
      single("Div", OpCode::Div, {{2, 3}, {3}}, {}, Range::Positive));
  cases.push_back(single("Sum", OpCode::Sum, {{2, 3}, {3}, {2, 3}}));
  // One value read twice: its adjoints are accumulated.
  cases.push_back(
      {"MulSelf", {{2, 3}}, [](GraphBuilder &b, llvm::ArrayRef<Value *> p) {
         return b.emit(OpCode::Mul, {p[0], p[0]});
       }});
  cases.push_back(linear(single("MatMul", OpCode::MatMul, {{2, 3}, {3, 4}})));
  cases.push_back(
      linear(single("MatMulBatched", OpCode::MatMul, {{2, 2, 3}, {2, 3, 2}})));
  cases.push_back(
      linear(single("MatMulBroadcast", OpCode::MatMul, {{2, 2, 3}, {3, 4}})));
  cases.push_back(linear(
      single("Gemm", OpCode::Gemm, {{2, 3}, {3, 4}, {4}}, gemm(false, false))));
  cases.push_back(linear(single("GemmTransA", OpCode::Gemm,
                                {{3, 2}, {3, 4}, {2, 1}}, gemm(true, false))));
  cases.push_back(linear(
      single("GemmTransB", OpCode::Gemm, {{2, 3}, {4, 3}}, gemm(false, true))));
  cases.push_back(linear(single("GemmTransAB", OpCode::Gemm,
                                {{3, 2}, {4, 3}, {2, 4}}, gemm(true, true))));
  cases.push_back(single("Softmax", OpCode::Softmax, {{2, 4}},
                         {{"axis", Attribute::getInt(1)}}));
  cases.push_back(single("SoftmaxAxis0", OpCode::Softmax, {{3, 2}},
                         {{"axis", Attribute::getInt(0)}}));
  cases.push_back(single("LogSoftmax", OpCode::LogSoftmax, {{2, 4}},
                         {{"axis", Attribute::getInt(-1)}}));
  cases.push_back(single("LayerNorm", OpCode::LayerNormalization,
                         {{2, 3, 4}, {4}, {4}},
                         {{"axis", Attribute::getInt(-1)},
                          {"epsilon", Attribute::getFloat(1e-5f)}}));
  cases.push_back(single("LayerNormTwoDims", OpCode::LayerNormalization,
                         {{2, 3, 2}, {3, 2}},
                         {{"axis", Attribute::getInt(1)},
                          {"epsilon", Attribute::getFloat(0.1f)}}));
  cases.push_back(
      single("ReduceSum", OpCode::ReduceSum, {{2, 3, 4}}, axes({1}, 1)));
  cases.push_back(single("ReduceSumDropped", OpCode::ReduceSum, {{2, 3, 4}},
                         axes({0, 2}, 0)));
  cases.push_back(
      single("ReduceMean", OpCode::ReduceMean, {{2, 3, 4}}, axes({-1}, 0)));
  cases.push_back(single("Reshape", OpCode::Reshape, {{2, 3}},
                         {{"shape", Attribute::getInts({3, 2})}}));
  cases.push_back(single("Flatten", OpCode::Flatten, {{2, 3, 2}},
                         {{"axis", Attribute::getInt(1)}}));
  cases.push_back(single("Squeeze", OpCode::Squeeze, {{2, 1, 3}},
                         {{"axes", Attribute::getInts({1})}}));
  cases.push_back(single("Unsqueeze", OpCode::Unsqueeze, {{2, 3}},
                         {{"axes", Attribute::getInts({0})}}));
  cases.push_back(single("Transpose", OpCode::Transpose, {{2, 3, 4}},
                         {{"perm", Attribute::getInts({2, 0, 1})}}));
  cases.push_back(single("TransposeDefault", OpCode::Transpose, {{2, 3}}));
  cases.push_back(single("Clip", OpCode::Clip, x,
                         {{"min", Attribute::getFloat(-0.5f)},
                          {"max", Attribute::getFloat(0.4f)}}));
  cases.push_back(single("LeakyRelu", OpCode::LeakyRelu, x,
                         {{"alpha", Attribute::getFloat(0.2f)}},
                         Range::AwayFromZero));
  cases.push_back(single("Erf", OpCode::Erf, x));
  cases.push_back(single("Gelu", OpCode::Gelu, x));
  cases.push_back(single("Dropout", OpCode::Dropout, x));
  // Pow's base positive (the exponent's gradient takes its log); the
  // exponent broadcast, as LayerNorm's decomposed Pow(x, 2) has it.
  cases.push_back(single("Pow", OpCode::Pow, {{2, 3}, {3}}, {},
                         Range::Positive));
  // Where's condition from a third parameter: the gradient of a and b
  // follows it, p2 gets none (a step of h never crosses 0).
  cases.push_back(
      {"Where",
       {{2, 3}, {3}, {2, 3}},
       [](GraphBuilder &b, llvm::ArrayRef<Value *> p) -> llvm::Expected<Value *> {
         auto positive =
             b.emit(OpCode::Greater, {p[2], b.scalar(0, DType::F64)});
         if (!positive)
           return positive.takeError();
         return b.emit(OpCode::Where, {*positive, p[0], p[1]});
       },
       Range::AwayFromZero});
  // Conv, ConvTranspose and AveragePool's backward ConvTranspose round
  // through f32 like MatMul; the loss is linear in each parameter.
  std::vector<int64_t> one = {1, 1}, two = {2, 2}, none = {0, 0, 0, 0};
  cases.push_back(
      linear(single("Conv", OpCode::Conv, {{2, 3, 5, 5}, {4, 3, 3, 3}, {4}},
                    window({3, 3}, one, none, one))));
  cases.push_back(linear(single("ConvStride2Pad", OpCode::Conv,
                                {{1, 2, 6, 5}, {3, 2, 3, 3}},
                                window({3, 3}, two, {1, 0, 1, 1}, one))));
  cases.push_back(linear(single("ConvDilated", OpCode::Conv,
                                {{2, 2, 7, 6}, {2, 2, 2, 3}, {2}},
                                window({2, 3}, {1, 2}, {0, 1, 1, 0}, two))));
  cases.push_back(linear(single("ConvGrouped", OpCode::Conv,
                                {{2, 4, 5, 5}, {6, 2, 3, 3}, {6}},
                                window({3, 3}, two, {1, 1, 1, 1}, one, 2))));
  cases.push_back(
      linear(single("ConvDepthwise", OpCode::Conv, {{1, 3, 6, 6}, {3, 1, 3, 3}},
                    window({3, 3}, two, {1, 1, 0, 0}, one, 3))));
  cases.push_back(single("MaxPool", OpCode::MaxPool, {{2, 2, 5, 5}},
                         window({3, 3}, two, {1, 1, 1, 1}, one)));
  cases.push_back(single("MaxPoolDilated", OpCode::MaxPool, {{1, 2, 6, 6}},
                         window({2, 2}, one, none, two)));
  ir::AttributeMap average = window({3, 3}, two, {1, 1, 1, 1}, one);
  cases.push_back(linear(single("AveragePoolExcludePad", OpCode::AveragePool,
                                {{2, 2, 5, 6}}, average)));
  average["count_include_pad"] = Attribute::getInt(1);
  cases.push_back(linear(single("AveragePoolIncludePad", OpCode::AveragePool,
                                {{2, 2, 5, 6}}, average)));
  cases.push_back(
      linear(single("AveragePoolOverlapping", OpCode::AveragePool,
                    {{1, 1, 5, 5}}, window({2, 2}, one, {0, 0, 1, 1}, one))));
  cases.push_back(
      single("GlobalAveragePool", OpCode::GlobalAveragePool, {{2, 3, 2, 3}}));
  cases.push_back(
      single("GlobalMaxPool", OpCode::GlobalMaxPool, {{2, 3, 2, 3}}));
  cases.push_back(single("BatchNorm", OpCode::BatchNormalization,
                         {{2, 3, 2, 2}, {3}, {3}, {3}, {3}},
                         {{"epsilon", Attribute::getFloat(1e-3f)}},
                         Range::Positive));
  // Training mode: the rewrite's ReduceMean/Sub/Mul/Sqrt/Div rules give
  // the gradient through the batch statistics (scale and bias are the
  // parameters; the running statistics go unread).
  Case batchStats = {
      "BatchNormBatchStats",
      {{3, 2, 2, 2}, {2}, {2}},
      [](GraphBuilder &b, llvm::ArrayRef<Value *> p) {
        Value *mean = b.constant(TensorType(DType::F64, {2}), {0.3, -0.1});
        Value *var = b.constant(TensorType(DType::F64, {2}), {2.0, 0.5});
        return b.emit(OpCode::BatchNormalization, {p[0], p[1], p[2], mean, var},
                      {{"epsilon", Attribute::getFloat(1e-3f)}});
      }};
  batchStats.before = "batchnorm-batch-stats";
  cases.push_back(batchStats);
  cases.push_back(single("Concat", OpCode::Concat, {{2, 1, 2}, {2, 3, 2}},
                         {{"axis", Attribute::getInt(-2)}}));
  cases.push_back(
      single("Slice", OpCode::Slice, {{3, 4}}, slice({1, 0}, {3, 3}, {0, 1})));
  cases.push_back(single("Pad", OpCode::Pad, {{2, 3}},
                         {{"pads", Attribute::getInts({1, 0, 0, 2})}}));
  // Result 0 is read (through Concat) and result 1 is not: its gradient is
  // filled with zeros.
  cases.push_back(
      {"Split", {{2, 5}}, [](GraphBuilder &b, llvm::ArrayRef<Value *> p) {
         auto parts = b.emitNode(OpCode::Split, {p[0]},
                                 {{"axis", Attribute::getInt(1)},
                                  {"split", Attribute::getInts({2, 3})}},
                                 2);
         if (!parts)
           return llvm::Expected<Value *>(parts.takeError());
         Value *first = (*parts)->getResult(0);
         return b.emit(OpCode::Concat, {first, first},
                       {{"axis", Attribute::getInt(0)}});
       }});
  // A repeated and a negative index: their rows add up.
  cases.push_back(gather("Gather", {4, 3}, {2, 2}, {1, 3, 1, -4}, 0));
  cases.push_back(gather("GatherAxis1", {2, 4, 2}, {3}, {2, 0, 2}, 1));
  return cases;
}

// gtest prints a case by its name, not its bytes.
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

class GradientRuleTest : public ::testing::TestWithParam<Case> {};

TEST_P(GradientRuleTest, MatchesCentralDifferences) { checkCase(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Ops, GradientRuleTest, ::testing::ValuesIn(getCases()),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return info.param.name;
                         });

// Every op the table says has a rule is checked by some case above.
TEST(GradientRulesTest, EveryRuleHasAFiniteDifferenceCase) {
  std::set<OpCode> covered;
  for (const Case &c : getCases()) {
    std::vector<std::vector<double>> values;
    for (const auto &dims : c.params)
      values.emplace_back(count(dims), 0.5);
    auto module = buildModule(c, values, std::vector<double>(256, 1.0));
    ASSERT_TRUE(module);
    for (const auto &node : module->getNodes())
      covered.insert(node->getOpCode());
  }
  for (const ir::OpInfo &info : ir::getAllOps())
    EXPECT_TRUE(!ir::declaresGradientRule(info.code) ||
                covered.count(info.code))
        << info.name << " has a gradient rule and no test case";
}

} // namespace
} // namespace snug
