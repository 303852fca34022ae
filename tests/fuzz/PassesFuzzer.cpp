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

static std::string print(const ir::Module &module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  ir::printModule(module, os);
  os.flush();
  return text;
}

[[noreturn]] static void finding(const std::string &what,
                                 const std::string &detail) {
  llvm::errs() << "finding: " << what << "\n" << detail << "\n";
  std::abort();
}

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
  std::string before = print(**module);
  if (llvm::Error error = fuse.run(**module))
    finding("fuse failed on a module infer-shapes accepted",
            llvm::toString(std::move(error)) + "\n" + before);
  std::string printed = print(**module);
  auto reparsed = ir::parseModule(printed, "fused.ir");
  if (!reparsed)
    finding("the fused module's print does not parse",
            llvm::toString(reparsed.takeError()) + "\n" + printed);
  if (llvm::Error error = ir::verifyModule(**reparsed))
    finding("the fused module's print does not verify",
            llvm::toString(std::move(error)) + "\n" + printed);
  return 0;
}
