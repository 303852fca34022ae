//===- OnnxSchema.cpp - ONNX's schemas' attributes, opset by opset --------===//
//
// The generated table (OnnxSchemaAttrs.def) as data, indexed by op, and the
// messages the importer gives for an attribute the schema lacks.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxSchema.h"

#include "ir/OpInfo.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <cassert>

#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#include "onnx/onnx_pb.h"

namespace snug {

#define SNUG_CHECK_ONNX_TYPE(OURS, THEIRS)                                     \
  static_assert(int(OnnxAttrType::OURS) == int(onnx::AttributeProto::THEIRS),  \
                "OnnxAttrType::" #OURS " is not AttributeProto's " #THEIRS);
SNUG_CHECK_ONNX_TYPE(Undefined, UNDEFINED)
SNUG_CHECK_ONNX_TYPE(Float, FLOAT)
SNUG_CHECK_ONNX_TYPE(Int, INT)
SNUG_CHECK_ONNX_TYPE(String, STRING)
SNUG_CHECK_ONNX_TYPE(Tensor, TENSOR)
SNUG_CHECK_ONNX_TYPE(Graph, GRAPH)
SNUG_CHECK_ONNX_TYPE(Floats, FLOATS)
SNUG_CHECK_ONNX_TYPE(Ints, INTS)
SNUG_CHECK_ONNX_TYPE(Strings, STRINGS)
SNUG_CHECK_ONNX_TYPE(Tensors, TENSORS)
SNUG_CHECK_ONNX_TYPE(Graphs, GRAPHS)
SNUG_CHECK_ONNX_TYPE(SparseTensor, SPARSE_TENSOR)
SNUG_CHECK_ONNX_TYPE(SparseTensors, SPARSE_TENSORS)
SNUG_CHECK_ONNX_TYPE(TypeProto, TYPE_PROTO)
SNUG_CHECK_ONNX_TYPE(TypeProtos, TYPE_PROTOS)
#undef SNUG_CHECK_ONNX_TYPE

namespace {
struct SchemaOp {
  const char *name;
  int64_t since;
};
const SchemaOp schemaOps[] = {
#define ONNX_SCHEMA_OP(OP, SINCE) {OP, SINCE},
#include "compiler/onnx/OnnxSchemaAttrs.def"
};
const OnnxSchemaAttr schemaAttrs[] = {
#define ONNX_SCHEMA_ATTR(OP, NAME, TYPE, FIRST, LAST)                          \
  {OP, NAME, OnnxAttrType(onnx::AttributeProto::TYPE), FIRST, LAST},
#include "compiler/onnx/OnnxSchemaAttrs.def"
};
const SchemaOp legacyOps[] = {
#define ONNX_SCHEMA_LEGACY(OP, FIRST) {OP, FIRST},
#include "compiler/onnx/OnnxSchemaAttrs.def"
};
const int64_t schemaOpsets[] = {
#define ONNX_SCHEMA_OPSETS(FIRST, LAST) FIRST, LAST
#include "compiler/onnx/OnnxSchemaAttrs.def"
};

/// Per op: its first opset and its attribute lines.
struct OpEntry {
  int64_t since = 0;
  std::vector<const OnnxSchemaAttr *> attrs;
};

const llvm::StringMap<OpEntry> &getIndex() {
  static const llvm::StringMap<OpEntry> index = [] {
    llvm::StringMap<OpEntry> map;
    for (const SchemaOp &op : schemaOps)
      map[op.name].since = op.since;
    for (const OnnxSchemaAttr &attr : schemaAttrs) {
      assert(map.count(attr.op) && "an attribute line before its op line");
      map[attr.op].attrs.push_back(&attr);
    }
    return map;
  }();
  return index;
}

std::string opsetsText(int64_t first, int64_t last) {
  return first == last ? "opset " + std::to_string(first)
                       : "opsets " + std::to_string(first) + " to " +
                             std::to_string(last);
}
} // namespace

llvm::ArrayRef<OnnxSchemaAttr> getOnnxSchemaAttrs() { return schemaAttrs; }

std::pair<int64_t, int64_t> getOnnxSchemaOpsets() {
  return {schemaOpsets[0], schemaOpsets[1]};
}

std::vector<std::string> getOnnxSchemaOps() {
  std::vector<std::string> ops;
  for (const SchemaOp &op : schemaOps)
    ops.push_back(op.name);
  llvm::sort(ops);
  return ops;
}

llvm::Optional<int64_t> getOnnxSchemaSince(llvm::StringRef op) {
  auto it = getIndex().find(op);
  if (it == getIndex().end())
    return llvm::None;
  return it->second.since;
}

llvm::Optional<int64_t> getOnnxSchemaLegacy(llvm::StringRef op) {
  for (const SchemaOp &legacy : legacyOps)
    if (op == legacy.name)
      return legacy.since;
  return llvm::None;
}

const OnnxSchemaAttr *findOnnxSchemaAttr(llvm::StringRef op,
                                         llvm::StringRef name, int64_t opset) {
  auto it = getIndex().find(op);
  if (it == getIndex().end() || opset < it->second.since)
    return nullptr;
  for (const OnnxSchemaAttr *attr : it->second.attrs)
    if (name == attr->name && attr->first <= opset && opset <= attr->last)
      return attr;
  return nullptr;
}

std::string explainMissingOnnxAttr(llvm::StringRef op, llvm::StringRef name,
                                   int64_t opset) {
  if (findOnnxSchemaAttr(op, name, opset))
    return "";
  std::string text = "attribute '" + name.str() + "' is not an attribute of " +
                     op.str() + " at opset " + std::to_string(opset);
  auto it = getIndex().find(op);
  if (it == getIndex().end())
    return text + " (snug has no ONNX schema of " + op.str() + ")";
  const OpEntry &entry = it->second;
  if (opset < entry.since)
    return text + " (" + op.str() + " has no schema before opset " +
           std::to_string(entry.since) + ")";
  std::string elsewhere, takes;
  for (const OnnxSchemaAttr *attr : entry.attrs) {
    if (name == attr->name)
      elsewhere += (elsewhere.empty() ? "" : ", ") +
                   opsetsText(attr->first, attr->last);
    if (attr->first <= opset && opset <= attr->last)
      takes += (takes.empty() ? "" : ", ") + std::string(attr->name);
  }
  text += " (";
  if (!elsewhere.empty())
    text += "it is one at " + elsewhere + "; ";
  return text + op.str() +
         (takes.empty() ? " takes none)" : " takes: " + takes + ")");
}

llvm::Optional<ir::Attribute::Kind> getIrAttrKind(OnnxAttrType type) {
  using Kind = ir::Attribute::Kind;
  switch (type) {
  case OnnxAttrType::Float: return Kind::Float;
  case OnnxAttrType::Int: return Kind::Int;
  case OnnxAttrType::String: return Kind::String;
  case OnnxAttrType::Tensor: return Kind::Tensor;
  case OnnxAttrType::Floats: return Kind::Floats;
  case OnnxAttrType::Ints: return Kind::Ints;
  case OnnxAttrType::Strings: return Kind::Strings;
  default: return llvm::None;
  }
}

std::string describeOnnxAttrType(int type) {
  auto ours = OnnxAttrType(type);
  if (llvm::Optional<ir::Attribute::Kind> kind = getIrAttrKind(ours))
    return ir::describeAttributeKind(*kind).str();
  switch (ours) {
  case OnnxAttrType::Graph: return "a graph";
  case OnnxAttrType::Tensors: return "a list of tensors";
  case OnnxAttrType::Graphs: return "a list of graphs";
  case OnnxAttrType::SparseTensor: return "a sparse tensor";
  case OnnxAttrType::SparseTensors: return "a list of sparse tensors";
  case OnnxAttrType::TypeProto: return "a type";
  case OnnxAttrType::TypeProtos: return "a list of types";
  default: return "of ONNX type " + std::to_string(type);
  }
}

} // namespace snug
