//===- TrainCommand.cpp - snugc train -------------------------------------===//
//
// `snugc train MODEL --loss=SPEC --optimizer=KIND --lr=X [--momentum=MU]
//  [--beta1=B1 --beta2=B2 --eps=E] [--weight-decay=WD] -o STEP.snug`
// compiles one training step: compile (CompileCommand.cpp: its options, its
// planning, report and bundle) with three passes in front of the pipeline,
// run on the model as imported, before folding and fusion:
//   add-loss{kind=... output=... target=...}  for --loss=mse:OUTPUT,TARGET
//                  or --loss=cross-entropy:LOGITS,LABELS[,ignore-index=N]
//                  (the target or labels become a graph input of that
//                  name; ignore-index: torch's ignore_index)
//   autodiff{loss=...}                        gradients of every f32 weight
//   optimizer{kind=... lr=X ...}              torch.optim's update rule
//                  (passes/training/Optimizer.cpp; adafactor: Shazeer & Stern's,
//                  with a fixed step size), each flag passed on as the
//                  option of its name
// The bundle computes (inputs, target) -> (loss, <weight>.updated ...,
// optimizer state .updated ...), and records each parameter and optimizer
// state as persistent state (ir/State.h): a runtime writes the updated
// values back, so running the bundle again runs the next step.
// With --loss=OUTPUT the model's own scalar output is the loss and its other
// outputs stay. --batchnorm=batch passes batch-stats=1 to autodiff, which
// rewrites each BatchNormalization to the batch's statistics first and
// updates its running statistics, recorded as state of role statistic
// (passes/training/BatchNormBatchStats.h); the default, running, keeps the model's
// running statistics (PyTorch's eval mode).
//
// --accumulate=K [--micro-batch=N] (gradient accumulation) puts
// split-batch{parts=K micro-batch=N loss=loss} between add-loss and autodiff
// and interleave-micro-batches after it: one run is still one update over
// the whole batch, computed as K micro-batches of N samples, each one's
// forward and backward run before the next's, their gradients summed (the
// loss is the mean of theirs, the batch's). --micro-batch=N alone takes
// K = batch / N.
//
// --precision=bf16|fp16 (the compile flag) trains in mixed precision: the
// forward and backward compute in 16 bits, the parameters (master weights),
// optimizer state, update and loss stay f32 (passes/precision/KeepF32.h). fp16 adds
// dynamic loss scaling (passes/training/LossScale.h): autodiff{loss-scale=S} and
// optimizer{dynamic-loss-scale=1 growth-interval=G}, S and G from
// --loss-scale (default 65536) and --loss-scale-interval (default 2000),
// torch.cuda.amp.GradScaler's defaults.
//
// Training-mode Dropout imports as x * snug.dropout_mask(dropout.seed)
// (ImportOptions::trainingDropout; snugc compile refuses it), and the last
// prefix pass, dropout-seed{seed=N} (--seed, default 0), makes the seed
// state advanced by one each step: fresh masks every step, the same ones
// for the same seed.
//
// Flags that do not apply to the chosen optimizer (--momentum for adam,
// --beta1 for sgd) are refused rather than ignored.
//
//===----------------------------------------------------------------------===//
#include "tools/snugc/SnugcCommands.h"
#include "tools/snugc/PlanSupport.h"
#include "tools/snugc/SnugcCommon.h"

#include "passes/memory/budget/SplitBatch.h"
#include "passes/training/Optimizer.h"

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
                  "mse:OUTPUT,TARGET or "
                  "cross-entropy:LOGITS,LABELS[,ignore-index=N] (TARGET "
                  "and LABELS name new graph inputs; labels are i64 class "
                  "indices in [0, C), checked at run time; items labelled "
                  "N are skipped, as torch's ignore_index does)"),
         cl::value_desc("spec"), cl::sub(getTrainCommand()),
         cl::cat(getTrainCategory()));
static cl::opt<std::string>
    optimizer("optimizer",
              cl::desc("The update rule: sgd, momentum (SGD with momentum), "
                       "adam or adamw (torch.optim's formulas), or adafactor "
                       "(factored second moments, a fixed --lr)"),
              cl::init("sgd"), cl::sub(getTrainCommand()),
              cl::cat(getTrainCategory()));

