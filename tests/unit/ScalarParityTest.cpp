//===- ScalarParityTest.cpp - Folding, host and device give the same bits -===//
//
// Every elementwise op of the op table, for every dtype its row admits, and
// Cast between every pair of dtypes (as a node and inside a snug.fused
// region, which must give the node's bits), over special values (NaN of
// both signs, ±Inf, ±0, denormals, the largest finite values, 1e19,
// INT_MIN, -1, 0 ..., every pair of them for binary ops), computed three
// ways:
//   - constant folding (evaluateNode, which runs the host kernels),
//   - the host executor on a bundle of the module (plan, arena, weights),
//   - the CUDA simulator running the emitted kernels of the same bundle's
//     device plan (tests/cudasim; ScalarOps.h's host branch stands in for
//     the device math library),
// and compared bit for bit (a NaN result matches any NaN: which NaN an op on
// NaNs returns is unspecified). On a GPU the transcendental ops may differ by
// the ulp bounds ScalarOps.h states (libdevice); here every op must match
// exactly, so any difference is an emitter or plumbing bug. A few expected
// values pin the special-value rules of ScalarOps.h (onnxruntime's).
//
// The module is one function of weights in and node results out, so nothing
// needs inputs, and one kernel library is built for all of it (cached in the
// build tree by the source's hash, as CudaSimTest does).
//
//===----------------------------------------------------------------------===//
#include "compiler/bundle/BundleWriter.h"
#include "compiler/cuda/CudaEmitter.h"
#include "compiler/cuda/ElementwiseExpr.h"
#include "compiler/cuda/Nvrtc.h"
#include "ir/OpInfo.h"
#include "passes/simplify/ConstantEval.h"
#include "passes/PassManager.h"
#include "runtime/BundleReader.h"
#include "runtime/host/HostExecutor.h"
#include "runtime/host/Kernels.h"
#include "tests/cudasim/KernelLibrary.h"
#include "tests/cudasim/SimExecutor.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

using namespace snug;
using ir::Attribute;
using ir::DType;
using ir::TensorType;

namespace {

/// Every dtype of core/DTypes.def, in enum order.
std::vector<DType> allTypes() {
  std::vector<DType> types;
  for (const DTypeInfo *info = dtypesBegin(); info != dtypesEnd(); ++info)
    types.push_back(info->type);
  return types;
}
const std::vector<DType> kAllTypes = allTypes();

/// The special values of `type`, as its elements' bytes.
std::vector<uint8_t> specialValues(DType type) {
  uint8_t code = toBundleCode(type);
  size_t size = ir::getDTypeSize(type);
  std::vector<uint8_t> bytes;
  auto push = [&](auto store) {
    bytes.resize(bytes.size() + size);
    store(bytes.data() + bytes.size() - size);
  };
  if (ir::isFloatDType(type)) {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    double denormal = type == DType::F64   ? 4.9406564584124654e-324
                      : type == DType::F16 ? 5.9604644775390625e-8
                                           : 1.401298464324817e-45;
    double huge = type == DType::F64   ? 1.7976931348623157e308
                  : type == DType::F16 ? 65504.0
                                       : 3.4028234663852886e38;
    for (double v : {nan, -nan, inf, -inf, 0.0, -0.0, denormal, -denormal,
                     huge, -huge, 1e19, -1e19, 1.0, -1.0, 0.5, -0.5, 2.5,
                     -2.5, 3.0, -3.0, 20.5, 0.7, -1e-3, 300.0, -129.0})
      push([&](uint8_t *p) { rt::storeDouble(p, code, 0, v); });
    return bytes;
  }
  if (type == DType::Bool) {
    for (int64_t v : {0, 1})
      push([&](uint8_t *p) { rt::storeInt(p, code, 0, v); });
    return bytes;
  }
  // u64 takes the i64 values, stored wrapped: INT64_MIN is 2^63, -7 is
  // 2^64 - 7, -1 is its largest value.
  int bits = int(size) * 8;
  bool isUnsigned = ir::isUnsignedDType(type) && bits < 64;
  int64_t min = isUnsigned   ? 0
                : bits == 64 ? std::numeric_limits<int64_t>::min()
                             : -(int64_t(1) << (bits - 1));
  int64_t max = isUnsigned ? (int64_t(1) << bits) - 1
                : bits == 64 ? std::numeric_limits<int64_t>::max()
                             : (int64_t(1) << (bits - 1)) - 1;
  for (int64_t v : {min, min + 1, int64_t(-7), int64_t(-2), int64_t(-1),
                    int64_t(0), int64_t(1), int64_t(2), int64_t(3), int64_t(7),
                    int64_t(40), max - 1, max})
    if (v >= min && v <= max)
      push([&](uint8_t *p) { rt::storeInt(p, code, 0, v); });
  return bytes;
}

/// One node of the module and how to describe it.
struct Case {
  ir::Node *node;
  std::string what;
  std::vector<const ir::Value *> operands;
  /// The node whose folded result this one must give, when `node` is not
  /// folded itself (a snug.fused region holding it).
  const ir::Node *folds = nullptr;
};

/// Builds the module: weights, one node per case, every result an output.
class ParityModule {
public:
  ir::Module module;
  std::vector<Case> cases;

