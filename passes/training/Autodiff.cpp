//===- Autodiff.cpp - Reverse-mode gradients as graph nodes ---------------===//
//
// `autodiff{loss=NAME wrt=weights|W1,W2,...}` appends the backward pass of a
// scalar graph output: the gradient of `loss` with respect to each weight
// in wrt (by default every floating-point weight but a BatchNormalization's
// running statistics and the model's constants, ir/State.h) becomes a graph output named `grad.<weight>`. Reverse
// mode after Griewank & Walther ("Evaluating Derivatives", 2nd ed., ch. 3
// and 4): the adjoint of the loss is seeded with 1, then the forward
// schedule is walked in reverse and each node on a path from wrt to the
// loss gets its vector-Jacobian product from its op's gradient rule
// (passes/training/GradientRules.h). A value read by several nodes accumulates one
// adjoint per reader, summed with Add as they arrive; since every reader
// comes after its operand in the schedule, an adjoint is complete before
// the walk reaches its producer.
//
// With loss-scale=S the adjoint of the loss is seeded with S instead of 1,
// held in a new f32 weight `loss_scale` (passes/training/LossScale.h; not in wrt):
// every gradient comes out multiplied by S, for the optimizer's dynamic
// loss scaling to unscale, check and adjust (its dynamic-loss-scale=1).
//
// The backward of a node the module's keep_f32 attribute lists (the loss
// add-loss appended; passes/precision/KeepF32.h) is listed too: a node kept in f32
// has its gradient computed in f32.
//
// With batch-stats=1, each BatchNormalization is first rewritten into its
// training-mode form (passes/training/BatchNormBatchStats.h), after wrt is chosen.
//
// Invariants: the forward nodes are left as they are (the backward nodes
// read their operands and results: the saved activations); every gradient
// has its weight's type; a weight no path reaches gets a zero gradient.
// Nodes off the path (integer index math, a branch the loss ignores) get no
// backward nodes. An op with no gradient rule on the path is an error
// naming the node and op.
//
// Not here: the optimizer (passes/training/Optimizer.cpp), the loss functions
// (passes/training/AddLoss.cpp), and persistent mutable state across steps (issue
// 18 point 3): weights stay constants of the bundle, so the module is one
// step, (inputs) -> (loss, gradients), a pure function.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "ir/State.h"
#include "passes/training/BatchNormBatchStats.h"
#include "passes/training/GradientRules.h"
#include "passes/precision/KeepF32.h"
#include "passes/training/LossScale.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>

