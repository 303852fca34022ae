//===- FoldConstants.cpp - Replace constant computations by weights ------===//
//
// Folds every node whose operands are all weights (with data) into new
// weights, in schedule order so that chains fold in one run; Shape and Size
// fold whatever their operand, since every shape is static. Also removes
// Identity, inference-mode Dropout, a Cast to its operand's own type (a
// rename, not a computation: torch's exports put Cast(f32 -> f32) around
// the softmax and the norms of HF models), a Pad by 0 everywhere (HF
// Swin's pad to a multiple of the window) and a Slice that keeps the whole
// tensor in place (DeBERTa's relative positions), so that
// exported transformer graphs, whose shape arithmetic (Shape, Gather, Concat,
// Unsqueeze, Reshape, ConstantOfShape, Where, ...) is all constant once
// shapes are bound, come out static and small. Ops the evaluator
// (ConstantEval.h) does not cover stay as they are.
//
// Folding is bounded, so that a small model cannot make the compiler hold
// gigabytes (a ConstantOfShape of 200 MB feeding ten Adds):
//   - max-bytes=N (default 4 MiB): no folded result larger than N bytes is
//     ever computed; such a node stays an op (every foldable op has a host
//     kernel and a CUDA emitter), so its result is an activation, planned in
//     the arena, instead of a weight.
//   - max-expand-bytes=N (default 256): a node whose result is larger than
//     the constant bytes it reads -- ConstantOfShape, Expand, Tile, Range,
//     a broadcasting Add or Where: a tensor whose size comes from a shape,
//     typically the batch -- folds only when its result is at most N bytes
//     (shape arithmetic: a few i64 dims). So batch-sized constants (an
//     attention mask's zeros of [batch*heads, 1, seq]) stay ops, and the
//     weights are the same for every --dim batch=...; only the arena grows.
// Both limits are in the default import pipeline string (compiler/
// Pipeline.cpp), so a bundle records the ones it was folded with.
//
// Folded values are held by the pass, not added to the module, until the
// end: a value is freed as soon as every node using it has folded too, so a
// chain holds at most a node's operands and results at once (statistic
// peak-bytes-held), and only the values some remaining node or a graph
// output still uses become weights, each named after the result it replaces.
// Weights that lose their last use are erased at the end.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "ir/State.h"
#include "passes/simplify/ConstantEval.h"
#include "passes/Passes.h"
#include "core/CheckedArithmetic.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace snug {
namespace {
class FoldConstants : public Pass {
public:
  llvm::StringRef getName() const override { return "fold-constants"; }
  llvm::Expected<bool> run(ir::Module &module) override;
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;

private:
  llvm::Expected<bool> foldNode(ir::Module &module, ir::Node &node);
  bool forwardNode(ir::Module &module, ir::Node &node);
  /// The bytes of `value` when they are known: a weight's, or a result this
  /// run folded and still holds.
  OperandData getKnownData(const ir::Module &module,
                           const ir::Value *value) const;
  /// Frees the held bytes of `value` when no unfolded node and no graph
  /// output uses it any more.
  void releaseIfDead(const ir::Module &module, const ir::Value *value);
  void materialize(ir::Module &module);

  uint64_t maxBytes = kDefaultFoldMaxBytes;
  uint64_t maxExpandBytes = kDefaultFoldMaxExpandBytes;

  /// Results folded by this run, not yet weights.
  llvm::DenseMap<const ir::Value *, std::vector<uint8_t>> held;
  llvm::SmallPtrSet<const ir::Node *, 16> folded;
  /// The module's state weights (ir/State.h), found once per run: their
  /// bytes are only a first value, never folded through.
  llvm::SmallPtrSet<const ir::Value *, 8> stateWeights;
  uint64_t heldBytes = 0, peakHeldBytes = 0;
};
} // namespace

llvm::Error FoldConstants::setOption(llvm::StringRef key,
                                     llvm::StringRef value) {
  uint64_t *target = key == "max-bytes"          ? &maxBytes
                     : key == "max-expand-bytes" ? &maxExpandBytes
                                                 : nullptr;
  if (!target)
    return Pass::setOption(key, value);
  if (value.getAsInteger(10, *target))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "pass 'fold-constants': option '" + key.str() +
            "' must be a byte count, got '" + value.str() + "'");
  return llvm::Error::success();
}

