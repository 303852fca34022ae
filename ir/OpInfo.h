//===- OpInfo.h - The op table as data --------------------------*- C++ -*-===//
//
// The IR's view of the op table (core/OpTable.h: an OpCode per op, its
// arity, the verifier's type family, its traits and the element types it
// takes), with the attribute specs of the canonical form. A node holds its
// op's OpInfo, so passes ask `node.getOpCode() == OpCode::Conv` or
// `node.getOpInfo().isElementwise()` rather than comparing names; the only
// lookups by name are the parser's and the importer's.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_OPINFO_H
#define SNUG_IR_OPINFO_H

#include "ir/Attribute.h"
#include "core/OpTable.h"
#include "ir/DType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace snug {
namespace ir {

using snug::OpCode;
using snug::OpFamily;
using snug::OpInfo;
using snug::DTypeSet;
using snug::dtypeBit;
using snug::getAllOpsCount;
using snug::getOpInfo;
namespace dtype_sets = snug::dtype_sets;

/// One attribute of an op's canonical form (an ATTR line of Ops.def).
struct AttrSpec {
  enum class Default { None, Int, Float, String };
  OpCode op;
  const char *name;
  Attribute::Kind kind;
  Default defaultKind;
  int64_t intDefault;
  float floatDefault;
  const char *stringDefault;

  /// ONNX's default value; None for a required attribute or one without.
  llvm::Optional<Attribute> getDefault() const;
};

/// The attributes `op` declares, in Ops.def order.
llvm::ArrayRef<AttrSpec> getAttrSpecs(OpCode op);
/// nullptr when `op` declares no attribute `name`.
const AttrSpec *findAttrSpec(OpCode op, llvm::StringRef name);
/// Why `value` cannot be attribute `name` of `op` ("attribute 'axis' is a
/// float, expected an int"); empty when it can or the op does not declare
/// it. An int may stand for a float (textual IR writes `alpha = 1`), not the
/// other way round.
std::string checkAttributeKind(OpCode op, llvm::StringRef name,
                               const Attribute &value);
/// "an int", "a list of floats", ... for messages.
llvm::StringRef describeAttributeKind(Attribute::Kind kind);

/// True when the table has a GRAD line for `op`: passes/training/GradientRules*.cpp
/// registers its vector-Jacobian product (the autodiff pass).
bool declaresGradientRule(OpCode op);

/// nullptr for an op the table does not list.
const OpInfo *lookupOp(llvm::StringRef name);
/// Every entry, in table order.
llvm::ArrayRef<OpInfo> getAllOps();
/// "f32, f16, bf16, f64" for messages.
std::string dtypeSetString(DTypeSet set);

} // namespace ir
} // namespace snug

#endif // SNUG_IR_OPINFO_H
