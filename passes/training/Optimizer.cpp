//===- Optimizer.cpp - The optimizer update as graph nodes ----------------===//
//
// `optimizer{kind=sgd|momentum|adam|adamw|adafactor lr=X ...}` turns every graph
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
//   adafactor Shazeer & Stern 2018 with a fixed step size (the formulas of
//             fairseq's and HuggingFace's Adafactor with relative_step and
//             scale_parameter off): b2t = 1 - t^decay (decay-rate, -0.8),
//             s = g^2 + eps (eps 1e-30); for a parameter of rank >= 2 the
//             second moment is factored over its last two dims: row R =
//             b2t R + (1-b2t) mean_last(s), column C = b2t C + (1-b2t)
//             mean_second_last(s), u = g / sqrt(R / mean(R)) / sqrt(C)
//             (outer product); otherwise v = b2t v + (1-b2t) s, u = g /
//             sqrt(v). Then u /= max(1, rms(u) / clip-threshold), u *= lr;
//             with beta1 given u = m = b1 m + (1-b1) u; p -= wd lr p; p -= u.
//             Its state for an r x c matrix is r + c numbers, not Adam's 2rc.
// The operation order follows torch 1.13's single-tensor code so that f32
// rounding matches it closely.
//
// Every parameter and optimizer state is persistent state (ir/State.h): the
// parameter is paired with `<weight>.updated`; the momentum buffer
// `<weight>.momentum`, Adam's `<weight>.exp_avg` and `<weight>.exp_avg_sq`,
// Adafactor's `<weight>.exp_avg_sq_row` and `.exp_avg_sq_col` (or
// `.exp_avg_sq` below rank 2, and `.exp_avg` with beta1) and the one step
// count `optimizer.step` (f32[], so bias correction is
// computed in the graph with Pow) are new zero weights paired with their
// `.updated` outputs. The runtime writes the outputs back after each step.
//
// With dynamic-loss-scale=1 [growth-interval=G] the gradients are S times
// their value (autodiff's loss-scale=S): the update reads them unscaled and
// is skipped on Inf or NaN, and S moves by GradScaler's rules
// (passes/training/LossScale.h).
//
// Every node the update adds is listed in the module's keep_f32 attribute
// (passes/precision/KeepF32.h): under --precision=bf16 or fp16 the forward and
// backward are lowered but the update stays f32, on f32 master weights and
// state, reading each lowered gradient cast back to f32.
//
//===----------------------------------------------------------------------===//
#include "passes/training/Optimizer.h"
#include "ir/Module.h"
#include "ir/State.h"
#include "passes/training/GradientRules.h"
#include "passes/precision/KeepF32.h"
#include "passes/training/LossScale.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>