  ir::Value *weight(DType type, std::vector<int64_t> dims,
                    const std::vector<uint8_t> &bytes) {
    return module.addWeight("w" + std::to_string(weights++),
                            TensorType(type, dims), bytes);
  }
  void add(ir::OpCode op, std::vector<ir::Value *> operands, TensorType result,
           ir::AttributeMap attrs, std::string what) {
    ir::Node *node = module.addNode(op, operands, {result}, std::move(attrs));
    node->getResult(0)->setName("r" + std::to_string(cases.size()));
    cases.push_back({node, std::move(what), {operands.begin(), operands.end()}});
  }
  /// `op` as the one op of a snug.fused body over `operand`: the case must
  /// give what the previous case (the same op as a node) folds to.
  void addRegion(ir::OpCode op, ir::Value *operand, TensorType result,
                 ir::AttributeMap attrs, std::string what) {
    const ir::Node *node = cases.back().node;
    ir::Node *fused = module.addNode(ir::OpCode::SnugFused, {operand}, {result});
    ir::Region &body = fused->createBody();
    ir::Node *inner = body.addNode(op, {body.addArgument(operand->getType())},
                                   {result}, std::move(attrs));
    body.setYield({inner->getResult(0)});
    fused->getResult(0)->setName("r" + std::to_string(cases.size()));
    cases.push_back({fused, std::move(what), {operand}, node});
  }
  void finish() {
    std::vector<ir::Value *> outputs;
    for (const Case &c : cases)
      outputs.push_back(c.node->getResult(0));
    module.setOutputs(outputs);
  }

private:
  unsigned weights = 0;
};

/// `values` (n elements of `size` bytes) as operands a (n*n, a_i repeated)
/// and b (n*n, b_j cycling): every pair, elementwise.
std::pair<std::vector<uint8_t>, std::vector<uint8_t>>
pairs(const std::vector<uint8_t> &values, size_t size) {
  size_t n = values.size() / size;
  std::vector<uint8_t> a, b;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      a.insert(a.end(), values.begin() + i * size,
               values.begin() + (i + 1) * size);
      b.insert(b.end(), values.begin() + j * size,
               values.begin() + (j + 1) * size);
    }
  return {a, b};
}

std::string dtypeName(DType type) { return ir::getDTypeName(type).str(); }

/// The op's alternative attribute sets (beyond the defaults) worth a case.
std::vector<ir::AttributeMap> attributeSets(ir::OpCode op) {
  std::vector<ir::AttributeMap> sets = {{}};
  auto f = [](float v) { return Attribute::getFloat(v); };
  switch (op) {
  case ir::OpCode::LeakyRelu: sets.push_back({{"alpha", f(0.3f)}}); break;
  case ir::OpCode::Elu: sets.push_back({{"alpha", f(0.5f)}}); break;
  case ir::OpCode::Celu: sets.push_back({{"alpha", f(2.0f)}}); break;
  case ir::OpCode::ThresholdedRelu: sets.push_back({{"alpha", f(-0.5f)}}); break;
  case ir::OpCode::HardSigmoid:
    sets.push_back({{"alpha", f(0.25f)}, {"beta", f(0.4f)}});
    break;
  case ir::OpCode::Selu:
    sets.push_back({{"alpha", f(1.5f)}, {"gamma", f(2.0f)}});
    break;
  case ir::OpCode::Gelu:
    sets.push_back({{"approximate", Attribute::getString("tanh")}});
    break;
  case ir::OpCode::Mod: sets.push_back({{"fmod", Attribute::getInt(1)}}); break;
  case ir::OpCode::BitShift: // direction is required: both, no default
    sets = {{{"direction", Attribute::getString("LEFT")}},
            {{"direction", Attribute::getString("RIGHT")}}};
    break;
  case ir::OpCode::Clip:
    sets.push_back({{"min", f(-1.0f)}, {"max", f(2.0f)}});
    break;
  default: break;
  }
  return sets;
}

std::string describe(const ir::AttributeMap &attrs) {
  std::string text;
  for (const auto &entry : attrs) {
    text += text.empty() ? " {" : ", ";
    text += entry.first;
  }
  return text.empty() ? "" : text + "}";
}