OperandData FoldConstants::getKnownData(const ir::Module &module,
                                        const ir::Value *value) const {
  // A state weight's bytes are only its first value (ir/State.h).
  if (value->isWeight())
    return value->isWeightElided() || stateWeights.count(value)
               ? OperandData()
               : OperandData(module.getWeightData(value));
  auto it = held.find(value);
  if (it == held.end())
    return OperandData();
  return OperandData(llvm::makeArrayRef(it->second));
}

void FoldConstants::releaseIfDead(const ir::Module &module,
                                  const ir::Value *value) {
  auto it = held.find(value);
  if (it == held.end() || module.isOutput(value))
    return;
  for (const ir::Value::Use &use : value->getUses())
    if (!folded.count(use.user))
      return;
  heldBytes -= it->second.size();
  held.erase(it);
}

/// Whether `node` is a Cast to the type its operand already has.
static bool isIdentityCast(const ir::Node &node) {
  return node.is(ir::OpCode::Cast) && node.getNumOperands() == 1 &&
         node.getOperand(0) && node.getNumResults() == 1 &&
         node.getOperand(0)->getType() == node.getResult(0)->getType();
}

/// Whether `node` is a Pad that adds nothing (every pad 0, any mode): HF's
/// Swin pads its windows to a multiple of the window size, by 0 when the
/// size already is one, and exports the Pad anyway.
static bool isIdentityPad(const ir::Node &node) {
  if (!node.is(ir::OpCode::Pad) || node.getNumOperands() != 1 ||
      !node.getOperand(0) || node.getNumResults() != 1 ||
      node.getOperand(0)->getType() != node.getResult(0)->getType())
    return false;
  const ir::Attribute *pads = node.getAttribute("pads");
  if (!pads || pads->getKind() != ir::Attribute::Kind::Ints)
    return false;
  for (int64_t pad : pads->getInts())
    if (pad != 0)
      return false;
  return true;
}

/// Whether `node` is a Slice that keeps every element in place: the
/// operand's dims, every step 1 (a step of -1 over a whole axis keeps the
/// dims too, but reverses it). DeBERTa's exports slice its relative
/// positions [0:S) of an axis of extent S.
static bool isIdentitySlice(const ir::Node &node) {
  if (!node.is(ir::OpCode::Slice) || node.getNumOperands() != 1 ||
      !node.getOperand(0) || node.getNumResults() != 1 ||
      node.getOperand(0)->getType() != node.getResult(0)->getType())
    return false;
  if (const ir::Attribute *steps = node.getAttribute("steps")) {
    if (steps->getKind() != ir::Attribute::Kind::Ints)
      return false;
    for (int64_t step : steps->getInts())
      if (step != 1)
        return false;
  }
  return true;
}

/// Identity, Dropout, an identity Cast, Pad or Slice pass their operand
/// through: point their users at it.
/// A graph output keeps its name, so the operand takes the name when it is an
/// unnamed-to-the-outside intermediate; otherwise the node stays.
bool FoldConstants::forwardNode(ir::Module &module, ir::Node &node) {
  ir::Value *input = node.getOperand(0);
  ir::Value *result = node.getResult(0);
  if (!input || (node.getNumResults() > 1 && node.getResult(1)->hasUses()))
    return false;
  if (node.is(ir::OpCode::Dropout) && node.getNumOperands() > 2 &&
      node.getOperand(2)) {
    // training_mode must be a constant false to drop the node.
    OperandData mode = getKnownData(module, node.getOperand(2));
    if (!mode || mode->empty() || (*mode)[0])
      return false;
  }
  if (module.isOutput(result)) {
    if (!input->isResult() || module.isOutput(input))
      return false;
    std::string name = result->getName().str();
    result->setName("");
    input->setName(name);
  }
  module.replaceAllUsesWith(result, input);
  return true;
}

/// True when the result is larger than the constant bytes the node reads:
/// the size comes from a shape (ConstantOfShape, Expand, Tile, Range, a
/// broadcast), not from the data. Shape and Size read no data and make a
/// tensor of rank elements: they are not expansions.
static bool expandsData(const ir::Node &node,
                        llvm::ArrayRef<OperandData> operands,
                        uint64_t resultBytes) {
  if (node.is(ir::OpCode::Shape) || node.is(ir::OpCode::Size))
    return false;
  uint64_t read = 0;
  for (const OperandData &data : operands)
    if (data)
      read = checkedAdd(read, data->size()).value_or(UINT64_MAX);
  return resultBytes > read;
}