static cl::opt<std::string> batchnorm(
    "batchnorm",
    cl::desc("BatchNormalization in the step: running (the model's running "
             "mean and variance, as PyTorch's eval mode; the default) or "
             "batch (the batch's mean and biased variance, as in training "
             "mode; the running statistics are updated as PyTorch's are, "
             "persistent state like the parameters)"),
    cl::init("running"), cl::sub(getTrainCommand()),
    cl::cat(getTrainCategory()));

static cl::opt<int64_t> accumulate(
    "accumulate",
    cl::desc("Gradient accumulation: run the step as K micro-batches (dim "
             "0 slices of the batch), each one's backward right after its "
             "forward, and update once with their summed gradients: the "
             "same update as the whole batch at a smaller peak"),
    cl::value_desc("K"), cl::init(0), cl::sub(getTrainCommand()),
    cl::cat(getTrainCategory()));
static cl::opt<int64_t> microBatch(
    "micro-batch",
    cl::desc("Samples per micro-batch of --accumulate (N * K must be the "
             "batch); alone, K = batch / N"),
    cl::value_desc("N"), cl::init(0), cl::sub(getTrainCommand()),
    cl::cat(getTrainCategory()));

/// The split-batch pass --accumulate and --micro-batch ask for ("" for
/// neither), and the loss it averages.
static llvm::Expected<std::string> getAccumulationPass(llvm::StringRef loss) {
  bool hasK = accumulate.getNumOccurrences() != 0;
  bool hasN = microBatch.getNumOccurrences() != 0;
  if (!hasK && !hasN)
    return "";
  if (hasK && accumulate < 1)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--accumulate=" + std::to_string(accumulate) +
            ": the number of micro-batches must be at least 1");
  // Said here in the flag's words (the pass would quote the pipeline).
  if (hasK && accumulate > kMaxSplitParts)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--accumulate=" + std::to_string(accumulate) +
            ": at most " + std::to_string(kMaxSplitParts) +
            " micro-batches");
  if (hasN && microBatch < 1)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--micro-batch=" + std::to_string(microBatch) +
            ": a micro-batch must hold at least 1 sample");
  if (batchnorm == "batch")
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--accumulate and --micro-batch cannot be combined with "
        "--batchnorm=batch: each micro-batch would normalize by its own "
        "statistics, so the update would not be the whole batch's");
  std::string pass = "split-batch{loss=" + loss.str();
  if (hasK)
    pass += " parts=" + std::to_string(accumulate);
  if (hasN)
    pass += " micro-batch=" + std::to_string(microBatch);
  return pass + "}";
}

static cl::opt<std::string> lossScale(
    "loss-scale",
    cl::desc("With --precision=fp16: the dynamic loss scale's first value "
             "(default 65536); it halves on a step whose gradients overflow "
             "(the step is skipped) and doubles after --loss-scale-interval "
             "good steps"),
    cl::value_desc("S"), cl::init("65536"), cl::sub(getTrainCommand()),
    cl::cat(getTrainCategory()));
static cl::opt<std::string> lossScaleInterval(
    "loss-scale-interval",
    cl::desc("With --precision=fp16: good steps before the loss scale "
             "doubles (default 2000)"),
    cl::value_desc("G"), cl::init("2000"), cl::sub(getTrainCommand()),
    cl::cat(getTrainCategory()));

