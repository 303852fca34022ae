//===- InterleaveMicroBatches.cpp - Backward after each forward ----------===//
//
// Gradient accumulation (`snugc train --accumulate=K`) runs
// split-batch{parts=K loss=...} before autodiff: the step becomes K copies
// of the forward pass, each on its slice of the batch, whose losses are
// averaged. autodiff appends the backward pass after all K forwards, so as
// scheduled every copy's activations stay live until its backward runs:
// the peak of the whole batch, nothing saved. This pass reorders the nodes
// so that micro-batch k's backward runs right after its forward, before
// the next micro-batch's forward starts; then only one micro-batch's
// activations are live at a time, beside the weight gradients, which
// autodiff already sums copy by copy into one adjoint (an Add per copy).
//
// A node belongs to the micro-batches it depends on, through the Slices
// split-batch makes of the graph inputs (axes [0], a 1/K-th of the batch
// each); its phase is the lowest of them. A gradient's running sum over
// copies K-1..k is in phase k, with copy k's own backward. A node that
// depends on no slice (a constant, a weight's transpose) takes the phase
// of its earliest-run reader, so it is computed when first needed rather
// than held from the start; one nothing reads runs last. Nodes are then
// stably sorted by phase, from K-1 down to 0: autodiff walks the forward
// schedule backwards, so the running sums start at the last copy. The
// order is topological because a node's operands are never in a later
// phase (the lowest slice of the operands is at least the node's; a
// slice-free operand takes the phase of its earliest reader), and within a
// phase the old order is kept. Results do not change: the nodes are the
// same, only their order.
//
// A module without the split_batch attribute, or without such Slices, is
// left alone. The schedule pass later keeps this order unless it finds one
// with a strictly lower bound; fuse keeps its groups within a phase
// (MicroBatchPhases.h).
//
//===----------------------------------------------------------------------===//
#include "passes/memory/budget/MicroBatchPhases.h"

#include "ir/Module.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <climits>

namespace snug {
namespace {

class InterleaveMicroBatches : public Pass {
public:
  llvm::StringRef getName() const override {
    return "interleave-micro-batches";
  }
  llvm::Expected<bool> run(ir::Module &module) override;
};

int64_t firstInt(const ir::Node &node, llvm::StringRef name) {
  const ir::Attribute *attr = node.getAttribute(name);
  if (!attr || attr->getKind() != ir::Attribute::Kind::Ints ||
      attr->getInts().size() != 1)
    return -1;
  return attr->getInts()[0];
}

/// The micro-batch a Slice split-batch made reads (0..parts-1), or -1 when
/// `node` is not one: a slice along dim 0 of a graph argument, one
/// parts-th of it, at a multiple of that.
int64_t getSlicePart(const ir::Node &node, int64_t parts) {
  if (!node.is(ir::OpCode::Slice) || !node.getOperand(0) ||
      node.getOperand(0)->isResult())
    return -1;
  const ir::TensorType &type = node.getOperand(0)->getType();
  if (type.getRank() == 0 || type.getDims()[0] % parts != 0)
    return -1;
  int64_t each = type.getDims()[0] / parts;
  int64_t start = firstInt(node, "starts");
  if (firstInt(node, "axes") != 0 || firstInt(node, "steps") != 1 ||
      start < 0 || start % each != 0 || firstInt(node, "ends") != start + each)
    return -1;
  return start / each;
}

} // namespace

std::vector<int64_t> findMicroBatchPhases(const ir::Module &module) {
  const ir::Attribute *split = module.getAttribute("split_batch");
  if (!split || split->getKind() != ir::Attribute::Kind::Int ||
      split->getInt() < 2)
    return {};
  int64_t parts = split->getInt();
  std::vector<const ir::Node *> order;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    order.push_back(node.get());
  // The lowest micro-batch each value depends on (none: absent).
  llvm::DenseMap<const ir::Value *, int64_t> lowest;
  std::vector<int64_t> phase(order.size(), -1);
  bool anySlice = false;
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node &node = *order[i];
    int64_t part = getSlicePart(node, parts);
    anySlice |= part >= 0;
    if (part < 0) {
      part = INT64_MAX;
      for (const ir::Value *operand : node.getOperands())
        if (operand)
          if (auto it = lowest.find(operand); it != lowest.end())
            part = std::min(part, it->second);
    }
    if (part == INT64_MAX)
      continue;
    phase[i] = part;
    for (unsigned r = 0; r < node.getNumResults(); ++r)
      lowest[node.getResult(r)] = part;
  }
  if (!anySlice)
    return {};
  // Slice-free nodes, last to first: the phase of the earliest-run reader
  // (the highest phase, as phases run from parts-1 down), -1 for none.
  llvm::DenseMap<const ir::Node *, size_t> indexOf;
  for (size_t i = 0; i < order.size(); ++i)
    indexOf[order[i]] = i;
  std::vector<int64_t> readerPhase(order.size(), -1);
  for (size_t i = order.size(); i-- > 0;) {
    if (phase[i] < 0)
      phase[i] = readerPhase[i];
    for (const ir::Value *operand : order[i]->getOperands())
      if (operand && operand->isResult())
        if (auto it = indexOf.find(operand->getDefiningNode());
            it != indexOf.end())
          readerPhase[it->second] =
              std::max(readerPhase[it->second], phase[i]);
  }
  return phase;
}

llvm::Expected<bool> InterleaveMicroBatches::run(ir::Module &module) {
  std::vector<int64_t> phase = findMicroBatchPhases(module);
  if (phase.empty())
    return false;
  std::vector<ir::Node *> order;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    order.push_back(node.get());
  int64_t parts = module.getAttribute("split_batch")->getInt();
  std::vector<size_t> positions(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    positions[i] = i;
  std::stable_sort(positions.begin(), positions.end(),
                   [&](size_t a, size_t b) { return phase[a] > phase[b]; });
  std::vector<ir::Node *> interleaved;
  bool changed = false;
  for (size_t i = 0; i < positions.size(); ++i) {
    interleaved.push_back(order[positions[i]]);
    changed |= positions[i] != i;
  }
  // The argument above says this cannot happen; a wrong order would run
  // a node before its operand, so check rather than trust it.
  llvm::DenseMap<const ir::Node *, size_t> newIndex;
  for (size_t i = 0; i < interleaved.size(); ++i)
    newIndex[interleaved[i]] = i;
  for (size_t i = 0; i < interleaved.size(); ++i)
    for (const ir::Value *operand : interleaved[i]->getOperands())
      if (operand && operand->isResult())
        if (auto it = newIndex.find(operand->getDefiningNode());
            it != newIndex.end() && it->second >= i)
          return llvm::createStringError(
              llvm::inconvertibleErrorCode(),
              "internal error: interleave-micro-batches would run " +
                  interleaved[i]->describe() + " before its operand " +
                  operand->describe());
  if (!changed)
    return false;
  module.setSchedule(interleaved);
  addStatistic("micro-batches", parts);
  return true;
}

std::unique_ptr<Pass> createInterleaveMicroBatchesPass() {
  return std::make_unique<InterleaveMicroBatches>();
}

} // namespace snug
