//===- ReshapePairPattern.cpp - Elementwise ops between inverse Reshapes ===//
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
// Between the two Reshapes there may be a chain of such nodes, each read
// by the next alone: DeBERTa's XSoftmax views its [heads, Sq, Skv] scores
// as [1, heads, Sq, Skv], fills them by the padding mask (Where), takes the
// Softmax, zeroes the filled probabilities (Where) and views them back. A
// link is an elementwise node (any number of operands; the chain's value
// one of them) or a Softmax over the last axis when the Reshape leaves the
// last dim alone (a group of its own, the same extent on both sides), so
// that each row it normalizes is a row of s.
//
// When an operand m fits s's dims: the Reshape from s to t splits or
// merges runs of dims (groups whose products agree); within each group, m
// either broadcasts over all of it (every dim 1) or holds all of it (every
// dim t's). Then m, viewed over s's dims, is 1 or s's dims group by group.
// Every intermediate must have one reader (the next node) and be no graph
// output, and no link may widen t.
//
//===----------------------------------------------------------------------===//
#include "passes/fusion/FusePatterns.h"

#include <map>

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

/// The most links one chain takes (DeBERTa's has three).
constexpr unsigned kMaxLinks = 8;

/// One node of the chain: which operand carries the chain's value, and
/// the others' dims over s (empty vector: the operand is used as it is).
struct Link {
  ir::Node *node;
  unsigned chained;
  std::vector<std::vector<int64_t>> operandDims;
};

struct ReshapeChain {
  ir::Node *inner, *outer;
  Value *source;
  std::vector<Link> links; // first to last
};

/// Whether the Reshape from `s` to `t` keeps the last dim as a group of its
/// own, so that a Softmax over t's last axis normalizes s's rows.
bool keepsLastDim(llvm::ArrayRef<int64_t> s, llvm::ArrayRef<int64_t> t) {
  if (s.empty() || t.empty() || s.back() != t.back())
    return false;
  llvm::Optional<std::vector<DimGroup>> groups = groupDims(s, t);
  if (!groups)
    return false;
  const DimGroup &last = groups->back();
  return last.fromEnd - last.fromBegin == 1 && last.toEnd - last.toBegin == 1 &&
         last.fromEnd == s.size() && last.toEnd == t.size();
}

bool isLastAxisSoftmax(const ir::Node &node, int64_t rank) {
  if (!node.is(OpCode::Softmax) || node.getNumOperands() != 1)
    return false;
  const ir::Attribute *axis = node.getAttribute("axis");
  int64_t value = axis && axis->getKind() == ir::Attribute::Kind::Int
                      ? axis->getInt()
                      : -1;
  return value == -1 || value == rank - 1;
}

/// Walks back from `value`, read by `user` alone, to the inner Reshape,
/// prepending links to `chain`; false when the nodes on the way are no
/// such chain.
bool walkChain(const ir::Module &module, Value *value, ir::Node *user,
               llvm::ArrayRef<int64_t> sourceDims, ReshapeChain &chain) {
  ir::Node *node = value ? value->getDefiningNode() : nullptr;
  if (!node || soleUser(module, value) != user || node->getNumResults() != 1 ||
      node->hasBody())
    return false;
  if (node->is(OpCode::Reshape) && node->getNumOperands() == 1 &&
      !chain.links.empty() &&
      node->getOperand(0)->getType().getDims() == sourceDims) {
    chain.inner = node;
    chain.source = node->getOperand(0);
    return true;
  }
  if (chain.links.size() == kMaxLinks)
    return false;
  llvm::ArrayRef<int64_t> t = value->getType().getDims();
  bool softmax = isLastAxisSoftmax(*node, int64_t(t.size()));
  if (softmax && !keepsLastDim(sourceDims, t))
    return false;
  if (!softmax && !node->getOpInfo().isElementwise())
    return false;
  for (unsigned i = 0; i < node->getNumOperands(); ++i) {
    Value *operand = node->getOperand(i);
    // The chained operand has the node's dims (the node does not widen).
    if (!operand || operand->getType().getDims() != t)
      continue;
    Link link{node, i, {}};
    bool fits = true;
    for (unsigned j = 0; j < node->getNumOperands() && fits; ++j) {
      Value *other = node->getOperand(j);
      if (j == i || !other) {
        link.operandDims.emplace_back();
        continue;
      }
      llvm::Optional<std::vector<int64_t>> dims =
          dimsOverSource(sourceDims, t, other->getType().getDims());
      fits = dims.hasValue();
      if (fits)
        link.operandDims.push_back(std::move(*dims));
    }
    if (!fits)
      continue;
    ReshapeChain attempt = chain;
    attempt.links.insert(attempt.links.begin(), std::move(link));
    if (walkChain(module, operand, node, sourceDims, attempt)) {
      chain = std::move(attempt);
      return true;
    }
  }
  return false;
}

