//===- OpInfo.h - Lookup in the op table ------------------------*- C++ -*-===//
//
// The op table (Ops.def) as data: arity and the verifier's type family.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_OPINFO_H
#define SNUG_IR_OPINFO_H

#include "llvm/ADT/StringRef.h"

namespace snug {
namespace ir {

enum class OpFamily { Unary, Broadcast, Compare, Other };

struct OpInfo {
  const char *name;
  int minOperands, maxOperands; // -1: unbounded
  int minResults, maxResults;   // -1: unbounded
  OpFamily family;
};

/// nullptr for an op the table does not list.
const OpInfo *lookupOp(llvm::StringRef name);

} // namespace ir
} // namespace snug

#endif // SNUG_IR_OPINFO_H
