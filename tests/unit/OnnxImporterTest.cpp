//===- OnnxImporterTest.cpp - Bindings and the importer's error types -----===//
#include "compiler/Pipeline.h"
#include "compiler/onnx/OnnxImporter.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace snug;

TEST(OnnxImporterTest, InputBindings) {
  auto plain = parseInputBinding("x:1x3x224x224");
  ASSERT_TRUE(bool(plain));
  EXPECT_EQ(plain->name, "x");
  EXPECT_EQ(plain->dims, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_FALSE(plain->dtype.hasValue());

  auto typed = parseInputBinding("input_ids:8x128xi64");
  ASSERT_TRUE(bool(typed));
  EXPECT_EQ(typed->dims, (std::vector<int64_t>{8, 128}));
  EXPECT_EQ(*typed->dtype, ir::DType::I64);

  // A name may itself contain ':' (ONNX names like "onnx::Conv_1").
  auto colons = parseInputBinding("onnx::x:4");
  ASSERT_TRUE(bool(colons));
  EXPECT_EQ(colons->name, "onnx::x");

  auto scalar = parseInputBinding("t:");
  ASSERT_TRUE(bool(scalar));
  EXPECT_TRUE(scalar->dims.empty());

  for (const char *bad : {"x", ":4", "x:4xq9", "x:0x3", "x:ax3"}) {
    auto binding = parseInputBinding(bad);
    EXPECT_FALSE(bool(binding)) << bad;
    if (!binding)
      llvm::consumeError(binding.takeError());
  }

  ImportOptions options;
  EXPECT_FALSE(bool(parseDimBinding("batch=8", options)));
  EXPECT_EQ(options.dims.lookup("batch"), 8);
  llvm::Error error = parseDimBinding("batch=-1", options);
  EXPECT_TRUE(bool(error));
  llvm::consumeError(std::move(error));
}

TEST(OnnxImporterTest, UnsupportedOpsAreOneStructuredError) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(
      llvm::sys::fs::createTemporaryFile("unsupported", "onnxtxt", path));
  {
    std::error_code errorCode;
    llvm::raw_fd_ostream os(path, errorCode);
    os << R"(ir_version: 8
opset_import { domain: "" version: 17 }
graph {
  name: "g"
  node { name: "a" op_type: "Unique" input: "x" output: "v" }
  node { name: "b" op_type: "NonZero" input: "v" output: "e" }
  node { name: "c" op_type: "Relu" input: "x" output: "y" }
  input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_value: 4 } } } } }
  output { name: "y" type { tensor_type { elem_type: 1 } } }
})";
  }
  auto module = importAndRunPipeline(path, ImportOptions());
  ASSERT_FALSE(bool(module));
  std::vector<std::string> ops;
  llvm::handleAllErrors(module.takeError(),
                        [&](const UnsupportedOpsError &error) {
                          for (const UnsupportedOp &op : error.getOps())
                            ops.push_back(op.opType + "@" + op.nodeName + "/" +
                                          std::to_string(op.opset));
                        });
  EXPECT_EQ(ops, (std::vector<std::string>{"Unique@a/17", "NonZero@b/17"}));
  llvm::sys::fs::remove(path);
}

TEST(OnnxImporterTest, FrozenInputsBecomeWeights) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("frozen", "onnxtxt", path));
  {
    std::error_code errorCode;
    llvm::raw_fd_ostream os(path, errorCode);
    os << R"(ir_version: 8
opset_import { domain: "" version: 13 }
graph {
  name: "g"
  node { name: "r" op_type: "Reshape" input: "x" input: "shape" output: "y" }
  input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_value: 2 } dim { dim_value: 6 } } } } }
  input { name: "shape" type { tensor_type { elem_type: 7 shape { dim { dim_value: 2 } } } } }
  output { name: "y" type { tensor_type { elem_type: 1 } } }
})";
  }
  ImportOptions options;
  auto missing = importAndRunPipeline(path, options);
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(toString(missing.takeError()).find("is not a constant"),
            std::string::npos);

  std::vector<int64_t> shape{3, -1};
  std::vector<uint8_t> bytes(16);
  std::memcpy(bytes.data(), shape.data(), 16);
  options.frozenInputs["shape"] = {ir::TensorType(ir::DType::I64, {2}), bytes};
  auto module = importAndRunPipeline(path, options);
  ASSERT_TRUE(bool(module)) << toString(module.takeError());
  EXPECT_EQ((*module)->getOutputs()[0]->getType().str(), "f32[3,4]");
  EXPECT_EQ((*module)->getInputs().size(), 1u);
  llvm::sys::fs::remove(path);
}

/// Writes `text` (a text-format ModelProto) to a temporary file; its path.
static std::string writeModel(llvm::StringRef text) {
  llvm::SmallString<128> path;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("model", "onnxtxt", path));
  std::error_code errorCode;
  llvm::raw_fd_ostream os(path, errorCode);
  os << text;
  return std::string(path);
}

/// Cast at `opset` to f16 with `round_mode` (an attribute from opset 24).
static std::string castWithRoundMode(int opset) {
  return "ir_version: 11\nopset_import { domain: \"\" version: " +
         std::to_string(opset) + R"( }
graph {
  name: "g"
  node { name: "c" op_type: "Cast" input: "x" output: "y"
         attribute { name: "to" type: INT i: 10 }
         attribute { name: "round_mode" type: STRING s: "down" } }
  input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_value: 4 } } } } }
  output { name: "y" type { tensor_type { elem_type: 10 } } }
})";
}

// Opset 24 gave Cast round_mode, which only rounds into float8e8m0 (a type
// snug refuses): accepted and dropped there, refused before it exists.
TEST(OnnxImporterTest, NewerOpsetAttributesFollowTheSchema) {
  std::string path = writeModel(castWithRoundMode(24));
  auto module = importAndRunPipeline(path, ImportOptions());
  ASSERT_TRUE(bool(module)) << toString(module.takeError());
  EXPECT_EQ((*module)->getOutputs()[0]->getType().str(), "f16[4]");
  llvm::sys::fs::remove(path);

  path = writeModel(castWithRoundMode(23));
  auto old = importAndRunPipeline(path, ImportOptions());
  ASSERT_FALSE(bool(old));
  EXPECT_NE(toString(old.takeError())
                .find("attribute 'round_mode' is not an attribute of Cast at "
                      "opset 23"),
            std::string::npos);
  llvm::sys::fs::remove(path);
}
