//===- UnitReshapeTransposePattern.cpp - Transposes past unit-dim Reshapes ===//
//
// Exporters that fold the batch into the heads (DeBERTa: [1, S, H, D] ->
// Transpose -> [1, H, S, D] -> Reshape [H, S, D], and back after the
// attention) put a Reshape that only drops or inserts dims of extent 1
// between a head Transpose and the attention's MatMul. The attention
// pattern takes in a Transpose only when the MatMul reads it directly, so
// these Transposes stayed copies. Moving the unit dims to the other side
// of the Transpose leaves the same elements in the same order:
//   Reshape(Transpose(x, p))  the Reshape drops the unit dims of the
//       Transpose's result        -> Transpose(Reshape(x), p')
//   Transpose(Reshape(x), p)  the Reshape only inserts unit dims into x,
//       which has none            -> Reshape(Transpose(x, p'))
// where Reshape(x) drops x's unit dims, and p' is p over the remaining
// dims in their order: the Transpose now touches its reader (the first
// case) or its producer (the second), and the Reshape is a view. Both
// nodes must be read by the other alone (and be no graph output); the
// rewrite moves no bytes, so it is never worse.
//
//===----------------------------------------------------------------------===//
#include "passes/fusion/FusePatterns.h"

#include <algorithm>

