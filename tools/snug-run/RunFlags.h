//===- RunFlags.h - The command-line flags snug-run and its kin share -*- C++ -*-===//
//
// snug-run and snug-cudasim (tests/cudasim) take the same bundle, input and
// check flags: a bundle path, --input NAME=@FILE|random, --output-dir,
// --check, --rtol, --atol, --seed, --steps and --state-dir, each as `--flag value` or
// `--flag=value`. ArgCursor walks argv; parseRunFlag consumes one of the
// shared flags (or the bundle path) and leaves the tool's own flags to it.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TOOLS_SNUG_RUN_RUNFLAGS_H
#define SNUG_TOOLS_SNUG_RUN_RUNFLAGS_H

#include <cstdint>
#include <map>
#include <string>

namespace snug {

struct RunFlags {
  std::string bundle;
  std::map<std::string, std::string> inputs; // name -> "@path" or "random"
  std::string outputDir, checkDir;
  double rtol = 1e-3, atol = 1e-4;
  uint64_t seed = 1;
  /// Runs of a training step on the same inputs (its persistent state
  /// carries over); each prints its output 'loss'.
  uint64_t steps = 1;
  /// Where the persistent state goes after the last step, NAME.npy each.
  std::string stateDir;
};

/// The current argument of argv and its value.
class ArgCursor {
public:
  ArgCursor(int argc, char **argv) : argc(argc), argv(argv) {}

  /// Moves to the next argument; false at the end.
  bool next() {
    if (++index >= argc)
      return false;
    arg = argv[index];
    return true;
  }
  const std::string &current() const { return arg; }
  /// Whether the argument is `flag` or `flag=...`.
  bool is(const char *flag) const {
    return arg == flag || arg.rfind(std::string(flag) + "=", 0) == 0;
  }
  /// The flag's value: after '=' or the next argument; false when missing.
  bool value(std::string &into) {
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      into = arg.substr(eq + 1);
      return true;
    }
    if (index + 1 >= argc)
      return false;
    into = argv[++index];
    return true;
  }
  /// A finite, non-negative number value; false (with `error` set)
  /// otherwise (nan, inf, -1, "1x").
  bool number(double &into, std::string &error);
  /// An unsigned integer value that fits in 64 bits; false (with `error`
  /// set) otherwise.
  bool unsignedNumber(uint64_t &into, std::string &error);

private:
  int argc;
  char **argv;
  int index = 0;
  std::string arg;
};

enum class FlagResult { NotMine, Taken, Error };

/// Takes the cursor's argument when it is a shared flag or the bundle path
/// (any argument not starting with '-'); on Error, `error` says why (a bad
/// number, a second --input for one name).
FlagResult parseRunFlag(ArgCursor &cursor, RunFlags &flags, std::string &error);

} // namespace snug

#endif // SNUG_TOOLS_SNUG_RUN_RUNFLAGS_H
