//===- FileAccessLLVM.h - core/FileAccess.h as llvm::Error --*- C++ -*-===//
//
// The thin llvm::Error face of core/FileAccess.h for the compiler and the
// tools: write a product (a path, or "-" for stdout) atomically, and refuse
// outputs that are the same file as an input or another output. Every
// message names the path and the reason; nothing is half-written.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_FILEACCESSLLVM_H
#define SNUG_COMPILER_FILEACCESSLLVM_H

#include "core/FileAccess.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

namespace snug {

/// Writes `bytes` to `path` atomically, or to stdout when `path` is "-";
/// `links` as AtomicFileWriter's (Replace for a name snug chose).
inline llvm::Error writeOutputFile(llvm::StringRef path, llvm::StringRef bytes,
                                   LinkPolicy links = LinkPolicy::Follow) {
  std::string error;
  bool ok;
  if (path == "-") {
    llvm::outs().flush();
    ok = writeAllToFd(STDOUT_FILENO, bytes.data(), bytes.size(), "stdout",
                      error);
  } else {
    ok = writeFileAtomically(path.str(), bytes.data(), bytes.size(), error,
                             links);
  }
  if (ok)
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
}

/// checkDistinctFiles as an llvm::Error.
inline llvm::Error checkOutputsAreNewFiles(const std::vector<NamedPath> &inputs,
                                           const std::vector<NamedPath> &outputs) {
  std::string error;
  if (checkDistinctFiles(inputs, outputs, error))
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
}

} // namespace snug

#endif // SNUG_COMPILER_FILEACCESSLLVM_H
