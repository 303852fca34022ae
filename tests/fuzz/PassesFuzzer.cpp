//===- PassesFuzzer.cpp - libFuzzer target over the rewriting passes ------===//
//
// Each input is parsed as textual IR; what parses and verifies goes through
// infer-shapes (which makes every result type its shape function's, or
// refuses the module with an error) and then the fuse pass, with the
// verifier after each. A pass may refuse a module with an error a user can
// read; a crash, a sanitizer report, or a module that no longer verifies
// after fuse (a pass bug: "does not verify after pass") is a finding. Then
// the fused module must round-trip through the printer and the parser, as
// every module does. Seeded with the lit tests' IR chunks (bench/fuzz/run.sh),
// fuse.ir's among them.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/IrFuzzSupport.h"

#include "ir/Module.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>

using namespace snug;

using snug::fuzz::finding;
using snug::fuzz::printToString;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  auto module = ir::parseModule(text, "fuzz.ir");
  if (!module) {
    llvm::consumeError(module.takeError());
    return 0;
  }
  if (llvm::Error error = ir::verifyModule(**module)) {
    llvm::consumeError(std::move(error));
    return 0;
  }
  PassManagerOptions options;
  options.verifyEach = true;
  PassManager shapes(options), fuse(options);
  if (llvm::Error error = shapes.addPipeline("infer-shapes{update=1}"))
    finding("the pipeline does not parse", llvm::toString(std::move(error)));
  if (llvm::Error error = fuse.addPipeline("fuse"))
    finding("the pipeline does not parse", llvm::toString(std::move(error)));
  if (llvm::Error error = shapes.run(**module)) {
    llvm::consumeError(std::move(error));
    return 0;
  }
  std::string before = printToString(**module);
  if (llvm::Error error = fuse.run(**module))
    finding("fuse failed on a module infer-shapes accepted",
            llvm::toString(std::move(error)) + "\n" + before);
  std::string printed = printToString(**module);
  auto reparsed = ir::parseModule(printed, "fused.ir");
  if (!reparsed)
    finding("the fused module's print does not parse",
            llvm::toString(reparsed.takeError()) + "\n" + printed);
  if (llvm::Error error = ir::verifyModule(**reparsed))
    finding("the fused module's print does not verify",
            llvm::toString(std::move(error)) + "\n" + printed);
  return 0;
}
