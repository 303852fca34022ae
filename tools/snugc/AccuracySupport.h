//===- AccuracySupport.h - snugc --check-accuracy ---------------*- C++ -*-===//
//
// --check-accuracy=DIR with --precision: imports the model twice before
// fusion, at fp32 and lowered, runs both node by node on the host reference
// kernels on the inputs in DIR (the backend-test layout: input_N.pb, or
// NAME.npy) and prints each output's relative and absolute error and the
// first value over --accuracy-threshold (compiler/AccuracyCheck.h).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TOOLS_SNUGC_ACCURACYSUPPORT_H
#define SNUG_TOOLS_SNUGC_ACCURACYSUPPORT_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace snug {
namespace snugc {

/// Whether --check-accuracy or --calibration was given.
bool wantsAccuracyCheck();

/// The node names --calibration chose to keep in f32 ("" before it ran),
/// which getPlanningOptions adds to --keep-fp32's.
std::string getCalibratedKeep();

/// Runs the check for the model at `path`; true when every output is
/// within the threshold. On false, `exitCode` is set (1: over the
/// threshold, or an error, printed).
bool checkAccuracy(llvm::StringRef path, int &exitCode);

} // namespace snugc
} // namespace snug

#endif // SNUG_TOOLS_SNUGC_ACCURACYSUPPORT_H
