//===- CommandLine.cpp - One snugc command line, parsed and run -----------===//
//
// The subcommand table and runCommandLine(): what snugc's main does after
// setting up the process, apart from it so that the flags fuzzer
// (tests/fuzz/SnugcFlagsFuzzer.cpp) runs command lines in one process
// exactly as snugc runs them.
//
//===----------------------------------------------------------------------===//
#include "tools/snugc/CudaSupport.h"
#include "tools/snugc/SnugcCommands.h"
#include "tools/snugc/SnugcCommon.h"
#include "tools/HelpTypo.h"

#include "llvm/Support/raw_ostream.h"

#ifndef SNUG_VERSION
#define SNUG_VERSION "unknown"
#endif
#ifndef SNUG_GIT_HASH
#define SNUG_GIT_HASH "unknown"
#endif

namespace cl = llvm::cl;

namespace snug {
namespace snugc {

llvm::ArrayRef<Command> getCommands() {
  static const Command commands[] = {
      {getCompileCommand, runCompile},
      {getTrainCommand, runTrain},
      {getPlanCommand, runPlan},
      {getPlanBuffersCommand, runPlanBuffers},
  };
  return commands;
}

void printVersion(llvm::raw_ostream &os) {
  os << "snugc " << SNUG_VERSION << " (git " << SNUG_GIT_HASH << ") target "
     << getTargetDescription() << "\n";
}

int runCommandLine(int argc, const char *const *argv,
                   llvm::raw_ostream *flagErrors) {
  resetRunState();
  llvm::StringRef typo = findHelpTypo(argc, argv);
  if (!typo.empty()) {
    (flagErrors ? *flagErrors : llvm::errs())
        << "snugc: Unknown command line argument '" << typo
        << "'.  Try: 'snugc --help'\n";
    return ExitUserError;
  }
  if (!cl::ParseCommandLineOptions(argc, argv,
                                   "snugc: the snug ahead-of-time compiler\n",
                                   flagErrors))
    return ExitUserError;
  printVersion(llvm::errs());
  for (const Command &command : getCommands())
    if (command.getSubCommand())
      return command.run();
  llvm::errs() << "error: no subcommand given; try 'snugc --help'\n";
  return ExitUserError;
}

} // namespace snugc
} // namespace snug
