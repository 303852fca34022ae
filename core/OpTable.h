//===- OpTable.h - The op table as data, std-only ----------------*- C++ -*-===//
//
// Ops.def as data for every layer: an OpCode per op, its arity, the
// verifier's type family, its traits and the element types operand 0 may
// hold. The IR re-exports it (ir/OpInfo.h adds the attribute specs and
// LLVM-flavoured look-ups); the runtime keys its host kernels and the plan
// verifier's checks by OpCode through it, reading an op's name once, when a
// bundle is loaded. The OpCode values are positions in the table: they are
// never written to a bundle (the bundle names ops), so adding an op changes
// no bundle.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_OPTABLE_H
#define SNUG_CORE_OPTABLE_H

#include "core/DType.h"
#include "core/OpTraits.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace snug {

enum class OpCode : uint16_t {
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  ID,
#include "core/Ops.def"
};

/// How many ops the table has (OpCode values are 0 .. getAllOpsCount()-1).
constexpr size_t getAllOpsCount() {
  return 0
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  +1
#include "core/Ops.def"
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

/// The table's entry for `code`.
const OpInfo &getOpInfo(OpCode code);
/// The first entry of the table (getAllOpsCount() entries, in OpCode order).
const OpInfo *getOpTable();
/// The op named `name` ("Conv", "snug.fused"); nullopt for a name the table
/// does not list.
std::optional<OpCode> findOpCode(std::string_view name);

} // namespace snug

#endif // SNUG_CORE_OPTABLE_H
