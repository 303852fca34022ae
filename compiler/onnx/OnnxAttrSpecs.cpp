//===- OnnxAttrSpecs.cpp - ONNX attributes outside the canonical form -----===//
//
// The table of OnnxAttrs.def and its look-ups (OnnxAttrSpecs.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxAttrSpecs.h"

namespace snug {
namespace ir {

namespace {
using namespace attr_kinds;
// ONNX's sparse tensors have no IR kind (the importer refuses them).
const llvm::Optional<Attribute::Kind> SparseTensor = llvm::None;
// Nor its graphs (If's branches, which the importer inlines).
const llvm::Optional<Attribute::Kind> Graph = llvm::None;
constexpr OnnxAttrSpec::Handling Resolved = OnnxAttrSpec::Handling::Resolved;
constexpr OnnxAttrSpec::Handling Ignored = OnnxAttrSpec::Handling::Ignored;
const OnnxAttrSpec onnxAttrTable[] = {
#define ONNX_ATTR(ONNX_OP, NAME, KIND, HANDLING)                               \
  {ONNX_OP, NAME, KIND, HANDLING},
#include "compiler/onnx/OnnxAttrs.def"
};
} // namespace

llvm::ArrayRef<OnnxAttrSpec> getOnnxAttrSpecs() { return onnxAttrTable; }

const OnnxAttrSpec *findOnnxAttrSpec(llvm::StringRef onnxOp,
                                     llvm::StringRef name) {
  for (const OnnxAttrSpec &spec : onnxAttrTable)
    if (onnxOp == spec.onnxOp && name == spec.name)
      return &spec;
  return nullptr;
}

llvm::Optional<Attribute::Kind> getOnnxAttrKind(llvm::StringRef onnxOp,
                                                llvm::StringRef name) {
  if (const OnnxAttrSpec *spec = findOnnxAttrSpec(onnxOp, name))
    return spec->kind;
  if (const OpInfo *info = lookupOp(onnxOp))
    if (const AttrSpec *spec = findAttrSpec(info->code, name))
      return spec->kind;
  return llvm::None;
}

std::string listOnnxAttrs(llvm::StringRef onnxOp) {
  std::string text;
  if (const OpInfo *info = lookupOp(onnxOp))
    for (const AttrSpec &spec : getAttrSpecs(info->code))
      text += (text.empty() ? "" : ", ") + std::string(spec.name);
  for (const OnnxAttrSpec &spec : onnxAttrTable)
    if (onnxOp == spec.onnxOp)
      text += (text.empty() ? "" : ", ") + std::string(spec.name);
  return text.empty() ? "none" : text;
}

} // namespace ir
} // namespace snug
