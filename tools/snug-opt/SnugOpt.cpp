//===- SnugOpt.cpp - Textual IR through a pass pipeline -------------------===//
//
// snug-opt reads textual IR (a file or stdin), verifies it, runs the
// --passes pipeline and prints the result: the tool behind the lit tests.
// With --split-input-file each `// -----` chunk is a separate module, its
// messages carrying the line numbers of the whole file; every chunk runs even
// after one fails. With --emit-bundle=PATH the module after the passes (it
// must carry a memory plan) is also written as a .snug bundle; with
// --emit-cuda=PATH its CUDA C++ and device plan (no NVRTC; with both, the
// bundle carries that device plan, without kernel images, for
// snug-cudasim; the hidden --cuda-index32-limit lowers the kernels' 32-bit
// index limit, so tests run the 64-bit index code on small tensors). Exit
// codes: 0 ok, 1 bad input, 2 internal error (a pass left a module that
// does not verify). The input is read whole before anything is written;
// every output is written atomically (core/FileAccess.h) and none may be
// the input or another output.
//
//===----------------------------------------------------------------------===//
#include "compiler/FileAccessLLVM.h"
#include "core/SignalCleanup.h"
#include "compiler/bundle/BundleWriter.h"
#include "compiler/cuda/CudaEmitter.h"
#include "ir/Module.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "compiler/Pipeline.h"
#include "passes/PassManager.h"
#include "passes/Passes.h"
#include "tools/HelpTypo.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace snug;
namespace cl = llvm::cl;

