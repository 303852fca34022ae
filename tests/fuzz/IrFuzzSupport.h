//===- IrFuzzSupport.h - What the IR fuzz targets share ---------*- C++ -*-===//
#ifndef SNUG_TESTS_FUZZ_IRFUZZSUPPORT_H
#define SNUG_TESTS_FUZZ_IRFUZZSUPPORT_H

#include "ir/Module.h"
#include "ir/Printer.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>

namespace snug {
namespace fuzz {

/// The module's textual form.
inline std::string printToString(const ir::Module &module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  ir::printModule(module, os);
  os.flush();
  return text;
}

/// Reports a finding and aborts, so that libFuzzer keeps the input.
[[noreturn]] inline void finding(const std::string &what,
                                 const std::string &detail) {
  llvm::errs() << "finding: " << what << "\n" << detail << "\n";
  std::abort();
}

} // namespace fuzz
} // namespace snug

#endif // SNUG_TESTS_FUZZ_IRFUZZSUPPORT_H
