//===- CompileCommand.cpp - snugc compile ---------------------------------===//
//
// `snugc compile MODEL [-o OUT] [--emit=bundle|ir|buffers]`: import the
// model, run the pipeline, plan the arena, print the memory report (stderr,
// or --memory-report-file) and write the product: a .snug bundle (default;
// to -o, else MODEL's stem + .snug in the current directory), the planned
// textual IR (--emit=ir; stdout unless -o) or the arena's packing problem
// as plan-memory handed it to the planner, as the CSV `snugc plan-buffers`
// reads (--emit=buffers; stdout unless -o). With --target=cuda (the
// default) the bundle also carries the device plan and the kernels NVRTC
// compiled for --arch: they are compiled before the report is printed (it
// shows the local memory their stacks reserve), each launch is checked
// against its GPU's limits, and --kernel-report=FILE.json lists what each
// kernel takes (CudaSupport.h). Diagnostics, dumps, the banner
// and the report go to stderr, so stdout holds exactly an IR product. Every
// file is written atomically, and none may be the model, its external data
// or another output (checked before anything is written).
//
// `snugc train` (TrainCommand.cpp) is compile with a training step's passes
// in front of the pipeline: it shares these options and runCompile.
//
//===----------------------------------------------------------------------===//
#include "tools/snugc/CudaSupport.h"
#include "tools/snugc/PlanSupport.h"
#include "tools/snugc/SnugcCommands.h"
#include "tools/snugc/SnugcCommon.h"

#include "compiler/FileAccessLLVM.h"
#include "compiler/bundle/BundleWriter.h"
#include "compiler/cuda/Nvrtc.h"
#include "ir/Printer.h"
#include "passes/memory/PlanMemory.h"
#include "passes/planner/BufferTrace.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#ifndef SNUG_VERSION
#define SNUG_VERSION "unknown"
#endif

namespace cl = llvm::cl;

namespace snug {
namespace snugc {

cl::SubCommand &getCompileCommand() {
  static cl::SubCommand command("compile",
                                "Import an ONNX model and compile it");
  return command;
}

namespace {
enum class EmitKind { Bundle, Ir, Buffers };
} // namespace

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx>"),
                                      cl::sub(getCompileCommand()), cl::sub(getTrainCommand()));
static cl::opt<EmitKind> emit(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::Bundle),
    cl::values(clEnumValN(EmitKind::Bundle, "bundle",
                          "a .snug bundle (plan, weights, kernels)"),
               clEnumValN(EmitKind::Ir, "ir",
                          "snug textual IR after the pipeline and planning"),
               clEnumValN(EmitKind::Buffers, "buffers",
                          "the arena's packing problem as CSV "
                          "(id,lower,upper,size) for snugc plan-buffers")),
    cl::sub(getCompileCommand()), cl::sub(getTrainCommand()));
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::value_desc("path"), cl::init(""),
                                       cl::sub(getCompileCommand()), cl::sub(getTrainCommand()));

enum class WeightsKind { Embedded, External };
static cl::opt<WeightsKind> weightsKind(
    "weights", cl::desc("Where the bundle's weights go"),
    cl::init(WeightsKind::Embedded),
    cl::values(clEnumValN(WeightsKind::Embedded, "embedded",
                          "inside the bundle (default)"),
               clEnumValN(WeightsKind::External, "external",
                          "in BUNDLE.weights beside it, named with its size "
                          "and SHA-256; the runtime maps it")),
    cl::sub(getCompileCommand()), cl::sub(getTrainCommand()));

/// The arena's packing problem, exactly as plan-memory gave it to the
/// planner (getArenaPlanBuffers), in BufferTrace.h's CSV (id = the plan's
/// buffer index), which plan-buffers reads.
static llvm::Expected<std::string> getBufferTrace(const ir::Module &module) {
  llvm::Expected<ModuleMemoryPlan> plan = getModuleMemoryPlan(module);
  if (!plan)
    return plan.takeError();
  std::string text;
  llvm::raw_string_ostream os(text);
  printBufferTrace(getArenaPlanBuffers(*plan), os);
  os.flush();
  return text;
}

static std::string defaultBundlePath() {
  return (llvm::sys::path::stem(modelPath) + ".snug").str();
}

/// The file compile writes its product to, "-" for stdout.
static std::string getProductPath() {
  if (emit == EmitKind::Bundle)
    return outputPath.empty() ? defaultBundlePath() : std::string(outputPath);
  return outputPath.empty() ? std::string("-") : std::string(outputPath);
}

