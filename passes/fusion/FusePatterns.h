//===- FusePatterns.h - Patterns exporters leave, rewritten as one op -*- C++ -*-===//
//
// The fuse pass (passes/fusion/Fuse.cpp) runs these before it groups elementwise
// nodes: each recognizes a subgraph by its structure (ops, operand
// positions, constants, users), never by node names, and replaces it by the
// op that computes the same function in one kernel.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_FUSION_FUSEPATTERNS_H
#define SNUG_PASSES_FUSION_FUSEPATTERNS_H

#include "ir/Float16.h"
#include "ir/Module.h"
#include "ir/State.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace snug {

/// The values of an f32 weight that holds `count` of them (false for
/// anything else: a graph input, an elided weight, a training step's state
/// weight, whose bytes are only its first value, another type or size):
/// how the patterns read the constants they fold.
inline bool readF32Weight(const ir::Module &module, const ir::Value *value,
                          int64_t count, std::vector<float> &into) {
  if (!value || !value->isWeight() || value->isWeightElided() ||
      ir::isStateWeight(module, value) ||
      value->getType().getDType() != ir::DType::F32 ||
      value->getType().getNumElements() != count)
    return false;
  llvm::ArrayRef<uint8_t> data = module.getWeightData(value);
  if (data.size() != size_t(count) * sizeof(float))
    return false;
  into.resize(size_t(count));
  if (count)
    std::memcpy(into.data(), data.data(), data.size());
  return true;
}

/// The value of a one-element f32, f16 or bf16 weight (lower-precision,
/// which runs before fusion, stores constants in the lowered type).
inline llvm::Optional<float> readScalarWeight(const ir::Module &module,
                                              const ir::Value *value) {
  std::vector<float> values;
  if (readF32Weight(module, value, 1, values))
    return values[0];
  if (!value || !value->isWeight() || value->isWeightElided() ||
      ir::isStateWeight(module, value) ||
      value->getType().getNumElements() != 1)
    return llvm::None;
  ir::DType type = value->getType().getDType();
  llvm::ArrayRef<uint8_t> data = module.getWeightData(value);
  if ((type != ir::DType::F16 && type != ir::DType::BF16) || data.size() != 2)
    return llvm::None;
  uint16_t bits;
  std::memcpy(&bits, data.data(), 2);
  return type == ir::DType::F16 ? f16ToFloat(bits) : bf16ToFloat(bits);
}

/// The only node using `value`, when it has one user, one use, and is not a
/// graph output: an intermediate a pattern may fold away.
inline ir::Node *soleUser(const ir::Module &module, const ir::Value *value) {
  if (module.isOutput(value) || value->getUses().size() != 1)
    return nullptr;
  return value->getUses()[0].user;
}

/// Where `node` stands in the module's schedule: the position a rewrite
/// inserts its replacement at.
inline size_t indexOfNode(const ir::Module &module, const ir::Node *node) {
  auto nodes = module.getNodes();
  size_t index = 0;
  while (nodes[index].get() != node)
    ++index;
  return index;
}

/// Inserts `Reshape(value) {shape = dims}` (a view: no copy) at `index`,
/// named `name`, and returns its result.
inline ir::Value *insertReshapeView(ir::Module &module, size_t index,
                                    ir::Value *value,
                                    llvm::ArrayRef<int64_t> dims,
                                    llvm::StringRef name = "") {
  ir::Node *view = module.insertNode(
      index, ir::OpCode::Reshape, {value},
      {ir::TensorType(value->getType().getDType(), dims)},
      {{"shape", ir::Attribute::getInts(dims)}});
  view->setName(name);
  return view->getResult(0);
}

/// The other operand of a two-operand node, given one of them.
inline ir::Value *otherOperand(const ir::Node &node, const ir::Value *known) {
  if (node.getNumOperands() != 2)
    return nullptr;
  if (node.getOperand(0) == known)
    return node.getOperand(1);
  if (node.getOperand(1) == known)
    return node.getOperand(0);
  return nullptr;
}

/// The driver the structural patterns share. `matchAt(module, node)`
/// returns an llvm::Optional<Match> whose `nodes` are what the match covers
/// (the last one the result's; a node a match took is not tried again).
/// Every match is then replaced by one node of `op` in its last node's
/// place (its operands are all defined before that) with that node's name
/// and result type: `build(match, current)` returns the new node's operands
/// and attributes, reading each operand through `current`, since a match's
/// operand may be an earlier match's result. The covered nodes are erased.
/// Returns how many were rewritten.
template <class MatchFn, class BuildFn>
unsigned rewriteMatches(ir::Module &module, ir::OpCode op, MatchFn matchAt,
                        BuildFn build) {
  using Match = typename decltype(matchAt(module,
                                          std::declval<ir::Node &>()))::value_type;
  std::vector<Match> matches;
  llvm::DenseSet<const ir::Node *> matched;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    if (!matched.count(node.get()))
      if (llvm::Optional<Match> match = matchAt(module, *node)) {
        for (ir::Node *member : match->nodes)
          matched.insert(member);
        matches.push_back(std::move(*match));
      }
  if (matches.empty())
    return 0;
  llvm::DenseMap<const ir::Value *, ir::Value *> replaced;
  auto current = [&](ir::Value *value) {
    ir::Value *result = value ? replaced.lookup(value) : nullptr;
    return result ? result : value;
  };
  for (Match &match : matches) {
    ir::Node *last = match.nodes.back();
    auto [operands, attributes] = build(match, current);
    size_t index = indexOfNode(module, last);
    ir::Node *node = module.insertNode(index, op, operands,
                                       {last->getResult(0)->getType()},
                                       std::move(attributes));
    node->setName(last->getName());
    module.replaceValue(last->getResult(0), node->getResult(0));
    replaced[last->getResult(0)] = node->getResult(0);
  }
  module.eraseNodesIf(
      [&](const ir::Node &node) { return matched.count(&node) != 0; });
  return unsigned(matches.size());
}

/// ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul (, Add) over the
/// trailing dims -> LayerNormalization (LayerNormPattern.cpp). Returns how
/// many were rewritten.
unsigned rewriteDecomposedLayerNorms(ir::Module &module);

/// Pow(x, 2), ReduceMean over the trailing dims, Add eps, Sqrt, the
/// reciprocal and Mul by x (or Div of x), Mul by a scale -> snug.rms_norm
/// (LayerNormPattern.cpp). Returns how many were rewritten.
unsigned rewriteDecomposedRmsNorms(ir::Module &module);

/// An inference BatchNormalization after a Conv with constant weights,
/// folded into the Conv's weight and bias (BatchNormPattern.cpp). Returns
/// how many were folded.
unsigned foldBatchNormsIntoConvs(ir::Module &module);

/// A constant per-channel scale or shift after a Conv (Mul, Div, Add or
/// Sub of its result by an f32 weight of one value or one per output
/// channel), folded into the Conv's weight and bias
/// (ConvAffinePattern.cpp). Returns how many were folded.
unsigned foldAffinesIntoConvs(ir::Module &module);

/// Every value name of the module, for fresh weight names, and a name none
/// of them has: `stem`, or `stem` with a number (BatchNormPattern.cpp).
llvm::StringSet<> getValueNames(const ir::Module &module);
std::string getFreshName(const llvm::StringSet<> &taken,
                         const std::string &stem);
/// A new f32 weight holding `values`, named after `node` (`unnamed` when
/// it has no name) plus `suffix`, fresh in `names`, which it joins.
ir::Value *addFreshWeight(ir::Module &module, llvm::StringSet<> &names,
                          const ir::Node &node, const char *unnamed,
                          const char *suffix, const ir::TensorType &type,
                          const std::vector<float> &values);

/// Every other inference BatchNormalization of f32 with constant
/// parameters, as Mul and Add by per-channel constants that fuse with their
/// neighbours (BatchNormPattern.cpp). Returns how many were rewritten.
unsigned rewriteBatchNormsAsAffine(ir::Module &module);

/// A Conv, MatMul or Gemm (an op that takes an epilogue) whose one reader
/// is an elementwise node or snug.fused group takes it as its epilogue
/// (EpiloguePattern.cpp). Runs after grouping. Returns how many were fused.
unsigned fuseEpilogues(ir::Module &module);

/// Add(Mul(x, cos), Mul(Concat(Neg(Slice(x, h:2h)), Slice(x, 0:h)), sin))
/// over x's last dim -> snug.rotary (AttentionPattern.cpp). Returns how
/// many were rewritten.
unsigned rewriteRotaries(ir::Module &module);

/// Reshape(E(Reshape(s), m)) back to s's dims, E a chain of elementwise
/// ops and Softmaxes over a last dim the Reshape keeps -> E(s, Reshape(m))
/// when every m fits s's dims (ReshapePairPattern.cpp). Returns how many
/// were rewritten.
unsigned sinkReshapePairs(ir::Module &module);

/// Reshape(Transpose(x)) that drops only unit dims -> Transpose(Reshape(x)),
/// and Transpose(Reshape(x)) that only inserts unit dims ->
/// Reshape(Transpose(x)), so that the Transposes splitting and merging
/// heads touch the attention's MatMuls (UnitReshapeTransposePattern.cpp).
/// Returns how many were rewritten.
unsigned commuteUnitReshapesWithTransposes(ir::Module &module);

/// Concat(Slice(x, a, ...), ..., x, ...) {axis = a}, some Slice strided in
/// memory -> Gather(x, constant rows) {axis = a} (SliceConcatPattern.cpp:
/// torch.roll). Returns how many were rewritten.
unsigned rewriteSliceConcats(ir::Module &module);

/// MatMul(Q, Kᵀ), an optional scale by a constant scalar, an optional
/// additive or Where mask (or two masks, one after the other), Softmax
/// over the last axis, an optional Where zeroing the filled
/// probabilities, MatMul(., V) ->
/// snug.attention (AttentionPattern.cpp). Returns how many were rewritten.
unsigned rewriteAttentions(ir::Module &module);

} // namespace snug

#endif // SNUG_PASSES_FUSION_FUSEPATTERNS_H