static cl::OptionCategory category("snug-opt options");
static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<input.ir>"),
                                      cl::init("-"), cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::value_desc("path"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<std::string>
    pipeline("passes",
             cl::desc("Pass pipeline, e.g. dce; the names import, plan and "
                      "default stand for snugc's pipelines"),
             cl::value_desc("pipeline"), cl::init(""), cl::cat(category));
static cl::opt<bool> splitInputFile(
    "split-input-file",
    cl::desc("Treat each '// -----' chunk of the input as its own module"),
    cl::cat(category));
static cl::list<std::string>
    printIrAfter("print-ir-after", cl::desc("Print IR after the named pass"),
                 cl::value_desc("pass"), cl::cat(category));
static cl::opt<bool> printIrAfterAll("print-ir-after-all",
                                     cl::desc("Print IR after every pass"),
                                     cl::cat(category));
static cl::opt<bool> timePasses("time-passes",
                                cl::desc("Print the time each pass takes"));
static cl::opt<bool> passStatistics("pass-statistics",
                                    cl::desc("Print per-pass statistics"),
                                    cl::cat(category));
static cl::opt<bool> verifyEach(
    "verify-each", cl::desc("Verify the module after every pass"),
    cl::init(PassManagerOptions::defaultVerifyEach()), cl::cat(category));
static cl::opt<int64_t> elideWeightsOver(
    "elide-weights-over",
    cl::desc("Print weights with more elements than this without data"),
    cl::init(16), cl::cat(category));
static cl::opt<std::string> emitBundle(
    "emit-bundle",
    cl::desc("Write the planned module after the passes as a .snug bundle"),
    cl::value_desc("path"), cl::init(""), cl::cat(category));
static cl::opt<std::string> emitCuda(
    "emit-cuda",
    cl::desc("Write the CUDA C++ of the planned module after the passes, "
             "with its device plan as a trailing comment ('-': stdout, "
             "instead of the IR)"),
    cl::value_desc("path"), cl::init(""), cl::cat(category));
static cl::opt<int64_t> cudaIndex32Limit(
    "cuda-index32-limit",
    cl::desc("With --emit-cuda: the largest value a kernel's 32-bit index "
             "may reach (CudaOptions::index32Limit); tests lower it to run "
             "the 64-bit index code on small tensors"),
    cl::init(INT32_MAX), cl::Hidden, cl::cat(category));
static cl::opt<bool> listPasses("list-passes",
                                cl::desc("List the registered passes"),
                                cl::cat(category));

namespace {
enum class Outcome { Ok, UserError, InternalError };
} // namespace

static Outcome processChunk(llvm::StringRef text, unsigned firstLine,
                            llvm::raw_ostream &os) {
  ir::SourceLocations locations;
  auto module = ir::parseModule(text, inputPath, &locations, firstLine);
  if (!module) {
    llvm::errs() << toString(module.takeError()) << '\n';
    return Outcome::UserError;
  }
  if (llvm::Error error = ir::verifyModule(**module, &locations)) {
    llvm::errs() << toString(std::move(error)) << '\n';
    return Outcome::UserError;
  }
  PassManagerOptions options;
  options.verifyEach = verifyEach;
  options.printIrAfter = printIrAfter;
  options.printIrAfterAll = printIrAfterAll;
  options.timePasses = timePasses;
  options.statistics = passStatistics;
  options.printOptions.elideWeightsOver = elideWeightsOver;
  PassManager passManager(options);
  if (llvm::Error error =
          passManager.addPipeline(expandPipelineNames(pipeline))) {
    llvm::errs() << "error: " << toString(std::move(error)) << '\n';
    return Outcome::UserError;
  }
  if (llvm::Error error = passManager.run(**module)) {
    std::string message = toString(std::move(error));
    llvm::errs() << "error: " << message << '\n';
    return llvm::StringRef(message).contains("does not verify after pass")
               ? Outcome::InternalError
               : Outcome::UserError;
  }
  // With --emit-cuda too, the bundle carries the device plan (without
  // kernel images: snug-opt runs no NVRTC), which snug-cudasim runs with
  // the kernels built from the --emit-cuda source.
  llvm::Optional<cuda::CudaProgram> program;
  if (!emitCuda.empty()) {
    cuda::CudaOptions cudaOptions;
    cudaOptions.index32Limit = cudaIndex32Limit;
    auto emitted =
        cuda::emitCuda(**module, computeWeightsLayout(**module), cudaOptions);
    if (!emitted) {
      llvm::errs() << "error: " << toString(emitted.takeError()) << '\n';
      return Outcome::UserError;
    }
    program = std::move(*emitted);
  }
  if (!emitBundle.empty()) {
    BundleOptions bundleOptions;
    bundleOptions.pipeline = expandPipelineNames(pipeline);
    bundleOptions.compilerVersion = SNUG_VERSION;
    std::vector<bundle::KernelImage> noImages;
    if (program) {
      bundleOptions.devicePlan = &program->plan;
      bundleOptions.kernelImages = &noImages;
    }
    if (llvm::Error error = writeBundle(**module, emitBundle, bundleOptions)) {
      llvm::errs() << "error: " << toString(std::move(error)) << '\n';
      return Outcome::UserError;
    }
  }
  if (program) {
    std::string text =
        program->source + "\n" + cuda::describeDevicePlan(program->plan);
    if (emitCuda == "-") {
      os << text;
      return Outcome::Ok;
    }
    if (llvm::Error error = writeOutputFile(emitCuda, text)) {
      llvm::errs() << "error: " << toString(std::move(error)) << '\n';
      return Outcome::UserError;
    }
  }
  ir::printModule(**module, os, options.printOptions);
  return Outcome::Ok;
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // A signal removes the temporary of an output being written.
  removeTemporariesOnSignals();
  cl::HideUnrelatedOptions(category);
  if (auto *option = cl::getRegisteredOptions().lookup("time-passes")) {
    option->setDescription("Print the time each pass takes");
    option->setHiddenFlag(cl::NotHidden);
    option->addCategory(category);
  }
  llvm::StringRef typo = snug::findHelpTypo(argc, argv);
  if (!typo.empty()) {
    llvm::errs() << "snug-opt: Unknown command line argument '" << typo
                 << "'.  Try: 'snug-opt --help'\n";
    return 1;
  }
  cl::ParseCommandLineOptions(argc, argv,
                              "snug-opt: run passes over snug textual IR\n");
  if (listPasses) {
    printRegisteredPasses(llvm::outs());
    return 0;
  }
  for (const std::string &name : printIrAfter)
    if (!createPassByName(name)) {
      llvm::errs() << "error: --print-ir-after names '" << name
                   << "', which is not a pass (see --list-passes)\n";
      return 1;
    }
  // Read whole (not mapped) and checked against every output before any
  // is written: `-o` onto the input would otherwise truncate what is read.
  std::string inputText;
  // Textual IR over 2 GiB is refused, from a file or from stdin.
  constexpr uint64_t kMaxInputBytes = uint64_t(1) << 31;
  if (inputPath == "-") {
    std::string error;
    if (!readWholeStream(0, "stdin", inputText, kMaxInputBytes, error)) {
      llvm::errs() << "error: " << error << '\n';
      return 1;
    }
  } else {
    InputFile file;
    std::string error;
    if (!file.open(inputPath, error) ||
        !file.readAll(inputText, kMaxInputBytes, error)) {
      llvm::errs() << "error: " << error << '\n';
      return 1;
    }
  }
  std::vector<NamedPath> outputs;
  if (outputPath != "-")
    outputs.push_back({outputPath, "-o"});
  if (!emitBundle.empty())
    outputs.push_back({emitBundle, "--emit-bundle"});
  if (!emitCuda.empty() && emitCuda != "-")
    outputs.push_back({emitCuda, "--emit-cuda"});
  if (llvm::Error error = checkOutputsAreNewFiles(
          {{inputPath, "input IR"}}, outputs)) {
    llvm::errs() << "error: " << toString(std::move(error)) << '\n';
    return 1;
  }
  std::string outputText;
  llvm::raw_string_ostream output(outputText);

  if (splitInputFile && !emitBundle.empty()) {
    llvm::errs() << "error: --emit-bundle takes one module; it cannot be "
                    "combined with --split-input-file\n";
    return 1;
  }
  llvm::StringRef text = inputText;
  Outcome worst = Outcome::Ok;
  unsigned line = 1;
  bool first = true;
  while (true) {
    llvm::StringRef chunk = text;
    size_t separator = llvm::StringRef::npos;
    if (splitInputFile) {
      // A separator is a line that is exactly "// -----".
      for (size_t at = text.find("// -----"); at != llvm::StringRef::npos;
           at = text.find("// -----", at + 1)) {
        bool lineStart = at == 0 || text[at - 1] == '\n';
        size_t end = text.find('\n', at);
        llvm::StringRef rest = text.slice(at + 8, end).trim();
        if (lineStart && rest.empty()) {
          separator = at;
          break;
        }
      }
      chunk = text.substr(0, separator);
    }
    if (!first)
      output << "// -----\n";
    first = false;
    Outcome outcome = processChunk(chunk, line, output);
    if (outcome > worst)
      worst = outcome;
    if (separator == llvm::StringRef::npos)
      break;
    line += chunk.count('\n');
    text = text.substr(separator);
    size_t newline = text.find('\n');
    if (newline == llvm::StringRef::npos)
      break;
    text = text.substr(newline + 1);
    ++line;
  }
  if (llvm::Error error = writeOutputFile(outputPath, output.str())) {
    llvm::errs() << "error: " << toString(std::move(error)) << '\n';
    return 1;
  }
  return static_cast<int>(worst);
}