/// The optimizer's number flags, each passed on as the pass option of its
/// name when given (passes/training/Optimizer.h checks their ranges).
static cl::opt<std::string> numberFlags[] = {
    cl::opt<std::string>("lr", cl::desc("The learning rate"),
                         cl::value_desc("X"), cl::sub(getTrainCommand()),
                         cl::cat(getTrainCategory())),
    cl::opt<std::string>(
        "momentum",
        cl::desc("The momentum factor of --optimizer=momentum (default 0.9)"),
        cl::value_desc("MU"), cl::sub(getTrainCommand()),
        cl::cat(getTrainCategory())),
    cl::opt<std::string>("beta1",
                         cl::desc("Adam's first-moment decay (default 0.9); "
                                  "Adafactor keeps a first moment only when "
                                  "it is given"),
                         cl::value_desc("B1"), cl::sub(getTrainCommand()),
                         cl::cat(getTrainCategory())),
    cl::opt<std::string>("beta2",
                         cl::desc("Adam's second-moment decay (default 0.999)"),
                         cl::value_desc("B2"), cl::sub(getTrainCommand()),
                         cl::cat(getTrainCategory())),
    cl::opt<std::string>("eps",
                         cl::desc("Adam's denominator term (default 1e-8); "
                                  "Adafactor's regulariser of g^2 (default "
                                  "1e-30)"),
                         cl::value_desc("E"), cl::sub(getTrainCommand()),
                         cl::cat(getTrainCategory())),
    cl::opt<std::string>(
        "weight-decay",
        cl::desc("L2 penalty added to the gradient (sgd, momentum, adam) or "
                 "decoupled decay (adamw, adafactor); default 0"),
        cl::value_desc("WD"), cl::sub(getTrainCommand()),
        cl::cat(getTrainCategory())),
    cl::opt<std::string>(
        "clip-threshold",
        cl::desc("Adafactor's update clipping: the update's RMS is cut to "
                 "this (default 1)"),
        cl::value_desc("D"), cl::sub(getTrainCommand()),
        cl::cat(getTrainCategory())),
    cl::opt<std::string>(
        "decay-rate",
        cl::desc("Adafactor's second-moment decay 1 - t^R at step t, R "
                 "negative (default -0.8)"),
        cl::value_desc("R"), cl::sub(getTrainCommand()),
        cl::cat(getTrainCategory())),
};

static llvm::Error flagError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

static cl::opt<int64_t> dropoutSeed(
    "seed",
    cl::desc("The seed of training-mode Dropout's masks: step k of a run "
             "draws them from seed + k (the seed is state, advanced each "
             "step), so the same seed repeats a run's masks (default 0)"),
    cl::value_desc("N"), cl::init(0), cl::sub(getTrainCommand()),
    cl::cat(getTrainCategory()));

