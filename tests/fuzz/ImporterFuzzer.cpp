//===- ImporterFuzzer.cpp - libFuzzer target over the ONNX importer -------===//
//
// Each input is written to a scratch file (the importer reads paths, as
// users give it) and imported with the default pipeline and `batch=1`.
// Whatever the bytes, the importer must return a module or an error; a
// crash, a sanitizer report or a module that does not verify is a finding.
// Built only with clang (-DSNUG_FUZZ=ON); bench/fuzz/run.sh drives it.
//
//===----------------------------------------------------------------------===//
#include "compiler/Pipeline.h"
#include "compiler/onnx/OnnxImporter.h"
#include "ir/Verifier.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <string>

static const std::string &scratchPath() {
  static const std::string path = [] {
    llvm::SmallString<128> file;
    if (llvm::sys::fs::createTemporaryFile("snug-fuzz", "onnx", file))
      std::abort();
    return std::string(file.str());
  }();
  return path;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = scratchPath();
  {
    std::error_code error;
    llvm::raw_fd_ostream out(path, error);
    if (error)
      std::abort();
    out.write(reinterpret_cast<const char *>(data), size);
  }
  // An unknown --dim is an error, so bind `batch` (the zoo's symbol) only
  // when the model fails without it: both kinds of model get past the
  // input bindings.
  snug::ImportOptions options;
  auto module = snug::importAndRunPipeline(path, options);
  if (!module) {
    llvm::consumeError(module.takeError());
    options.dims["batch"] = 1;
    module = snug::importAndRunPipeline(path, options);
  }
  if (!module) {
    llvm::consumeError(module.takeError());
    return 0;
  }
  if (llvm::Error error = snug::ir::verifyModule(**module)) {
    llvm::errs() << "imported module does not verify: "
                 << toString(std::move(error)) << '\n';
    std::abort();
  }
  return 0;
}
