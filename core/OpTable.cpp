//===- OpTable.cpp - The op table as data ---------------------------------===//
#include "core/OpTable.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace snug {

namespace {
using namespace op_traits;
using namespace dtype_sets;

const OpInfo opTable[] = {
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                             \
  {OpCode::ID,     NAME,   MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS,            \
   MAX_RESULTS,    OpFamily::FAMILY,     unsigned(TRAITS), DTypeSet(DTYPES)},
#include "core/Ops.def"
};
} // namespace

const OpInfo &getOpInfo(OpCode code) {
  return opTable[static_cast<size_t>(code)];
}

const OpInfo *getOpTable() { return opTable; }

std::optional<OpCode> findOpCode(std::string_view name) {
  static const std::unordered_map<std::string_view, OpCode> index = [] {
    std::unordered_map<std::string_view, OpCode> map;
    for (const OpInfo &info : opTable)
      map.emplace(info.name, info.code);
    return map;
  }();
  auto it = index.find(name);
  if (it == index.end())
    return std::nullopt;
  return it->second;
}

} // namespace snug
