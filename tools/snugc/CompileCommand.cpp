//===- CompileCommand.cpp - snugc compile ---------------------------------===//
//
// `snugc compile MODEL --emit=ir [-o OUT]`: import the model, run the
// pipeline and write the product. The only product so far is the textual IR
// (--emit=ir), written to stdout or -o; the bundle comes with the bundle
// writer. Diagnostics, dumps and the banner go to stderr, so stdout holds
// exactly the product and stays parseable.
//
//===----------------------------------------------------------------------===//
#include "tools/snugc/SnugcCommands.h"
#include "tools/snugc/SnugcCommon.h"

#include "ir/Printer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

namespace cl = llvm::cl;

namespace snug {
namespace snugc {

cl::SubCommand &getCompileCommand() {
  static cl::SubCommand command("compile",
                                "Import an ONNX model and compile it");
  return command;
}

namespace {
enum class EmitKind { Ir };
} // namespace

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx>"),
                                      cl::sub(getCompileCommand()));
static cl::opt<EmitKind>
    emit("emit", cl::desc("What to produce"), cl::init(EmitKind::Ir),
         cl::values(clEnumValN(EmitKind::Ir, "ir",
                               "snug textual IR after the pipeline")),
         cl::sub(getCompileCommand()));
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::value_desc("path"), cl::init("-"),
                                       cl::sub(getCompileCommand()));

int runCompile() {
  int exitCode = ExitOk;
  auto module = loadModule(modelPath, exitCode);
  if (!module)
    return exitCode;
  std::error_code errorCode;
  llvm::ToolOutputFile output(outputPath, errorCode, llvm::sys::fs::OF_None);
  if (errorCode) {
    llvm::errs() << "error: cannot write '" << outputPath
                 << "': " << errorCode.message() << '\n';
    return ExitUserError;
  }
  switch (emit) {
  case EmitKind::Ir:
    ir::printModule(**module, output.os(), getPrintOptions());
    break;
  }
  output.keep();
  return ExitOk;
}

} // namespace snugc
} // namespace snug
