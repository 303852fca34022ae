//===- Parser.h - Reading the textual IR ------------------------*- C++ -*-===//
//
// Reads what Printer.h writes. Errors are `file:line:col: error: message`
// followed by the source line and a caret, as LLVM's SourceMgr prints them;
// the parser stops at the first error. The parser checks syntax, names (no
// undefined or duplicate values) and that ops exist in the op table; types
// and arity are the verifier's, which can report at parsed locations through
// the SourceLocations the parser fills.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_PARSER_H
#define SNUG_IR_PARSER_H

#include "ir/Module.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace snug {
namespace ir {

/// Where each parsed node came from, as "file:line:col".
struct SourceLocations {
  llvm::DenseMap<const Node *, std::string> nodes;
  std::string module;
};

/// Parses one module from `text`; `bufferName` names it in messages.
/// `firstLine` numbers the first line of `text` (for a chunk of a split
/// file, so that messages point into the whole file).
llvm::Expected<std::unique_ptr<Module>>
parseModule(llvm::StringRef text, llvm::StringRef bufferName,
            SourceLocations *locations = nullptr, unsigned firstLine = 1);

} // namespace ir
} // namespace snug

#endif // SNUG_IR_PARSER_H