namespace snug {

using ir::OpCode;
using ir::Value;

namespace {
enum class Kind { Sgd, Momentum, Adam, AdamW, Adafactor };

class Optimizer : public Pass {
public:
  ~Optimizer() override { llvm::consumeError(std::move(pending)); }
  llvm::StringRef getName() const override { return "optimizer"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  /// The new value of one parameter; appends its state pairs.
  llvm::Expected<Value *> update(Value *weight, Value *gradient);
  /// Adafactor's new value of one parameter (`update` for that kind).
  Value *adafactor(Value *weight, Value *gradient);
  /// optimizer.step's next value t + 1, made once and shared.
  Value *getStepCount(ir::DType dtype);
  /// A zero weight of `type` named `name`: optimizer state's first value.
  Value *zeroState(const ir::TensorType &type, llvm::StringRef name);
  Value *constant(double value, ir::DType dtype);
  /// `op` on (lhs, rhs), or on lhs alone for Sqrt; nullptr when an operand
  /// is (an earlier emit failed) or this one fails, its error kept in
  /// `pending`, so an update reads as nested formulas checked once.
  Value *emit(OpCode op, Value *lhs, Value *rhs = nullptr);
  /// As emit, for any operands and attributes.
  Value *emit(OpCode op, llvm::ArrayRef<Value *> operands,
              ir::AttributeMap attributes);
  /// ReduceMean or ReduceSum of `value` over `axes`.
  Value *reduce(OpCode op, Value *value, llvm::ArrayRef<int64_t> axes,
                bool keepDims);

  /// Names `next` `<state>.updated` and records the pair; returns `next`.
  Value *record(Value *state, Value *next);

  llvm::Optional<Kind> kind;
  llvm::Optional<double> learningRate;
  double momentum = 0.9, beta1 = 0.9, beta2 = 0.999;
  /// Unset: Adam's 1e-8, Adafactor's 1e-30. Adafactor keeps a first moment
  /// only when beta1 is given.
  llvm::Optional<double> eps;
  bool beta1Given = false;
  double weightDecay = 0, clipThreshold = 1, decayRate = -0.8;
  /// dynamic-loss-scale=1 (passes/training/LossScale.h) and its growth-interval.
  bool dynamicLossScale = false;
  LossScaleRules rules;

  GraphBuilder *builder = nullptr;
  /// Constants shared per (dtype, value).
  std::map<std::pair<unsigned, double>, Value *> constants;
  /// The step count t + 1 of this step and the state pairs to record.
  Value *stepCount = nullptr, *stepSize = nullptr, *correction2Root = nullptr;
  /// Adafactor's b2t and 1 - b2t of this step.
  Value *decay = nullptr, *decayComplement = nullptr;
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
               .Case("adafactor", Kind::Adafactor)
               .Default(llvm::None);
    if (!kind)
      return gradientError("option 'kind' must be sgd, momentum, adam, "
                           "adamw or adafactor, got '" +
                           value + "'");
    return llvm::Error::success();
  }
  if (key == "dynamic-loss-scale") {
    if (value != "0" && value != "1")
      return gradientError("option 'dynamic-loss-scale' must be 0 or 1, got '" +
                           value + "'");
    dynamicLossScale = value == "1";
    return llvm::Error::success();
  }
  if (key == "growth-interval") {
    if (value.getAsInteger(10, rules.growthInterval) ||
        rules.growthInterval < 1)
      return gradientError("option 'growth-interval' must be a whole number "
                           ">= 1, got '" +
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
  if (key == "eps") {
    eps = *number;
    return llvm::Error::success();
  }
  beta1Given |= key == "beta1";
  double *target = key == "momentum"         ? &momentum
                   : key == "beta1"          ? &beta1
                   : key == "beta2"          ? &beta2
                   : key == "clip-threshold" ? &clipThreshold
                   : key == "decay-rate"     ? &decayRate
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
  bool negative; // below 0 (and then `positive` is false)
  std::initializer_list<const char *> kinds;
};
} // namespace

static const NumberOption kNumberOptions[] = {
    {"lr", true, false, false, {"sgd", "momentum", "adam", "adamw", "adafactor"}},
    {"momentum", false, true, false, {"momentum"}},
    {"beta1", false, true, false, {"adam", "adamw", "adafactor"}},
    {"beta2", false, true, false, {"adam", "adamw"}},
    {"eps", true, false, false, {"adam", "adamw", "adafactor"}},
    {"weight-decay",
     false,
     false,
     false,
     {"sgd", "momentum", "adam", "adamw", "adafactor"}},
    {"clip-threshold", true, false, false, {"adafactor"}},
    {"decay-rate", false, false, true, {"adafactor"}},
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
  bool bad = value.getAsDouble(parsed) || !std::isfinite(parsed);
  if (option->negative)
    bad |= parsed >= 0;
  else
    bad |= parsed < 0 || (option->positive && parsed == 0) ||
           (option->belowOne && parsed >= 1);
  if (bad)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::Twine("must be a ") +
            (option->negative   ? "negative number"
             : option->positive ? "positive number"
                                : "number >= 0") +
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

Value *Optimizer::getStepCount(ir::DType dtype) {
  if (!stepCount) {
    Value *count = zeroState(ir::TensorType(dtype, {}), "optimizer.step");
    stepCount = record(count, emit(OpCode::Add, count, constant(1, dtype)));
  }
  return stepCount;
}

llvm::Expected<Value *> Optimizer::update(Value *weight, Value *gradient) {
  if (*kind == Kind::Adafactor) {
    Value *next = adafactor(weight, gradient);
    if (pending)
      return std::move(pending);
    return next;
  }
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
    if (!stepSize) {
      // One step count and one set of bias corrections for all parameters:
      // 1 - b^t, the step size lr / (1 - b1^t) and sqrt(1 - b2^t).
      getStepCount(dtype);
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
        emit(OpCode::Div, emit(OpCode::Sqrt, vNext), correction2Root),
        c(eps.getValueOr(1e-8)));
    next = emit(
        OpCode::Sub, p,
        emit(OpCode::Mul, emit(OpCode::Div, mNext, denominator), stepSize));
  }
  if (pending)
    return std::move(pending);
  return next;
}

Value *Optimizer::adafactor(Value *weight, Value *g) {
  ir::DType dtype = weight->getType().getDType();
  auto c = [&](double value) { return constant(value, dtype); };
  llvm::ArrayRef<int64_t> dims = weight->getType().getDims();
  int64_t rank = int64_t(dims.size());
  std::string name = weight->getName().str();
  if (!decay) {
    // b2t = 1 - t^decay-rate: 0 at the first step, so the first second
    // moment is that step's own.
    Value *power = emit(OpCode::Pow, getStepCount(dtype), c(decayRate));
    decay = emit(OpCode::Sub, c(1), power);
    decayComplement = emit(OpCode::Sub, c(1), decay);
  }
  auto reciprocalRoot = [&](Value *value) {
    return emit(OpCode::Div, c(1), emit(OpCode::Sqrt, value));
  };
  auto average = [&](Value *state, Value *sample) {
    return record(state, emit(OpCode::Add, emit(OpCode::Mul, state, decay),
                              emit(OpCode::Mul, sample, decayComplement)));
  };
  Value *squared =
      emit(OpCode::Add, emit(OpCode::Mul, g, g), c(eps.getValueOr(1e-30)));
  Value *u = nullptr;
  if (rank >= 2) {
    llvm::SmallVector<int64_t, 4> rowDims(dims.begin(), dims.end() - 1),
        columnDims(dims.begin(), dims.end() - 2);
    columnDims.push_back(dims.back());
    Value *row =
        zeroState(ir::TensorType(dtype, rowDims), name + ".exp_avg_sq_row");
    Value *column = zeroState(ir::TensorType(dtype, columnDims),
                              name + ".exp_avg_sq_col");
    Value *rowNext =
        average(row, reduce(OpCode::ReduceMean, squared, {rank - 1}, false));
    Value *columnNext =
        average(column, reduce(OpCode::ReduceMean, squared, {rank - 2}, false));
    // The factored estimate R C / sum(R), as 1 / sqrt(R / mean(R)) times
    // 1 / sqrt(C) in their own dims of the parameter.
    Value *rowFactor = reciprocalRoot(
        emit(OpCode::Div, rowNext,
             reduce(OpCode::ReduceMean, rowNext, {rank - 2}, true)));
    Value *columnFactor = reciprocalRoot(columnNext);
    llvm::SmallVector<int64_t, 4> rowShape = rowDims, columnShape = columnDims;
    rowShape.push_back(1);
    columnShape.insert(columnShape.end() - 1, 1);
    auto shaped = [&](Value *value, llvm::ArrayRef<int64_t> shape) {
      return emit(OpCode::Reshape, {value},
                  {{"shape", ir::Attribute::getInts(shape)}});
    };
    u = emit(OpCode::Mul,
             emit(OpCode::Mul, shaped(rowFactor, rowShape),
                  shaped(columnFactor, columnShape)),
             g);
  } else {
    Value *v = zeroState(weight->getType(), name + ".exp_avg_sq");
    u = emit(OpCode::Mul, reciprocalRoot(average(v, squared)), g);
  }
  // Update clipping: u / max(1, rms(u) / d), rms as torch's norm / sqrt(n).
  llvm::SmallVector<int64_t, 4> all;
  for (int64_t axis = 0; axis < rank; ++axis)
    all.push_back(axis);
  Value *rms = emit(OpCode::Div,
                    emit(OpCode::Sqrt, reduce(OpCode::ReduceSum,
                                              emit(OpCode::Mul, u, u), all,
                                              false)),
                    c(std::sqrt(double(weight->getType().getNumElements()))));
  u = emit(OpCode::Div, u,
           emit(OpCode::Max, emit(OpCode::Div, rms, c(clipThreshold)), c(1)));
  u = emit(OpCode::Mul, u, c(*learningRate));
  if (beta1Given) {
    Value *m = zeroState(weight->getType(), name + ".exp_avg");
    u = record(m, emit(OpCode::Add, emit(OpCode::Mul, m, c(beta1)),
                       emit(OpCode::Mul, u, c(1 - beta1))));
  }
  Value *p = weight;
  if (weightDecay != 0)
    p = emit(OpCode::Add, p,
             emit(OpCode::Mul, p, c(-weightDecay * *learningRate)));
  return emit(OpCode::Sub, p, u);
}

Value *Optimizer::reduce(OpCode op, Value *value, llvm::ArrayRef<int64_t> axes,
                         bool keepDims) {
  if (axes.empty())
    return value;
  return emit(op, {value},
              {{"axes", ir::Attribute::getInts(axes)},
               {"keepdims", ir::Attribute::getInt(keepDims ? 1 : 0)}});
}

Value *Optimizer::emit(OpCode op, Value *lhs, Value *rhs) {
  if (!lhs || (op != OpCode::Sqrt && !rhs))
    return nullptr;
  llvm::SmallVector<Value *, 2> operands{lhs};
  if (rhs)
    operands.push_back(rhs);
  return emit(op, operands, {});
}

Value *Optimizer::emit(OpCode op, llvm::ArrayRef<Value *> operands,
                       ir::AttributeMap attributes) {
  if (llvm::is_contained(operands, nullptr))
    return nullptr;
  auto result = builder->emit(op, operands, std::move(attributes));
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
    return gradientError("give kind=sgd|momentum|adam|adamw|adafactor");
  if (!learningRate)
    return gradientError("give lr=X, the learning rate");
  llvm::StringMap<Value *> weights;
  for (Value *weight : module.getWeights())
    weights[weight->getName()] = weight;
  size_t firstNew = module.getNodes().size(); // the builder appends
  GraphBuilder graphBuilder(module, "optimizer.c");
  builder = &graphBuilder;
  constants.clear();
  stepCount = stepSize = correction2Root = decay = decayComplement = nullptr;
  newState.clear();
  // The gradient outputs and their weights, in output order.
  llvm::SmallVector<Value *, 8> gradients;
  llvm::DenseMap<Value *, Value *> weightOf;
  for (Value *output : module.getOutputs()) {
    llvm::StringRef name = output->getName();
    if (Value *weight =
            name.consume_front("grad.") ? weights.lookup(name) : nullptr) {
      gradients.push_back(output);
      weightOf[output] = weight;
    }
  }
  if (gradients.empty())
    return gradientError("no output is the gradient of a weight "
                         "(grad.<weight>): run autodiff first");
  // With loss scaling the update reads the unscaled gradients.
  llvm::SmallVector<Value *, 8> unscaled(gradients.begin(), gradients.end());
  Value *finite = nullptr, *scale = nullptr;
  if (dynamicLossScale) {
    scale = weights.lookup(kLossScaleWeight);
    if (!scale)
      return gradientError(llvm::Twine("dynamic-loss-scale=1 needs the "
                                       "weight '") +
                           kLossScaleWeight +
                           "': run autodiff with loss-scale=S first");
    auto flag = unscaleGradients(graphBuilder, scale, unscaled);
    if (!flag)
      return flag.takeError();
    finite = *flag;
  }
  llvm::DenseMap<Value *, Value *> updateOf;
  std::vector<std::pair<Value *, Value *>> parameters;
  for (size_t i = 0; i < gradients.size(); ++i) {
    Value *weight = weightOf.lookup(gradients[i]);
    auto next = update(weight, unscaled[i]);
    if (!next)
      return next.takeError();
    (*next)->setName((weight->getName() + ".updated").str());
    parameters.push_back({weight, *next});
  }
  if (finite) {
    // Skipped on overflow: parameters and optimizer state alike; the scale
    // and its count are the one state that moves then.
    if (llvm::Error error = guardStep(graphBuilder, finite, parameters))
      return error;
    if (llvm::Error error = guardStep(graphBuilder, finite, newState))
      return error;
    if (llvm::Error error =
            updateLossScale(graphBuilder, finite, scale, rules, newState))
      return error;
  }
  for (size_t i = 0; i < gradients.size(); ++i)
    updateOf[gradients[i]] = parameters[i].second;
  llvm::SmallVector<Value *, 8> outputs;
  for (Value *output : module.getOutputs())
    outputs.push_back(updateOf.count(output) ? updateOf.lookup(output)
                                             : output);
  for (const auto &[state, next] : newState)
    outputs.push_back(next);
  module.setOutputs(outputs);
  for (const auto &[weight, next] : parameters)
    ir::addState(module, *weight, *next, ir::StateRole::Parameter);
  for (const auto &[state, next] : newState)
    ir::addState(module, *state, *next, ir::StateRole::Optimizer);
  markKeepF32From(module, firstNew, "optimizer.update");
  addStatistic("parameters-updated", parameters.size());
  addStatistic("optimizer-state-tensors", newState.size());
  return true;
}

std::unique_ptr<Pass> createOptimizerPass() {
  return std::make_unique<Optimizer>();
}

} // namespace snug