/// Every elementwise op of the table and Cast, over special values.
void buildCases(ParityModule &m) {
  for (const ir::OpInfo &info : ir::getAllOps()) {
    if (!info.isElementwise())
      continue;
    for (DType type : kAllTypes) {
      if (!info.acceptsDType(type) && info.code != ir::OpCode::Where)
        continue;
      size_t size = ir::getDTypeSize(type);
      std::vector<uint8_t> values = specialValues(type);
      int64_t n = int64_t(values.size() / size);
      DType resultType =
          info.family == ir::OpFamily::Compare ? DType::Bool : type;
      std::string name = std::string(info.name) + " " + dtypeName(type);
      for (const ir::AttributeMap &attrs : attributeSets(info.code)) {
        std::string what = name + describe(attrs);
        if (info.code == ir::OpCode::Where) {
          // Where's value dtype is any; the condition is bool.
          std::vector<uint8_t> cond;
          for (int64_t i = 0; i < n; ++i)
            cond.push_back(uint8_t(i % 3 == 0));
          std::vector<uint8_t> other(values.end() - size, values.end());
          m.add(info.code,
                {m.weight(DType::Bool, {n, 1}, cond),
                 m.weight(type, {1, n}, values), m.weight(type, {}, other)},
                TensorType(type, {n, n}), attrs, what);
          continue;
        }
        if (info.code == ir::OpCode::Clip) {
          m.add(info.code, {m.weight(type, {n}, values)}, TensorType(type, {n}),
                attrs, what);
          if (!attrs.empty())
            continue;
          // Bounds as scalar operands: [-1, 2], and one absent.
          std::vector<uint8_t> lo(size), hi(size);
          rt::storeInt(lo.data(), toBundleCode(type), 0,
                       ir::isUnsignedDType(type) ? 1 : -1);
          rt::storeInt(hi.data(), toBundleCode(type), 0, 2);
          if (type == DType::Bool)
            continue;
          m.add(info.code,
                {m.weight(type, {n}, values), m.weight(type, {}, lo),
                 m.weight(type, {}, hi)},
                TensorType(type, {n}), attrs, what + " (lo, hi)");
          m.add(info.code, {m.weight(type, {n}, values), nullptr,
                            m.weight(type, {}, hi)},
                TensorType(type, {n}), attrs, what + " (-, hi)");
          continue;
        }
        if (info.minOperands == 1) {
          m.add(info.code, {m.weight(type, {n}, values)},
                TensorType(resultType, {n}), attrs, what);
          // Variadic folds: three operands too (rotated values).
          if (info.maxOperands == -1) {
            std::vector<uint8_t> b(values.begin() + size, values.end()),
                c(values.begin() + 2 * size, values.end());
            b.insert(b.end(), values.begin(), values.begin() + size);
            c.insert(c.end(), values.begin(), values.begin() + 2 * size);
            m.add(info.code,
                  {m.weight(type, {n}, values), m.weight(type, {n}, b),
                   m.weight(type, {n}, c)},
                  TensorType(resultType, {n}), attrs, what + " x3");
          } else {
            continue;
          }
        }
        if (info.minOperands > 2 || info.maxOperands == 1)
          continue;
        if (info.family == ir::OpFamily::Unary) {
          // PRelu: x and slope of x's shape, every pair.
          auto [a, b] = pairs(values, size);
          m.add(info.code,
                {m.weight(type, {n * n}, a), m.weight(type, {n * n}, b)},
                TensorType(resultType, {n * n}), attrs, what);
          continue;
        }
        // Two operands broadcast [n,1] x [1,n]: every pair.
        m.add(info.code,
              {m.weight(type, {n, 1}, values), m.weight(type, {1, n}, values)},
              TensorType(resultType, {n, n}), attrs, what + " pairs");
      }
    }
  }
  // Pow with an integer base and a float exponent (and the reverse).
  {
    std::vector<uint8_t> ints = specialValues(DType::I32);
    std::vector<uint8_t> floats = specialValues(DType::F32);
    int64_t ni = int64_t(ints.size() / 4), nf = int64_t(floats.size() / 4);
    m.add(ir::OpCode::Pow,
          {m.weight(DType::I32, {ni, 1}, ints), m.weight(DType::F32, {1, nf}, floats)},
          TensorType(DType::I32, {ni, nf}), {}, "Pow i32 ^ f32");
    m.add(ir::OpCode::Pow,
          {m.weight(DType::F32, {nf, 1}, floats), m.weight(DType::I32, {1, ni}, ints)},
          TensorType(DType::F32, {nf, ni}), {}, "Pow f32 ^ i32");
  }
  // Cast between every pair of dtypes, as a node and as the body of a
  // snug.fused region (a conversion in a body runs FusedKernel.cpp's step on
  // the host and FusedEmitter.cpp's code on the simulator: the same bits).
  for (DType from : kAllTypes)
    for (DType to : kAllTypes) {
      if (from == to)
        continue;
      std::vector<uint8_t> values = specialValues(from);
      int64_t n = int64_t(values.size() / ir::getDTypeSize(from));
      ir::Value *operand = m.weight(from, {n}, values);
      std::string what = "Cast " + dtypeName(from) + " -> " + dtypeName(to);
      ir::AttributeMap attrs = {{"to", Attribute::getString(dtypeName(to))}};
      m.add(ir::OpCode::Cast, {operand}, TensorType(to, {n}), attrs, what);
      m.addRegion(ir::OpCode::Cast, operand, TensorType(to, {n}), attrs,
                  what + " in a region");
    }
  m.finish();
}

