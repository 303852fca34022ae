//===- StepBreakdown.h - A training step's peak and FLOPs by phase -*- C++ -*-===//
//
// The memory report of a training step (a module with persistent state,
// ir/State.h) breaks the predicted peak into what a step holds at its peak
// step and the cost model's FLOPs into the step's phases.
//
// Phases (passes/analysis/StepPhases.h): forward, backward, optimizer, and
// recompute: when remat ran, a node that computes what an earlier node
// (of any phase: remat also copies backward values) or an earlier copy
// computes (the same op, attributes, body and
// operands, copies standing for their originals: how tests/support/RematModule.cpp
// recognises a copy). Saved activations are the results of forward nodes
// that a backward or recompute node reads.
//
// Peak breakdown, at the plan's peak step (the step whose live bytes are
// the lower bound), each arena buffer counted once, rounded to the
// alignment: workspace (scratch buffers), gradients (a buffer holding a
// grad.* value), saved activations (a buffer holding a saved activation),
// other arena (the rest of the arena: io, other intermediates, and what the
// packing leaves unused). Weights split into parameters, optimizer state
// and other weights. The parts sum to the predicted peak.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_STEPBREAKDOWN_H
#define SNUG_COMPILER_STEPBREAKDOWN_H

#include "ir/Module.h"
#include "passes/memory/PlanMemory.h"

#include <cstdint>

namespace snug {

struct StepBreakdown {
  /// False for a module without state (inference): nothing below is set.
  bool applies = false;
  // The predicted peak, in parts (their sum is the predicted peak).
  uint64_t parameterBytes = 0;
  uint64_t optimizerStateBytes = 0;
  uint64_t otherWeightsBytes = 0;
  uint64_t gradientBytes = 0;
  uint64_t savedActivationBytes = 0;
  uint64_t workspaceBytes = 0;
  uint64_t otherArenaBytes = 0;
  uint64_t runtimeBytes = 0;
  /// Every saved activation once, rounded to the alignment, live at the
  /// peak or not: the activation memory a step without recomputation keeps.
  uint64_t savedActivationTotalBytes = 0;
  unsigned savedActivations = 0;
  // The cost model's FLOPs by phase (their sum is the report's FLOPs).
  uint64_t forwardFlops = 0;
  uint64_t backwardFlops = 0;
  uint64_t optimizerFlops = 0;
  uint64_t recomputeFlops = 0;
  unsigned recomputeNodes = 0;
};

/// The breakdown of planned `module` (its plan `plan`), whose weights take
/// `weightsBytes` and the runtime `runtimeBytes`.
StepBreakdown buildStepBreakdown(const ir::Module &module,
                                 const ModuleMemoryPlan &plan,
                                 uint64_t weightsBytes, uint64_t runtimeBytes);

} // namespace snug

#endif // SNUG_COMPILER_STEPBREAKDOWN_H