int runCompile() {
  std::string path = getProductPath();
  if (emit == EmitKind::Bundle && path == "-") {
    llvm::errs() << "error: a bundle is binary; give -o PATH, not stdout\n";
    return ExitUserError;
  }
  int exitCode = ExitOk;
  llvm::Optional<cuda::CudaProgram> program;
  std::vector<NamedPath> outputs;
  if (path != "-")
    outputs.push_back({path, "-o"});
  bool external = emit == EmitKind::Bundle &&
                  weightsKind == WeightsKind::External;
  if (weightsKind == WeightsKind::External && !external) {
    llvm::errs() << "error: --weights=external places a bundle's weights "
                    "beside it; --emit="
                 << (emit == EmitKind::Ir ? "ir" : "buffers")
                 << " writes no bundle\n";
    return ExitUserError;
  }
  // The weights file is named after the bundle's: beside a device or a
  // pipe ("-o /dev/null") that would create /dev/null.weights.
  llvm::sys::fs::file_status status;
  if (external && !llvm::sys::fs::status(path, status) &&
      status.type() != llvm::sys::fs::file_type::regular_file) {
    llvm::errs() << "error: --weights=external writes '" << path
                 << ".weights' beside the bundle; -o '" << path
                 << "' is not a regular file\n";
    return ExitUserError;
  }
  std::string weightsPath = path + ".weights";
  if (external)
    outputs.push_back({weightsPath, "--weights=external"});
  if (wantsKernelReport() && emit != EmitKind::Bundle) {
    llvm::errs() << "error: --kernel-report reads the compiled kernels; "
                    "--emit="
                 << (emit == EmitKind::Ir ? "ir" : "buffers")
                 << " compiles none\n";
    return ExitUserError;
  }
  // The kernels are compiled before the memory report is printed: it shows
  // the local memory their stacks reserve.
  std::vector<bundle::KernelImage> images;
  auto compileKernels = [&](ir::Module &planned,
                            const cuda::CudaProgram &compiling,
                            LocalMemoryReservation &localMemory)
      -> llvm::Error {
    // NVRTC and ptxas need tens of MiB: while they run, the weights
    // wait outside this process (in the page cache, through a temporary
    // file beside the bundle for those read or computed into memory),
    // and the bundle writer reads them back. densenet121's cold compile
    // peaked at 158 MiB with its 30 MiB of weights resident under ptxas.
    auto compiled = compileForTarget(
        compiling, llvm::sys::path::stem(modelPath), localMemory, [&] {
          planned.getWeightBlob().releaseResidentPages(
              llvm::sys::path::parent_path(path));
        });
    if (!compiled)
      return compiled.takeError();
    images = std::move(*compiled);
    return llvm::Error::success();
  };
  auto module = loadPlanAndReport(
      modelPath, exitCode, program, outputs,
      emit == EmitKind::Bundle
          ? llvm::function_ref<llvm::Error(ir::Module &,
                                           const cuda::CudaProgram &,
                                           LocalMemoryReservation &)>(
                compileKernels)
          : nullptr);
  if (!module)
    return exitCode;
  if (emit == EmitKind::Bundle) {
    BundleOptions options;
    options.pipeline = getPipelineDescription();
    options.compilerVersion = SNUG_VERSION;
    if (program) {
      auto toolchain = cuda::getKernelToolchain(images);
      if (!toolchain)
        return reportError(toolchain.takeError());
      options.devicePlan = &program->plan;
      options.kernelImages = &images;
      options.toolchain = *toolchain;
    }
    // writeBundle writes a temporary file and renames it: an error leaves
    // nothing behind (external weights are written first, and removed
    // again if the bundle cannot be written).
    if (external)
      options.externalWeightsName =
          llvm::sys::path::filename(weightsPath).str();
    if (llvm::Error error = writeBundle(**module, path, options))
      return reportError(std::move(error));
    llvm::errs() << "wrote " << path;
    if (external)
      llvm::errs() << " and its weights " << weightsPath;
    llvm::errs() << '\n';
    return ExitOk;
  }
  std::string text;
  if (emit == EmitKind::Buffers) {
    llvm::Expected<std::string> trace = getBufferTrace(**module);
    if (!trace)
      return reportError(trace.takeError());
    text = std::move(*trace);
  } else {
    llvm::raw_string_ostream os(text);
    ir::printModule(**module, os, getPrintOptions());
    os.flush();
  }
  if (llvm::Error error = writeOutputFile(path, text))
    return reportError(std::move(error));
  return ExitOk;
}

} // namespace snugc
} // namespace snug
