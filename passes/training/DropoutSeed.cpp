//===- DropoutSeed.cpp - Seed training Dropout, a fresh mask each step ----===//
//
// Training-mode Dropout imports as x * snug.dropout_mask(dropout.seed)
// (compiler/onnx/OnnxOps.cpp), every mask of the model drawn from the one
// i64 scalar weight ir::kDropoutSeedWeight. This pass (snugc train --seed=N,
// after the optimizer) gives that weight the initial value N and makes it
// persistent state whose next value is dropout.seed + 1, a graph output the
// runtime writes back after each step (ir/State.h): step k of a run draws
// its masks from seed N + k, so a run is reproducible and no two of its
// steps share a mask. A module without the weight has no training Dropout:
// the pass does nothing.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "ir/State.h"
#include "passes/Passes.h"

#include "llvm/ADT/SmallVector.h"

#include <cstring>

namespace snug {
namespace {
class DropoutSeed : public Pass {
public:
  llvm::StringRef getName() const override { return "dropout-seed"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  int64_t seed = 0;
};
} // namespace

static llvm::Error seedError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "dropout-seed: " + message.str());
}

llvm::Error DropoutSeed::setOption(llvm::StringRef key, llvm::StringRef value) {
  if (key != "seed")
    return Pass::setOption(key, value);
  if (value.getAsInteger(10, seed))
    return seedError("option 'seed' must be a 64-bit integer, got '" + value +
                     "'");
  return llvm::Error::success();
}

static ir::Value *addI64Scalar(ir::Module &module, llvm::StringRef name,
                               int64_t value) {
  uint8_t bytes[8];
  std::memcpy(bytes, &value, 8);
  return module.addWeight(name, ir::TensorType(ir::DType::I64, {}), bytes);
}

llvm::Expected<bool> DropoutSeed::run(ir::Module &module) {
  ir::Value *imported = nullptr;
  for (ir::Value *weight : module.getWeights())
    if (weight->getName() == ir::kDropoutSeedWeight)
      imported = weight;
  if (!imported)
    return false;
  if (ir::isStateWeight(module, imported))
    return seedError(llvm::Twine("'") + ir::kDropoutSeedWeight +
                     "' is already state (the pass ran twice?)");
  const ir::TensorType scalar(ir::DType::I64, {});
  if (imported->getType() != scalar)
    return seedError(llvm::Twine("'") + ir::kDropoutSeedWeight +
                     "' must be an i64 scalar, got " +
                     imported->getType().str());
  // Weights' bytes are immutable: the seeded weight replaces the imported
  // one (whose bytes, 0, only stood for "not seeded yet") under its name.
  imported->setName((llvm::Twine(ir::kDropoutSeedWeight) + ".imported").str());
  ir::Value *weight = addI64Scalar(module, ir::kDropoutSeedWeight, seed);
  module.replaceAllUsesWith(imported, weight);
  module.eraseUnusedWeights();
  ir::Value *one = addI64Scalar(
      module, (llvm::Twine(ir::kDropoutSeedWeight) + ".one").str(), 1);
  ir::Node *advance = module.addNode(ir::OpCode::Add, {weight, one}, {scalar});
  advance->setName((llvm::Twine(ir::kDropoutSeedWeight) + ".advance").str());
  ir::Value *next = advance->getResult(0);
  next->setName((llvm::Twine(ir::kDropoutSeedWeight) + ".updated").str());
  llvm::SmallVector<ir::Value *, 8> outputs(module.getOutputs().begin(),
                                            module.getOutputs().end());
  outputs.push_back(next);
  module.setOutputs(outputs);
  // A statistic: state the step updates by a rule of its own, not a
  // parameter the optimizer trains or a buffer of the optimizer's.
  ir::addState(module, *weight, *next, ir::StateRole::Statistic);
  addStatistic("seed", seed);
  return true;
}

std::unique_ptr<Pass> createDropoutSeedPass() {
  return std::make_unique<DropoutSeed>();
}

} // namespace snug