/// The emitted source built as host C++ for the simulator.
std::string buildKernels(const std::string &source) {
  std::string error;
  std::string library = cudasim::buildKernelLibrary(
      source, "", SNUG_PARITY_CACHE, "parity", error);
  if (library.empty())
    ADD_FAILURE() << error;
  return library;
}

std::string hexOf(const uint8_t *p, size_t size) {
  std::string text = "0x";
  char digits[4];
  for (size_t i = size; i-- > 0;) {
    std::snprintf(digits, sizeof digits, "%02x", p[i]);
    text += digits;
  }
  return text;
}

/// Element `i` of a tensor of `type` for messages: value and bits.
std::string elementText(const uint8_t *data, DType type, int64_t i) {
  size_t size = ir::getDTypeSize(type);
  std::ostringstream os;
  if (ir::isFloatDType(type))
    os << rt::loadDouble(data, toBundleCode(type), i);
  else if (type == DType::U64)
    os << rt::loadAs<uint64_t>(data, toBundleCode(type), i);
  else
    os << rt::loadInt(data, toBundleCode(type), i);
  os << " (" << hexOf(data + i * size, size) << ")";
  return os.str();
}

class ScalarParityTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    state = new State;
    buildCases(state->m);
    PassManager passes;
    if (llvm::Error e = passes.addPipeline("plan-memory")) {
      state->error = toString(std::move(e));
      return;
    }
    if (llvm::Error e = passes.run(state->m.module)) {
      state->error = toString(std::move(e));
      return;
    }
    WeightsLayout layout = computeWeightsLayout(state->m.module);
    auto program = cuda::emitCuda(state->m.module, layout, cuda::CudaOptions());
    if (!program) {
      state->error = toString(program.takeError());
      return;
    }
    state->program = std::move(*program);
    std::vector<bundle::KernelImage> images;
    BundleOptions options{"plan-memory", "0.test", &state->program.plan,
                          &images};
    auto bytes = serializeBundle(state->m.module, options);
    if (!bytes) {
      state->error = toString(bytes.takeError());
      return;
    }
    if (rt::Status s = rt::parseBundle(bytes->data(), bytes->size(), "parity",
                                       state->bundle)) {
      state->error = s.getMessage();
      return;
    }
    state->kernels = buildKernels(state->program.source);
  }
  static void TearDownTestSuite() {
    delete state;
    state = nullptr;
  }

  struct State {
    ParityModule m;
    cuda::CudaProgram program;
    std::unique_ptr<rt::Bundle> bundle;
    std::string kernels;
    std::string error;
  };
  static State *state;
};
ScalarParityTest::State *ScalarParityTest::state = nullptr;

