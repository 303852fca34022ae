//===- BundleTest.cpp - Bundle writer and reader: round trip, rejections --===//
#include "BundleV1Data.h"
#include "RuntimeTestUtil.h"

#include "runtime/BundleReader.h"
#include "runtime/host/HostExecutor.h"

#include <random>

using namespace snug;
using namespace snug::testing;

namespace {

const char *kMlp =
    "func @mlp(%x: f32[1,4] {offset = 0}, %w: f32[4,2] weight = [1.0, 0.0, "
    "0.0, 1.0, 1.0, 1.0, -1.0, 2.0], %b: f32[2] weight = [0.5, -0.5], "
    "%unused: f32[3] weight = [7.0, 7.0, 7.0]) -> f32[1,2] "
    "attributes {alignment = 64, arena = 192, lower_bound = 64} {\n"
    "  %0 = MatMul(%x, %w) : f32[1,2] {offset = 64}\n"
    "  %1 = Add(%0, %b) : f32[1,2] {offset = 128}\n"
    "  %y = LeakyRelu(%1) {alpha = 0.25} : f32[1,2] {offset = 0}\n"
    "  return %y\n"
    "}\n";

/// A fused body over a graph input and a weight (broadcast from [4]).
const char *kFused =
    "func @fused(%x: f32[1,4] {offset = 0}, %b: f32[4] weight = [1.0, 2.0, "
    "3.0, 4.0]) -> f32[1,4] attributes {arena = 128} {\n"
    "  %y = snug.fused(%x, %b) : f32[1,4] {offset = 64} loc(\"f\") {\n"
    "  ^bb(%a0: f32[1,4], %a1: f32[4]):\n"
    "    %t = Add(%a0, %a1) : f32[1,4]\n"
    "    %u = LeakyRelu(%t) {alpha = 0.5} : f32[1,4] loc(\"act\")\n"
    "    yield %u\n"
    "  }\n"
    "  return %y\n"
    "}\n";

std::unique_ptr<rt::Bundle> parse(const std::vector<uint8_t> &bytes,
                                  std::string *error = nullptr) {
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status = rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle);
  if (error)
    *error = status.getMessage();
  if (status)
    return nullptr;
  return bundle;
}

} // namespace

