//===- OpTraits.h - The trait bits of the op table ---------------*- C++ -*-===//
//
// The names of Ops.def's TRAITS column as bits, std-only so that both the
// IR (ir/OpInfo.h) and the runtime's view of the table
// (core/ScalarOpTable.h, which links no ir/) evaluate the column with the
// same numbers. Ops.def's header says what each trait promises.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_OPTRAITS_H
#define SNUG_CORE_OPTRAITS_H

namespace snug {
namespace op_traits {
enum : unsigned {
  None = 0,
  Elementwise = 1u << 0,
  InPlace = 1u << 1,
  View = 1u << 2,
  Commutative = 1u << 3,
  SideEffects = 1u << 4,
  NoFold = 1u << 5,
  HostResult = 1u << 6,
  Epilogue = 1u << 7,
  Conversion = 1u << 8,
};
} // namespace op_traits
} // namespace snug

#endif // SNUG_CORE_OPTRAITS_H
