//===- OpInfo.h - The op table as data --------------------------*- C++ -*-===//
//
// The op table (Ops.def) as data: an OpCode per op, its arity, the
// verifier's type family, its traits and the element types it takes. A node
// holds its op's OpInfo, so passes ask `node.getOpCode() == OpCode::Conv` or
// `node.getOpInfo().isElementwise()` rather than comparing names; the only
// lookups by name are the parser's and the importer's.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_OPINFO_H
#define SNUG_IR_OPINFO_H

#include "ir/Attribute.h"
#include "ir/DType.h"
#include "ir/OpTraits.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace snug {
namespace ir {

enum class OpCode : uint16_t {
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  ID,
#include "ir/Ops.def"
};

/// How many ops the table has (OpCode values are 0 .. getAllOpsCount()-1).
constexpr size_t getAllOpsCount() {
  return 0
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  +1
#include "ir/Ops.def"
      ;
}

enum class OpFamily { Unary, Broadcast, Compare, Other };


/// A set of element types, one bit per DType.
using DTypeSet = uint16_t;
constexpr DTypeSet dtypeBit(DType type) {
  return DTypeSet(1u << unsigned(type));
}
namespace dtype_sets {
constexpr DTypeSet FloatTypes = dtypeBit(DType::F32) | dtypeBit(DType::F16) |
                                dtypeBit(DType::BF16) | dtypeBit(DType::F64);
constexpr DTypeSet IntTypes = dtypeBit(DType::I64) | dtypeBit(DType::I32) |
                              dtypeBit(DType::I16) | dtypeBit(DType::I8) |
                              dtypeBit(DType::U8) | dtypeBit(DType::U16) |
                              dtypeBit(DType::U32) | dtypeBit(DType::U64);
constexpr DTypeSet BoolTypes = dtypeBit(DType::Bool);
constexpr DTypeSet UnsignedTypes = dtypeBit(DType::U8) | dtypeBit(DType::U16) |
                                   dtypeBit(DType::U32) | dtypeBit(DType::U64);
constexpr DTypeSet NumericTypes = FloatTypes | IntTypes;
constexpr DTypeSet AnyType = NumericTypes | BoolTypes;
} // namespace dtype_sets

struct OpInfo {
  OpCode code;
  const char *name;
  int minOperands, maxOperands; // -1: unbounded
  int minResults, maxResults;   // -1: unbounded
  OpFamily family;
  unsigned traits;
  DTypeSet dtypes; // what operand 0 may hold

  bool has(unsigned trait) const { return (traits & trait) == trait; }
  bool isElementwise() const { return has(op_traits::Elementwise); }
  bool isView() const { return has(op_traits::View); }
  bool mayRunInPlace() const { return has(op_traits::InPlace); }
  bool isCommutative() const { return has(op_traits::Commutative); }
  bool hasSideEffects() const { return has(op_traits::SideEffects); }
  bool hasHostResult() const { return has(op_traits::HostResult); }
  bool takesEpilogue() const { return has(op_traits::Epilogue); }
  bool isConversion() const { return has(op_traits::Conversion); }
  /// What a snug.fused body may hold: Elementwise ops and conversions (the
  /// fuse pass, the verifier and the region runners agree on this set).
  bool isFusable() const { return isElementwise() || isConversion(); }
  bool isFoldable() const {
    return !has(op_traits::NoFold) && !hasSideEffects();
  }
  bool acceptsDType(DType type) const { return dtypes & dtypeBit(type); }
};

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

/// An ONNX attribute the canonical form does not keep (an ONNX_ATTR line of
/// Ops.def): the importer resolves it into the canonical node or ignores it.
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
/// nullptr when Ops.def has no ONNX_ATTR line for `name` of `onnxOp`.
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

/// True when the table has a GRAD line for `op`: passes/GradientRules*.cpp
/// registers its vector-Jacobian product (the autodiff pass).
bool declaresGradientRule(OpCode op);

/// nullptr for an op the table does not list.
const OpInfo *lookupOp(llvm::StringRef name);
/// The table's entry for `code`.
const OpInfo &getOpInfo(OpCode code);
/// Every entry, in table order.
llvm::ArrayRef<OpInfo> getAllOps();
/// "f32, f16, bf16, f64" for messages.
std::string dtypeSetString(DTypeSet set);

} // namespace ir
} // namespace snug

#endif // SNUG_IR_OPINFO_H
