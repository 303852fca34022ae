//===- OpInfo.cpp - The op table as data ----------------------------------===//
#include "ir/OpInfo.h"


#include <algorithm>
#include <optional>
#include <vector>

#include <string>

namespace snug {
namespace ir {

using namespace op_traits;
using namespace dtype_sets;

const OpInfo *lookupOp(llvm::StringRef name) {
  // core/OpTable.cpp keeps the one name index of the table.
  std::optional<OpCode> code =
      findOpCode(std::string_view(name.data(), name.size()));
  return code ? &getOpInfo(*code) : nullptr;
}

llvm::ArrayRef<OpInfo> getAllOps() {
  return llvm::makeArrayRef(getOpTable(), getAllOpsCount());
}

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
using namespace attr_kinds;

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
#include "core/Ops.def"
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
#include "core/Ops.def"
    return result;
  }();
  return declared[size_t(op)];
}

} // namespace ir
} // namespace snug
