//===- OpRuleTable.h - A rule per op, from lines keyed by op ID -*- C++ -*-===//
//
// One entry per OpCode: the array behind the per-op .def tables of the
// passes (passes/analysis/CostRules.def, passes/memory/budget/BatchRules.def,
// filled at compile time by their X-macro lines) and the runtime's host
// kernels and fused-body binders (filled once, at first use). Each op's
// entry is default-constructed until a line sets it. It counts the lines that name
// each op, so that a table can static_assert that no op has two; an op
// without a line keeps the default entry, which the table's coverage test
// looks for (a line per op of core/Ops.def cannot be checked at compile time
// without a second list). Std-only, beside the op table it is keyed by.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_OPRULETABLE_H
#define SNUG_CORE_OPRULETABLE_H

#include "core/OpTable.h"

#include <array>
#include <cstddef>

namespace snug {

template <typename Rule> class OpRuleTable {
public:
  /// Records `rule` as `op`'s (a .def line).
  constexpr void set(OpCode op, Rule rule) {
    rules[size_t(op)] = rule;
    ++lines[size_t(op)];
  }

  /// `op`'s rule; the default Rule when no line named it.
  constexpr const Rule &get(OpCode op) const { return rules[size_t(op)]; }

  /// Whether every op was named by one line at most.
  constexpr bool hasNoOpTwice() const {
    for (unsigned count : lines)
      if (count > 1)
        return false;
    return true;
  }

private:
  std::array<Rule, getAllOpsCount()> rules{};
  std::array<unsigned, getAllOpsCount()> lines{};
};

} // namespace snug

#endif // SNUG_CORE_OPRULETABLE_H