/// Whether an operand of dims `stored` broadcasts over s as one of dims
/// `over` would (the same dims but for leading 1s, and no more dims than
/// s): then it needs no view (a scalar fill stays the constant it is).
bool broadcastsAsItIs(llvm::ArrayRef<int64_t> stored,
                      llvm::ArrayRef<int64_t> over, size_t sourceRank) {
  auto strip = [](llvm::ArrayRef<int64_t> dims) {
    while (!dims.empty() && dims.front() == 1)
      dims = dims.drop_front();
    return dims;
  };
  return stored.size() <= sourceRank && strip(stored) == strip(over);
}

llvm::Optional<ReshapeChain> matchAt(const ir::Module &module,
                                     ir::Node &outer) {
  if (!outer.is(OpCode::Reshape) || outer.getNumOperands() != 1)
    return llvm::None;
  ReshapeChain chain{nullptr, &outer, nullptr, {}};
  if (!walkChain(module, outer.getOperand(0), &outer,
                 outer.getResult(0)->getType().getDims(), chain))
    return llvm::None;
  return chain;
}

} // namespace

unsigned sinkReshapePairs(ir::Module &module) {
  std::vector<ReshapeChain> chains;
  llvm::DenseSet<const ir::Node *> matched;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    if (llvm::Optional<ReshapeChain> chain = matchAt(module, *node)) {
      bool taken = matched.count(chain->inner) != 0;
      for (const Link &link : chain->links)
        taken |= matched.count(link.node) != 0;
      if (taken)
        continue;
      matched.insert(chain->inner);
      matched.insert(chain->outer);
      for (const Link &link : chain->links)
        matched.insert(link.node);
      chains.push_back(std::move(*chain));
    }
  for (ReshapeChain &chain : chains) {
    llvm::ArrayRef<int64_t> sourceDims = chain.source->getType().getDims();
    // One view per operand and dims: the two Wheres of XSoftmax then read
    // the same mask value, as the attention pattern needs to see.
    std::map<std::pair<Value *, std::vector<int64_t>>, Value *> views;
    Value *current = chain.source;
    for (Link &link : chain.links) {
      size_t index = indexOfNode(module, link.node);
      llvm::SmallVector<Value *, 4> operands;
      for (unsigned j = 0; j < link.node->getNumOperands(); ++j) {
        Value *operand = link.node->getOperand(j);
        const std::vector<int64_t> &dims = link.operandDims[j];
        if (j == link.chained) {
          operands.push_back(current);
          continue;
        }
        if (!operand || broadcastsAsItIs(operand->getType().getDims(), dims,
                                         sourceDims.size())) {
          operands.push_back(operand);
          continue;
        }
        Value *&view = views[{operand, dims}];
        if (!view)
          view = insertReshapeView(module, index++, operand, dims,
                                   link.node->getName().str() + ".operand" +
                                       std::to_string(j));
        operands.push_back(view);
      }
      ir::AttributeMap attributes = link.node->getAttributes();
      if (link.node->is(OpCode::Softmax))
        attributes["axis"] = ir::Attribute::getInt(int64_t(sourceDims.size()) - 1);
      ir::Node *node = module.insertNode(
          index, link.node->getOpCode(), operands,
          {ir::TensorType(link.node->getResult(0)->getType().getDType(),
                          sourceDims)},
          std::move(attributes));
      node->setName(link.node->getName());
      // The last link's result takes the outer Reshape's value below.
      if (&link != &chain.links.back())
        node->getResult(0)->setName(link.node->getResult(0)->getName());
      current = node->getResult(0);
    }
    module.replaceValue(chain.outer->getResult(0), current);
  }
  module.eraseNodesIf(
      [&](const ir::Node &node) { return matched.count(&node) != 0; });
  return unsigned(chains.size());
}

} // namespace snug