/// The passes before the pipeline that --loss, --optimizer and --lr ask
/// for.
static llvm::Expected<std::string> getTrainingPasses() {
  if (loss.empty())
    return flagError("give --loss=OUTPUT, --loss=mse:OUTPUT,TARGET or "
                     "--loss=cross-entropy:LOGITS,LABELS");
  llvm::StringRef optimizerKind = optimizer;
  if (optimizerKind != "sgd" && optimizerKind != "momentum" &&
      optimizerKind != "adam" && optimizerKind != "adamw" &&
      optimizerKind != "adafactor")
    return flagError("--optimizer=" + optimizerKind +
                     ": the optimizer must be sgd, momentum, adam, adamw or "
                     "adafactor");
  if (numberFlags[0].empty())
    return flagError("give --lr=X, the learning rate");
  std::string update = "optimizer{kind=" + optimizerKind.str();
  for (cl::opt<std::string> &flag : numberFlags) {
    llvm::StringRef name = flag.ArgStr;
    if (flag.getNumOccurrences() == 0)
      continue;
    if (!appliesToOptimizer(name, optimizerKind))
      return flagError("--" + name +
                       " does not apply to --optimizer=" + optimizerKind);
    if (auto number = parseOptimizerNumber(name, flag); !number)
      return flagError("--" + name + " " + llvm::toString(number.takeError()));
    update += " " + name.str() + "=" + flag;
  }
  update += "}";
  llvm::StringRef statistics = batchnorm;
  if (statistics != "running" && statistics != "batch")
    return flagError("--batchnorm=" + statistics +
                     ": BatchNormalization's statistics must be running or "
                     "batch");
  std::string autodiffOptions = statistics == "batch" ? " batch-stats=1" : "";
  // TF32 training would need the gradient products (the Conv and MatMul
  // autodiff emits) marked too, and an accuracy story for the update; not
  // built.
  if (getPlanningOptions().precision == "tf32")
    return flagError("--precision=tf32 applies to snugc compile and plan "
                     "only; snugc train takes fp32, fp16 or bf16");
  if (getPlanningOptions().precision == "fp16") {
    double scale = 0;
    llvm::StringRef scaleText = lossScale;
    if (scaleText.getAsDouble(scale) || !std::isfinite(scale) || scale <= 0)
      return flagError("--loss-scale must be a positive number, got '" +
                       scaleText + "'");
    int64_t interval = 0;
    if (llvm::StringRef(lossScaleInterval).getAsInteger(10, interval) ||
        interval < 1)
      return flagError("--loss-scale-interval must be a whole number >= 1, "
                       "got '" +
                       lossScaleInterval + "'");
    autodiffOptions += " loss-scale=" + scaleText.str();
    update.insert(update.size() - 1, " dynamic-loss-scale=1 growth-interval=" +
                                         std::to_string(interval));
  } else if (lossScale.getNumOccurrences() ||
             lossScaleInterval.getNumOccurrences()) {
    return flagError(llvm::Twine(lossScale.getNumOccurrences()
                                     ? "--loss-scale"
                                     : "--loss-scale-interval") +
                     " applies with --precision=fp16 only (bf16 has f32's "
                     "range and needs no loss scaling)");
  }
  std::string passes;
  llvm::StringRef spec = loss;
  auto [kind, operands] = spec.split(':');
  bool namedLoss = operands.empty() && !spec.contains(':');
  auto split = getAccumulationPass(namedLoss ? spec : "loss");
  if (!split)
    return split.takeError();
  // Between the loss and autodiff: the copies' gradients are then summed
  // by autodiff itself, and interleaving orders them.
  std::string interleave = split->empty() ? "" : ",interleave-micro-batches";
  std::string splitPrefix = split->empty() ? "" : *split + ",";
  if (namedLoss) {
    passes = splitPrefix + "autodiff{loss=" + spec.str() + autodiffOptions +
             "}" + interleave;
  } else {
    llvm::SmallVector<llvm::StringRef, 4> parts;
    operands.split(parts, ',');
    if (kind != "mse" && kind != "cross-entropy")
      return flagError("--loss=" + spec +
                       ": the loss kind must be mse or "
                       "cross-entropy, not '" +
                       kind + "'");
    llvm::StringRef output = parts[0];
    llvm::StringRef target = parts.size() > 1 ? parts[1] : "";
    if (output.empty() || target.empty() || target.contains('='))
      return flagError("--loss=" + spec + ": expected " + kind +
                       (kind == "mse" ? ":OUTPUT,TARGET"
                                      : ":LOGITS,LABELS[,ignore-index=N]"));
    std::string lossOptions;
    for (llvm::StringRef option : llvm::makeArrayRef(parts).drop_front(2)) {
      auto [key, value] = option.split('=');
      int64_t index = 0;
      if (kind != "cross-entropy" || key != "ignore-index")
        return flagError(
            "--loss=" + spec + ": unknown option '" + option + "' (" + kind +
            (kind == "mse" ? " takes none)" : " takes ignore-index=N)"));
      if (value.getAsInteger(10, index))
        return flagError("--loss=" + spec +
                         ": ignore-index must be a whole number, got '" +
                         value + "'");
      if (!split->empty())
        return flagError("--loss=" + spec +
                         ": ignore-index and --accumulate or --micro-batch "
                         "do not combine (the loss is a mean over each "
                         "step's non-ignored items, which the micro-batches "
                         "split unevenly)");
      lossOptions += " ignore-index=" + std::to_string(index);
    }
    passes = "add-loss{kind=" + kind.str() + " output=" + output.str() +
             " target=" + target.str() + lossOptions + "}," + splitPrefix +
             "autodiff{loss=loss" + autodiffOptions + "}" + interleave;
  }
  // After the optimizer: add-loss replaces the outputs, and the seed's next
  // value is one more output. A model without training Dropout has no seed
  // weight and the pass does nothing.
  return passes + "," + update +
         ",dropout-seed{seed=" + std::to_string(int64_t(dropoutSeed)) + "}";
}

int runTrain() {
  auto passes = getTrainingPasses();
  if (!passes)
    return reportError(passes.takeError());
  setPipelinePrefix(*passes);
  setTrainingImport(true);
  return runCompile();
}

} // namespace snugc
} // namespace snug