namespace snug {

using ir::Node;
using ir::OpCode;
using ir::Value;

namespace {

class Autodiff : public Pass {
public:
  llvm::StringRef getName() const override { return "autodiff"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  std::string lossName;
  /// Empty: every floating-point weight.
  llvm::SmallVector<std::string, 4> wrtNames;
  /// Differentiate BatchNormalization in training mode (batch statistics).
  bool batchStats = false;
  /// loss-scale=S: the seed's value (1 without).
  llvm::Optional<double> lossScale;
};

llvm::Error passError(const llvm::Twine &message) {
  return gradientError(message);
}

} // namespace

llvm::Error Autodiff::setOption(llvm::StringRef key, llvm::StringRef value) {
  if (key == "loss") {
    lossName = value.str();
    return llvm::Error::success();
  }
  if (key == "wrt") {
    wrtNames.clear();
    if (value == "weights")
      return llvm::Error::success();
    llvm::SmallVector<llvm::StringRef, 4> names;
    value.split(names, ',', -1, false);
    for (llvm::StringRef name : names)
      wrtNames.push_back(name.str());
    return llvm::Error::success();
  }
  if (key == "loss-scale") {
    double scale = 0;
    if (value.getAsDouble(scale) || !std::isfinite(scale) || scale <= 0)
      return passError("loss-scale must be a positive number, got '" + value +
                       "'");
    lossScale = scale;
    return llvm::Error::success();
  }
  if (key == "batch-stats") {
    if (value != "0" && value != "1")
      return passError("batch-stats must be 0 or 1, got '" + value + "'");
    batchStats = value == "1";
    return llvm::Error::success();
  }
  return Pass::setOption(key, value);
}

/// The graph output named `name` (the only output when `name` is empty).
static llvm::Expected<Value *> findLoss(const ir::Module &module,
                                        llvm::StringRef name) {
  std::string names;
  for (Value *output : module.getOutputs()) {
    if (output->getName() == name ||
        (name.empty() && module.getOutputs().size() == 1))
      return output;
    names += (names.empty() ? "'" : ", '") + output->getName().str() + "'";
  }
  if (name.empty())
    return passError("give loss=OUTPUT: the graph has " +
                     llvm::Twine(module.getOutputs().size()) + " outputs (" +
                     names + ")");
  return passError("loss '" + name +
                   "' is not a graph output (outputs: " + names + ")");
}

/// The weights read only as a BatchNormalization's mean or variance: running
/// statistics, which training updates (if at all) from batch statistics,
/// never by their gradient, so the default wrt leaves them out.
static llvm::DenseSet<const Value *> findStatistics(const ir::Module &module) {
  llvm::DenseSet<const Value *> statistics, otherwise;
  for (const std::unique_ptr<Node> &node : module.getNodes())
    for (unsigned i = 0; i < node->getNumOperands(); ++i)
      (node->is(OpCode::BatchNormalization) && i >= 3 ? statistics : otherwise)
          .insert(node->getOperand(i));
  for (const Value *value : otherwise)
    statistics.erase(value);
  return statistics;
}

static llvm::Expected<llvm::SmallVector<Value *, 8>>
findWrt(const ir::Module &module, llvm::ArrayRef<std::string> names) {
  llvm::SmallVector<Value *, 8> wrt;
  llvm::DenseSet<const Value *> statistics = findStatistics(module);
  llvm::StringSet<> constants = ir::getConstantWeightNames(module);
  for (Value *weight : module.getWeights())
    if (names.empty() && ir::isFloatDType(weight->getType().getDType()) &&
        !statistics.count(weight) && !constants.count(weight->getName()))
      wrt.push_back(weight);
  for (const std::string &name : names) {
    Value *found = nullptr;
    for (Value *weight : module.getWeights())
      if (weight->getName() == name)
        found = weight;
    if (!found)
      return passError("wrt names '" + name + "', which is not a weight");
    if (!ir::isFloatDType(found->getType().getDType()))
      return passError("wrt names '" + name + "' of type " +
                       found->getType().str() +
                       ": only floating-point weights have gradients");
    wrt.push_back(found);
  }
  return wrt;
}

/// The values that depend on `wrt` through floating-point results.
static llvm::DenseSet<const Value *>
findDependents(const ir::Module &module, llvm::ArrayRef<Value *> wrt) {
  llvm::DenseSet<const Value *> dependent(wrt.begin(), wrt.end());
  for (const std::unique_ptr<Node> &node : module.getNodes()) {
    bool reads = false;
    for (const Value *operand : node->getOperands())
      reads |= operand && dependent.count(operand);
    if (!reads)
      continue;
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      if (ir::isFloatDType(node->getResult(i)->getType().getDType()))
        dependent.insert(node->getResult(i));
  }
  return dependent;
}

/// The values the loss is computed from.
static llvm::DenseSet<const Value *> findNeeded(const ir::Module &module,
                                                const Value *loss) {
  llvm::DenseSet<const Value *> needed{loss};
  auto nodes = module.getNodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    bool isNeeded = false;
    for (unsigned i = 0; i < (*it)->getNumResults(); ++i)
      isNeeded |= needed.count((*it)->getResult(i)) != 0;
    if (isNeeded)
      for (const Value *operand : (*it)->getOperands())
        if (operand)
          needed.insert(operand);
  }
  return needed;
}

/// Adds `gradient` to the adjoint of `value`.
static llvm::Error accumulate(GraphBuilder &builder,
                              llvm::DenseMap<const Value *, Value *> &adjoints,
                              const Value *value, Value *gradient) {
  Value *&adjoint = adjoints[value];
  if (!adjoint) {
    adjoint = gradient;
    return llvm::Error::success();
  }
  auto sum = builder.emit(OpCode::Add, {adjoint, gradient});
  if (!sum)
    return sum.takeError();
  adjoint = *sum;
  return llvm::Error::success();
}

/// Runs the gradient rule of one node on the path.
static llvm::Error
differentiateNode(GraphBuilder &builder, const Node &node,
                  const llvm::DenseSet<const Value *> &dependent,
                  llvm::DenseMap<const Value *, Value *> &adjoints,
                  llvm::StringRef lossName) {
  llvm::SmallVector<Value *, 2> resultGradients;
  bool any = false;
  for (unsigned i = 0; i < node.getNumResults(); ++i) {
    resultGradients.push_back(adjoints.lookup(node.getResult(i)));
    any |= resultGradients.back() != nullptr;
  }
  if (!any)
    return llvm::Error::success();
  GradientRule rule = findGradientRule(node.getOpCode());
  if (!rule)
    return passError(node.describe() + ": no gradient rule for " +
                     node.getOpName() +
                     ", which is on the backward path of "
                     "loss '" +
                     lossName + "'");
  llvm::SmallVector<bool, 4> wanted;
  for (const Value *operand : node.getOperands())
    wanted.push_back(operand && dependent.count(operand));
  llvm::SmallVector<Value *, 4> operandGradients(node.getNumOperands(),
                                                 nullptr);
  builder.setSubject(&node);
  if (llvm::Error error =
          rule(builder, {node, resultGradients, wanted, operandGradients}))
    return passError(node.describe() + ": " + toString(std::move(error)));
  for (unsigned i = 0; i < node.getNumOperands(); ++i)
    if (wanted[i] && operandGradients[i])
      if (llvm::Error error = accumulate(builder, adjoints, node.getOperand(i),
                                         operandGradients[i]))
        return error;
  return llvm::Error::success();
}

/// The gradient output of `weight`: its adjoint (zeros when none reached
/// it), under a fresh name.
static llvm::Expected<Value *>
makeGradientOutput(GraphBuilder &builder, Value *weight, Value *adjoint) {
  const ir::TensorType &type = weight->getType();
  if (!adjoint) {
    Value *zero = builder.scalar(0, type.getDType());
    auto zeros =
        builder.emit(OpCode::Expand, {zero},
                     {{"shape", ir::Attribute::getInts(type.getDims())}});
    if (!zeros)
      return zeros.takeError();
    adjoint = *zeros;
  }
  // An adjoint may be shared (an Add passes one to both operands) or be a
  // constant: name a copy then.
  if (!adjoint->isResult() || !adjoint->getName().empty()) {
    auto copy = builder.emit(OpCode::Identity, {adjoint});
    if (!copy)
      return copy.takeError();
    adjoint = *copy;
  }
  adjoint->setName("grad." + weight->getName().str());
  return adjoint;
}

llvm::Expected<bool> Autodiff::run(ir::Module &module) {
  auto loss = findLoss(module, lossName);
  if (!loss)
    return loss.takeError();
  const ir::TensorType &lossType = (*loss)->getType();
  if (lossType.getNumElements() != 1 || !ir::isFloatDType(lossType.getDType()))
    return passError("loss " + (*loss)->describe() + " is " + lossType.str() +
                     ": a loss must be one floating-point element");
  auto wrt = findWrt(module, wrtNames);
  if (!wrt)
    return wrt.takeError();
  // After wrt is chosen: the rewrite's epsilon constants are no parameters.
  if (batchStats)
    if (auto rewritten = useBatchStatistics(module); !rewritten)
      return rewritten.takeError();

  llvm::DenseSet<const Value *> dependent = findDependents(module, *wrt);
  llvm::DenseSet<const Value *> needed = findNeeded(module, *loss);
  // The forward schedule, before backward nodes are appended to it.
  std::vector<const Node *> forward;
  for (const std::unique_ptr<Node> &node : module.getNodes())
    forward.push_back(node.get());
  size_t forwardCount = forward.size();

  GraphBuilder builder(module, "autodiff.c");
  llvm::DenseMap<const Value *, Value *> adjoints;
  Value *seed = builder.constant(lossType, {lossScale.getValueOr(1.0)});
  if (lossScale) {
    if (lossType.getDType() != ir::DType::F32)
      return passError("loss-scale needs an f32 loss; loss " +
                       (*loss)->describe() + " is " + lossType.str());
    for (Value *weight : module.getWeights())
      if (weight != seed && weight->getName() == kLossScaleWeight)
        return passError(llvm::Twine("loss-scale: the graph has a weight "
                                     "named '") +
                         kLossScaleWeight + "' already");
    seed->setName(kLossScaleWeight);
  }
  adjoints[*loss] = seed;
  llvm::StringSet<> keptF32 = getKeepF32Names(module);
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const Node &node = **it;
    bool onPath = false;
    for (unsigned i = 0; i < node.getNumResults(); ++i)
      onPath |=
          dependent.count(node.getResult(i)) && needed.count(node.getResult(i));
    if (!onPath)
      continue;
    size_t firstNew = module.getNodes().size(); // the builder appends
    if (llvm::Error error = differentiateNode(builder, node, dependent,
                                              adjoints, (*loss)->getName()))
      return error;
    if (!node.getName().empty() && keptF32.count(node.getName()))
      markKeepF32From(module, firstNew, "autodiff.f32");
  }

  llvm::SmallVector<Value *, 8> outputs(module.getOutputs().begin(),
                                        module.getOutputs().end());
  for (Value *weight : *wrt) {
    auto output = makeGradientOutput(builder, weight, adjoints.lookup(weight));
    if (!output)
      return output.takeError();
    outputs.push_back(*output);
  }
  module.setOutputs(outputs);
  addStatistic("gradients", int64_t(wrt->size()));
  addStatistic("backward-nodes",
               int64_t(module.getNodes().size() - forwardCount));
  return true;
}

std::unique_ptr<Pass> createAutodiffPass() {
  return std::make_unique<Autodiff>();
}

} // namespace snug
