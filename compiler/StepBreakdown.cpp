//===- StepBreakdown.cpp - A training step's peak and FLOPs by phase ------===//
//
// See StepBreakdown.h. Forward and backward come from passes/analysis/StepPhases.h;
// a walk in schedule order then recognises remat's copies by signature.
//
//===----------------------------------------------------------------------===//
#include "compiler/StepBreakdown.h"

#include "ir/State.h"
#include "passes/analysis/CostModel.h"
#include "passes/analysis/StepPhases.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>

namespace snug {
namespace {

enum class Phase { Forward, Recompute, Backward, Optimizer };

/// What a node computes, its operands named through `nameOf` (a copy's
/// operand by the original it stands for), bodies included, so that a
/// copy and its original have the same signature.
class Signatures {
public:
  /// The name a top-level value goes by: its original's when it is a copy.
  std::string nameOf(const ir::Value *value) {
    if (!value)
      return "-";
    if (value->isWeight())
      return "@" + value->getName().str();
    auto alias = original.find(value);
    if (alias != original.end())
      value = alias->second;
    auto found = numbers.try_emplace(value, numbers.size());
    return "%" + std::to_string(found.first->second);
  }
  void setOriginal(const ir::Value *copy, const ir::Value *of) {
    original[copy] = of;
  }

  std::string get(const ir::Node &node) {
    std::string text;
    llvm::raw_string_ostream os(text);
    print(node, os, [&](const ir::Value *value) { return nameOf(value); });
    return os.str();
  }

private:
  using NameFn = llvm::function_ref<std::string(const ir::Value *)>;
  void print(const ir::Node &node, llvm::raw_ostream &os, NameFn name) {
    os << node.getOpName() << '(';
    for (const ir::Value *operand : node.getOperands())
      os << name(operand) << ',';
    os << ")->" << node.getNumResults() << '{';
    for (const auto &attribute : node.getAttributes()) {
      os << attribute.first << '=';
      attribute.second.print(os);
      os << ';';
    }
    os << '}';
    if (!node.hasBody())
      return;
    // Body values are named by position: arguments, then each body node's
    // results in order.
    llvm::DenseMap<const ir::Value *, unsigned> local;
    const ir::Region &body = *node.getBody();
    for (const std::unique_ptr<ir::Value> &argument : body.getArguments())
      local.try_emplace(argument.get(), local.size());
    auto bodyName = [&](const ir::Value *value) -> std::string {
      auto found = value ? local.find(value) : local.end();
      if (found != local.end())
        return "b" + std::to_string(found->second);
      return name(value);
    };
    os << '[';
    for (const std::unique_ptr<ir::Node> &inner : body.getNodes()) {
      print(*inner, os, bodyName);
      for (unsigned i = 0; i < inner->getNumResults(); ++i)
        local.try_emplace(inner->getResult(i), local.size());
      os << ';';
    }
    os << "yield(";
    for (const ir::Value *value : body.getYield())
      os << bodyName(value) << ',';
    os << ")]";
  }

