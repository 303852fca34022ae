//===- Optimizer.cpp - The optimizer update as graph nodes ----------------===//
//
// `optimizer{kind=sgd|momentum|adam|adamw lr=X ...}` turns every graph
// output `grad.<weight>` (the autodiff pass's) into `<weight>.updated`, the
// parameter after one step of torch.optim's update rule, in the weight's
// dtype, so a module that computed (loss, gradients) computes one training
// step. Other outputs stay. With g the gradient, p the parameter, wd
// weight-decay (default 0), t the step count:
//   sgd       g += wd p;  p -= lr g                       (torch.optim.SGD)
//   momentum  g += wd p;  b = mu b + g;  p -= lr b        (SGD, momentum mu,
//             dampening 0, no Nesterov; b starts at 0, so step 1 gives b = g)
//   adam      g += wd p;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//             p -= lr/(1-b1^t) m / (sqrt(v)/sqrt(1-b2^t) + eps)
//   adamw     as adam, but decoupled (Loshchilov & Hutter 2019): p *= 1 - lr
//             wd before the update and g is not decayed (torch.optim.AdamW)
// The operation order follows torch 1.13's single-tensor code so that f32
// rounding matches it closely.
//
// Every parameter and optimizer state is persistent state (ir/State.h): the
// parameter is paired with `<weight>.updated`; the momentum buffer
// `<weight>.momentum`, Adam's `<weight>.exp_avg` and `<weight>.exp_avg_sq`
// and the one step count `optimizer.step` (f32[], so bias correction is
// computed in the graph with Pow) are new zero weights paired with their
// `.updated` outputs. The runtime writes the outputs back after each step.
//
//===----------------------------------------------------------------------===//
#include "passes/Optimizer.h"
#include "ir/Module.h"
#include "ir/State.h"
#include "passes/GradientRules.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

