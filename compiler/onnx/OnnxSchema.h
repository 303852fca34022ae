//===- OnnxSchema.h - ONNX's schemas' attributes, opset by opset -*- C++ -*-===//
//
// Which attributes ONNX's own schema of an op defines at an opset, and of
// which type: OnnxSchemaAttrs.def, generated from onnx.defs.get_schema by
// tools/onnx_schema_attrs.py for every op of the default domain snug
// imports, over the opsets the importer accepts (kMinOnnxOpset to
// kMaxOnnxOpset). The importer takes an attribute on an ONNX node only when
// this table has it for the node's op at the model's opset, in its type;
// what snug then does with it is core/Ops.def's (an ATTR of the canonical op
// of that name, or an ONNX_ATTR). OnnxSchemaTest checks the two tables
// against each other. No protobuf type appears here.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_ONNX_ONNXSCHEMA_H
#define SNUG_COMPILER_ONNX_ONNXSCHEMA_H

#include "ir/Attribute.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace snug {

/// An ONNX attribute type, numbered as onnx.proto's
/// AttributeProto.AttributeType (OnnxSchema.cpp checks the numbers).
enum class OnnxAttrType : int {
  Undefined = 0,
  Float = 1,
  Int = 2,
  String = 3,
  Tensor = 4,
  Graph = 5,
  Floats = 6,
  Ints = 7,
  Strings = 8,
  Tensors = 9,
  Graphs = 10,
  SparseTensor = 11,
  SparseTensors = 12,
  TypeProto = 13,
  TypeProtos = 14,
};

/// One ONNX_SCHEMA_ATTR line: the schema of `op` defines attribute `name`
/// at opsets `first` to `last`, of type `type`.
struct OnnxSchemaAttr {
  const char *op;
  const char *name;
  OnnxAttrType type;
  int64_t first, last;
};

/// Every ONNX_SCHEMA_ATTR line, in the file's order (by op, then name).
llvm::ArrayRef<OnnxSchemaAttr> getOnnxSchemaAttrs();
/// The opsets the table was generated for (the importer's range when it is
/// up to date; OnnxSchemaTest checks).
std::pair<int64_t, int64_t> getOnnxSchemaOpsets();
/// The ops the table has, sorted.
std::vector<std::string> getOnnxSchemaOps();
/// The first opset of the table's range at which `op` has a schema; None
/// when it has none there or the table does not list it.
llvm::Optional<int64_t> getOnnxSchemaSince(llvm::StringRef op);
/// The oldest opset, before the table's range, from which `op`'s schemas
/// read as its schema at the range's first opset (ONNX_SCHEMA_LEGACY);
/// None when the one just before the range already differs.
llvm::Optional<int64_t> getOnnxSchemaLegacy(llvm::StringRef op);
/// Attribute `name` of `op`'s schema at `opset`; nullptr when that schema
/// does not define it (or `op` has none at `opset`).
const OnnxSchemaAttr *findOnnxSchemaAttr(llvm::StringRef op,
                                         llvm::StringRef name, int64_t opset);
/// Why attribute `name` cannot be on a node of `op` at `opset`, for an
/// error: "attribute 'starts' is not an attribute of Slice at opset 13
/// (it is one at opsets 7 to 9; Slice takes none)". Empty when it can.
std::string explainMissingOnnxAttr(llvm::StringRef op, llvm::StringRef name,
                                   int64_t opset);

/// The IR kind an ONNX attribute of `type` is read as; None for the types
/// the IR has no kind for (graphs, sparse tensors, lists of tensors, ...).
llvm::Optional<ir::Attribute::Kind> getIrAttrKind(OnnxAttrType type);
/// "an int", "a sparse tensor", ... for messages; "of ONNX type N" for a
/// number onnx.proto does not define.
std::string describeOnnxAttrType(int type);

} // namespace snug

#endif // SNUG_COMPILER_ONNX_ONNXSCHEMA_H
