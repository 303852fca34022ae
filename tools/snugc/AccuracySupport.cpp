//===- AccuracySupport.cpp - snugc --check-accuracy ------------------------===//
#include "tools/snugc/AccuracySupport.h"
#include "tools/snugc/PlanSupport.h"
#include "tools/snugc/SnugcCommands.h"
#include "tools/snugc/SnugcCommon.h"
#include "tools/snug-run/TensorFiles.h"

#include "compiler/AccuracyCheck.h"
#include "compiler/Pipeline.h"
#include "compiler/bundle/BundleWriter.h"
#include "ir/Float16.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace cl = llvm::cl;

namespace snug {
namespace snugc {

static cl::opt<std::string> accuracyDir(
    "check-accuracy",
    cl::desc("With --precision: run the model at fp32 and lowered on the "
             "host reference kernels on the inputs in DIR, print each "
             "output's relative and absolute error and the first value over "
             "--accuracy-threshold; exit 1 when an output is over it"),
    cl::value_desc("DIR"), cl::init(""), InPlanningCommands(),
    cl::cat(getPlanCategory()));
static cl::opt<double> accuracyThreshold(
    "accuracy-threshold",
    cl::desc("Largest relative error ||out - ref|| / ||ref|| an output may "
             "have under --check-accuracy (default 1e-2)"),
    cl::init(1e-2), InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::opt<double> argmaxThreshold(
    "argmax-threshold",
    cl::desc("Under --check-accuracy and --calibration, an output of class "
             "scores (last-axis Softmax or LogSoftmax, or named by "
             "--class-outputs) also passes when at least this fraction of "
             "its rows has the same argmax as fp32 (1: every row); without "
             "it the agreement is reported, and only the relative error "
             "decides"),
    cl::init(1.0), InPlanningCommands(), cl::cat(getPlanCategory()));
static cl::list<std::string> classOutputs(
    "class-outputs",
    cl::desc("Outputs that hold class scores without a Softmax (logits), "
             "compared by argmax agreement too (see --argmax-threshold)"),
    cl::value_desc("NAME[,NAME]"), cl::CommaSeparated, InPlanningCommands(),
    cl::cat(getPlanCategory()));

static AccuracyThresholds getThresholds() {
  AccuracyThresholds thresholds;
  thresholds.relative = accuracyThreshold;
  thresholds.argmax =
      argmaxThreshold.getNumOccurrences() ? double(argmaxThreshold) : INFINITY;
  return thresholds;
}

static cl::opt<std::string> calibrationDir(
    "calibration",
    cl::desc("With --precision: find a small set of nodes to keep in f32 so "
             "that every output is within --accuracy-threshold on the inputs "
             "in DIR (nodes ranked by how far their result drifts, then "
             "bisection), print it as --keep-fp32 takes it, and compile with "
             "it"),
    cl::value_desc("DIR"), cl::init(""), InPlanningCommands(),
    cl::cat(getPlanCategory()));

std::string getCalibratedKeep() { return getRunState().calibratedKeep; }

static int failWith(const llvm::Twine &message) {
  return reportError(
      llvm::createStringError(llvm::inconvertibleErrorCode(), message.str()));
}

bool wantsAccuracyCheck() {
  // Given empty, the flag is still given: checkAccuracy refuses it.
  return accuracyDir.getNumOccurrences() || calibrationDir.getNumOccurrences();
}

/// The inputs in `dir` for `module`'s graph inputs, read and checked
/// against their types as snug-run reads --check data (loadInputData);
/// None (and `exitCode` set) after an error.
static llvm::Optional<std::vector<std::vector<uint8_t>>>
readInputs(const ir::Module &module, const std::string &dir, int &exitCode) {
  std::vector<std::vector<uint8_t>> inputs;
  uint64_t unusedRandomState = 0;
  for (const ir::Value *input : module.getInputs()) {
    const ir::TensorType &type = input->getType();
    std::vector<int64_t> dims(type.getDims().begin(), type.getDims().end());
    HostTensor tensor;
    std::string error;
    if (!loadInputData(input->getName().str(), inputs.size(),
                       toBundleCode(type.getDType()), dims, "", dir,
                       unusedRandomState, tensor, error)) {
      exitCode = failWith(error);
      return llvm::None;
    }
    inputs.push_back(std::move(tensor.bytes));
  }
  return inputs;
}

/// With --io-precision=lowered the bundle's f32 inputs are f16 or bf16:
/// the caller converts its data before snug sees it, so the bundle can only
/// ever be given values of the lowered type. The check models that: both
/// runs (which keep the model's f32 inputs, getUnfusedPipeline) get every
/// f32 input rounded to the lowered type and back, as the caller's
/// conversion rounds it (to nearest even, scalar::Convert), so the error
/// measured is the lowered computation's on data the bundle can take, not
/// the data's own rounding, and --keep-fp32 advice does not chase it. A
/// finite value the lowered type cannot hold (past f16's 65504) is refused,
/// naming the input, the value and its position: no input of the bundle can
/// carry it, and comparing on the Inf it would become would blame the first
/// node that reads it for the data. (With --io-precision=model the bundle
/// casts its inputs itself, and the check runs that very cast: an overflow
/// there is the compiled model's, reported as such.)
static bool roundToLoweredInputs(const ir::Module &reference,
                                 const PlanningOptions &planning,
                                 llvm::StringRef flag,
                                 std::vector<std::vector<uint8_t>> &inputs,
                                 int &exitCode) {
  if (planning.ioPrecision != "lowered" ||
      (planning.precision != "fp16" && planning.precision != "bf16"))
    return true;
  bool bf16 = planning.precision == "bf16";
  for (size_t k = 0; k < inputs.size(); ++k) {
    const ir::Value *input = reference.getInputs()[k];
    if (input->getType().getDType() != ir::DType::F32)
      continue;
    std::vector<uint8_t> &bytes = inputs[k];
    for (size_t i = 0; i * 4 < bytes.size(); ++i) {
      float value;
      std::memcpy(&value, bytes.data() + i * 4, 4);
      float rounded = roundThrough16Bits(value, bf16);
      if (std::isfinite(value) && !std::isfinite(rounded)) {
        exitCode = failWith(
            "--" + flag + ": input '" + input->getName() + "' holds " +
            llvm::formatv("{0}", llvm::format("%g", double(value))).str() +
            " at position " + std::to_string(i) + ", which " +
            (bf16 ? "bf16" : "f16") + " cannot hold (largest " +
            (bf16 ? "3.39e+38" : "65504") +
            "): with --io-precision=lowered the bundle takes '" +
            input->getName() + "' as " + (bf16 ? "bf16" : "f16") +
            ", so no data can give it this value; scale the data, or check "
            "with --io-precision=model, where the bundle casts its inputs "
            "itself");
        return false;
      }
      std::memcpy(bytes.data() + i * 4, &rounded, 4);
    }
  }
  return true;
}

/// The unfused import pipeline for `planning` (fp32 when `reference`):
/// the import steps without fuse. tf32-math, which runs after fuse, then
/// marks every f32 product, those that fuse would give an epilogue (and the
/// device f32 math) too, so the check errs towards more error than the
/// compiled model has.
static std::string getUnfusedPipeline(PlanningOptions planning,
                                      bool reference) {
  if (reference)
    planning = PlanningOptions();
  planning.ioPrecision = "model";
  PipelineSteps steps = getImportSteps(planning);
  removeSteps(steps, "fuse");
  return printPipeline(steps);
}

/// One comparison of the model lowered with `keep` against fp32.
static llvm::Optional<AccuracyResult>
compareWith(llvm::StringRef path, const ir::Module &reference,
            const std::vector<std::vector<uint8_t>> &inputs,
            PlanningOptions planning, const std::string &keep, int &exitCode) {
  planning.keepFp32 = keep;
  std::string pipeline = getUnfusedPipeline(planning, false);
  auto low = loadModule(path, exitCode, nullptr, nullptr, &pipeline);
  if (!low)
    return llvm::None;
  std::vector<std::string> named(classOutputs.begin(), classOutputs.end());
  llvm::Expected<AccuracyResult> result =
      compareLoweredModule(reference, **low, inputs, named);
  if (!result) {
    exitCode = reportError(result.takeError());
    return llvm::None;
  }
  return std::move(*result);
}

static bool withinThreshold(const AccuracyResult &result) {
  for (const ValueDivergence &output : result.outputs)
    if (!isWithinThresholds(output, getThresholds()))
      return false;
  return true;
}

/// Whether `name` can go into a --keep-fp32 list.
static bool isListable(llvm::StringRef name) {
  return !name.empty() && name.find_first_of(",{} ") == llvm::StringRef::npos;
}

bool checkAccuracy(llvm::StringRef path, int &exitCode) {
  for (const cl::opt<std::string> *flag : {&accuracyDir, &calibrationDir})
    if (flag->getNumOccurrences() && flag->empty()) {
      exitCode = failWith("--" + flag->ArgStr +
                          " needs a directory of inputs, not ''");
      return false;
    }
  PlanningOptions planning = getPlanningOptions();
  if (planning.precision == "fp32") {
    exitCode = failWith("--check-accuracy and --calibration need "
                        "--precision=fp16, bf16 or tf32");
    return false;
  }
  if (!(accuracyThreshold > 0) || !std::isfinite(accuracyThreshold)) {
    exitCode = failWith("--accuracy-threshold must be a positive number");
    return false;
  }
  if (!(argmaxThreshold > 0 && argmaxThreshold <= 1)) {
    exitCode = failWith("--argmax-threshold must be a fraction in (0, 1], "
                        "not " + llvm::formatv("{0}", llvm::format(
                                     "%g", double(argmaxThreshold))).str());
    return false;
  }
  // Both before fusion, so that every node's result is there to compare.
  std::string refPipeline = getUnfusedPipeline(planning, true);
  auto reference = loadModule(path, exitCode, nullptr, nullptr, &refPipeline);
  if (!reference)
    return false;
  for (const std::string &name : classOutputs)
    if (!llvm::any_of((*reference)->getOutputs(), [&](const ir::Value *out) {
          return out->getName() == name;
        })) {
      std::string names;
      for (const ir::Value *out : (*reference)->getOutputs())
        names += (names.empty() ? "'" : ", '") + out->getName().str() + "'";
      exitCode = failWith("--class-outputs: '" + name +
                          "' is not an output of " + path + " (its outputs: " +
                          names + ")");
      return false;
    }
  std::string keep = planning.keepFp32;
  if (!calibrationDir.empty()) {
    auto inputs = readInputs(**reference, calibrationDir, exitCode);
    if (!inputs || !roundToLoweredInputs(**reference, planning, "calibration",
                                         *inputs, exitCode))
      return false;
    auto first = compareWith(path, **reference, *inputs, planning, keep,
                             exitCode);
    if (!first)
      return false;
    // Rank the lowered nodes by how far their result drifts (NaN and Inf
    // first), then find the fewest of the top ones that, kept in f32,
    // bring every output within the threshold.
    std::vector<const ValueDivergence *> ranked;
    // Under tf32 only the contractions compute differently (the others
    // drift with their inputs): keeping one of them in f32 changes nothing.
    bool tf32 = planning.precision == "tf32";
    for (const ValueDivergence &value : first->values)
      if (isListable(value.nodeName) &&
          (!tf32 || value.op == "Conv" || value.op == "MatMul" ||
           value.op == "Gemm"))
        ranked.push_back(&value);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const ValueDivergence *a, const ValueDivergence *b) {
                       double ka = a->nonFinite || std::isnan(a->relativeError)
                                       ? INFINITY : a->relativeError;
                       double kb = b->nonFinite || std::isnan(b->relativeError)
                                       ? INFINITY : b->relativeError;
                       return ka > kb;
                     });
    // `nodes`' names as a --keep-fp32 list, after `prefix` (the names
    // given by hand).
    auto keepList = [&](llvm::ArrayRef<const ValueDivergence *> nodes,
                        llvm::StringRef prefix) {
      std::string list = prefix.str();
      for (const ValueDivergence *node : nodes)
        list += (list.empty() ? "" : ",") + node->nodeName;
      return list;
    };
    auto keepTop = [&](size_t count) {
      return keepList(llvm::makeArrayRef(ranked).take_front(count), keep);
    };
    // The fewest of `nodes` (in drift order) that, kept with the first of
    // them, bring every output within, given that all of them do: bisection.
    auto fewestOf = [&](llvm::ArrayRef<const ValueDivergence *> nodes)
        -> llvm::Optional<size_t> {
      size_t lo = 0, hi = nodes.size();
      while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        auto probe = compareWith(path, **reference, *inputs, planning,
                                 keepList(nodes.take_front(mid), keep), exitCode);
        if (!probe)
          return llvm::None;
        (withinThreshold(*probe) ? hi : lo) = mid;
      }
      return hi;
    };
    auto worstOutput = [](const AccuracyResult &result) {
      double worst = 0;
      for (const ValueDivergence &output : result.outputs)
        worst = std::max(worst, output.nonFinite ? INFINITY
                                                 : output.relativeError);
      return worst;
    };
    std::vector<const ValueDivergence *> chosen;
    std::string explanation;
    if (!withinThreshold(*first)) {
      auto all = compareWith(path, **reference, *inputs, planning,
                             keepTop(ranked.size()), exitCode);
      if (!all)
        return false;
      if (!withinThreshold(*all)) {
        exitCode = failWith("--calibration: even with the " +
                            std::to_string(ranked.size()) + " nodes compared "
                            "kept in f32, an output is over the threshold "
                            "(worst relative error " +
                            llvm::formatv("{0}", llvm::format(
                                "%.3e", worstOutput(*all))).str() + ")");
        return false;
      }
      // Whole op types first, in the order of their worst node's drift:
      // an error that one kind of node causes (a BatchNormalization whose
      // statistics f16 rounds) is fixed by keeping that kind, where the
      // ranking by drift alone spreads over every node downstream of it.
      // The smallest type that suffices is then cut down by bisection.
      std::vector<std::string> opOrder;
      llvm::StringMap<std::vector<const ValueDivergence *>> byOp;
      for (const ValueDivergence *value : ranked) {
        auto &nodes = byOp[value->op];
        if (nodes.empty())
          opOrder.push_back(value->op);
        nodes.push_back(value);
      }
      std::string byType;
      llvm::Optional<std::string> bestType;
      for (const std::string &op : opOrder) {
        const auto &nodes = byOp[op];
        if (bestType && nodes.size() >= byOp[*bestType].size())
          continue;
        auto probe = compareWith(path, **reference, *inputs, planning,
                                 keepList(nodes, keep), exitCode);
        if (!probe)
          return false;
        byType += (byType.empty() ? "" : ", ") + op + " (" +
                  std::to_string(nodes.size()) + ") " +
                  llvm::formatv("{0}", llvm::format("%.2e",
                                                    worstOutput(*probe)))
                      .str();
        if (withinThreshold(*probe))
          bestType = op;
      }
      if (bestType) {
        const auto &nodes = byOp[*bestType];
        auto count = fewestOf(nodes);
        if (!count)
          return false;
        chosen.assign(nodes.begin(), nodes.begin() + *count);
      }
      // Then the top of the whole ranking, kept where it is smaller.
      auto count = fewestOf(ranked);
      if (!count)
        return false;
      if (chosen.empty() || *count < chosen.size())
        chosen.assign(ranked.begin(), ranked.begin() + *count);
      else
        explanation = "kept by op type first: " +
                      std::to_string(chosen.size()) + " of the " +
                      std::to_string(byOp[*bestType].size()) + " " +
                      *bestType + " nodes (the fewest of all nodes ranked "
                      "by drift: " + std::to_string(*count) + ")";
      // No small set: say why, with what each type kept alone gives.
      if (chosen.size() * 10 > (*reference)->getNodes().size())
        explanation =
            "no small keep-set: the error is spread over the model (" +
            planning.precision +
            " rounds every value a little, and the drifts add up); the "
            "worst output's relative error with each op type kept alone "
            "(nodes): " +
            byType;
    }
    getRunState().calibratedKeep = keepList(chosen, "");
    // The count is calibration's own; the list is what the compile keeps,
    // the names given by hand first.
    bool byHand = !keep.empty();
    keep = keepList(chosen, keep);
    size_t nodes = (*reference)->getNodes().size();
    llvm::errs() << "calibration: " << chosen.size() << " of " << nodes
                 << " nodes kept in f32 ("
                 << llvm::format("%.1f", 100.0 * double(chosen.size()) /
                                             double(std::max<size_t>(nodes, 1)))
                 << " %)" << (byHand ? " besides those --keep-fp32 names" : "")
                 << (keep.empty() ? "" : ": --keep-fp32=" + keep) << '\n';
    if (!explanation.empty())
      llvm::errs() << "calibration: " << explanation << '\n';
  }
  if (accuracyDir.empty())
    return true;
  auto inputs = readInputs(**reference, accuracyDir, exitCode);
  if (!inputs || !roundToLoweredInputs(**reference, planning, "check-accuracy",
                                       *inputs, exitCode))
    return false;
  auto result = compareWith(path, **reference, *inputs, planning, keep,
                            exitCode);
  if (!result)
    return false;
  if (printAccuracy(*result, planning.precision, getThresholds(),
                    llvm::errs()))
    return true;
  exitCode = failWith("--check-accuracy: an output of " + path +
                      " at --precision=" + planning.precision +
                      " is over the threshold of " +
                      llvm::formatv("{0}", llvm::format("%g",
                                                        double(accuracyThreshold)))
                          .str());
  return false;
}

} // namespace snugc
} // namespace snug