namespace snug {

using ir::OpCode;
using ir::Value;

namespace {
enum class Kind { Sgd, Momentum, Adam, AdamW };

class Optimizer : public Pass {
public:
  ~Optimizer() override { llvm::consumeError(std::move(pending)); }
  llvm::StringRef getName() const override { return "optimizer"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  /// The new value of one parameter; appends its state pairs.
  llvm::Expected<Value *> update(Value *weight, Value *gradient);
  /// A zero weight of `type` named `name`: optimizer state's first value.
  Value *zeroState(const ir::TensorType &type, llvm::StringRef name);
  Value *constant(double value, ir::DType dtype);
  /// `op` on (lhs, rhs), or on lhs alone for Sqrt; nullptr when an operand
  /// is (an earlier emit failed) or this one fails, its error kept in
  /// `pending`, so an update reads as nested formulas checked once.
  Value *emit(OpCode op, Value *lhs, Value *rhs = nullptr);
  /// Names `next` `<state>.updated` and records the pair; returns `next`.
  Value *record(Value *state, Value *next);

  llvm::Optional<Kind> kind;
  llvm::Optional<double> learningRate;
  double momentum = 0.9, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0;

  GraphBuilder *builder = nullptr;
  /// Constants shared per (dtype, value).
  std::map<std::pair<unsigned, double>, Value *> constants;
  /// The step count t + 1 of this step and the state pairs to record.
  Value *stepCount = nullptr, *stepSize = nullptr, *correction2Root = nullptr;
  std::vector<std::pair<Value *, Value *>> newState;
  llvm::Error pending = llvm::Error::success();
};
} // namespace

llvm::Error Optimizer::setOption(llvm::StringRef key, llvm::StringRef value) {
  if (key == "kind") {
    kind = llvm::StringSwitch<llvm::Optional<Kind>>(value)
               .Case("sgd", Kind::Sgd)
               .Case("momentum", Kind::Momentum)
               .Case("adam", Kind::Adam)
               .Case("adamw", Kind::AdamW)
               .Default(llvm::None);
    if (!kind)
      return gradientError("option 'kind' must be sgd, momentum, adam or "
                           "adamw, got '" +
                           value + "'");
    return llvm::Error::success();
  }
  if (!isOptimizerNumber(key))
    return Pass::setOption(key, value);
  auto number = parseOptimizerNumber(key, value);
  if (!number)
    return gradientError("option '" + key + "' " +
                         llvm::toString(number.takeError()));
  if (key == "lr") {
    learningRate = *number;
    return llvm::Error::success();
  }
  double *target = key == "momentum" ? &momentum
                   : key == "beta1"  ? &beta1
                   : key == "beta2"  ? &beta2
                   : key == "eps"    ? &eps
                                     : &weightDecay;
  *target = *number;
  return llvm::Error::success();
}

namespace {
/// A number option: its range and the optimizers it applies to.
struct NumberOption {
  const char *key;
  bool positive; // 0 is not allowed either
  bool belowOne;
  std::initializer_list<const char *> kinds;
};
} // namespace

static const NumberOption kNumberOptions[] = {
    {"lr", true, false, {"sgd", "momentum", "adam", "adamw"}},
    {"momentum", false, true, {"momentum"}},
    {"beta1", false, true, {"adam", "adamw"}},
    {"beta2", false, true, {"adam", "adamw"}},
    {"eps", true, false, {"adam", "adamw"}},
    {"weight-decay", false, false, {"sgd", "momentum", "adam", "adamw"}},
};

static const NumberOption *findNumberOption(llvm::StringRef key) {
  for (const NumberOption &option : kNumberOptions)
    if (key == option.key)
      return &option;
  return nullptr;
}

bool isOptimizerNumber(llvm::StringRef key) {
  return findNumberOption(key) != nullptr;
}

bool appliesToOptimizer(llvm::StringRef key, llvm::StringRef kind) {
  const NumberOption *option = findNumberOption(key);
  return option && llvm::is_contained(option->kinds, kind);
}

llvm::Expected<double> parseOptimizerNumber(llvm::StringRef key,
                                            llvm::StringRef value) {
  const NumberOption *option = findNumberOption(key);
  assert(option && "not a number option of the optimizer pass");
  double parsed = 0;
  if (value.getAsDouble(parsed) || !std::isfinite(parsed) || parsed < 0 ||
      (option->positive && parsed == 0) || (option->belowOne && parsed >= 1))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::Twine("must be a ") +
            (option->positive ? "positive number" : "number >= 0") +
            (option->belowOne ? " below 1" : "") + ", got '" + value + "'");
  return parsed;
}

Value *Optimizer::constant(double value, ir::DType dtype) {
  Value *&shared = constants[{unsigned(dtype), value}];
  if (!shared)
    shared = builder->scalar(value, dtype);
  return shared;
}

Value *Optimizer::zeroState(const ir::TensorType &type, llvm::StringRef name) {
  std::vector<double> zeros(type.getNumElements(), 0.0);
  Value *state = builder->constant(type, zeros);
  state->setName(name);
  return state;
}

llvm::Expected<Value *> Optimizer::update(Value *weight, Value *gradient) {
  ir::DType dtype = weight->getType().getDType();
  auto c = [&](double value) { return constant(value, dtype); };
  Value *g = gradient;
  bool decoupled = *kind == Kind::AdamW;
  if (weightDecay != 0 && !decoupled)
    g = emit(OpCode::Add, g, emit(OpCode::Mul, weight, c(weightDecay)));
  std::string name = weight->getName().str();
  Value *next = nullptr;
  if (*kind == Kind::Sgd || *kind == Kind::Momentum) {
    if (*kind == Kind::Momentum) {
      Value *buffer = zeroState(weight->getType(), name + ".momentum");
      g = record(buffer,
                 emit(OpCode::Add, emit(OpCode::Mul, buffer, c(momentum)), g));
    }
    next = emit(OpCode::Sub, weight, emit(OpCode::Mul, g, c(*learningRate)));
  } else {
    Value *p = weight;
    if (weightDecay != 0 && decoupled)
      p = emit(OpCode::Mul, p, c(1 - *learningRate * weightDecay));
    if (!stepCount) {
      // One step count and one set of bias corrections for all parameters:
      // 1 - b^t, the step size lr / (1 - b1^t) and sqrt(1 - b2^t).
      Value *count = zeroState(ir::TensorType(dtype, {}), "optimizer.step");
      stepCount = record(count, emit(OpCode::Add, count, c(1)));
      auto correction = [&](double beta) {
        return emit(OpCode::Sub, c(1), emit(OpCode::Pow, c(beta), stepCount));
      };
      stepSize = emit(OpCode::Div, c(*learningRate), correction(beta1));
      correction2Root = emit(OpCode::Sqrt, correction(beta2));
    }
    // torch's m.mul_(b1).add_(g, alpha=1-b1), v.mul_(b2).addcmul_(g, g,
    // value=1-b2).
    Value *m = zeroState(weight->getType(), name + ".exp_avg");
    Value *v = zeroState(weight->getType(), name + ".exp_avg_sq");
    Value *mNext = record(m, emit(OpCode::Add, emit(OpCode::Mul, m, c(beta1)),
                                  emit(OpCode::Mul, g, c(1 - beta1))));
    Value *vNext = record(
        v, emit(OpCode::Add, emit(OpCode::Mul, v, c(beta2)),
                emit(OpCode::Mul, emit(OpCode::Mul, g, g), c(1 - beta2))));
    // The denominator sqrt(v) / sqrt(1 - b2^t) + eps.
    Value *denominator = emit(
        OpCode::Add,
        emit(OpCode::Div, emit(OpCode::Sqrt, vNext), correction2Root), c(eps));
    next = emit(
        OpCode::Sub, p,
        emit(OpCode::Mul, emit(OpCode::Div, mNext, denominator), stepSize));
  }
  if (pending)
    return std::move(pending);
  return next;
}

Value *Optimizer::emit(OpCode op, Value *lhs, Value *rhs) {
  if (!lhs || (op != OpCode::Sqrt && !rhs))
    return nullptr;
  llvm::SmallVector<Value *, 2> operands{lhs};
  if (rhs)
    operands.push_back(rhs);
  auto result = builder->emit(op, operands);
  if (result)
    return *result;
  if (!pending)
    pending = result.takeError();
  else
    llvm::consumeError(result.takeError());
  return nullptr;
}

Value *Optimizer::record(Value *state, Value *next) {
  if (!next)
    return nullptr;
  next->setName((state->getName() + ".updated").str());
  newState.push_back({state, next});
  return next;
}

llvm::Expected<bool> Optimizer::run(ir::Module &module) {
  if (!kind)
    return gradientError("give kind=sgd|momentum|adam|adamw");
  if (!learningRate)
    return gradientError("give lr=X, the learning rate");
  llvm::StringMap<Value *> weights;
  for (Value *weight : module.getWeights())
    weights[weight->getName()] = weight;
  GraphBuilder graphBuilder(module, "optimizer.c");
  builder = &graphBuilder;
  constants.clear();
  stepCount = stepSize = correction2Root = nullptr;
  newState.clear();
  llvm::SmallVector<Value *, 8> outputs;
  std::vector<std::pair<Value *, Value *>> parameters;
  for (Value *output : module.getOutputs()) {
    llvm::StringRef name = output->getName();
    Value *weight =
        name.consume_front("grad.") ? weights.lookup(name) : nullptr;
    if (!weight) {
      outputs.push_back(output);
      continue;
    }
    auto next = update(weight, output);
    if (!next)
      return next.takeError();
    (*next)->setName((name + ".updated").str());
    outputs.push_back(*next);
    parameters.push_back({weight, *next});
  }
  if (parameters.empty())
    return gradientError("no output is the gradient of a weight "
                         "(grad.<weight>): run autodiff first");
  for (const auto &[state, next] : newState)
    outputs.push_back(next);
  module.setOutputs(outputs);
  for (const auto &[weight, next] : parameters)
    ir::addState(module, *weight, *next, ir::StateRole::Parameter);
  for (const auto &[state, next] : newState)
    ir::addState(module, *state, *next, ir::StateRole::Optimizer);
  addStatistic("parameters-updated", parameters.size());
  addStatistic("optimizer-state-tensors", newState.size());
  return true;
}

std::unique_ptr<Pass> createOptimizerPass() {
  return std::make_unique<Optimizer>();
}

} // namespace snug
