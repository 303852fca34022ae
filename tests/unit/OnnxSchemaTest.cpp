//===- OnnxSchemaTest.cpp - ONNX's schemas against snug's op table --------===//
//
// The importer takes an attribute only where ONNX's schema has it
// (compiler/onnx/OnnxSchemaAttrs.def, generated from onnx; the ctest
// onnx-schema-attrs keeps it current), and hands it to what core/Ops.def says.
// These tests walk the generated table: it covers exactly the ops the
// importer imports over exactly its opsets, every schema attribute of them
// is handled (an ATTR of the canonical op of that name, in the schema's
// kind, or an ONNX_ATTR in it), and every ONNX_ATTR line is an attribute
// of some schema (not a typo).
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxAttrSpecs.h"
#include "compiler/onnx/OnnxImporter.h"
#include "compiler/onnx/OnnxSchema.h"
#include "ir/OpInfo.h"

#include "gtest/gtest.h"

#include <set>
#include <string>

namespace snug {
namespace {

TEST(OnnxSchemaTest, TableCoversTheImportersOpsets) {
  EXPECT_EQ(getOnnxSchemaOpsets(),
            std::make_pair(kMinOnnxOpset, kMaxOnnxOpset))
      << "regenerate compiler/onnx/OnnxSchemaAttrs.def "
         "(tools/onnx_schema_attrs.py)";
}

TEST(OnnxSchemaTest, TableCoversTheImportedOps) {
  std::vector<std::string> imported = getImportedOnnxOps();
  std::vector<std::string> table = getOnnxSchemaOps();
  std::set<std::string> inTable(table.begin(), table.end());
  std::set<std::string> inImporter(imported.begin(), imported.end());
  for (const std::string &op : imported)
    EXPECT_TRUE(inTable.count(op))
        << op << " is imported but has no ONNX_SCHEMA_OP line: regenerate "
                 "compiler/onnx/OnnxSchemaAttrs.def (the script takes its "
                 "ops from core/Ops.def)";
  for (const std::string &op : table)
    EXPECT_TRUE(inImporter.count(op))
        << op << " has a schema line but snug does not import it";
  for (const OnnxSchemaAttr &attr : getOnnxSchemaAttrs()) {
    auto since = getOnnxSchemaSince(attr.op);
    ASSERT_TRUE(since.hasValue()) << attr.op;
    EXPECT_LE(*since, attr.first) << attr.op << " " << attr.name;
    EXPECT_LE(attr.first, attr.last) << attr.op << " " << attr.name;
    EXPECT_LE(attr.last, kMaxOnnxOpset) << attr.op << " " << attr.name;
  }
}

/// "Constant 'sparse_value' (a sparse tensor, opsets 11 to 27)".
std::string describe(const OnnxSchemaAttr &attr) {
  return std::string(attr.op) + " '" + attr.name + "' (" +
         describeOnnxAttrType(int(attr.type)) + ", opsets " +
         std::to_string(attr.first) + " to " + std::to_string(attr.last) + ")";
}

// What the coverage test found when it was written: Constant's sparse_value
// (opset 11 on) had no line, now an ONNX_ATTR the importer refuses.
TEST(OnnxSchemaTest, EverySchemaAttributeIsHandled) {
  for (const OnnxSchemaAttr &attr : getOnnxSchemaAttrs()) {
    if (attr.last < kMinOnnxOpset || attr.first > kMaxOnnxOpset)
      continue;
    llvm::Optional<ir::Attribute::Kind> kind = getIrAttrKind(attr.type);
    if (const ir::OnnxAttrSpec *spec =
            ir::findOnnxAttrSpec(attr.op, attr.name)) {
      EXPECT_EQ(spec->kind, kind)
          << describe(attr) << ": its ONNX_ATTR line has another kind";
      continue;
    }
    const ir::OpInfo *info = ir::lookupOp(attr.op);
    const ir::AttrSpec *canonical =
        info ? ir::findAttrSpec(info->code, attr.name) : nullptr;
    if (!canonical) {
      ADD_FAILURE() << describe(attr)
                    << " is neither an ATTR of the canonical op nor an "
                       "ONNX_ATTR (compiler/onnx/OnnxAttrs.def): say how "
                       "the importer handles it";
      continue;
    }
    EXPECT_EQ(llvm::Optional<ir::Attribute::Kind>(canonical->kind), kind)
        << describe(attr)
        << ": the canonical op's ATTR has another kind (give an ONNX_ATTR)";
  }
}

TEST(OnnxSchemaTest, EveryOnnxAttrLineIsInASchema) {
  for (const ir::OnnxAttrSpec &spec : ir::getOnnxAttrSpecs()) {
    bool found = false;
    for (const OnnxSchemaAttr &attr : getOnnxSchemaAttrs())
      found |= llvm::StringRef(attr.op) == spec.onnxOp &&
               llvm::StringRef(attr.name) == spec.name;
    EXPECT_TRUE(found) << "ONNX_ATTR(\"" << spec.onnxOp << "\", \""
                       << spec.name << "\") is in no ONNX schema at opsets "
                       << kMinOnnxOpset << " to " << kMaxOnnxOpset
                       << " (a typo?)";
  }
}

TEST(OnnxSchemaTest, LookupsFollowTheOpset) {
  // Squeeze's axes: an attribute up to opset 12, an input from 13.
  ASSERT_NE(findOnnxSchemaAttr("Squeeze", "axes", 11), nullptr);
  EXPECT_EQ(findOnnxSchemaAttr("Squeeze", "axes", 11)->type,
            OnnxAttrType::Ints);
  EXPECT_EQ(findOnnxSchemaAttr("Squeeze", "axes", 13), nullptr);
  // Canonical-only attributes are in no schema.
  EXPECT_EQ(findOnnxSchemaAttr("Tile", "repeats", 13), nullptr);
  EXPECT_EQ(findOnnxSchemaAttr("Slice", "steps", 9), nullptr);
  // Before the op's first schema there is nothing.
  EXPECT_EQ(findOnnxSchemaAttr("Trilu", "upper", 13), nullptr);
  EXPECT_NE(findOnnxSchemaAttr("Trilu", "upper", 14), nullptr);
  // Attributes of opsets past 21 (the table comes from an onnx newer than
  // the venv's): Cast's round_mode from 24, Range's stash_type from 27.
  EXPECT_EQ(findOnnxSchemaAttr("Cast", "round_mode", 23), nullptr);
  ASSERT_NE(findOnnxSchemaAttr("Cast", "round_mode", 24), nullptr);
  EXPECT_EQ(findOnnxSchemaAttr("Cast", "round_mode", 24)->type,
            OnnxAttrType::String);
  EXPECT_EQ(findOnnxSchemaAttr("Range", "stash_type", 26), nullptr);
  EXPECT_NE(findOnnxSchemaAttr("Range", "stash_type", 27), nullptr);

  EXPECT_EQ(explainMissingOnnxAttr("Squeeze", "axes", 11), "");
  EXPECT_EQ(explainMissingOnnxAttr("Tile", "repeats", 13),
            "attribute 'repeats' is not an attribute of Tile at opset 13 "
            "(Tile takes none)");
  EXPECT_EQ(explainMissingOnnxAttr("Slice", "starts", 13),
            "attribute 'starts' is not an attribute of Slice at opset 13 "
            "(it is one at opsets 7 to 9; Slice takes none)");
  EXPECT_EQ(explainMissingOnnxAttr("Softmax", "axes", 17),
            "attribute 'axes' is not an attribute of Softmax at opset 17 "
            "(Softmax takes: axis)");
  EXPECT_EQ(explainMissingOnnxAttr("Trilu", "upper", 13),
            "attribute 'upper' is not an attribute of Trilu at opset 13 "
            "(Trilu has no schema before opset 14)");

  EXPECT_EQ(describeOnnxAttrType(int(OnnxAttrType::SparseTensor)),
            "a sparse tensor");
  EXPECT_EQ(describeOnnxAttrType(int(OnnxAttrType::Ints)), "a list of ints");
  EXPECT_EQ(describeOnnxAttrType(99), "of ONNX type 99");
}

// The two attribute tables agree (core/Ops.def's ATTR lines and
// OnnxAttrs.def's ONNX_ATTR lines): an ONNX_ATTR line is for an
// attribute the canonical form does not keep, or keeps in another kind
// (else the importer would drop an attribute the kernels read), each
// (op, name) is listed once.
TEST(OnnxSchemaTest, AttributeTablesAgree) {
  std::set<std::pair<std::string, std::string>> seen;
  for (const ir::OnnxAttrSpec &spec : ir::getOnnxAttrSpecs()) {
    EXPECT_TRUE(seen.insert({spec.onnxOp, spec.name}).second)
        << spec.onnxOp << " " << spec.name << " is listed twice";
    // Both only where ONNX spells the attribute in another kind than the
    // canonical form (Cast's `to`: a type number, a dtype name).
    if (const ir::OpInfo *info = ir::lookupOp(spec.onnxOp)) {
      const ir::AttrSpec *canonical = ir::findAttrSpec(info->code, spec.name);
      EXPECT_TRUE(!canonical || canonical->kind != spec.kind)
          << spec.onnxOp << " " << spec.name
          << " is both an ATTR and an ONNX_ATTR of one kind";
    }
    EXPECT_EQ(ir::getOnnxAttrKind(spec.onnxOp, spec.name), spec.kind);
  }
  for (const ir::OpInfo &info : ir::getAllOps())
    for (const ir::AttrSpec &spec : ir::getAttrSpecs(info.code)) {
      if (!ir::findOnnxAttrSpec(info.name, spec.name)) {
        EXPECT_EQ(ir::getOnnxAttrKind(info.name, spec.name), spec.kind)
            << info.name << " " << spec.name;
      }
    }
  EXPECT_EQ(ir::getOnnxAttrKind("Softmax", "axes"), llvm::None);
  // math is snug's own (--precision=tf32); ONNX's schema check refuses it
  // in a model before this list is shown.
  EXPECT_EQ(ir::listOnnxAttrs("Conv"),
            "kernel_shape, strides, pads, dilations, group, math, auto_pad");
}

} // namespace
} // namespace snug
