//===- ReshapePairPattern.cpp - An elementwise op between inverse Reshapes ===//
//
// Exporters regroup a tensor's dims to broadcast an operand over it and
// regroup them back:
//   t = Reshape(s)            e.g. [16,2,16,16] -> [1,16,2,16,16]
//   u = Add(t, m)             m [1,16,1,16,16] broadcast over t
//   y = Reshape(u)            back to s's dims
// (Swin's shifted-window mask, added per window to scores whose leading
// dim is windows x batch). The same function over s's own dims is
//   y = Add(s, Reshape(m))    m viewed as [16,1,16,16]
// which leaves no Reshape between the producer of s and y's readers, so
// the patterns that match chains over s (attention's scores, a MatMul's
// epilogue, an elementwise group) see through it. Reshapes are views: the
// rewrite moves no bytes and keeps every value's bits.
//
// When m fits s's dims: the Reshape from s to t splits or merges runs of
// dims (groups whose products agree); within each group, m either
// broadcasts over all of it (every dim 1) or holds all of it (every dim
// t's). Then m, viewed over s's dims, is 1 or s's dims group by group.
// Both intermediates must have one reader (the next node) and be no graph
// output; any two-operand elementwise op qualifies, either operand order.
//
//===----------------------------------------------------------------------===//
#include "passes/FusePatterns.h"

namespace snug {

namespace {

using ir::OpCode;
using ir::Value;

/// Each group of `from`'s dims with the run of `to`'s dims it becomes
/// under a Reshape: pairs of [begin, end) into each, in order; none when
/// the element counts differ.
struct DimGroup {
  size_t fromBegin, fromEnd, toBegin, toEnd;
};
llvm::Optional<std::vector<DimGroup>>
groupDims(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
  std::vector<DimGroup> groups;
  size_t i = 0, j = 0;
  while (i < from.size() || j < to.size()) {
    DimGroup group{i, i, j, j};
    // One dim of each side (while either has one), then more from the
    // side whose product is smaller until they agree.
    int64_t a = i < from.size() ? from[i++] : 1;
    int64_t b = j < to.size() ? to[j++] : 1;
    while (a != b) {
      if (a < b && i < from.size())
        a *= from[i++];
      else if (b < a && j < to.size())
        b *= to[j++];
      else
        return llvm::None;
    }
    group.fromEnd = i;
    group.toEnd = j;
    groups.push_back(group);
  }
  return groups;
}

/// m's dims over `s` when m broadcasts over `t` (a Reshape of s) group by
/// group as the header says; none otherwise.
llvm::Optional<std::vector<int64_t>> dimsOverSource(llvm::ArrayRef<int64_t> s,
                                                    llvm::ArrayRef<int64_t> t,
                                                    llvm::ArrayRef<int64_t> m) {
  if (m.size() > t.size())
    return llvm::None;
  // m right-aligned against t, its missing leading dims 1.
  std::vector<int64_t> padded(t.size() - m.size(), 1);
  padded.insert(padded.end(), m.begin(), m.end());
  llvm::Optional<std::vector<DimGroup>> groups = groupDims(s, t);
  if (!groups)
    return llvm::None;
  std::vector<int64_t> result;
  for (const DimGroup &group : *groups) {
    bool all = true, none = true;
    for (size_t d = group.toBegin; d < group.toEnd; ++d) {
      all &= padded[d] == t[d];
      none &= padded[d] == 1;
    }
    if (!all && !none)
      return llvm::None;
    for (size_t d = group.fromBegin; d < group.fromEnd; ++d)
      result.push_back(none ? 1 : s[d]);
  }
  return result;
}

struct ReshapePair {
  ir::Node *inner, *op, *outer;
  Value *source, *other;
  unsigned sourceIndex; // the operand position of Reshape(s) in op
  std::vector<int64_t> otherDims;
};

llvm::Optional<ReshapePair> matchAt(const ir::Module &module,
                                    ir::Node &outer) {
  if (!outer.is(OpCode::Reshape) || outer.getNumOperands() != 1)
    return llvm::None;
  ir::Node *op = outer.getOperand(0)->getDefiningNode();
  if (!op || soleUser(module, op->getResult(0)) != &outer ||
      !op->getOpInfo().isElementwise() || op->getNumOperands() != 2 ||
      op->getNumResults() != 1 || op->hasBody())
    return llvm::None;
  for (unsigned i = 0; i < 2; ++i) {
    Value *reshaped = op->getOperand(i), *other = op->getOperand(1 - i);
    ir::Node *inner = reshaped ? reshaped->getDefiningNode() : nullptr;
    if (!inner || !other || !inner->is(OpCode::Reshape) ||
        inner->getNumOperands() != 1 ||
        soleUser(module, reshaped) != op)
      continue;
    Value *source = inner->getOperand(0);
    // The op does not widen t, and the outer Reshape restores s's dims.
    if (op->getResult(0)->getType().getDims() != reshaped->getType().getDims() ||
        outer.getResult(0)->getType().getDims() != source->getType().getDims() ||
        source->getType().getDType() != reshaped->getType().getDType())
      continue;
    llvm::Optional<std::vector<int64_t>> dims =
        dimsOverSource(source->getType().getDims(),
                       reshaped->getType().getDims(),
                       other->getType().getDims());
    if (!dims)
      continue;
    return ReshapePair{inner, op, &outer, source, other, i, std::move(*dims)};
  }
  return llvm::None;
}

} // namespace

unsigned sinkReshapePairs(ir::Module &module) {
  std::vector<ReshapePair> pairs;
  llvm::DenseSet<const ir::Node *> matched;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    if (llvm::Optional<ReshapePair> pair = matchAt(module, *node))
      if (!matched.count(pair->inner) && !matched.count(pair->op)) {
        matched.insert(pair->inner);
        matched.insert(pair->op);
        matched.insert(pair->outer);
        pairs.push_back(std::move(*pair));
      }
  for (ReshapePair &pair : pairs) {
    size_t index = 0;
    auto nodes = module.getNodes();
    while (nodes[index].get() != pair.op)
      ++index;
    Value *other = pair.other;
    if (other->getType().getDims() != llvm::ArrayRef<int64_t>(pair.otherDims)) {
      ir::AttributeMap attributes;
      attributes["shape"] = ir::Attribute::getInts(pair.otherDims);
      ir::Node *view = module.insertNode(
          index++, OpCode::Reshape, {other},
          {ir::TensorType(other->getType().getDType(), pair.otherDims)},
          std::move(attributes));
      view->setName(pair.op->getName().str() + ".operand");
      other = view->getResult(0);
    }
    llvm::SmallVector<Value *, 2> operands{pair.source, other};
    if (pair.sourceIndex == 1)
      std::swap(operands[0], operands[1]);
    ir::Node *node =
        module.insertNode(index, pair.op->getOpCode(), operands,
                          {pair.outer->getResult(0)->getType()},
                          pair.op->getAttributes());
    node->setName(pair.op->getName());
    module.replaceValue(pair.outer->getResult(0), node->getResult(0));
  }
  module.eraseNodesIf(
      [&](const ir::Node &node) { return matched.count(&node) != 0; });
  return unsigned(pairs.size());
}

} // namespace snug
