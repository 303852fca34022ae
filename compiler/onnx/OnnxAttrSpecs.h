//===- OnnxAttrSpecs.h - ONNX attributes outside the canonical form -*- C++ -*-===//
//
// OnnxAttrs.def as data: the ONNX attributes the importer resolves into the
// canonical node or ignores, and the kind an ONNX node must give each
// attribute (the canonical form's, core/Ops.def's ATTR lines, where the
// table keeps it). The importer checks a node's attributes against this;
// nothing after the import sees ONNX's spelling.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_ONNX_ONNXATTRSPECS_H
#define SNUG_COMPILER_ONNX_ONNXATTRSPECS_H

#include "ir/OpInfo.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace snug {
namespace ir {

/// An ONNX attribute the canonical form does not keep (an ONNX_ATTR line of
/// OnnxAttrs.def): the importer resolves it into the canonical node or ignores it.
struct OnnxAttrSpec {
  enum class Handling { Resolved, Ignored };
  const char *onnxOp;
  const char *name;
  /// None for an ONNX type the IR has no kind for (SparseTensor).
  llvm::Optional<Attribute::Kind> kind;
  Handling handling;
};

/// Every ONNX_ATTR line, in Ops.def order.
llvm::ArrayRef<OnnxAttrSpec> getOnnxAttrSpecs();
/// nullptr when OnnxAttrs.def has no ONNX_ATTR line for `name` of `onnxOp`.
const OnnxAttrSpec *findOnnxAttrSpec(llvm::StringRef onnxOp,
                                     llvm::StringRef name);
/// The kind an ONNX node of `onnxOp` must give attribute `name` in: its
/// ONNX_ATTR line's, else the ATTR line's of the table op of that name.
/// None when neither lists it, or the ONNX_ATTR line's type has no IR kind.
llvm::Optional<Attribute::Kind> getOnnxAttrKind(llvm::StringRef onnxOp,
                                                llvm::StringRef name);
/// The attribute names an ONNX node of `onnxOp` may carry, ", "-separated
/// ("none" when it takes none), for messages.
std::string listOnnxAttrs(llvm::StringRef onnxOp);

} // namespace ir
} // namespace snug

#endif // SNUG_COMPILER_ONNX_ONNXATTRSPECS_H
