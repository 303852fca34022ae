//===- SnugcCommon.cpp - What every snugc subcommand shares ---------------===//
//
// Options registered in every subcommand (inAllCommands()), so that
// `snugc compile`, and later `snugc plan`, read the same flags the same way.
//
//===----------------------------------------------------------------------===//
#include "tools/snugc/SnugcCommon.h"
#include "tools/snugc/SnugcCommands.h"
#include "tools/snugc/PlanSupport.h"

#include "compiler/Driver.h"
#include "compiler/onnx/OnnxImporter.h"
#include "tools/snug-run/TensorFiles.h"
#include "compiler/Pipeline.h"
#include "passes/PassManager.h"
#include "passes/Passes.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/WithColor.h"

namespace cl = llvm::cl;

namespace snug {
namespace snugc {

cl::OptionCategory &getCommonCategory() {
  static cl::OptionCategory category("snugc import and pipeline options");
  return category;
}

static cl::list<std::string>
    inputBindings("input",
                  cl::desc("Bind a graph input's shape: NAME:DIMS[xDTYPE], "
                           "e.g. x:1x3x224x224 or x:1x3x224x224xf16"),
                  cl::value_desc("binding"), inAllCommands(),
                  cl::cat(getCommonCategory()));
static cl::list<std::string> maxTripFlags(
    "max-trip",
    cl::desc("Bound a Loop whose trip count or condition is runtime data: "
             "LOOP=N, its node name (or its first output's) and the most "
             "iterations it runs; a run that needs more fails"),
    cl::value_desc("LOOP=N"), inAllCommands(), cl::cat(getCommonCategory()));
static cl::list<std::string> freezeInputs(
    "freeze-input",
    cl::desc("Compile a graph input as a constant of this value: "
             "NAME=@FILE (.npy or ONNX TensorProto .pb). For inputs that "
             "set shapes (Reshape's shape, Resize's sizes, a Reduce's "
             "axes, Range's bounds); the bundle no longer takes it"),
    cl::value_desc("NAME=@FILE"), inAllCommands(),
    cl::cat(getCommonCategory()));
static cl::list<std::string>
    dimBindings("dim", cl::desc("Bind a symbolic dim everywhere: SYMBOL=N"),
                cl::value_desc("binding"), inAllCommands(),
                cl::cat(getCommonCategory()));
static cl::opt<std::string>
    pipeline("passes",
             cl::desc("Pass pipeline after import (replaces the default "
                      "'import'; names of compiler/Pipeline.h expand)"),
             cl::value_desc("pipeline"),
             cl::init("import"),
             inAllCommands(), cl::cat(getCommonCategory()));
static cl::list<std::string>
    disablePass("disable-pass", cl::desc("Leave a pass out of the pipeline"),
                cl::value_desc("pass"), inAllCommands(),
                cl::cat(getCommonCategory()));
static cl::list<std::string>
    printIrAfter("print-ir-after", cl::desc("Print IR after the named pass"),
                 cl::value_desc("pass"), inAllCommands(),
                 cl::cat(getCommonCategory()));
static cl::opt<bool> printIrAfterAll("print-ir-after-all",
                                     cl::desc("Print IR after every pass"),
                                     inAllCommands(),
                                     cl::cat(getCommonCategory()));
static cl::opt<bool> timePasses("time-passes",
                                cl::desc("Print the time each pass takes"),
                                inAllCommands(),
                                cl::cat(getCommonCategory()));
static cl::opt<bool> passStatistics("pass-statistics",
                                    cl::desc("Print per-pass statistics"),
                                    inAllCommands(),
                                    cl::cat(getCommonCategory()));
static cl::opt<bool> verifyEach(
    "verify-each", cl::desc("Verify the module after every pass"),
    cl::init(PassManagerOptions::defaultVerifyEach()),
    inAllCommands(), cl::cat(getCommonCategory()));
static cl::opt<int64_t> elideWeightsOver(
    "elide-weights-over",
    cl::desc("Print weights with more elements than this without data"),
    cl::init(16), inAllCommands(), cl::cat(getCommonCategory()));

static cl::opt<bool> allowOutsideModelDir(
    "allow-external-data-outside-model-dir",
    cl::desc("Let external data files resolve (symlinks followed) outside "
             "the model's directory"),
    inAllCommands(), cl::cat(getCommonCategory()));

static llvm::Error flagError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str());
}

