//===- ScalarOpTable.h - The op table's elementwise ops, as scalar ops -*- C++ -*-===//
//
// The mechanical link from ir/Ops.def to runtime/ScalarOps.h: every op with
// the Elementwise trait is the struct snug::scalar::<ID>. forEachScalarOp
// walks the table and calls `visitor.template visit<scalar::ID>(...)` for
// each with its name, its ID (the struct's name) and its position in the table, which is its ir::OpCode's value),
// so the host kernel registration and the CUDA emitter's op list are
// derived from the table, never hand-listed. An Elementwise op whose struct
// is missing fails to compile here (a static_assert naming it).
//
// Std-only (Ops.def is a plain X-macro file), so the runtime can use it
// without linking ir/.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_SCALAROPTABLE_H
#define SNUG_RUNTIME_SCALAROPTABLE_H

#include "runtime/ScalarOps.h"

#include <type_traits>

namespace snug {
namespace scalar {

// Every op of the table, declared: the ones ScalarOps.h defines are
// complete types, the others stay incomplete and are skipped below.
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  struct ID;
#include "ir/Ops.def"

namespace table {
// The trait names of Ops.def's TRAITS column, as ir/OpInfo.h numbers them,
// so the column can be evaluated without ir/.
enum : unsigned {
  None = 0,
  Elementwise = 1u << 0,
  InPlace = 1u << 1,
  View = 1u << 2,
  Commutative = 1u << 3,
  SideEffects = 1u << 4,
  NoFold = 1u << 5,
};

template <class T, class = void> struct IsDefined : std::false_type {};
template <class T>
struct IsDefined<T, decltype(void(sizeof(T)))> : std::true_type {};

template <class Op, unsigned Traits, class Visitor>
void visitIfElementwise(Visitor &visitor, const char *name, unsigned index,
                        const char *id) {
  if constexpr ((Traits & Elementwise) != 0) {
    static_assert(IsDefined<Op>::value,
                  "an Elementwise op of ir/Ops.def has no struct of its ID "
                  "in runtime/ScalarOps.h");
    visitor.template visit<Op>(name, index, id);
  }
}
} // namespace table

/// Calls visitor.visit<scalar::ID>(name, index, "ID") for every Elementwise
/// op of the table, in table order; `index` is the op's position in Ops.def
/// (its ir::OpCode value), "ID" the struct's name.
template <class Visitor> void forEachScalarOp(Visitor &visitor) {
  using namespace table;
  unsigned index = 0;
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  visitIfElementwise<scalar::ID, (TRAITS)>(visitor, NAME, index++, #ID);
#include "ir/Ops.def"
}

} // namespace scalar
} // namespace snug

#endif // SNUG_RUNTIME_SCALAROPTABLE_H
