//===- Snugc.cpp - The snug compiler driver -------------------------------===//
//
// `snugc SUBCOMMAND ...`: dispatches to one function per subcommand (see
// SnugcCommands.h). Every run starts with a banner line on stderr naming the
// tool, version, git hash and target, so that stdout carries only the product
// (IR, later tables or JSON). Exit codes: 0 ok, 1 user error (a bad model,
// flag or binding), 2 internal error (a pass broke the module).
//
//===----------------------------------------------------------------------===//
#include "tools/snugc/CudaSupport.h"
#include "tools/snugc/SnugcCommands.h"
#include "tools/snugc/SnugcCommon.h"
#include "core/SignalCleanup.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#ifndef SNUG_VERSION
#define SNUG_VERSION "unknown"
#endif
#ifndef SNUG_GIT_HASH
#define SNUG_GIT_HASH "unknown"
#endif

namespace cl = llvm::cl;
using namespace snug::snugc;

llvm::ArrayRef<Command> snug::snugc::getCommands() {
  static const Command commands[] = {
      {getCompileCommand, runCompile},
      {getTrainCommand, runTrain},
      {getPlanCommand, runPlan},
      {getPlanBuffersCommand, runPlanBuffers},
  };
  return commands;
}

static void printVersion(llvm::raw_ostream &os) {
  os << "snugc " << SNUG_VERSION << " (git " << SNUG_GIT_HASH << ") target "
     << getTargetDescription() << "\n";
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // After InitLLVM, whose handlers these replace for SIGINT, SIGTERM and
  // SIGHUP: a signal removes the temporary of a product being written.
  snug::removeTemporariesOnSignals();
  cl::SetVersionPrinter(printVersion);
  // libLLVM registers its backend options at the top level; `snugc --help`
  // lists the subcommands and the generic options (help, version), not
  // them. (LLVM's own call: libLLVM is built without RTTI, so calling into
  // its Option objects from here trips UBSan's vptr check.)
  cl::HideUnrelatedOptions(llvm::ArrayRef<const cl::OptionCategory *>(),
                           *cl::TopLevelSubCommand);
  cl::ParseCommandLineOptions(argc, argv,
                              "snugc: the snug ahead-of-time compiler\n");
  printVersion(llvm::errs());
  for (const Command &command : getCommands())
    if (command.getSubCommand())
      return command.run();
  llvm::errs() << "error: no subcommand given; try 'snugc --help'\n";
  return ExitUserError;
}
