//===- LossScale.h - Dynamic loss scaling of an f16 training step -*- C++ -*-===//
//
// f16 holds nothing below 2^-24, and a model's small gradients fall under
// it: multiplying the loss by a large scale S before the backward lifts
// them into range (Micikevicius et al., "Mixed Precision Training", ICLR
// 2018). autodiff{loss-scale=S} seeds the loss's adjoint with the f32
// weight `loss_scale` (so every gradient is S times its true value); the
// optimizer's dynamic-loss-scale=1 then builds torch.cuda.amp.GradScaler's
// rules (torch 1.13, _amp_update_scale) around its update, in f32:
//   g = g_scaled * (1 / S)                          each gradient, unscaled
//   finite = sum over every gradient of (g * 0) == 0 (an Inf or NaN makes
//            its product NaN; no IsInf in the op table is needed)
//   every parameter and optimizer state:  next = finite ? next : old
//            (the step is skipped; Adam's step count does not advance)
//   good = finite ? good + 1 : 0; grow = good == growth-interval
//   S    = finite ? (grow ? S * 2 : S) : S * 0.5;  good = grow ? 0 : good
// `loss_scale` and its count of good steps `loss_scale.good_steps` are
// optimizer state (ir/State.h), written back after each step like the rest.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_TRAINING_LOSSSCALE_H
#define SNUG_PASSES_TRAINING_LOSSSCALE_H

#include "passes/training/GradientRules.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace snug {

/// The weight autodiff's loss-scale=S creates and seeds the backward with.
inline constexpr const char *kLossScaleWeight = "loss_scale";

/// torch.cuda.amp.GradScaler's defaults but the initial scale, which is
/// autodiff's.
struct LossScaleRules {
  int64_t growthInterval = 2000;
  double growthFactor = 2.0, backoffFactor = 0.5;
};

/// Replaces each of `gradients` by itself times 1 / `scale` and returns the
/// bool[] flag: every element of every gradient is finite.
llvm::Expected<ir::Value *>
unscaleGradients(GraphBuilder &builder, ir::Value *scale,
                 llvm::MutableArrayRef<ir::Value *> gradients);

/// Makes each state's next value (state, next) in `pairs` keep the old
/// value when `finite` is false: next becomes a Where, under next's name.
llvm::Error guardStep(GraphBuilder &builder, ir::Value *finite,
                      std::vector<std::pair<ir::Value *, ir::Value *>> &pairs);

/// Appends to `pairs` the next values of `scale` and of a new zero weight
/// `loss_scale.good_steps`, by `rules`.
llvm::Error
updateLossScale(GraphBuilder &builder, ir::Value *finite, ir::Value *scale,
                const LossScaleRules &rules,
                std::vector<std::pair<ir::Value *, ir::Value *>> &pairs);

} // namespace snug

#endif // SNUG_PASSES_TRAINING_LOSSSCALE_H
