//===- SnugcCommands.h - The snugc subcommands ------------------*- C++ -*-===//
//
// One cl::SubCommand getter and one run function per subcommand, each defined
// in its own file. The getters construct on first use, so options in any file
// can name their subcommand during static initialization. To add one (plan,
// plan-buffers): define both in a new file, declare them here, add a row to
// getCommands() in CommandLine.cpp and the file to tools/CMakeLists.txt; the shared
// options (SnugcCommon.cpp, `inAllCommands`) then apply to it too.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TOOLS_SNUGC_SNUGCCOMMANDS_H
#define SNUG_TOOLS_SNUGC_SNUGCCOMMANDS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"

namespace snug {
namespace snugc {

/// `snugc compile MODEL --emit=ir [-o OUT]`.
llvm::cl::SubCommand &getCompileCommand();
int runCompile();

/// `snugc train MODEL --loss=... --lr=X -o STEP.snug`: compile one
/// training step (TrainCommand.cpp).
llvm::cl::SubCommand &getTrainCommand();
int runTrain();

/// `snugc plan MODEL`: the memory report only.
llvm::cl::SubCommand &getPlanCommand();
int runPlan();

/// `snugc plan-buffers FILE.csv...`: the IR-free packer on raw problems.
llvm::cl::SubCommand &getPlanBuffersCommand();
int runPlanBuffers();

struct Command {
  llvm::cl::SubCommand &(*getSubCommand)();
  int (*run)();
};
/// Every subcommand, in --help order.
llvm::ArrayRef<Command> getCommands();

/// Parses `argv` (argv[0] the program's name), prints the banner and runs
/// the subcommand it names; returns the exit code (SnugcCommon.h).
/// `flagErrors` null: a flag error is printed to stderr and exits the
/// process with status 1, as snugc does; otherwise it is printed there and
/// returns 1, for callers that run many command lines (the flags fuzzer,
/// which resets the options in between with cl::ResetAllOptionOccurrences).
int runCommandLine(int argc, const char *const *argv,
                   llvm::raw_ostream *flagErrors);
/// The banner: tool, version, git hash and target.
void printVersion(llvm::raw_ostream &os);

/// A cl modifier that puts an option in every subcommand.
struct InAllCommands {
  template <class Opt> void apply(Opt &option) const {
    for (const Command &command : getCommands())
      option.addSubCommand(command.getSubCommand());
  }
};
inline InAllCommands inAllCommands() { return {}; }

/// A cl modifier for the options of the subcommands that plan a model
/// (compile, train and plan): planning, report and target flags.
struct InPlanningCommands {
  template <class Opt> void apply(Opt &option) const {
    option.addSubCommand(getCompileCommand());
    option.addSubCommand(getTrainCommand());
    option.addSubCommand(getPlanCommand());
  }
};

} // namespace snugc
} // namespace snug

#endif // SNUG_TOOLS_SNUGC_SNUGCCOMMANDS_H
