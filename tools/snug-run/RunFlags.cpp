//===- RunFlags.cpp - The command-line flags snug-run and its kin share ---===//
#include "tools/snug-run/RunFlags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace snug {

bool ArgCursor::number(double &into, std::string &error) {
  std::string text;
  if (!value(text)) {
    error = arg + " needs a value";
    return false;
  }
  char *end;
  into = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !std::isfinite(into) || into < 0) {
    error = arg.substr(0, arg.find('=')) + ": '" + text +
            "' is not a finite, non-negative number";
    return false;
  }
  return true;
}

bool ArgCursor::unsignedNumber(uint64_t &into, std::string &error) {
  std::string text;
  if (!value(text)) {
    error = arg + " needs a value";
    return false;
  }
  char *end;
  errno = 0;
  unsigned long long number = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || text[0] == '-' || text[0] == '+' ||
      text[0] == ' ') {
    error = arg.substr(0, arg.find('=')) + ": '" + text +
            "' is not an integer in [0, 2^64)";
    return false;
  }
  into = number;
  return true;
}

FlagResult parseRunFlag(ArgCursor &cursor, RunFlags &flags,
                        std::string &error) {
  const std::string &arg = cursor.current();
  auto fail = [&](std::string message) {
    error = std::move(message);
    return FlagResult::Error;
  };
  if (cursor.is("--input")) {
    std::string text;
    if (!cursor.value(text))
      return fail("--input needs NAME=@FILE or NAME=random");
    size_t eq = text.find('=');
    if (eq == std::string::npos)
      return fail("--input '" + text + "' is not NAME=@FILE|random");
    if (!flags.inputs.emplace(text.substr(0, eq), text.substr(eq + 1)).second)
      return fail("--input '" + text.substr(0, eq) +
                  "' is given more than once");
    return FlagResult::Taken;
  }
  // A directory flag given empty ("--check=") is refused, not taken as
  // "not given".
  auto directory = [&](const char *flag, std::string &into) {
    if (!cursor.value(into))
      return fail(std::string(flag) + " needs a directory");
    return into.empty()
               ? fail(std::string(flag) + " needs a directory, not ''")
               : FlagResult::Taken;
  };
  if (cursor.is("--output-dir"))
    return directory("--output-dir", flags.outputDir);
  if (cursor.is("--check"))
    return directory("--check", flags.checkDir);
  if (cursor.is("--seed"))
    return cursor.unsignedNumber(flags.seed, error) ? FlagResult::Taken
                                                    : FlagResult::Error;
  if (cursor.is("--steps")) {
    if (!cursor.unsignedNumber(flags.steps, error))
      return FlagResult::Error;
    if (flags.steps < 1 || flags.steps > 1000000)
      return fail("--steps must be a count from 1 to 1000000, got " +
                  std::to_string(flags.steps));
    return FlagResult::Taken;
  }
  if (cursor.is("--state-dir"))
    return directory("--state-dir", flags.stateDir);
  if (cursor.is("--rtol") || cursor.is("--atol")) {
    double number;
    if (!cursor.number(number, error))
      return FlagResult::Error;
    (cursor.is("--rtol") ? flags.rtol : flags.atol) = number;
    return FlagResult::Taken;
  }
  if (!arg.empty() && arg[0] == '-')
    return FlagResult::NotMine;
  if (!flags.bundle.empty())
    return fail("more than one bundle given");
  flags.bundle = arg;
  return FlagResult::Taken;
}

} // namespace snug