TEST_F(ScalarParityTest, FoldingHostAndSimulatorAgreeBitForBit) {
  ASSERT_TRUE(state->error.empty()) << state->error;
  ASSERT_FALSE(state->kernels.empty());
  const rt::Bundle &bundle = *state->bundle;

  // The host executor, over the whole plan.
  std::unique_ptr<rt::HostExecutor> host;
  rt::Status s = rt::HostExecutor::create(bundle, nullptr, 0, true, host);
  ASSERT_FALSE(s) << s.getMessage();
  s = host->run();
  ASSERT_FALSE(s) << s.getMessage();

  // The simulator, over the device plan.
  const bundle::DevicePlan &plan = bundle.devicePlan;
  cudasim::KernelLibrary library;
  std::string error;
  ASSERT_TRUE(library.load(state->kernels, plan.kernels, error)) << error;
  cudasim::DeviceMemory memory;
  ASSERT_TRUE(memory.allocate(plan.arenaBytes, 0xFF, bundle.getWeights(),
                              bundle.weightsSize, error))
      << error;
  cudasim::RunStats stats;
  ASSERT_TRUE(cudasim::runDevicePlan(
      plan, library, memory, cudasim::RunOptions(),
      [&](uint32_t op) { return bundle.ops[op].describe(op); }, stats, error))
      << error;

  const std::vector<Case> &cases = state->m.cases;
  ASSERT_EQ(bundle.outputs.size(), cases.size());
  unsigned reported = 0, mismatched = 0;
  int64_t elements = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case &c = cases[k];
    const ir::Node &node = *c.node;
    std::vector<OperandData> operands;
    for (const ir::Value *operand : c.operands)
      operands.push_back(operand ? OperandData(state->m.module.getWeightData(operand))
                                 : OperandData());
    auto folded = evaluateNode(c.folds ? *c.folds : node, operands);
    ASSERT_TRUE(bool(folded)) << c.what << ": " << toString(folded.takeError());
    ASSERT_TRUE(bool(*folded)) << c.what << ": not folded";
    const std::vector<uint8_t> &f = (**folded)[0];
    const rt::Location &place = bundle.outputs[k].location;
    ASSERT_EQ(place.kind, bundle::Arena) << c.what;
    ASSERT_EQ(place.bytes, f.size()) << c.what;
    const uint8_t *h = host->getArena() + place.offset;
    const uint8_t *d = memory.arena + place.offset;
    DType type = node.getResult(0)->getType().getDType();
    size_t size = ir::getDTypeSize(type);
    int64_t count = int64_t(f.size() / size);
    elements += count;
    bool caseOk = true;
    bool isFloat = ir::isFloatDType(type);
    auto isNaN = [&](const uint8_t *p, int64_t i) {
      return isFloat && std::isnan(rt::loadDouble(p, toBundleCode(type), i));
    };
    for (int64_t i = 0; i < count; ++i) {
      bool same = std::memcmp(f.data() + i * size, h + i * size, size) == 0 &&
                  std::memcmp(f.data() + i * size, d + i * size, size) == 0;
      // Which NaN an operation on two NaNs returns is unspecified (IEEE
      // 754; x86 gives the first operand's, GPUs the canonical NaN, and a
      // compiler may swap a commutative op's operands): every NaN is equal.
      if (same || (isNaN(f.data(), i) && isNaN(h, i) && isNaN(d, i)))
        continue;
      caseOk = false;
      if (reported++ < 40) {
        std::string inputs;
        for (const ir::Value *operand : c.operands) {
          if (!operand) {
            inputs += " -";
            continue;
          }
          // The operand element of result element i under broadcasting.
          const TensorType &t = operand->getType();
          const TensorType &r = node.getResult(0)->getType();
          int64_t at = 0, stride = 1, rest = i;
          std::vector<int64_t> coords(r.getRank());
          for (size_t dim = r.getRank(); dim-- > 0;) {
            coords[dim] = rest % r.getDims()[dim];
            rest /= r.getDims()[dim];
          }
          for (size_t dim = t.getRank(); dim-- > 0;) {
            size_t rd = dim + r.getRank() - t.getRank();
            if (t.getDims()[dim] != 1)
              at += coords[rd] * stride;
            stride *= t.getDims()[dim];
          }
          inputs += " " + elementText(state->m.module.getWeightData(operand).data(),
                                      t.getDType(), at);
        }
        ADD_FAILURE() << c.what << " element " << i << " of" << inputs
                      << ": folded " << elementText(f.data(), type, i)
                      << ", host " << elementText(h, type, i) << ", simulator "
                      << elementText(d, type, i);
      }
    }
    mismatched += !caseOk;
  }
  EXPECT_EQ(mismatched, 0u) << "of " << cases.size() << " cases";
  std::printf("compared %zu cases, %lld elements, three ways\n", cases.size(),
              (long long)elements);
  // The suite covers every elementwise op and every dtype its row admits.
  EXPECT_GT(cases.size(), 300u);
}

/// The same translation unit through NVRTC: ScalarOps.h, embedded in the
/// prelude, compiles verbatim for the device, every op and dtype included.
TEST_F(ScalarParityTest, EmittedKernelsCompileWithNvrtc) {
  ASSERT_TRUE(state->error.empty()) << state->error;
  if (!cuda::isNvrtcAvailable())
    GTEST_SKIP() << "NVRTC is not available";
  auto images = cuda::compileCudaProgram(state->program, {80});
  ASSERT_TRUE(bool(images)) << toString(images.takeError());
  EXPECT_FALSE(images->empty());
}