TEST(BundleTest, RoundTripsManifestPlanAndWeights) {
  std::vector<uint8_t> bytes = bundleOf(kMlp);
  ASSERT_FALSE(bytes.empty());
  EXPECT_EQ(std::memcmp(bytes.data(), "SNUGBNDL", 8), 0);
  std::string error;
  auto bundle = parse(bytes, &error);
  ASSERT_TRUE(bundle) << error;
  EXPECT_EQ(bundle->version, bundle::kBundleVersion);
  EXPECT_EQ(bundle->arenaSize, 192u);
  EXPECT_EQ(bundle->alignment, 64u);
  EXPECT_EQ(bundle->lowerBound, 64u);
  EXPECT_EQ(bundle->pipeline, "test-pipeline");
  EXPECT_EQ(bundle->compilerVersion, "0.test");
  EXPECT_EQ(bundle->moduleName, "mlp");
  ASSERT_EQ(bundle->inputs.size(), 1u);
  EXPECT_EQ(bundle->inputs[0].name, "x");
  EXPECT_EQ(bundle->inputs[0].location.dims, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(bundle->inputs[0].location.bytes, 16u);
  ASSERT_EQ(bundle->outputs.size(), 1u);
  EXPECT_EQ(bundle->outputs[0].name, "y");
  EXPECT_EQ(bundle->outputs[0].location.offset, 0u);
  // Only the two used weights, each on a 64-byte boundary.
  EXPECT_EQ(bundle->weightsSize, 128u);
  ASSERT_EQ(bundle->ops.size(), 3u);
  const rt::PlanOp &matmul = bundle->ops[0];
  EXPECT_EQ(matmul.opName, "MatMul");
  ASSERT_EQ(matmul.operands.size(), 2u);
  EXPECT_EQ(matmul.operands[0].kind, bundle::Arena);
  EXPECT_EQ(matmul.operands[1].kind, bundle::Weight);
  EXPECT_EQ(matmul.operands[1].offset, 0u);
  EXPECT_EQ(matmul.results[0].offset, 64u);
  EXPECT_EQ(bundle->ops[1].operands[1].offset, 64u);
  float w[8];
  std::memcpy(w, bundle->getWeights(), 32);
  EXPECT_EQ(w[7], 2.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(bundle->getWeights()) % 64, 0u);
  const rt::Attr *alpha = bundle->ops[2].getAttr("alpha");
  ASSERT_NE(alpha, nullptr);
  EXPECT_EQ(alpha->kind, bundle::AttrFloat);
  EXPECT_EQ(alpha->f, 0.25f);
}

TEST(BundleTest, AttributesOfEveryKindRoundTrip) {
  std::vector<uint8_t> bytes = bundleOf(
      "func @a(%x: f32[2] {offset = 0}) -> f32[2] attributes {arena = 64} {\n"
      "  %y = Relu(%x) {f = 0.5, fs = [1.0, 2.5], i = -3, is = [1, -2], "
      "s = \"hi\", ss = [\"a\", \"bc\"], t = dense<i64[2] [4, 5]>} : f32[2] "
      "{offset = 32}\n"
      "  return %y\n}\n");
  auto bundle = parse(bytes);
  ASSERT_TRUE(bundle);
  const rt::PlanOp &op = bundle->ops[0];
  ASSERT_EQ(op.attributes.size(), 7u);
  EXPECT_EQ(op.getAttr("f")->f, 0.5f);
  EXPECT_EQ(op.getAttr("fs")->floats, (std::vector<float>{1.0f, 2.5f}));
  EXPECT_EQ(op.getAttr("i")->i, -3);
  EXPECT_EQ(op.getAttr("is")->ints, (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(op.getAttr("s")->s, "hi");
  EXPECT_EQ(op.getAttr("ss")->strings, (std::vector<std::string>{"a", "bc"}));
  const rt::Attr *t = op.getAttr("t");
  EXPECT_EQ(t->tensorDType, bundle::DTypeI64);
  EXPECT_EQ(t->tensorDims, (std::vector<int64_t>{2}));
  EXPECT_EQ(fromBytes<int64_t>(t->tensorBytes), (std::vector<int64_t>{4, 5}));
}

TEST(BundleTest, SameModuleGivesIdenticalFiles) {
  std::vector<uint8_t> first = bundleOf(kMlp), second = bundleOf(kMlp);
  EXPECT_EQ(first, second);
  TempFile a, b;
  auto module = parseOrDie(kMlp);
  ASSERT_FALSE(static_cast<bool>(writeBundle(*module, a.path, {"p", "v"})));
  ASSERT_FALSE(static_cast<bool>(writeBundle(*module, b.path, {"p", "v"})));
  std::vector<uint8_t> fileA, fileB;
  std::unique_ptr<rt::Bundle> loaded;
  EXPECT_FALSE(rt::readBundle(a.path, loaded));
  FILE *fa = fopen(a.path.c_str(), "rb"), *fb = fopen(b.path.c_str(), "rb");
  ASSERT_TRUE(fa && fb);
  for (int c; (c = fgetc(fa)) != EOF;)
    fileA.push_back(uint8_t(c));
  for (int c; (c = fgetc(fb)) != EOF;)
    fileB.push_back(uint8_t(c));
  fclose(fa), fclose(fb);
  EXPECT_EQ(fileA, fileB);
  // The streamed file and the in-memory bytes are the same bundle.
  auto bytes = serializeBundle(*module, {"p", "v"});
  ASSERT_TRUE(static_cast<bool>(bytes));
  EXPECT_EQ(fileA, *bytes);
}

namespace {
std::vector<uint8_t> readAll(const std::string &path) {
  std::vector<uint8_t> bytes;
  if (FILE *f = fopen(path.c_str(), "rb")) {
    for (int c; (c = fgetc(f)) != EOF;)
      bytes.push_back(uint8_t(c));
    fclose(f);
  }
  return bytes;
}
} // namespace

TEST(BundleTest, ExternalWeightsFileHoldsTheEmbeddedWeightsSection) {
  auto module = parseOrDie(kMlp);
  auto embedded = parse(bundleOf(kMlp));
  ASSERT_TRUE(embedded);
  TempFile bundlePath;
  BundleOptions options{"p", "v"};
  std::string name =
      llvm::sys::path::filename(bundlePath.path).str() + ".weights";
  options.externalWeightsName = name;
  llvm::SmallString<256> weightsPath =
      llvm::sys::path::parent_path(bundlePath.path);
  llvm::sys::path::append(weightsPath, name);
  ASSERT_FALSE(static_cast<bool>(writeBundle(*module, bundlePath.path, options)));
  std::vector<uint8_t> weights = readAll(weightsPath.str().str());
  // The used weights (%w then %b, each 64-byte aligned; %unused left out).
  ASSERT_EQ(weights.size(), embedded->weightsSize);
  EXPECT_EQ(weights.size(), 128u);
  EXPECT_EQ(std::memcmp(weights.data(), embedded->getWeights(), weights.size()),
            0);
  std::unique_ptr<rt::Bundle> loaded;
  rt::Status status = rt::readBundle(bundlePath.path, loaded);
  EXPECT_FALSE(status) << status.getMessage();
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->externalWeightsPath, weightsPath.str().str());
  EXPECT_EQ(std::memcmp(loaded->getWeights(), weights.data(), weights.size()),
            0);
  loaded.reset();
  llvm::sys::fs::remove(weightsPath);
  // A bad weights file name is refused and nothing is left behind.
  TempFile other;
  options.externalWeightsName = "../w";
  llvm::Error error = writeBundle(*module, other.path, options);
  ASSERT_TRUE(static_cast<bool>(error));
  EXPECT_NE(toString(std::move(error)).find("not a plain file name"),
            std::string::npos);
  EXPECT_FALSE(llvm::sys::fs::exists(other.path));
}

TEST(BundleTest, WriterRejectsModulesWithoutAPlan) {
  auto check = [](const std::string &text, const std::string &message) {
    auto module = parseOrDie(text);
    ASSERT_TRUE(module);
    TempFile file;
    llvm::Error error = writeBundle(*module, file.path, {});
    ASSERT_TRUE(static_cast<bool>(error));
    EXPECT_NE(toString(std::move(error)).find(message), std::string::npos);
    EXPECT_FALSE(llvm::sys::fs::exists(file.path)) << "half-written bundle";
  };
  check("func @f(%x: f32[2] {offset = 0}) -> f32[2] {\n"
        "  %y = Relu(%x) : f32[2] {offset = 0}\n  return %y\n}\n",
        "no memory plan");
  check("func @f(%x: f32[2] {offset = 0}) -> f32[2] attributes {arena = 64} {\n"
        "  %y = Relu(%x) : f32[2]\n  return %y\n}\n",
        "has no arena offset");
  check("func @f(%x: f32[2] {offset = 0}) -> f32[2] attributes {arena = 64} {\n"
        "  %y = Relu(%x) : f32[2] {offset = 60}\n  return %y\n}\n",
        "lies outside the arena");
  check("func @f(%x: f32[2] {offset = 0}, %w: f32[2] weight) -> f32[2] "
        "attributes {arena = 64} {\n"
        "  %y = Add(%x, %w) : f32[2] {offset = 8}\n  return %y\n}\n",
        "elided");
  // Two values live at once on the same bytes: verify-plan's refusal.
  check("func @f(%x: f32[2] {offset = 0}) -> f32[2] attributes {arena = 64} {\n"
        "  %a = Neg(%x) : f32[2] {offset = 16}\n"
        "  %b = Exp(%x) : f32[2] {offset = 16}\n"
        "  %y = Add(%a, %b) : f32[2] {offset = 32}\n  return %y\n}\n",
        "cannot write a bundle of module 'f': the memory plan is invalid");
}

TEST(BundleTest, ReaderRejectsBadMagic) {
  std::vector<uint8_t> bytes = bundleOf(kMlp);
  bytes[0] = 'X';
  std::string error;
  EXPECT_FALSE(parse(bytes, &error));
  EXPECT_NE(error.find("bad magic"), std::string::npos) << error;
  EXPECT_NE(error.find("b.snug"), std::string::npos) << error;
}

TEST(BundleTest, ReaderRejectsNewerVersion) {
  std::vector<uint8_t> bytes = bundleOf(kMlp);
  bytes[8] = bundle::kBundleVersion + 1;
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status = rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle);
  EXPECT_EQ(status.getCode(), SNUG_ERROR_UNSUPPORTED);
  EXPECT_EQ(status.getMessage(),
            "bundle 'b.snug': format version " +
                std::to_string(bundle::kBundleVersion + 1) +
                " is newer than this runtime (which reads versions 1 to " +
                std::to_string(bundle::kBundleVersion) + ")");
  bytes[8] = 0;
  status = rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle);
  EXPECT_NE(status.getMessage().find(
                "b.snug': format version 0 is invalid (this runtime reads "
                "versions 1 to " + std::to_string(bundle::kBundleVersion) + ")"),
            std::string::npos)
      << status.getMessage();
}

