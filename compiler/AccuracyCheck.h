//===- AccuracyCheck.h - What lowering the precision costs -----*- C++ -*-===//
//
// --check-accuracy: the model at fp32 and lowered (the lower-precision
// pass, compiler/Pipeline.h), both before fusion so that every node's
// result can be compared, run node by node on the host reference kernels
// (evaluateModule, passes/simplify/ConstantEval.h) on the same inputs. Every value
// the two share by name is compared: relative error ||low - ref|| / ||ref||
// (the L2 norms; ||ref|| = 0 counts as 1) and the largest absolute error,
// both in double, plus whether the lowered value holds a NaN or Inf the
// reference does not. The report names each output's figures and the first
// node, in the reference's schedule order, whose result is over the
// threshold: where to look, or what to keep in f32.
//
// An output of class scores (a Softmax or LogSoftmax over its last axis, or
// one the caller names: logits) is also compared by what a classifier reads
// of it: the fraction of its rows (every index but the last axis) whose
// argmax, the first largest score, is the same in both. Given an argmax
// threshold, such an output passes when either metric is within its
// threshold: a spread error that never changes a decision is what a trained
// recogniser at fp16 shows.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_ACCURACYCHECK_H
#define SNUG_COMPILER_ACCURACYCHECK_H

#include "ir/Module.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <string>
#include <vector>

namespace snug {

struct ValueDivergence {
  std::string value; ///< the value's name
  std::string node;  ///< its producer, described (or "input")
  std::string nodeName; ///< the producer's ONNX name ("" for none)
  std::string op;
  double relativeError = 0;
  double maxAbsError = 0;
  bool nonFinite = false; ///< NaN or Inf in the lowered value (a failure)
  bool referenceNonFinite = false; ///< NaN or Inf in the fp32 reference
  /// Class scores: rows (along the last axis) compared by their argmax, and
  /// how many agree.
  bool classScores = false;
  int64_t rows = 0, argmaxAgreed = 0;
  double argmaxAgreement() const {
    return rows ? double(argmaxAgreed) / double(rows) : 1.0;
  }
};

/// What an output may differ by: its relative error, or for class scores
/// the fraction of rows whose argmax agrees (either suffices; an argmax
/// threshold past 1, as by default, leaves the relative error alone).
struct AccuracyThresholds {
  double relative = 1e-2;
  double argmax = INFINITY;
};

/// Whether `output` passes under `thresholds` (finite, and within one of
/// them).
bool isWithinThresholds(const ValueDivergence &output,
                        const AccuracyThresholds &thresholds);

struct AccuracyResult {
  /// One per graph output of the reference, in order.
  std::vector<ValueDivergence> outputs;
  /// Every value compared, in the reference's schedule order.
  std::vector<ValueDivergence> values;
};

/// Compares `lowered` against `reference` (see the file comment) on
/// `inputs`, the bytes of each graph input in order (both modules take the
/// same inputs). `classOutputs` names outputs of class scores besides the
/// Softmax ones (logits). Errors: what evaluateModule reports.
llvm::Expected<AccuracyResult>
compareLoweredModule(const ir::Module &reference, const ir::Module &lowered,
                     llvm::ArrayRef<std::vector<uint8_t>> inputs,
                     llvm::ArrayRef<std::string> classOutputs = {});

/// Whether `output` of `module` holds class scores by what computes it: a
/// Softmax or LogSoftmax over its last axis (through Identity copies).
bool isSoftmaxOutput(const ir::Value &output);

/// The first value whose relative error is over `threshold` (or which
/// turned NaN or Inf); null when none is.
const ValueDivergence *findFirstDivergence(const AccuracyResult &result,
                                           double threshold);

/// The lines --check-accuracy prints; true when every output is within
/// `thresholds` (isWithinThresholds).
bool printAccuracy(const AccuracyResult &result, llvm::StringRef precision,
                   const AccuracyThresholds &thresholds,
                   llvm::raw_ostream &os);

} // namespace snug

#endif // SNUG_COMPILER_ACCURACYCHECK_H