/// ElementwiseExpr.h chains ops in one kernel (what a fused region does):
/// Sub(Add(a, b), a) on f16, the intermediate rounded to f16 by
/// roundTripExpr, run on the simulator, gives what the two nodes give one by
/// one (folded); without the rounding, (1 + -0.001) - 1 would keep float's
/// digits.
TEST_F(ScalarParityTest, ChainedCallsMatchTheNodesOneByOne) {
  ASSERT_TRUE(state->error.empty()) << state->error;
  std::vector<uint8_t> values = specialValues(DType::F16);
  auto [a, b] = pairs(values, 2);
  int64_t n = int64_t(a.size() / 2);
  ir::Module module;
  ir::Value *wa = module.addWeight("a", TensorType(DType::F16, {n}), a);
  ir::Value *wb = module.addWeight("b", TensorType(DType::F16, {n}), b);
  ir::Node *add = module.addNode(ir::OpCode::Add, {wa, wb},
                                 {TensorType(DType::F16, {n})});
  ir::Node *sub = module.addNode(ir::OpCode::Sub, {add->getResult(0), wa},
                                 {TensorType(DType::F16, {n})});
  auto sum = evaluateNode(*add, {OperandData(a), OperandData(b)});
  ASSERT_TRUE(sum && *sum);
  auto expected = evaluateNode(*sub, {OperandData((**sum)[0]), OperandData(a)});
  ASSERT_TRUE(expected && *expected);

  std::string type = cuda::elementwiseComputeType(ir::OpCode::Add,
                                                  {DType::F16, DType::F16});
  EXPECT_EQ(type, "float");
  auto first = cuda::buildElementwiseCode(ir::OpCode::Add, {}, {"x0", "x1"},
                                          {DType::F16, DType::F16}, "t");
  ASSERT_TRUE(bool(first)) << toString(first.takeError());
  auto second = cuda::buildElementwiseCode(
      ir::OpCode::Sub, {}, {cuda::roundTripExpr(DType::F16, "t"), "x0"},
      {DType::F16, DType::F16}, "r");
  ASSERT_TRUE(bool(second)) << toString(second.takeError());
  std::string source =
      cuda::getCudaPrelude().str() +
      "extern \"C\" __global__ void snug_chain(const snug_half *in0, "
      "const snug_half *in1, snug_half *out, int n) {\n" +
      first->setup + second->setup +
      "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; "
      "i += gridDim.x * blockDim.x) {\n"
      "    const " + type + " x0 = " + cuda::loadAsExpr(type, "in0 + i") +
      ";\n    const auto x1 = snug_load(in1 + i);\n" + first->body +
      second->body + "    snug_store(out + i, r);\n  }\n}\n"
      "extern \"C\" void snug_chain_sim(void **args) { snug_chain(*(const "
      "snug_half **)args[0], *(const snug_half **)args[1], *(snug_half "
      "**)args[2], *(int *)args[3]); }\n";
  std::string path = buildKernels(source);
  ASSERT_FALSE(path.empty());
  cudasim::KernelLibrary library;
  std::string error;
  ASSERT_TRUE(library.load(path, {"snug_chain"}, error)) << error;
  std::vector<uint8_t> out(a.size(), 0xFF);
  const uint8_t *pa = a.data(), *pb = b.data();
  uint8_t *po = out.data();
  int count = int(n);
  void *args[] = {&pa, &pb, &po, &count};
  const uint32_t grid[3] = {2, 1, 1}, block[3] = {128, 1, 1};
  ASSERT_TRUE(library.launch(0, args, grid, block, 0, error)) << error;
  const std::vector<uint8_t> &want = (**expected)[0];
  for (int64_t i = 0; i < n; ++i) {
    bool bothNaN = std::isnan(rt::loadDouble(want.data(), bundle::DTypeF16, i)) &&
                   std::isnan(rt::loadDouble(out.data(), bundle::DTypeF16, i));
    if (bothNaN)
      continue;
    ASSERT_EQ(std::memcmp(want.data() + 2 * i, out.data() + 2 * i, 2), 0)
        << "element " << i << ": nodes " << elementText(want.data(), DType::F16, i)
        << ", chained " << elementText(out.data(), DType::F16, i);
  }
}

