//===- TrainCommand.cpp - snugc train -------------------------------------===//
//
// `snugc train MODEL --loss=SPEC --optimizer=sgd --lr=X -o STEP.snug`
// compiles one training step: compile (CompileCommand.cpp: its options, its
// planning, report and bundle) with three passes in front of the pipeline,
// run on the model as imported, before folding and fusion:
//   add-loss{kind=... output=... target=...}  for --loss=mse:OUTPUT,TARGET
//                  or --loss=cross-entropy:LOGITS,LABELS (the target or
//                  labels become a graph input of that name)
//   autodiff{loss=...}                        gradients of every f32 weight
//   sgd{lr=X}                                 weight - lr * gradient
// The bundle computes (inputs, target) -> (loss, <weight>.updated ...).
// With --loss=OUTPUT the model's own scalar output is the loss and its other
// outputs stay.
//
// One step only: the weights are constants of the bundle and the updated
// parameters are outputs; keeping them on the device across steps is issue
// 18's persistent state, not built yet. Only plain SGD exists so far.
//
//===----------------------------------------------------------------------===//
#include "tools/snugc/SnugcCommands.h"
#include "tools/snugc/SnugcCommon.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace cl = llvm::cl;

namespace snug {
namespace snugc {

cl::SubCommand &getTrainCommand() {
  static cl::SubCommand command(
      "train", "Compile one training step (loss, gradients, optimizer update) "
               "of an ONNX model");
  return command;
}

static cl::OptionCategory &getTrainCategory() {
  static cl::OptionCategory category("snugc train options");
  return category;
}

static cl::opt<std::string>
    loss("loss",
         cl::desc("The loss: OUTPUT (a scalar graph output), "
                  "mse:OUTPUT,TARGET or cross-entropy:LOGITS,LABELS (TARGET "
                  "and LABELS name new graph inputs; labels are i64 class "
                  "indices)"),
         cl::value_desc("spec"), cl::sub(getTrainCommand()),
         cl::cat(getTrainCategory()));
static cl::opt<std::string>
    optimizer("optimizer", cl::desc("The update rule: sgd"), cl::init("sgd"),
              cl::sub(getTrainCommand()), cl::cat(getTrainCategory()));
static cl::opt<std::string> learningRate("lr", cl::desc("The learning rate"),
                                         cl::value_desc("X"),
                                         cl::sub(getTrainCommand()),
                                         cl::cat(getTrainCategory()));

static llvm::Error flagError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

/// The passes before the pipeline that --loss, --optimizer and --lr ask
/// for.
static llvm::Expected<std::string> getTrainingPasses() {
  if (loss.empty())
    return flagError("give --loss=OUTPUT, --loss=mse:OUTPUT,TARGET or "
                     "--loss=cross-entropy:LOGITS,LABELS");
  if (optimizer != "sgd")
    return flagError("--optimizer=" + optimizer +
                     ": only sgd is implemented so far");
  double rate = 0;
  if (learningRate.empty())
    return flagError("give --lr=X, the learning rate");
  if (llvm::StringRef(learningRate).getAsDouble(rate) || !std::isfinite(rate) ||
      rate <= 0)
    return flagError("--lr must be a positive number, got '" + learningRate +
                     "'");
  std::string passes;
  llvm::StringRef spec = loss;
  auto [kind, operands] = spec.split(':');
  if (operands.empty() && !spec.contains(':')) {
    passes = "autodiff{loss=" + spec.str() + "}";
  } else {
    auto [output, target] = operands.split(',');
    if (kind != "mse" && kind != "cross-entropy")
      return flagError("--loss=" + spec +
                       ": the loss kind must be mse or "
                       "cross-entropy, not '" +
                       kind + "'");
    if (output.empty() || target.empty() || target.contains(','))
      return flagError("--loss=" + spec + ": expected " + kind +
                       ":OUTPUT,TARGET");
    passes = "add-loss{kind=" + kind.str() + " output=" + output.str() +
             " target=" + target.str() + "},autodiff{loss=loss}";
  }
  return passes + ",sgd{lr=" + learningRate + "}";
}

int runTrain() {
  auto passes = getTrainingPasses();
  if (!passes)
    return reportError(passes.takeError());
  setPipelinePrefix(*passes);
  return runCompile();
}

} // namespace snugc
} // namespace snug