/// Refuses a second --input for one graph input, a second --dim for one
/// symbol, and --disable-pass or --print-ir-after naming no pass.
static llvm::Error checkBindingAndPassFlags(const ImportOptions &options) {
  llvm::StringSet<> seen;
  for (const InputBinding &binding : options.inputs)
    if (!seen.insert(binding.name).second)
      return flagError("--input '" + binding.name +
                       "' is given more than once");
  seen.clear();
  for (const std::string &text : dimBindings) {
    llvm::StringRef symbol = llvm::StringRef(text).split('=').first;
    if (!seen.insert(symbol).second)
      return flagError("--dim '" + symbol + "' is given more than once");
  }
  for (const cl::list<std::string> *list :
       {std::addressof(disablePass), std::addressof(printIrAfter)})
    for (const std::string &name : *list)
      if (!createPassByName(name))
        return flagError("--" + list->ArgStr + " names '" + name +
                         "', which is not a pass (snug-opt --help lists "
                         "them)");
  return llvm::Error::success();
}

/// `--freeze-input NAME=@FILE` into options.frozenInputs: the file's
/// tensor, in an element type snug has, once per name.
static llvm::Error readFrozenInput(llvm::StringRef text,
                                   ImportOptions &options) {
  auto [name, source] = text.split('=');
  if (name.empty() || !source.consume_front("@") || source.empty())
    return flagError("--freeze-input '" + text + "' is not NAME=@FILE");
  if (options.frozenInputs.count(name.str()))
    return flagError("--freeze-input '" + name +
                     "' is given more than once");
  HostTensor tensor;
  std::string error;
  if (!readTensorFile(source.str(), tensor, error))
    return flagError("--freeze-input " + name + ": " + error);
  auto dtype = getDTypeOfOnnxDataType(tensor.dtype);
  if (!dtype)
    return flagError("--freeze-input " + name + ": '" + source +
                     "' holds an element type snug does not support");
  ir::TensorType type(*dtype, tensor.dims);
  if (tensor.bytes.size() != type.getByteSize())
    return flagError("--freeze-input " + name + ": '" + source + "' holds " +
                     llvm::Twine(tensor.bytes.size()) + " bytes, " +
                     type.str() + " needs " +
                     llvm::Twine(type.getByteSize()));
  options.frozenInputs[name.str()] = {type, std::move(tensor.bytes)};
  return llvm::Error::success();
}

bool isDimBound(llvm::StringRef symbol) {
  for (const std::string &text : dimBindings)
    if (llvm::StringRef(text).split('=').first == symbol)
      return true;
  return false;
}

ir::PrintOptions getPrintOptions() {
  ir::PrintOptions options;
  options.elideWeightsOver = elideWeightsOver;
  return options;
}

PassManagerOptions getPassManagerOptions() {
  PassManagerOptions passOptions;
  passOptions.verifyEach = verifyEach;
  passOptions.printIrAfter = printIrAfter;
  passOptions.printIrAfterAll = printIrAfterAll;
  passOptions.timePasses = timePasses;
  passOptions.statistics = passStatistics;
  passOptions.disabledPasses = disablePass;
  passOptions.printOptions = getPrintOptions();
  return passOptions;
}

RunState &getRunState() {
  static RunState state;
  return state;
}

void resetRunState() { getRunState() = RunState(); }

