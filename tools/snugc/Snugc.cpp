//===- Snugc.cpp - The snug compiler driver -------------------------------===//
//
// `snugc SUBCOMMAND ...`: sets up the process, then runCommandLine()
// (CommandLine.cpp) dispatches to one function per subcommand (see
// SnugcCommands.h). Every run starts with a banner line on stderr naming the
// tool, version, git hash and target, so that stdout carries only the product
// (IR, later tables or JSON). Exit codes: 0 ok, 1 user error (a bad model,
// flag or binding), 2 internal error (a pass broke the module).
//
//===----------------------------------------------------------------------===//
#include "tools/snugc/SnugcCommands.h"
#include "core/SignalCleanup.h"

#include "llvm/Support/InitLLVM.h"

namespace cl = llvm::cl;

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // After InitLLVM, whose handlers these replace for SIGINT, SIGTERM and
  // SIGHUP: a signal removes the temporary of a product being written.
  snug::removeTemporariesOnSignals();
  cl::SetVersionPrinter(snug::snugc::printVersion);
  // libLLVM registers its backend options at the top level; `snugc --help`
  // lists the subcommands and the generic options (help, version), not
  // them. (LLVM's own call: libLLVM is built without RTTI, so calling into
  // its Option objects from here trips UBSan's vptr check.)
  cl::HideUnrelatedOptions(llvm::ArrayRef<const cl::OptionCategory *>(),
                           *cl::TopLevelSubCommand);
  // A flag error exits with status 1 from inside the parser.
  return snug::snugc::runCommandLine(argc, argv, nullptr);
}