llvm::Expected<bool> FoldConstants::foldNode(ir::Module &module,
                                             ir::Node &node) {
  ir::OpCode op = node.getOpCode();
  if (!canEvaluate(op))
    return false;
  llvm::SmallVector<OperandData, 4> operands;
  for (unsigned i = 0; i < node.getNumOperands(); ++i) {
    const ir::Value *operand = node.getOperand(i);
    if (!operand) {
      operands.push_back(llvm::None);
      continue;
    }
    OperandData data = getKnownData(module, operand);
    if (!data && needsOperandData(op, i))
      return false;
    operands.push_back(data);
  }
  // The result sizes, checked before anything is allocated: a result over
  // the limit (or whose size does not fit in 64 bits) stays an op.
  uint64_t bytes = 0;
  for (unsigned i = 0; i < node.getNumResults(); ++i) {
    const ir::TensorType &type = node.getResult(i)->getType();
    llvm::ArrayRef<int64_t> dims = type.getDims();
    std::optional<uint64_t> size =
        checkedByteSize(dims.data(), dims.size(),
                        ir::getDTypeSize(type.getDType()), maxBytes);
    std::optional<uint64_t> total = size ? checkedAdd(bytes, *size)
                                         : std::nullopt;
    if (!total || *total > maxBytes) {
      addStatistic("nodes-over-max-bytes");
      return false;
    }
    bytes = *total;
  }
  if (bytes > maxExpandBytes && expandsData(node, operands, bytes)) {
    addStatistic("nodes-over-max-expand-bytes");
    return false;
  }
  auto results = evaluateNode(node, operands);
  if (!results)
    return results.takeError();
  if (!*results)
    return false;
  folded.insert(&node);
  for (unsigned i = 0; i < node.getNumResults(); ++i) {
    heldBytes += (**results)[i].size();
    held[node.getResult(i)] = std::move((**results)[i]);
  }
  peakHeldBytes = std::max(peakHeldBytes, heldBytes);
  // Free what no unfolded node needs: operands whose last user this was, and
  // results nothing uses.
  for (unsigned i = 0; i < node.getNumOperands(); ++i)
    if (node.getOperand(i))
      releaseIfDead(module, node.getOperand(i));
  for (unsigned i = 0; i < node.getNumResults(); ++i)
    releaseIfDead(module, node.getResult(i));
  return true;
}

/// The held values some unfolded node or a graph output still uses become
/// weights, in schedule order.
void FoldConstants::materialize(ir::Module &module) {
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    if (!folded.count(node.get()))
      continue;
    for (unsigned i = 0; i < node->getNumResults(); ++i) {
      ir::Value *result = node->getResult(i);
      auto it = held.find(result);
      if (it == held.end())
        continue;
      std::string name = result->getName().str();
      result->setName("");
      ir::Value *weight = module.addWeight(name, result->getType(), it->second);
      held.erase(it);
      module.replaceAllUsesWith(result, weight);
    }
  }
}

llvm::Expected<bool> FoldConstants::run(ir::Module &module) {
  held.clear();
  folded.clear();
  stateWeights.clear();
  for (const ir::Value *weight : module.getWeights())
    if (ir::isStateWeight(module, weight))
      stateWeights.insert(weight);
  heldBytes = peakHeldBytes = 0;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    if (node->is(ir::OpCode::Identity) || node->is(ir::OpCode::Dropout) ||
        isIdentityCast(*node) || isIdentityPad(*node) ||
        isIdentitySlice(*node)) {
      if (forwardNode(module, *node)) {
        folded.insert(node.get());
        addStatistic("nodes-forwarded");
        continue;
      }
    }
    auto result = foldNode(module, *node);
    if (!result)
      return result.takeError();
    if (*result)
      addStatistic("nodes-folded");
  }
  materialize(module);
  addStatistic("peak-bytes-held", int64_t(peakHeldBytes));
  bool changed = !folded.empty();
  module.eraseNodesIf(
      [&](const ir::Node &node) { return folded.count(&node); });
  folded.clear();
  unsigned erased = module.eraseUnusedWeights();
  addStatistic("weights-erased", erased);
  return changed || erased != 0;
}

std::unique_ptr<Pass> createFoldConstantsPass() {
  return std::make_unique<FoldConstants>();
}

} // namespace snug
