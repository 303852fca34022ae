//===- OpInfo.cpp - The op table as data ----------------------------------===//
#include "ir/OpInfo.h"

#include "llvm/ADT/StringMap.h"

#include <string>

namespace snug {
namespace ir {

using namespace op_traits;
using namespace dtype_sets;

static const OpInfo opTable[] = {
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                              \
  {OpCode::ID,     NAME,   MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS,            \
   MAX_RESULTS,    OpFamily::FAMILY,     unsigned(TRAITS), DTypeSet(DTYPES)},
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

const OpInfo &getOpInfo(OpCode code) {
  return opTable[static_cast<size_t>(code)];
}

llvm::ArrayRef<OpInfo> getAllOps() { return opTable; }

std::string dtypeSetString(DTypeSet set) {
  std::string text;
  for (unsigned i = 0; i <= unsigned(DType::Bool); ++i)
    if (set & (1u << i))
      text += (text.empty() ? "" : ", ") + getDTypeName(DType(i)).str();
  return text;
}

} // namespace ir
} // namespace snug
