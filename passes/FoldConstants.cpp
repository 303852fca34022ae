//===- FoldConstants.cpp - Replace constant computations by weights ------===//
//
// Folds every node whose operands are all weights (with data) into new
// weights, in schedule order so that chains fold in one run; Shape and Size
// fold whatever their operand, since every shape is static. Also removes
// Identity and inference-mode Dropout (a rename, not a computation), so that
// exported transformer graphs, whose shape arithmetic (Shape, Gather, Concat,
// Unsqueeze, Reshape, ConstantOfShape, Where, ...) is all constant once
// shapes are bound, come out static and small. Ops the evaluator
// (ConstantEval.h) does not cover stay as they are.
//
// A folded weight takes the name of the result it replaces. Weights that lose
// their last use are erased at the end. Option: max-bytes=N leaves results
// larger than N bytes unfolded (default 256 MiB).
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/ConstantEval.h"
#include "passes/Passes.h"

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
  uint64_t maxBytes = uint64_t(256) << 20;
};
} // namespace

llvm::Error FoldConstants::setOption(llvm::StringRef key,
                                     llvm::StringRef value) {
  if (key == "max-bytes" && !value.getAsInteger(10, maxBytes))
    return llvm::Error::success();
  return Pass::setOption(key, value);
}

/// Identity and Dropout pass their operand through: point their users at it.
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
    ir::Value *mode = node.getOperand(2);
    if (!mode->isWeight() || mode->isWeightElided() ||
        module.getWeightData(mode).empty() || module.getWeightData(mode)[0])
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
    bool known = operand->isWeight() && !operand->isWeightElided();
    if (!known && needsOperandData(op, i))
      return false;
    operands.push_back(known ? OperandData(module.getWeightData(operand))
                             : OperandData());
  }
  uint64_t bytes = 0;
  for (unsigned i = 0; i < node.getNumResults(); ++i)
    bytes += node.getResult(i)->getType().getByteSize();
  if (bytes > maxBytes)
    return false;
  auto results = evaluateNode(node, operands);
  if (!results)
    return results.takeError();
  if (!*results)
    return false;
  for (unsigned i = 0; i < node.getNumResults(); ++i) {
    ir::Value *result = node.getResult(i);
    std::string name = result->getName().str();
    result->setName("");
    ir::Value *weight =
        module.addWeight(name, result->getType(), (**results)[i]);
    module.replaceAllUsesWith(result, weight);
  }
  return true;
}

llvm::Expected<bool> FoldConstants::run(ir::Module &module) {
  llvm::SmallPtrSet<const ir::Node *, 16> folded;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    bool done = false;
    if (node->is(ir::OpCode::Identity) || node->is(ir::OpCode::Dropout)) {
      done = forwardNode(module, *node);
      if (done)
        addStatistic("nodes-forwarded");
    }
    if (!done) {
      auto result = foldNode(module, *node);
      if (!result)
        return result.takeError();
      done = *result;
      if (done)
        addStatistic("nodes-folded");
    }
    if (done)
      folded.insert(node.get());
  }
  module.eraseNodesIf(
      [&](const ir::Node &node) { return folded.count(&node); });
  unsigned erased = module.eraseUnusedWeights();
  addStatistic("weights-erased", erased);
  return !folded.empty() || erased != 0;
}

std::unique_ptr<Pass> createFoldConstantsPass() {
  return std::make_unique<FoldConstants>();
}

} // namespace snug
