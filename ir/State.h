//===- State.h - Weights that are mutable state across steps ----*- C++ -*-===//
//
// A training step reads its parameters and optimizer state (momentum
// buffers, Adam's moments, the step count) and computes their next values.
// Rather than a new value kind, such a weight stays a weight (its bytes are
// its initial value: the model's parameter, or zeros for optimizer state)
// and the module says which graph output is its next value: the runtime
// writes that output back into the weight's buffer at the end of each step,
// so the next step reads it. The pairing is the module attribute
//   state = ["parameter:W1=W1.updated",
//   "optimizer:W1.momentum=W1.momentum.updated"]
// (role:weight=output, by name; role parameter, optimizer or statistic), so it prints, parses and survives every
// pass that keeps names, and a pass asks isStateWeight before treating a
// weight as a constant (folding, deduplication). A module without the
// attribute has no state: its step is a pure function of its inputs.
//
// The write-back is a copy after the step, not an update in place: the next
// value is an ordinary planned arena value (a graph output), and the runtime
// copies it over the weight once the step's last node has run, when nothing
// can read the old value any more (the host executor's memcpy, one
// device-to-device copy per state appended to the CUDA plan and captured
// with it, the simulator's copy). In place would save the copy and the
// arena bytes of the next values, but the planner would have to place
// values in the weights and order every read of the old value (forward,
// gradient and optimizer nodes) before the write; the copy needs neither,
// and costs one pass over the state bytes per step, small next to the
// step's own traffic over them.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_STATE_H
#define SNUG_IR_STATE_H

#include "ir/Module.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace snug {
namespace ir {

/// The i64 scalar weight every training-mode Dropout mask of a model is
/// drawn from (core/Ops.def: snug.dropout_mask): the importer makes it,
/// snugc train's dropout-seed pass seeds it and makes it state (role
/// statistic), advanced by one each step.
inline constexpr const char kDropoutSeedWeight[] = "dropout.seed";

/// What a state weight is, for the memory report: a trained parameter, an
/// optimizer buffer, or a statistic updated by the step's own rule
/// (BatchNorm's running mean and variance in training mode, the dropout
/// seed).
enum class StateRole { Parameter, Optimizer, Statistic };

struct StateEntry {
  Value *weight;
  /// The graph output written back into `weight` after each step.
  Value *next;
  StateRole role;
};

/// The module's state pairs, resolved; an error names an entry whose weight
/// is not a weight, whose output is not a graph output, or whose types
/// differ.
llvm::Expected<std::vector<StateEntry>> getState(const Module &module);
/// Appends a pair to the module's `state` attribute.
void addState(Module &module, const Value &weight, const Value &next,
              StateRole role);
/// Whether `value` is a weight named by the module's `state` attribute: its
/// bytes are only its initial value, never a constant to fold.
bool isStateWeight(const Module &module, const Value *value);
llvm::StringRef getStateRoleName(StateRole role);

/// The names of the weights a model holds as constants rather than as
/// parameters: what the importer made that no initializer gave (ONNX
/// Constant nodes' values, frozen inputs, the masks and zeros an op's
/// import adds), listed by the module attribute
///   constants = ["/ln1/Constant_output_0", ...]
/// autodiff differentiates a step by a model's floating-point weights but
/// these: in an exported model the parameters are the initializers (ONNX's
/// training convention, and onnxruntime-training's), while a LayerNorm's
/// epsilon or a Pow's exponent is a Constant that must stay what it is.
llvm::StringSet<> getConstantWeightNames(const Module &module);
/// Sets the module's `constants` attribute (none when `names` is empty).
void setConstantWeightNames(Module &module, std::vector<std::string> names);

} // namespace ir
} // namespace snug

#endif // SNUG_IR_STATE_H
