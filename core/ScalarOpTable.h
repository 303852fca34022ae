//===- ScalarOpTable.h - Ops.def's elementwise ops as scalar ops -*- C++ -*-===//
//
// The mechanical link from core/Ops.def to core/ScalarOps.h: every op with
// the Elementwise trait is the struct snug::scalar::<ID> (the Conversion ops,
// Cast and snug.cast, share scalar::Cast: forEachConversionOp lists them).
// forEachScalarOp
// walks the table and calls `visitor.template visit<scalar::ID, position>`
// for each (position: its place in the table, its ir::OpCode's value), so
// the host kernel registration and the CUDA emitter's op list are derived
// from the table, never hand-listed; bindParams reads the op's ATTR lines,
// so attribute names and defaults are written once, in Ops.def. An
// Elementwise op whose struct is missing fails to compile here (a
// static_assert naming it).
//
// Std-only (Ops.def is a plain X-macro file), so the runtime can use it
// without linking ir/.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_SCALAROPTABLE_H
#define SNUG_CORE_SCALAROPTABLE_H

#include "core/OpTraits.h"
#include "core/ScalarOps.h"

#include <limits>
#include <type_traits>

namespace snug {
namespace scalar {

// Every op of the table, declared: the ones ScalarOps.h defines are
// complete types, the others stay incomplete and are skipped below.
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  struct ID;
#include "core/Ops.def"

namespace table {
// The TRAITS column evaluates with core/OpTraits.h's numbers.
using namespace op_traits;

/// Each op's position in the table (its ir::OpCode value), by ID.
namespace position {
enum : unsigned {
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  ID,
#include "core/Ops.def"
};
} // namespace position

/// Ops.def's ATTR lines as data.
enum class AttrKind { Int, Float, String, Ints, Floats, Tensor };
struct AttrSpec {
  unsigned op; // position
  const char *name;
  AttrKind kind;
  bool hasDefault;
  double number; // I(v), F(v)
  const char *text; // S("v")
};
#define I(V) true, double(V), nullptr
#define F(V) true, double(V), nullptr
#define S(V) true, 0.0, V
#define NoDefault false, 0.0, nullptr
inline constexpr AttrSpec kAttrs[] = {
#define ATTR(OP_ID, NAME, KIND, DEFAULT)                                       \
  {position::OP_ID, NAME, AttrKind::KIND, DEFAULT},
#include "core/Ops.def"
};
#undef I
#undef F
#undef S
#undef NoDefault

template <class T, class = void> struct IsDefined : std::false_type {};
template <class T>
struct IsDefined<T, decltype(void(sizeof(T)))> : std::true_type {};

template <class Op, unsigned Traits, unsigned Position, class Visitor>
void visitIfElementwise(Visitor &visitor, const char *name, const char *id) {
  if constexpr ((Traits & Elementwise) != 0) {
    static_assert(IsDefined<Op>::value,
                  "an Elementwise op of core/Ops.def has no struct of its ID "
                  "in core/ScalarOps.h");
    visitor.template visit<Op, Position>(name, id);
  }
}
} // namespace table

/// Calls visitor.visit<scalar::ID, position>(name, "ID") for every
/// Elementwise op of the table, in table order; `position` is the op's
/// place in Ops.def (its ir::OpCode value), "ID" the struct's name.
template <class Visitor> void forEachScalarOp(Visitor &visitor) {
  using namespace table;
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  visitIfElementwise<scalar::ID, (TRAITS), position::ID>(visitor, NAME, #ID);
#include "core/Ops.def"
}

/// Calls visitor.visitConversion(name) for every op of the table with the
/// Conversion trait (Cast, snug.cast), in table order; each runs scalar::Cast.
template <class Visitor> void forEachConversionOp(Visitor &visitor) {
  using namespace table;
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  if constexpr (((TRAITS) & Conversion) != 0)                                     \
    visitor.visitConversion(NAME);
#include "core/Ops.def"
}

/// The Params of the op at `Position` (struct Op) from a node's attributes,
/// by its ATTR lines: Float attributes fill f[0], f[1] in order (their
/// default when absent, NaN without one), the Int attribute i (its default
/// when absent), a String attribute i = 1 when it equals Op::kChoice.
/// `Reader` answers getFloat(name, fallback), getInt(name, fallback) and
/// stringIs(name, value).
template <class Op, unsigned Position, class Reader>
Params bindParams(const Reader &reader) {
  Params params = {{0, 0}, 0};
  int slot = 0;
  for (const table::AttrSpec &attr : table::kAttrs) {
    if (attr.op != Position)
      continue;
    switch (attr.kind) {
    case table::AttrKind::Float:
      if (slot < 2)
        params.f[slot++] = reader.getFloat(
            attr.name, attr.hasDefault ? float(attr.number)
                                       : std::numeric_limits<float>::quiet_NaN());
      break;
    case table::AttrKind::Int:
      params.i = reader.getInt(attr.name,
                               attr.hasDefault ? int64_t(attr.number) : 0);
      break;
    case table::AttrKind::String:
      params.i = Op::kChoice && reader.stringIs(attr.name, Op::kChoice) ? 1 : 0;
      break;
    default: // no elementwise op takes lists or tensors
      break;
    }
  }
  return params;
}

} // namespace scalar
} // namespace snug

#endif // SNUG_CORE_SCALAROPTABLE_H
