//===- StepPhases.h - A training step's nodes by phase ----------*- C++ -*-===//
//
// Which top-level nodes of a training step (a module with persistent
// state, ir/State.h) belong to its forward pass and which to its backward
// pass, read off the graph rather than from tags a pass left (fusion merges
// nodes of different passes):
//   forward   a graph output other than a state update or a gradient (the
//             loss, the model's other outputs) depends on it;
//   backward  not forward, and a weight gradient (a value autodiff named
//             grad.<weight>, passes/training/Autodiff.cpp) depends on it, or nothing
//             reads it (the original of a backward value remat recomputes
//             for all its reads);
//   the rest  the optimizer's update (it reads the gradients; a fused
//             group holding a gradient's last node and its update is one of
//             these).
// Saved activations are the results of forward nodes that other nodes
// read: what the backward keeps from the forward. The memory report
// (compiler/StepBreakdown.h) and the √n checkpointing baseline
// (SqrtCheckpoint.cpp) share this.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_ANALYSIS_STEPPHASES_H
#define SNUG_PASSES_ANALYSIS_STEPPHASES_H

#include "ir/Module.h"

#include "llvm/ADT/DenseSet.h"

namespace snug {

struct StepPhases {
  /// False for a module without state: the sets are empty.
  bool isStep = false;
  llvm::DenseSet<const ir::Node *> forward;
  llvm::DenseSet<const ir::Node *> backward;
};

/// Whether autodiff named `value` as a weight's gradient.
bool isWeightGradient(const ir::Value *value);

StepPhases classifyStepPhases(const ir::Module &module);

} // namespace snug

#endif // SNUG_PASSES_ANALYSIS_STEPPHASES_H