namespace snug {

namespace {

using ir::OpCode;
using ir::Value;

std::vector<int64_t> withoutUnitDims(llvm::ArrayRef<int64_t> dims) {
  std::vector<int64_t> kept;
  for (int64_t dim : dims)
    if (dim != 1)
      kept.push_back(dim);
  return kept;
}

llvm::Optional<std::vector<int64_t>> permOf(const ir::Node &node) {
  const ir::Attribute *perm = node.getAttribute("perm");
  if (!node.is(OpCode::Transpose) || node.getNumOperands() != 1 || !perm ||
      perm->getKind() != ir::Attribute::Kind::Ints ||
      perm->getInts().size() != node.getOperand(0)->getType().getRank())
    return llvm::None;
  return std::vector<int64_t>(perm->getInts().begin(), perm->getInts().end());
}

/// `perm` (result dim i = operand dim perm[i]) over the non-unit dims of
/// the operand `from`: the result's non-unit dims in order, as indices
/// into the operand's non-unit dims.
std::vector<int64_t> permOverKept(llvm::ArrayRef<int64_t> from,
                                  llvm::ArrayRef<int64_t> perm) {
  std::vector<int64_t> keptIndex(from.size(), -1);
  int64_t next = 0;
  for (size_t d = 0; d < from.size(); ++d)
    if (from[d] != 1)
      keptIndex[d] = next++;
  std::vector<int64_t> result;
  for (int64_t axis : perm)
    if (from[size_t(axis)] != 1)
      result.push_back(keptIndex[size_t(axis)]);
  return result;
}

bool isPlainReshape(const ir::Node &node) {
  return node.is(OpCode::Reshape) && node.getNumOperands() == 1 &&
         node.getNumResults() == 1;
}

ir::Node *insertTranspose(ir::Module &module, size_t index, Value *operand,
                          const std::vector<int64_t> &perm,
                          llvm::StringRef name) {
  llvm::ArrayRef<int64_t> from = operand->getType().getDims();
  std::vector<int64_t> dims;
  for (int64_t axis : perm)
    dims.push_back(from[size_t(axis)]);
  ir::AttributeMap attributes;
  attributes["perm"] = ir::Attribute::getInts(perm);
  ir::Node *node = module.insertNode(
      index, OpCode::Transpose, {operand},
      {ir::TensorType(operand->getType().getDType(), dims)},
      std::move(attributes));
  node->setName(name);
  return node;
}

/// Reshape(Transpose(x, p)) dropping only unit dims -> Transpose(Reshape(x)).
bool sinkBelowTranspose(ir::Module &module, ir::Node &reshape) {
  if (!isPlainReshape(reshape))
    return false;
  ir::Node *transpose = reshape.getOperand(0)->getDefiningNode();
  if (!transpose || soleUser(module, reshape.getOperand(0)) != &reshape)
    return false;
  llvm::Optional<std::vector<int64_t>> perm = permOf(*transpose);
  llvm::ArrayRef<int64_t> transposed = reshape.getOperand(0)->getType().getDims();
  llvm::ArrayRef<int64_t> result = reshape.getResult(0)->getType().getDims();
  if (!perm || result.size() >= transposed.size() ||
      llvm::makeArrayRef(withoutUnitDims(transposed)) != result)
    return false;
  Value *x = transpose->getOperand(0);
  llvm::ArrayRef<int64_t> xDims = x->getType().getDims();
  size_t index = indexOfNode(module, &reshape);
  Value *kept = x;
  std::vector<int64_t> keptDims = withoutUnitDims(xDims);
  if (keptDims.size() != xDims.size())
    kept = insertReshapeView(module, index++, x, keptDims,
                             transpose->getName().str() + ".operand");
  ir::Node *moved = insertTranspose(module, index, kept,
                                    permOverKept(xDims, *perm),
                                    transpose->getName());
  module.replaceValue(reshape.getResult(0), moved->getResult(0));
  module.eraseNodesIf([&](const ir::Node &node) {
    return &node == &reshape || &node == transpose;
  });
  return true;
}

/// Transpose(Reshape(x), p), the Reshape only inserting unit dims into an
/// x without any -> Reshape(Transpose(x)).
bool hoistAboveTranspose(ir::Module &module, ir::Node &transpose) {
  llvm::Optional<std::vector<int64_t>> perm = permOf(transpose);
  if (!perm)
    return false;
  ir::Node *reshape = transpose.getOperand(0)->getDefiningNode();
  if (!reshape || !isPlainReshape(*reshape) ||
      soleUser(module, transpose.getOperand(0)) != &transpose)
    return false;
  Value *x = reshape->getOperand(0);
  llvm::ArrayRef<int64_t> xDims = x->getType().getDims();
  llvm::ArrayRef<int64_t> reshaped = transpose.getOperand(0)->getType().getDims();
  if (reshaped.size() <= xDims.size() ||
      llvm::makeArrayRef(withoutUnitDims(xDims)) != xDims ||
      llvm::makeArrayRef(withoutUnitDims(reshaped)) != xDims)
    return false;
  size_t index = indexOfNode(module, &transpose);
  ir::Node *moved = insertTranspose(module, index++, x,
                                    permOverKept(reshaped, *perm),
                                    transpose.getName());
  Value *view =
      insertReshapeView(module, index, moved->getResult(0),
                        transpose.getResult(0)->getType().getDims(),
                        reshape->getName());
  module.replaceValue(transpose.getResult(0), view);
  module.eraseNodesIf([&](const ir::Node &node) {
    return &node == &transpose || &node == reshape;
  });
  return true;
}

} // namespace

unsigned commuteUnitReshapesWithTransposes(ir::Module &module) {
  unsigned rewritten = 0;
  // Each rewrite erases nodes: collect the candidates first, then try each
  // that is still in the module.
  std::vector<ir::Node *> candidates;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    if (node->is(OpCode::Reshape) || node->is(OpCode::Transpose))
      candidates.push_back(node.get());
  llvm::DenseSet<const ir::Node *> erased;
  for (ir::Node *node : candidates) {
    if (erased.count(node))
      continue;
    ir::Node *partner =
        node->is(OpCode::Reshape)
            ? node->getOperand(0)->getDefiningNode()
            : (node->getNumOperands() ? node->getOperand(0)->getDefiningNode()
                                      : nullptr);
    if (partner && erased.count(partner))
      continue;
    bool done = node->is(OpCode::Reshape) ? sinkBelowTranspose(module, *node)
                                          : hoistAboveTranspose(module, *node);
    if (done) {
      erased.insert(node);
      erased.insert(partner);
      ++rewritten;
    }
  }
  return rewritten;
}

} // namespace snug
