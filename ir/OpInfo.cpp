//===- OpInfo.cpp - The op table as data ----------------------------------===//
#include "ir/OpInfo.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <vector>

#include <string>

namespace snug {
namespace ir {

using namespace op_traits;
using namespace dtype_sets;

static const OpInfo opTable[] = {
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  {OpCode::ID,     NAME,   MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS,            \
   MAX_RESULTS,    OpFamily::FAMILY,     unsigned(TRAITS), DTypeSet(DTYPES)},
#include "ir/Ops.def"
};

const OpInfo *lookupOp(llvm::StringRef name) {
  static const llvm::StringMap<const OpInfo *> index = [] {
    llvm::StringMap<const OpInfo *> map;
    for (const OpInfo &info : opTable)
      map[info.name] = &info;
    return map;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

const OpInfo &getOpInfo(OpCode code) {
  return opTable[static_cast<size_t>(code)];
}

llvm::ArrayRef<OpInfo> getAllOps() { return opTable; }

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

namespace {
struct DefaultValue {
  AttrSpec::Default kind;
  int64_t i;
  float f;
  const char *s;
};
constexpr DefaultValue I(int64_t value) {
  return {AttrSpec::Default::Int, value, 0, nullptr};
}
constexpr DefaultValue F(float value) {
  return {AttrSpec::Default::Float, 0, value, nullptr};
}
constexpr DefaultValue S(const char *value) {
  return {AttrSpec::Default::String, 0, 0, value};
}
constexpr DefaultValue NoDefault = {AttrSpec::Default::None, 0, 0, nullptr};
constexpr Attribute::Kind Int = Attribute::Kind::Int;
constexpr Attribute::Kind Float = Attribute::Kind::Float;
constexpr Attribute::Kind String = Attribute::Kind::String;
constexpr Attribute::Kind Ints = Attribute::Kind::Ints;
constexpr Attribute::Kind Floats = Attribute::Kind::Floats;
constexpr Attribute::Kind Tensor = Attribute::Kind::Tensor;

AttrSpec makeSpec(OpCode op, const char *name, Attribute::Kind kind,
                  DefaultValue value) {
  return {op, name, kind, value.kind, value.i, value.f, value.s};
}

/// Every ATTR line, grouped by op (stable: each op's lines keep their
/// order), with each op's range.
struct AttrIndex {
  std::vector<AttrSpec> specs;
  std::vector<std::pair<size_t, size_t>> ranges; // per OpCode: begin, end
  AttrIndex() {
    specs = {
#define ATTR(OP_ID, NAME, KIND, DEFAULT)                                       \
  makeSpec(OpCode::OP_ID, NAME, KIND, DEFAULT),
#include "ir/Ops.def"
    };
    std::stable_sort(specs.begin(), specs.end(),
                     [](const AttrSpec &a, const AttrSpec &b) {
                       return a.op < b.op;
                     });
    ranges.assign(getAllOpsCount(), {0, 0});
    for (size_t i = 0; i < specs.size(); ++i) {
      auto &range = ranges[size_t(specs[i].op)];
      if (range.first == range.second)
        range.first = i;
      range.second = i + 1;
    }
  }
};

const AttrIndex &getAttrIndex() {
  static const AttrIndex index;
  return index;
}
} // namespace

llvm::Optional<Attribute> AttrSpec::getDefault() const {
  switch (defaultKind) {
  case Default::None:
    return llvm::None;
  case Default::Int:
    return Attribute::getInt(intDefault);
  case Default::Float:
    return Attribute::getFloat(floatDefault);
  case Default::String:
    return Attribute::getString(stringDefault);
  }
  return llvm::None;
}

llvm::ArrayRef<AttrSpec> getAttrSpecs(OpCode op) {
  const AttrIndex &index = getAttrIndex();
  auto range = index.ranges[size_t(op)];
  return llvm::makeArrayRef(index.specs).slice(range.first,
                                               range.second - range.first);
}

const AttrSpec *findAttrSpec(OpCode op, llvm::StringRef name) {
  for (const AttrSpec &spec : getAttrSpecs(op))
    if (name == spec.name)
      return &spec;
  return nullptr;
}

llvm::StringRef describeAttributeKind(Attribute::Kind kind) {
  switch (kind) {
  case Attribute::Kind::Int: return "an int";
  case Attribute::Kind::Float: return "a float";
  case Attribute::Kind::String: return "a string";
  case Attribute::Kind::Ints: return "a list of ints";
  case Attribute::Kind::Floats: return "a list of floats";
  case Attribute::Kind::Strings: return "a list of strings";
  case Attribute::Kind::Tensor: return "a tensor";
  }
  return "an attribute";
}

std::string checkAttributeKind(OpCode op, llvm::StringRef name,
                               const Attribute &value) {
  const AttrSpec *spec = findAttrSpec(op, name);
  if (!spec || value.getKind() == spec->kind)
    return "";
  if (spec->kind == Attribute::Kind::Float &&
      value.getKind() == Attribute::Kind::Int)
    return "";
  // An empty list prints and parses as an int list whatever it holds.
  if (spec->kind == Attribute::Kind::Floats &&
      value.getKind() == Attribute::Kind::Ints && value.getInts().empty())
    return "";
  return "attribute '" + name.str() + "' is " +
         describeAttributeKind(value.getKind()).str() + ", expected " +
         describeAttributeKind(spec->kind).str();
}

namespace {
constexpr Attribute::Kind Strings = Attribute::Kind::Strings;
// ONNX's sparse tensors have no IR kind (the importer refuses them).
const llvm::Optional<Attribute::Kind> SparseTensor = llvm::None;
constexpr OnnxAttrSpec::Handling Resolved = OnnxAttrSpec::Handling::Resolved;
constexpr OnnxAttrSpec::Handling Ignored = OnnxAttrSpec::Handling::Ignored;
const OnnxAttrSpec onnxAttrTable[] = {
#define ONNX_ATTR(ONNX_OP, NAME, KIND, HANDLING)                               \
  {ONNX_OP, NAME, KIND, HANDLING},
#include "ir/Ops.def"
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

std::string dtypeSetString(DTypeSet set) {
  std::string text;
  for (unsigned i = 0; i <= unsigned(DType::Bool); ++i)
    if (set & (1u << i))
      text += (text.empty() ? "" : ", ") + getDTypeName(DType(i)).str();
  return text;
}

bool declaresGradientRule(OpCode op) {
  static const std::vector<bool> declared = [] {
    std::vector<bool> result(getAllOpsCount(), false);
#define GRAD(OP_ID) result[size_t(OpCode::OP_ID)] = true;
#include "ir/Ops.def"
    return result;
  }();
  return declared[size_t(op)];
}

} // namespace ir
} // namespace snug
