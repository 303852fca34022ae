//===- HelpTypo.h - Unknown flags that LLVM's parser takes for -h --*- C++ -*-===//
//
// LLVM's command-line parser (14) reads an unknown option that starts with
// "h" (`--hoss=1`, `-hx`) as its `-h` grouped with other letters: it prints
// the help and exits 0, so a typo succeeds having done nothing. snugc and
// snug-opt refuse such an argument as the unknown flag it is, before the
// parser sees it.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TOOLS_HELPTYPO_H
#define SNUG_TOOLS_HELPTYPO_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

namespace snug {

/// Whether `name` (an option without its dashes and value) is one of
/// LLVM's help flags, which print the help and exit.
inline bool isHelpFlagName(llvm::StringRef name) {
  return llvm::is_contained(
      llvm::ArrayRef<llvm::StringRef>{"h", "help", "help-hidden", "help-list",
                                      "help-list-hidden"},
      name);
}

/// The first argument of argv[1..argc) that LLVM's parser would take for
/// -h but that is none of the help flags, or "" when none is. Arguments
/// after "--" are positional and not looked at.
inline llvm::StringRef findHelpTypo(int argc, const char *const *argv) {
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--")
      break;
    if (!arg.startswith("-"))
      continue;
    llvm::StringRef name = arg.ltrim('-').split('=').first;
    if (name.startswith("h") && !isHelpFlagName(name))
      return arg;
  }
  return "";
}

} // namespace snug

#endif // SNUG_TOOLS_HELPTYPO_H
