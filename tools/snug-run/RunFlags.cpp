//===- RunFlags.cpp - The command-line flags snug-run and its kin share ---===//
#include "tools/snug-run/RunFlags.h"

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
  if (text.empty() || *end || into < 0) {
    error = "bad number '" + text + "'";
    return false;
  }
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
    flags.inputs[text.substr(0, eq)] = text.substr(eq + 1);
    return FlagResult::Taken;
  }
  if (cursor.is("--output-dir"))
    return cursor.value(flags.outputDir)
               ? FlagResult::Taken
               : fail("--output-dir needs a value");
  if (cursor.is("--check"))
    return cursor.value(flags.checkDir) ? FlagResult::Taken
                                        : fail("--check needs a directory");
  if (cursor.is("--rtol") || cursor.is("--atol") || cursor.is("--seed")) {
    double number;
    if (!cursor.number(number, error))
      return FlagResult::Error;
    if (cursor.is("--rtol"))
      flags.rtol = number;
    else if (cursor.is("--atol"))
      flags.atol = number;
    else
      flags.seed = uint64_t(number);
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