void setPipelinePrefix(llvm::StringRef prefix) {
  getRunState().pipelinePrefix = prefix.str();
}

void setTrainingImport(bool training) {
  getRunState().trainingImport = training;
}

std::string getPipelineOption() {
  return getPipelineOptionFor(getPlanningOptions());
}

std::string getPipelineOptionFor(const PlanningOptions &planning) {
  std::string expanded = expandPipelineNames(pipeline, planning);
  const std::string &prefix = getRunState().pipelinePrefix;
  if (prefix.empty())
    return expanded;
  return expanded.empty() ? prefix : prefix + "," + expanded;
}

int reportError(llvm::Error error) {
  std::string message = toString(std::move(error));
  bool internal = llvm::StringRef(message).contains("internal error") ||
                  llvm::StringRef(message).contains("does not verify after pass");
  llvm::StringRef text = message;
  // Importer messages already say "path: error: ..."; others get a prefix.
  if (!text.contains(": error: ") && !text.startswith("error: "))
    llvm::errs() << "error: ";
  llvm::errs() << text << '\n';
  return internal ? ExitInternalError : ExitUserError;
}

llvm::Optional<std::unique_ptr<ir::Module>>
loadModule(llvm::StringRef path, int &exitCode,
           std::vector<std::string> *externalFiles,
           const std::pair<std::string, int64_t> *extraDim,
           const std::string *pipelineOverride) {
  ImportOptions options;
  options.allowExternalDataOutsideModelDir = allowOutsideModelDir;
  options.externalFilesRead = externalFiles;
  options.trainingDropout = getRunState().trainingImport;
  for (const std::string &text : inputBindings) {
    auto binding = parseInputBinding(text);
    if (!binding) {
      exitCode = reportError(binding.takeError());
      return llvm::None;
    }
    options.inputs.push_back(std::move(*binding));
  }
  for (const std::string &text : dimBindings)
    if (llvm::Error error = parseDimBinding(text, options)) {
      exitCode = reportError(std::move(error));
      return llvm::None;
    }
  for (const std::string &text : maxTripFlags)
    if (llvm::Error error = parseMaxTrip(text, options)) {
      exitCode = reportError(std::move(error));
      return llvm::None;
    }
  for (const std::string &text : freezeInputs)
    if (llvm::Error error = readFrozenInput(text, options)) {
      exitCode = reportError(std::move(error));
      return llvm::None;
    }

  if (llvm::Error error = checkBindingAndPassFlags(options)) {
    exitCode = reportError(std::move(error));
    return llvm::None;
  }
  if (extraDim)
    options.dims[extraDim->first] = extraDim->second;
  PassManagerOptions passOptions = getPassManagerOptions();
  PassManager passManager(passOptions);
  // A bad pipeline is reported before the (possibly slow) import.
  if (llvm::Error error = passManager.addPipeline(
          pipelineOverride ? *pipelineOverride : getPipelineOption())) {
    exitCode = reportError(std::move(error));
    return llvm::None;
  }

  auto module = importOnnxModel(path, options);
  if (!module) {
    exitCode = reportError(module.takeError());
    return llvm::None;
  }
  llvm::StringSet<> nodeNames;
  collectNodeNames(**module, nodeNames);
  if (llvm::Error error = passManager.run(**module)) {
    exitCode = reportError(std::move(error));
    return llvm::None;
  }
  // The flag as given, not with calibration's names: those are the
  // model's by construction. Names the pipeline gave (a training step's)
  // count as the model's.
  if (llvm::Optional<std::string> keep = getKeepFp32Flag()) {
    collectNodeNames(**module, nodeNames);
    if (llvm::Error error = checkKeepFp32Names(*keep, nodeNames, path)) {
      exitCode = reportError(std::move(error));
      return llvm::None;
    }
  }
  (*module)->eraseUnusedWeights();
  exitCode = ExitOk;
  return std::move(*module);
}

} // namespace snugc
} // namespace snug
