//===- OpInfo.cpp - Lookup in the op table --------------------------------===//
#include "ir/OpInfo.h"

#include "llvm/ADT/StringMap.h"

namespace snug {
namespace ir {

static const OpInfo opTable[] = {
#define OP(NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS, FAMILY) \
  {NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,                 \
   OpFamily::FAMILY},
#include "ir/Ops.def"
};

const OpInfo *lookupOp(llvm::StringRef name) {
  static const llvm::StringMap<const OpInfo *> index = [] {
    llvm::StringMap<const OpInfo *> map;
    for (const OpInfo &info : opTable)
      map[info.name] = &info;
    return map;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

} // namespace ir
} // namespace snug