namespace {
/// Runs a loaded bundle of one f32 input and one f32 output on the host.
std::vector<float> runBundle(const rt::Bundle &bundle,
                             const std::vector<float> &input) {
  std::unique_ptr<rt::HostExecutor> executor;
  rt::Status status =
      rt::HostExecutor::create(bundle, nullptr, 0, true, executor);
  EXPECT_FALSE(status) << status.getMessage();
  if (status)
    return {};
  const rt::Location &in = bundle.inputs[0].location;
  EXPECT_EQ(in.bytes, input.size() * 4);
  std::memcpy(executor->getArena() + in.offset, input.data(), in.bytes);
  status = executor->run();
  EXPECT_FALSE(status) << status.getMessage();
  const rt::Location &out = bundle.outputs[0].location;
  std::vector<float> output(out.numElements);
  std::memcpy(output.data(), executor->getArena() + out.offset, out.bytes);
  return output;
}
} // namespace

/// A bundle written before op bodies existed (format v1: no has-body byte)
/// loads and runs as the same module written today (v3); so does v2.
TEST(BundleTest, ReadsVersion1Bundles) {
  std::vector<uint8_t> v1(kV1MlpBundle, kV1MlpBundle + kV1MlpBundleSize);
  ASSERT_EQ(v1[8], 1);
  std::string error;
  auto old = parse(v1, &error);
  ASSERT_TRUE(old) << error;
  EXPECT_EQ(old->version, 1u);
  ASSERT_EQ(old->ops.size(), 4u);
  for (const rt::PlanOp &op : old->ops)
    EXPECT_FALSE(op.hasBody);
  // tests/lit/bundle/Inputs/mlp.ir, from which the v1 bytes were written.
  auto current = parse(bundleOf(
      "func @mlp(%x: f32[1,4] {offset = 0}, %w: f32[4,3] weight = [0.5, "
      "-1.0, 2.0, 1.0, 0.25, -0.5, -2.0, 1.5, 0.0, 0.75, 0.5, 1.0], %b: "
      "f32[3] weight = [0.1, -0.2, 0.3]) -> f32[1,3] attributes {alignment "
      "= 64, arena = 128} {\n"
      "  %h = MatMul(%x, %w) : f32[1,3] {offset = 64}\n"
      "  %a = Add(%h, %b) : f32[1,3] {offset = 64}\n"
      "  %r = Relu(%a) : f32[1,3] {offset = 0}\n"
      "  %y = Softmax(%r) {axis = -1} : f32[1,3] {offset = 64}\n"
      "  return %y\n}\n"));
  ASSERT_TRUE(current);
  EXPECT_EQ(current->version, bundle::kBundleVersion);
  std::vector<float> x = {1.0f, -2.0f, 0.5f, 3.0f};
  std::vector<float> fromOld = runBundle(*old, x);
  EXPECT_EQ(fromOld.size(), 3u);
  EXPECT_EQ(fromOld, runBundle(*current, x));
  // Version 2 changed only the device plan: a host-only v2 bundle is these
  // bytes with version 2, and reads as they do (no has-body bytes).
  std::vector<uint8_t> v2 = v1;
  v2[8] = 2;
  fixUpHeader(v2);
  auto second = parse(v2, &error);
  ASSERT_TRUE(second) << error;
  EXPECT_EQ(second->version, 2u);
  EXPECT_EQ(runBundle(*second, x), fromOld);
}

