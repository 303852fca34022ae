//===- IrParserFuzzer.cpp - libFuzzer target over the textual IR parser ---===//
//
// Each input is parsed as one module of snug's textual IR (ir/Parser.h). The
// parser must return a module or a `file:line:col: error:`; what parses is
// verified, and what verifies must round-trip: printing it, parsing the
// print and printing again gives the same text, and the re-parsed module
// verifies too. A crash, a sanitizer report, an error without a location
// or a round trip that changes the text is a finding (abort). Seeded with
// the `// -----` chunks of tests/lit/**/*.ir (bench/fuzz/run.sh).
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/IrFuzzSupport.h"

#include "ir/Module.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>

using namespace snug::ir;

using snug::fuzz::finding;
using snug::fuzz::printToString;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto module = parseModule(text, "fuzz.ir");
  if (!module) {
    std::string message = llvm::toString(module.takeError());
    if (llvm::StringRef(message).find("fuzz.ir:") == llvm::StringRef::npos)
      finding("a parse error that names no place", message);
    return 0;
  }
  if (llvm::Error error = verifyModule(**module)) {
    llvm::consumeError(std::move(error));
    return 0;
  }
  std::string printed = printToString(**module);
  auto reparsed = parseModule(printed, "printed.ir");
  if (!reparsed)
    finding("the print of a verified module does not parse",
            llvm::toString(reparsed.takeError()) + "\n" + printed);
  if (llvm::Error error = verifyModule(**reparsed))
    finding("the print of a verified module does not verify",
            llvm::toString(std::move(error)) + "\n" + printed);
  std::string again = printToString(**reparsed);
  if (again != printed)
    finding("print(parse(print(m))) differs from print(m)",
            "first:\n" + printed + "second:\n" + again);
  return 0;
}