/// The special-value rules of ScalarOps.h (onnxruntime's), on the host; the
/// test above carries them to folding and the simulator.
TEST_F(ScalarParityTest, SpecialValueRules) {
  ASSERT_TRUE(state->error.empty()) << state->error;
  auto find = [&](const std::string &what) -> const Case * {
    for (const Case &c : state->m.cases)
      if (c.what == what)
        return &c;
    return nullptr;
  };
  auto result = [&](const Case &c) {
    std::vector<OperandData> operands;
    for (const ir::Value *operand : c.operands)
      operands.push_back(operand ? OperandData(state->m.module.getWeightData(operand))
                                 : OperandData());
    auto folded = evaluateNode(*c.node, operands);
    EXPECT_TRUE(folded && *folded);
    return folded && *folded ? (**folded)[0] : std::vector<uint8_t>();
  };
  auto floats = [](const std::vector<uint8_t> &bytes) {
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
  };
  // Inputs (f32): NaN, -NaN, Inf, -Inf, 0, -0, denormal, -denormal, ...
  const Case *relu = find("Relu f32");
  ASSERT_TRUE(relu);
  std::vector<float> r = floats(result(*relu));
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[2], INFINITY);
  EXPECT_EQ(r[3], 0.0f);
  EXPECT_TRUE(std::signbit(r[5])); // Relu(-0) = -0
  EXPECT_EQ(r[7], 0.0f);           // Relu(-denormal) = 0
  const Case *sign = find("Sign f32");
  ASSERT_TRUE(sign);
  r = floats(result(*sign));
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_FALSE(std::signbit(r[5])); // Sign(-0) = +0
  EXPECT_EQ(r[6], 1.0f);            // Sign(denormal) = 1
  const Case *thresholded = find("ThresholdedRelu f32");
  ASSERT_TRUE(thresholded);
  EXPECT_EQ(floats(result(*thresholded))[0], 0.0f); // NaN > alpha is false
  // Max pairs [n,1] x [1,n]: row 0 is NaN against everything; (1, NaN) too.
  const Case *max = find("Max f32 pairs");
  ASSERT_TRUE(max);
  r = floats(result(*max));
  int64_t n = int64_t(std::sqrt(double(r.size())));
  EXPECT_TRUE(std::isnan(r[0 * n + 12]));  // Max(NaN, 1)
  EXPECT_TRUE(std::isnan(r[12 * n + 0]));  // Max(1, NaN)
  EXPECT_FALSE(std::signbit(r[5 * n + 4])); // Max(-0, +0): the second
  EXPECT_TRUE(std::signbit(r[4 * n + 5]));  // Max(+0, -0): the second
  // Cast f32 -> i64: NaN, ±Inf, ±1e19 are INT64_MIN; 300 -> i8 is 44.
  const Case *cast = find("Cast f32 -> i64");
  ASSERT_TRUE(cast);
  std::vector<uint8_t> bytes = result(*cast);
  std::vector<int64_t> ints(bytes.size() / 8);
  std::memcpy(ints.data(), bytes.data(), bytes.size());
  for (int index : {0, 1, 2, 3, 10, 11})
    EXPECT_EQ(ints[index], std::numeric_limits<int64_t>::min()) << index;
  EXPECT_EQ(ints[12], 1);
  const Case *narrow = find("Cast f32 -> i8");
  ASSERT_TRUE(narrow);
  bytes = result(*narrow);
  EXPECT_EQ(int8_t(bytes[23]), 44);   // 300
  EXPECT_EQ(int8_t(bytes[24]), 127);  // -129 wraps
  EXPECT_EQ(int8_t(bytes[0]), 0);     // NaN: INT32_MIN, low byte 0
  // Integer division: INT64_MIN / -1 wraps; x / 0 is 0.
  const Case *div = find("Div i64 pairs");
  ASSERT_TRUE(div);
  bytes = result(*div);
  ints.resize(bytes.size() / 8);
  std::memcpy(ints.data(), bytes.data(), bytes.size());
  int64_t m = int64_t(std::sqrt(double(ints.size())));
  // Values: INT64_MIN, INT64_MIN + 1, -7, -2, -1, 0, 1, ...
  EXPECT_EQ(ints[0 * m + 4], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ints[2 * m + 5], 0);
  EXPECT_EQ(ints[2 * m + 3], 3); // -7 / -2 truncates

  // BitShift u8 pairs, values 0, 1, 0, 1, 2, 3, 7, 40, 254, 255 (indices
  // 0-9): a left shift wraps to 8 bits, shifts past the word give 0.
  for (const Case &c : state->m.cases) {
    if (c.what != "BitShift u8 {direction} pairs")
      continue;
    bool left = c.node->getAttributes().find("direction")->second.getString() ==
                "LEFT";
    std::vector<uint8_t> data = result(c);
    ASSERT_EQ(data.size(), 100u);
    auto at = [&](int row, int col) { return int(data[row * 10 + col]); };
    EXPECT_EQ(at(9, 1), left ? 254 : 127); // 255 by 1
    EXPECT_EQ(at(8, 6), left ? 0 : 1);     // 254 by 7
    EXPECT_EQ(at(9, 6), left ? 128 : 1);   // 255 by 7
    EXPECT_EQ(at(5, 4), left ? 12 : 0);    // 3 by 2
    EXPECT_EQ(at(9, 7), 0);                // 255 by 40
    EXPECT_EQ(at(9, 9), 0);                // 255 by 255
  }

  // The same edges for every narrower signed integer, and Mod, Neg and Abs:
  // MIN / -1 wraps to MIN, x / 0 = 0, MIN % -1 = 0 (both fmod rules),
  // x % 0 = 0, Neg(MIN) = Abs(MIN) = MIN. Values (every width): MIN,
  // MIN + 1, -7, -2, -1, 0, 1, ... so MIN is index 0, -1 index 4, 0 index 5.
  for (DType type : {DType::I32, DType::I16, DType::I8}) {
    std::string name = dtypeName(type);
    uint8_t code = toBundleCode(type);
    int64_t min = type == DType::I32   ? std::numeric_limits<int32_t>::min()
                  : type == DType::I16 ? std::numeric_limits<int16_t>::min()
                                       : std::numeric_limits<int8_t>::min();
    auto element = [&](const std::vector<uint8_t> &data, int64_t i) {
      return rt::loadInt(data.data(), code, i);
    };
    int64_t count = int64_t(specialValues(type).size() / ir::getDTypeSize(type));
    for (std::string what : {"Div " + name + " pairs", "Mod " + name + " pairs",
                             "Mod " + name + " {fmod} pairs"}) {
      const Case *c = find(what);
      ASSERT_TRUE(c) << what;
      std::vector<uint8_t> data = result(*c);
      ASSERT_EQ(int64_t(data.size() / ir::getDTypeSize(type)), count * count)
          << what;
      bool isDiv = what[0] == 'D';
      EXPECT_EQ(element(data, 0 * count + 4), isDiv ? min : 0) << what;
      EXPECT_EQ(element(data, 0 * count + 5), 0) << what; // MIN op 0
      EXPECT_EQ(element(data, 2 * count + 5), 0) << what; // -7 op 0
    }
    for (std::string what : {"Neg " + name, "Abs " + name}) {
      const Case *c = find(what);
      ASSERT_TRUE(c) << what;
      EXPECT_EQ(element(result(*c), 0), min) << what;
      EXPECT_EQ(element(result(*c), 2), 7) << what;
    }
  }

  // Unsigned: wrap-around, and u64 past 2^63 compares and divides as
  // unsigned. u16 values: 0, 1, 0, 1, 2, 3, 7, 40, 65534, 65535.
  const Case *sub = find("Sub u16 pairs");
  ASSERT_TRUE(sub);
  bytes = result(*sub);
  std::vector<uint16_t> u16s(bytes.size() / 2);
  std::memcpy(u16s.data(), bytes.data(), bytes.size());
  int64_t k = int64_t(std::sqrt(double(u16s.size())));
  EXPECT_EQ(u16s[0 * k + 1], 65535); // 0 - 1
  EXPECT_EQ(u16s[9 * k + 9], 0);     // 65535 - 65535
  const Case *add = find("Add u16 pairs");
  ASSERT_TRUE(add);
  bytes = result(*add);
  std::memcpy(u16s.data(), bytes.data(), bytes.size());
  EXPECT_EQ(u16s[9 * k + 1], 0); // 65535 + 1
  // u64 values: 2^63, 2^63 + 1, 2^64 - 7, 2^64 - 2, 2^64 - 1, 0, 1, 2, 3,
  // 7, 40, 2^63 - 2, 2^63 - 1.
  auto u64s = [](const std::vector<uint8_t> &data) {
    std::vector<uint64_t> v(data.size() / 8);
    std::memcpy(v.data(), data.data(), data.size());
    return v;
  };
  const Case *udiv = find("Div u64 pairs");
  ASSERT_TRUE(udiv);
  std::vector<uint64_t> u = u64s(result(*udiv));
  k = int64_t(std::sqrt(double(u.size())));
  EXPECT_EQ(u[4 * k + 7], 9223372036854775807ull); // (2^64 - 1) / 2
  EXPECT_EQ(u[4 * k + 5], 0u);                     // x / 0
  const Case *umod = find("Mod u64 pairs");
  ASSERT_TRUE(umod);
  u = u64s(result(*umod));
  EXPECT_EQ(u[2 * k + 10], (18446744073709551615ull - 6) % 40);
  const Case *less = find("Less u64 pairs");
  ASSERT_TRUE(less);
  bytes = result(*less);
  EXPECT_EQ(bytes[4 * k + 6], 0); // 2^64 - 1 < 1 is false
  EXPECT_EQ(bytes[6 * k + 0], 1); // 1 < 2^63
  const Case *umax = find("Max u64 pairs");
  ASSERT_TRUE(umax);
  EXPECT_EQ(u64s(result(*umax))[0 * k + 12], 9223372036854775808ull);
  // Float -> unsigned: u32 through i64 (-1 -> 2^32 - 1, 1e19 -> 0), u64
  // exact up to 2^64 (f32 1e19 is 9999999980506447872), -1 wraps, NaN and
  // -1e19 are 2^63.
  const Case *tou32 = find("Cast f32 -> u32");
  ASSERT_TRUE(tou32);
  bytes = result(*tou32);
  std::vector<uint32_t> u32s(bytes.size() / 4);
  std::memcpy(u32s.data(), bytes.data(), bytes.size());
  EXPECT_EQ(u32s[13], 4294967295u);
  EXPECT_EQ(u32s[10], 0u);
  EXPECT_EQ(u32s[23], 300u);
  const Case *tou64 = find("Cast f32 -> u64");
  ASSERT_TRUE(tou64);
  u = u64s(result(*tou64));
  EXPECT_EQ(u[10], 9999999980506447872ull);
  EXPECT_EQ(u[13], 18446744073709551615ull);
  EXPECT_EQ(u[0], 9223372036854775808ull);
  EXPECT_EQ(u[11], 9223372036854775808ull);
  const Case *fromu64 = find("Cast u64 -> f64");
  ASSERT_TRUE(fromu64);
  bytes = result(*fromu64);
  double top;
  std::memcpy(&top, bytes.data() + 4 * 8, 8);
  EXPECT_EQ(top, 18446744073709551616.0); // 2^64 - 1 rounds up
}

} // namespace