TEST(BundleTest, BodiesRoundTrip) {
  std::vector<uint8_t> bytes = bundleOf(kFused);
  EXPECT_EQ(bytes, bundleOf(kFused)) << "bundles must be byte-identical";
  std::string error;
  auto bundle = parse(bytes, &error);
  ASSERT_TRUE(bundle) << error;
  ASSERT_EQ(bundle->ops.size(), 1u);
  const rt::PlanOp &op = bundle->ops[0];
  EXPECT_EQ(op.opName, "snug.fused");
  EXPECT_EQ(op.nodeName, "f");
  ASSERT_TRUE(op.hasBody);
  const rt::PlanBody &body = op.body;
  ASSERT_EQ(body.arguments.size(), 2u);
  EXPECT_EQ(body.arguments[0].dims, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(body.arguments[1].dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(body.arguments[1].dtype, bundle::DTypeF32);
  ASSERT_EQ(body.ops.size(), 2u);
  EXPECT_EQ(body.ops[0].opName, "Add");
  EXPECT_EQ(body.ops[0].operands, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(body.ops[1].opName, "LeakyRelu");
  EXPECT_EQ(body.ops[1].nodeName, "act");
  EXPECT_EQ(body.ops[1].operands, (std::vector<uint32_t>{2}));
  ASSERT_NE(body.ops[1].getAttr("alpha"), nullptr);
  EXPECT_EQ(body.ops[1].getAttr("alpha")->f, 0.5f);
  EXPECT_EQ(body.yield, (std::vector<uint32_t>{3}));
  EXPECT_EQ(body.values.size(), 4u);
}

/// A Conv carrying an epilogue (ir/Module.h): the reader keeps its own
/// three operands apart from the extra one (the residual, here the input
/// itself), binds block argument 0 to the result, and the host runs the
/// epilogue over the conv's result: relu(2x + 0.5 + x).
TEST(BundleTest, ConvEpilogueKeepsItsOwnOperandsApart) {
  const char *text =
      "func @ep(%x: f32[1,1,1,4] {offset = 0}, %w: f32[1,1,1,1] weight = "
      "[2.0], %b: f32[1] weight = [0.5]) -> f32[1,1,1,4] attributes {arena = "
      "128} {\n"
      "  %y = Conv(%x, %w, %b, %x) {kernel_shape = [1, 1]} : f32[1,1,1,4] "
      "{offset = 64} loc(\"c\") {\n"
      "  ^bb(%a0: f32[1,1,1,4], %a1: f32[1,1,1,4]):\n"
      "    %t = Add(%a0, %a1) : f32[1,1,1,4]\n"
      "    %u = Relu(%t) : f32[1,1,1,4]\n"
      "    yield %u\n"
      "  }\n"
      "  return %y\n"
      "}\n";
  std::vector<uint8_t> bytes = bundleOf(text);
  std::string error;
  auto bundle = parse(bytes, &error);
  ASSERT_TRUE(bundle) << error;
  const rt::PlanOp &op = bundle->ops[0];
  ASSERT_TRUE(op.hasBody);
  EXPECT_EQ(op.operands.size(), 4u);
  EXPECT_EQ(op.getNumOwnOperands(), 3u);
  EXPECT_EQ(op.body.arguments.size(), 2u);
  EXPECT_EQ(runBundle(*bundle, {-3, -1, 1, 2}),
            (std::vector<float>{0, 0, 3.5f, 6.5f}));
  // Relu takes no epilogue: the same bytes under its name are refused.
  auto renamed = parse(renameOp(bytes, "Conv", "Relu"), &error);
  EXPECT_FALSE(renamed);
  EXPECT_NE(error.find("node 'c' (Relu): only snug.fused and ops that take "
                       "an epilogue have a body"),
            std::string::npos)
      << error;
}

/// A MatMul carrying an epilogue: its own operands are its two, the bias
/// and the residual are the extras, and the host runs the epilogue over the
/// product: x * w + b + x, then Relu. A body whose arguments do not match
/// the extras (the bias typed as the residual) is refused, naming the node.
TEST(BundleTest, MatMulEpilogueKeepsItsOwnOperandsApart) {
  auto text = [](const std::string &biasType) {
    return "func @ep(%x: f32[1,4] {offset = 0}, %w: f32[4,4] weight = [2.0, "
           "0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, "
           "0.0, 2.0], %b: f32[4] weight = [0.5, 0.5, -0.5, -0.5]) -> f32[1,4] "
           "attributes {arena = 128} {\n"
           "  %y = MatMul(%x, %w, %b, %x) : f32[1,4] {offset = 64} "
           "loc(\"fc\") {\n"
           "  ^bb(%a0: f32[1,4], %a1: " + biasType + ", %a2: f32[1,4]):\n"
           "    %t = Add(%a0, %a1) : f32[1,4]\n"
           "    %u = Add(%a2, %t) : f32[1,4]\n"
           "    %v = Relu(%u) : f32[1,4]\n"
           "    yield %v\n"
           "  }\n"
           "  return %y\n"
           "}\n";
  };
  std::string error;
  auto bundle = parse(bundleOf(text("f32[4]")), &error);
  ASSERT_TRUE(bundle) << error;
  const rt::PlanOp &op = bundle->ops[0];
  ASSERT_TRUE(op.hasBody);
  EXPECT_EQ(op.operands.size(), 4u);
  EXPECT_EQ(op.getNumOwnOperands(), 2u);
  EXPECT_EQ(op.body.arguments.size(), 3u);
  EXPECT_EQ(runBundle(*bundle, {-3, -1, 1, 2}),
            (std::vector<float>{0, 0, 2.5f, 5.5f}));
  // The writer writes what it is given; the reader checks the body against
  // the op's operands.
  std::vector<uint8_t> bad = bundleOf(text("f32[1,4]"));
  EXPECT_FALSE(parse(bad, &error));
  EXPECT_NE(error.find("block argument 1 does not match operand 2"),
            std::string::npos)
      << error;
}

/// What the reader checks in a body, on bodies the writer writes from
/// modules the verifier would reject, and on a crafted value index.
TEST(BundleTest, ReaderChecksBodies) {
  auto reject = [](const std::vector<uint8_t> &bytes,
                   const std::string &message) {
    std::string error;
    EXPECT_FALSE(parse(bytes, &error)) << message;
    EXPECT_NE(error.find(message), std::string::npos) << error;
    EXPECT_NE(error.find("b.snug"), std::string::npos) << error;
  };
  auto written = [](const std::string &argumentType,
                    const std::string &bodyType, const std::string &resultB) {
    std::string text =
        "func @f(%x: f32[2,3] {offset = 0}, %y: f32[3] {offset = 64}) -> "
        "(f32[2,3], " + resultB + ") attributes {arena = 256} {\n"
        "  %0, %1 = snug.fused(%x, %y) : f32[2,3] {offset = 128}, " + resultB +
        " {offset = 192} {\n"
        "  ^bb(%a: f32[2,3], %b: " + argumentType + "):\n"
        "    %t = Neg(%b) : " + bodyType + "\n"
        "    yield %a, %t\n"
        "  }\n"
        "  return %0, %1\n}\n";
    return bundleOf(text);
  };
  reject(written("f32[4]", "f32[4]", "f32[2,3]"),
         "op #0 (snug.fused) block argument 1 does not match operand 1");
  reject(written("f32[3]", "f32[3]", "f32[2,3]"),
         "op #0 (snug.fused): yield value 1 is undefined or does not match "
         "result 1");
  reject(written("f32[3]", "f32[3]", "f32[3]"),
         "op #0 (snug.fused): results of a body differ in shape");
  reject(written("f32[3]", "f32[5,3]", "f32[2,3]"),
         "op #0 (snug.fused): yield value 1 is undefined or does not match");
  reject(bundleOf("func @f(%x: f32[2,3] {offset = 0}) -> f32[2,3] "
                  "attributes {arena = 128} {\n"
                  "  %0 = snug.fused(%x) : f32[2,3] {offset = 64} {\n"
                  "  ^bb(%a: f32[2,3]):\n"
                  "    %t = Neg(%a) : f32[5,3]\n"
                  "    yield %a\n"
                  "  }\n"
                  "  return %0\n}\n"),
         "op #0 (snug.fused): a body value does not broadcast to the result "
         "shape");

  // A body belongs to snug.fused, and snug.fused has one.
  reject(renameOp(bundleOf(kFused), "snug.fused", "snug.fusee"),
         "node 'f' (snug.fusee): only snug.fused and ops that take an "
         "epilogue have a body");
  reject(renameOp(bundleOf("func @f(%x: f32[2] {offset = 0}) -> f32[2] "
                           "attributes {arena = 64} {\n"
                           "  %y = Reciprocal(%x) : f32[2] {offset = 32}\n"
                           "  return %y\n}\n"),
                  "Reciprocal", "snug.fused"),
         "op #0 (snug.fused): snug.fused needs a body");

  // Add's operand indices (0, 1) follow its name, node name and attribute
  // count: point one past the values defined before it.
  std::vector<uint8_t> bytes = bundleOf(kFused);
  const uint8_t add[] = {3, 0, 0, 0, 'A', 'd', 'd', 0, 0, 0, 0, 0, 0, 0, 0,
                         2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
  auto it = std::search(bytes.begin(), bytes.end(), std::begin(add),
                        std::end(add));
  ASSERT_NE(it, bytes.end());
  size_t second = size_t(it - bytes.begin()) + sizeof add - 4;
  for (uint32_t index : {2u, 7u, 0xfffffffeu}) {
    std::memcpy(bytes.data() + second, &index, 4);
    fixUpHeader(bytes);
    reject(bytes, "node 'f' (snug.fused) body op 0: operand value " +
                      std::to_string(index) + " is not defined before it");
  }
}

TEST(BundleTest, ReaderRejectsEveryTruncation) {
  std::vector<uint8_t> bytes = bundleOf(kMlp);
  ASSERT_TRUE(parse(bytes));
  for (size_t length = 0; length < bytes.size(); ++length) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + length);
    std::string error;
    EXPECT_FALSE(parse(cut, &error)) << "length " << length;
    EXPECT_NE(error.find("truncated"), std::string::npos)
        << "length " << length << ": " << error;
  }
}

TEST(BundleTest, ReaderRejectsEveryFlippedByte) {
  std::vector<uint8_t> bytes = bundleOf(kMlp);
  for (size_t at = 0; at < bytes.size(); ++at) {
    std::vector<uint8_t> flipped = bytes;
    flipped[at] ^= 0x5a;
    std::string error;
    EXPECT_FALSE(parse(flipped, &error)) << "byte " << at;
    if (at >= 32 || (at >= 12 && at < 16)) {
      EXPECT_NE(error.find("hash mismatch"), std::string::npos) << error;
    }
  }
}

/// Finds the little-endian u64 `value` after `from` in `bytes`.
static size_t findU64(const std::vector<uint8_t> &bytes, uint64_t value,
                      size_t from) {
  for (size_t at = from; at + 8 <= bytes.size(); ++at) {
    uint64_t v;
    std::memcpy(&v, bytes.data() + at, 8);
    if (v == value)
      return at;
  }
  return std::string::npos;
}

TEST(BundleTest, ReaderRejectsOutOfRangeOffsets) {
  // The MatMul result is the only location at arena offset 64 of dims
  // [1,2]: find the pattern dims(1,2) followed by offset 64 and move it.
  std::vector<uint8_t> bytes = bundleOf(kMlp);
  std::vector<uint8_t> pattern(24);
  int64_t one = 1, two = 2;
  uint64_t sixtyFour = 64;
  std::memcpy(pattern.data(), &one, 8);
  std::memcpy(pattern.data() + 8, &two, 8);
  std::memcpy(pattern.data() + 16, &sixtyFour, 8);
  auto it = std::search(bytes.begin(), bytes.end(), pattern.begin(), pattern.end());
  ASSERT_NE(it, bytes.end());
  size_t at = size_t(it - bytes.begin()) + 16;
  uint64_t past = 188; // 8 bytes at 188 end past the 192-byte arena
  std::memcpy(bytes.data() + at, &past, 8);
  fixUpHeader(bytes);
  std::string error;
  EXPECT_FALSE(parse(bytes, &error));
  EXPECT_NE(error.find("outside the arena"), std::string::npos) << error;
  // Offsets that overflow when added to the size are rejected too.
  uint64_t huge = ~uint64_t(0) - 4;
  std::memcpy(bytes.data() + at, &huge, 8);
  fixUpHeader(bytes);
  EXPECT_FALSE(parse(bytes, &error));
  EXPECT_NE(error.find("outside the arena"), std::string::npos) << error;
}

TEST(BundleTest, ReaderRejectsSectionsOutsideTheFile) {
  std::vector<uint8_t> bytes = bundleOf(kMlp);
  // Section 0's size field: make it run past the end.
  uint64_t huge = bytes.size();
  std::memcpy(bytes.data() + bundle::kHeaderSize + 16, &huge, 8);
  fixUpHeader(bytes);
  std::string error;
  EXPECT_FALSE(parse(bytes, &error));
  EXPECT_NE(error.find("outside the file"), std::string::npos) << error;
  (void)findU64;
}

TEST(BundleTest, ReadBundleNamesAMissingFile) {
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status = rt::readBundle("/nonexistent/x.snug", bundle);
  EXPECT_EQ(status.getCode(), SNUG_ERROR_IO);
  EXPECT_NE(status.getMessage().find("/nonexistent/x.snug"), std::string::npos);
}

/// Robustness: mutated bundles (with the hash fixed up so the decoders see
/// them) load or are rejected with a message, never crash. Runs under ASan
/// and UBSan in `make test`.
TEST(BundleFuzzTest, MutatedBundlesNeverCrash) {
  std::vector<uint8_t> seeds[] = {
      bundleOf(kMlp),
      bundleOf(kFused),
      bundleOf("func @c(%a: f32[2,3] {offset = 0}, %b: f32[2,3] {offset = 64})"
               " -> (f32[4,3], i64[2]) attributes {arena = 256} {\n"
               "  %0 = Concat(%a, %b) {axis = 0} : f32[4,3] {offset = 128}\n"
               "  %1 = Shape(%0) {end = 2, start = 0} : i64[2] {offset = 0}\n"
               "  %2 = Resize(%0, _, _, _) {mode = \"linear\", sizes = [4, 3], "
               "t = dense<f32[1] [1.0]>, ss = [\"a\"]} : f32[4,3] {offset = 64}\n"
               "  return %2, %1\n}\n")};
  std::mt19937 random(12345);
  int loaded = 0, rejected = 0;
  for (const std::vector<uint8_t> &seed : seeds) {
    ASSERT_FALSE(seed.empty());
    for (int round = 0; round < 300; ++round) {
      std::vector<uint8_t> bytes = seed;
      int kind = round % 4;
      if (kind == 0) { // flip a few bytes after the header
        for (int k = 0; k < 1 + round % 5; ++k)
          bytes[32 + random() % (bytes.size() - 32)] ^= uint8_t(1 + random() % 255);
      } else if (kind == 1) { // overwrite a byte with an extreme value
        size_t at = 32 + random() % (bytes.size() - 32);
        bytes[at] = (round & 8) ? 0xff : 0x80;
      } else if (kind == 2) { // truncate and claim the shorter size
        bytes.resize(32 + random() % (bytes.size() - 32));
      } else { // insert junk
        size_t at = 32 + random() % (bytes.size() - 32);
        bytes.insert(bytes.begin() + at, 1 + random() % 16, uint8_t(random()));
      }
      fixUpHeader(bytes);
      std::unique_ptr<rt::Bundle> bundle;
      rt::Status status = rt::parseBundle(bytes.data(), bytes.size(), "fuzz", bundle);
      if (status) {
        ++rejected;
        EXPECT_FALSE(status.getMessage().empty());
        EXPECT_NE(status.getMessage().find("fuzz"), std::string::npos);
      } else {
        ++loaded;
        ASSERT_TRUE(bundle);
        // What loads must also run or fail cleanly: the reader's checks
        // plus each kernel's keep every access inside the plan.
        if (bundle->arenaSize > (1u << 20) || rt::checkHostSupport(*bundle))
          continue;
        std::unique_ptr<rt::HostExecutor> executor;
        if (rt::HostExecutor::create(*bundle, nullptr, 0, true, executor))
          continue;
        (void)executor->run();
      }
    }
  }
  EXPECT_GT(rejected, 0);
  ::testing::Test::RecordProperty("loaded", loaded);
}

/// The host runs a body per element: values by hand, the weight broadcast
/// along the rows, and the result in place over its operand (the plan puts
/// both at offset 0), which is safe because each element's operands are
/// read before it is written.
TEST(BundleTest, HostRunsBodies) {
  auto outputs = runF32(kFused, {{-10.0f, -1.0f, 0.0f, 1.0f}});
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0], (std::vector<float>{-4.5f, 1.0f, 3.0f, 5.0f}));
  // The placement is made by editing the decoded plan, so that the reader's
  // aliasing rule (snug.fused is InPlace in the op table) is what is tested,
  // whatever the planner chooses.
  std::vector<uint8_t> bytes = bundleOf(
      "func @f(%x: f32[2,3] {offset = 0}) -> f32[2,3] attributes {arena = "
      "64} {\n"
      "  %n = Neg(%x) : f32[2,3] {offset = 32}\n"
      "  %y = snug.fused(%n) : f32[2,3] {offset = 0} {\n"
      "  ^bb(%a: f32[2,3]):\n"
      "    %t = Mul(%a, %a) : f32[2,3]\n"
      "    %u = Sub(%t, %a) : f32[2,3]\n"
      "    yield %u\n"
      "  }\n"
      "  return %y\n}\n");
  auto planned = parse(bytes);
  ASSERT_TRUE(planned);
  std::vector<rt::PlanOp> ops = planned->ops;
  ASSERT_EQ(ops.size(), 2u);
  ops[1].results[0].offset = ops[1].operands[0].offset;
  std::string error;
  auto inPlace = parse(withHostPlan(bytes, ops), &error);
  ASSERT_TRUE(inPlace) << error;
  // The manifest still names offset 0 for the output: read it where the
  // edited plan wrote it.
  std::unique_ptr<rt::HostExecutor> executor;
  ASSERT_FALSE(rt::HostExecutor::create(*inPlace, nullptr, 0, true, executor));
  std::vector<float> x = {1, 2, 3, -1, -2, 0.5f};
  std::memcpy(executor->getArena(), x.data(), x.size() * 4);
  ASSERT_FALSE(executor->run());
  std::vector<float> y(6);
  std::memcpy(y.data(), executor->getArena() + 32, y.size() * 4);
  // n = -x; n * n - n.
  EXPECT_EQ(y, (std::vector<float>{2, 6, 12, 0, 2, 0.75f}));
}

/// A body op the host cannot bind is refused before anything runs, naming
/// the op and the body op.
TEST(BundleTest, HostRefusesBodiesItCannotRun) {
  // Softmax is not elementwise: the IR verifier rejects it, the writer does
  // not check, and the loader's plan verifier refuses it before anything
  // runs.
  std::string error;
  EXPECT_FALSE(parse(bundleOf(
      "func @f(%x: f32[2] {offset = 0}) -> f32[2] attributes {arena = 64} {\n"
      "  %y = snug.fused(%x) : f32[2] {offset = 32} {\n"
      "  ^bb(%a: f32[2]):\n"
      "    %t = Softmax(%a) {axis = 0} : f32[2]\n"
      "    yield %t\n"
      "  }\n"
      "  return %y\n}\n"), &error));
  EXPECT_EQ(error, "bundle 'b.snug': op #0 (snug.fused): body op 0 (Softmax): "
                   "op 'Softmax' is not elementwise or a conversion");
}
