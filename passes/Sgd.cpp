//===- Sgd.cpp - Plain stochastic gradient descent as graph nodes ---------===//
//
// `sgd{lr=X}` turns every graph output `grad.<weight>` (the autodiff pass's)
// into `<weight>.updated` = weight - lr * gradient, in the weight's dtype,
// so a module that computed (loss, gradients) computes one training step,
// (inputs, labels) -> (loss, updated parameters). Other outputs stay.
//
// Not here: momentum, Adam and their state, and writing the update back
// into the weight between steps. Both need persistent mutable buffers
// (issue 18 point 3); until then the caller feeds the updated parameters
// into the next step's bundle.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/GradientRules.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>

namespace snug {

using ir::OpCode;
using ir::Value;

namespace {
class Sgd : public Pass {
public:
  llvm::StringRef getName() const override { return "sgd"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  llvm::Optional<double> learningRate;
};
} // namespace

llvm::Error Sgd::setOption(llvm::StringRef key, llvm::StringRef value) {
  if (key != "lr")
    return Pass::setOption(key, value);
  double rate = 0;
  if (value.getAsDouble(rate) || !std::isfinite(rate) || rate <= 0)
    return gradientError("option 'lr' must be a positive number, got '" +
                         value + "'");
  learningRate = rate;
  return llvm::Error::success();
}

llvm::Expected<bool> Sgd::run(ir::Module &module) {
  if (!learningRate)
    return gradientError("give lr=X, the learning rate");
  llvm::StringMap<Value *> weights;
  for (Value *weight : module.getWeights())
    weights[weight->getName()] = weight;
  GraphBuilder builder(module, "sgd.c");
  // One learning-rate constant per dtype, shared by its weights.
  llvm::DenseMap<unsigned, Value *> rates;
  llvm::SmallVector<Value *, 8> outputs;
  int64_t updated = 0;
  for (Value *output : module.getOutputs()) {
    llvm::StringRef name = output->getName();
    Value *weight =
        name.consume_front("grad.") ? weights.lookup(name) : nullptr;
    if (!weight) {
      outputs.push_back(output);
      continue;
    }
    ir::DType dtype = weight->getType().getDType();
    Value *&rate = rates[unsigned(dtype)];
    if (!rate)
      rate = builder.scalar(*learningRate, dtype);
    auto step = builder.emit(OpCode::Mul, {output, rate});
    if (!step)
      return step.takeError();
    auto next = builder.emit(OpCode::Sub, {weight, *step});
    if (!next)
      return next.takeError();
    (*next)->setName((name + ".updated").str());
    outputs.push_back(*next);
    ++updated;
  }
  if (!updated)
    return gradientError("no output is the gradient of a weight "
                         "(grad.<weight>): run autodiff first");
  module.setOutputs(outputs);
  addStatistic("parameters-updated", updated);
  return true;
}

std::unique_ptr<Pass> createSgdPass() { return std::make_unique<Sgd>(); }

} // namespace snug