  llvm::DenseMap<const ir::Value *, const ir::Value *> original;
  llvm::DenseMap<const ir::Value *, unsigned> numbers;
};

} // namespace

StepBreakdown buildStepBreakdown(const ir::Module &module,
                                 const ModuleMemoryPlan &plan,
                                 uint64_t weightsBytes,
                                 uint64_t runtimeBytes) {
  StepBreakdown step;
  StepPhases phases = classifyStepPhases(module);
  if (!phases.isStep)
    return step;
  step.applies = true;
  if (llvm::Expected<std::vector<ir::StateEntry>> state = ir::getState(module))
    for (const ir::StateEntry &entry : *state) {
      // BatchNorm's running statistics are neither: they count with the
      // other weights, as the report's statistics line says.
      if (entry.role == ir::StateRole::Parameter)
        step.parameterBytes += entry.weight->getType().getByteSize();
      else if (entry.role == ir::StateRole::Optimizer)
        step.optimizerStateBytes += entry.weight->getType().getByteSize();
    }
  else
    llvm::consumeError(state.takeError());
  step.otherWeightsBytes =
      weightsBytes - std::min(weightsBytes,
                              step.parameterBytes + step.optimizerStateBytes);
  step.runtimeBytes = runtimeBytes;

  // Copies: only looked for when remat (or the sqrt-checkpoint baseline)
  // recomputed something, so that a backward node that happens to repeat
  // a forward one is not taken for a copy in a step left alone.
  auto positive = [&](llvm::StringRef name) {
    const ir::Attribute *count = module.getAttribute(name);
    return count && count->getKind() == ir::Attribute::Kind::Int &&
           count->getInt() > 0;
  };
  bool rematRan = positive("remat_values") || positive("checkpoint_copies");
  Signatures signatures;
  std::map<std::string, const ir::Node *> computed;
  llvm::DenseMap<const ir::Node *, Phase> phaseOf;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    Phase phase = phases.forward.count(node.get())    ? Phase::Forward
                  : phases.backward.count(node.get()) ? Phase::Backward
                                                      : Phase::Optimizer;
    if (rematRan) {
      std::string signature = signatures.get(*node);
      auto found = computed.find(signature);
      if (found != computed.end() &&
          found->second->getNumResults() == node->getNumResults()) {
        phase = Phase::Recompute;
        for (unsigned i = 0; i < node->getNumResults(); ++i)
          signatures.setOriginal(node->getResult(i),
                                 found->second->getResult(i));
        // A copy on the gradients' path makes its original a backward
        // node, even when what still reads the original is the optimizer.
        auto original = phaseOf.find(found->second);
        if (phases.backward.count(node.get()) &&
            original->second == Phase::Optimizer)
          original->second = Phase::Backward;
      } else {
        computed.emplace(std::move(signature), node.get());
      }
    }
    phaseOf[node.get()] = phase;
  }
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    uint64_t flops = costOfNode(*node).getFlops();
    switch (phaseOf.lookup(node.get())) {
    case Phase::Forward:
      step.forwardFlops += flops;
      break;
    case Phase::Recompute:
      step.recomputeFlops += flops;
      ++step.recomputeNodes;
      break;
    case Phase::Backward:
      step.backwardFlops += flops;
      break;
    case Phase::Optimizer:
      step.optimizerFlops += flops;
      break;
    }
  }

  // Saved activations: forward results read outside the forward.
  llvm::DenseSet<const ir::Value *> saved;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    Phase phase = phaseOf.lookup(node.get());
    if (phase != Phase::Backward && phase != Phase::Recompute)
      continue;
    for (const ir::Value *operand : node->getOperands())
      if (operand && operand->getDefiningNode() &&
          phaseOf.lookup(operand->getDefiningNode()) == Phase::Forward)
        saved.insert(operand);
  }
  uint64_t alignment = std::max<uint64_t>(1, plan.alignment);
  step.savedActivations = saved.size();
  for (const ir::Value *value : saved)
    step.savedActivationTotalBytes +=
        llvm::alignTo(value->getType().getByteSize(), alignment);

  for (const ArenaBuffer &buffer : plan.buffers) {
    if (buffer.firstStep > plan.peakStep || buffer.lastStep < plan.peakStep)
      continue;
    uint64_t bytes = llvm::alignTo(buffer.bytes, alignment);
    if (buffer.kind == ArenaBuffer::Kind::Scratch) {
      step.workspaceBytes += bytes;
      continue;
    }
    if (llvm::any_of(buffer.values, isWeightGradient))
      step.gradientBytes += bytes;
    else if (llvm::any_of(buffer.values, [&](const ir::Value *value) {
               return saved.count(value) != 0;
             }))
      step.savedActivationBytes += bytes;
  }
  uint64_t parts =
      step.gradientBytes + step.savedActivationBytes + step.workspaceBytes;
  step.otherArenaBytes = plan.arenaBytes - std::min(plan.arenaBytes, parts);
  return step;
}

} // namespace snug
