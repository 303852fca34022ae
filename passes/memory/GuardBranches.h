//===- GuardBranches.h - The selects of an If on runtime data ---*- C++ -*-===//
//
// The importer writes each output of an If on runtime data as a select,
// Where(c, then's, else's) over a bool scalar c computed at run time; the
// guard-branches pass (GuardBranches.cpp) runs only the nodes the taken side
// needs. A pass that merged a select with the nodes of its sides into one
// kernel (fusion, epilogues) would make both sides run, so those passes
// leave selects alone.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_MEMORY_GUARDBRANCHES_H
#define SNUG_PASSES_MEMORY_GUARDBRANCHES_H

#include "ir/Module.h"

namespace snug {

/// A Where selecting between two different values on a bool scalar that is
/// not a weight (a constant condition folds away).
bool isRuntimeSelect(const ir::Node &node);

} // namespace snug

#endif // SNUG_PASSES_MEMORY_GUARDBRANCHES_H
