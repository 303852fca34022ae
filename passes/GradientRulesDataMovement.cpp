//===- GradientRulesDataMovement.cpp - Rules of views and Transpose -------===//
//
// Reshape, Flatten, Squeeze and Unsqueeze only relabel the operand's
// elements: the gradient is the result's gradient reshaped back to the
// operand's dims. Transpose's gradient is the result's gradient under the
// inverse permutation. Shape operands (a Reshape's second operand in
// non-canonical form) carry no gradient.
//
//===----------------------------------------------------------------------===//
#include "passes/GradientRules.h"
#include "passes/ShapeFunctions.h"

namespace snug {

using ir::Attribute;
using ir::OpCode;
using ir::Value;

namespace {

llvm::Error set(const GradientQuery &q, llvm::Expected<Value *> gradient) {
  if (!gradient)
    return gradient.takeError();
  q.operandGradients[0] = *gradient;
  return llvm::Error::success();
}

llvm::Error reshapeBackRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  llvm::ArrayRef<int64_t> dims = q.node.getOperand(0)->getType().getDims();
  return set(q, b.emit(OpCode::Reshape, {q.resultGradients[0]},
                       {{"shape", Attribute::getInts(dims)}}));
}

llvm::Error transposeRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  int64_t rank = q.node.getOperand(0)->getType().getRank();
  llvm::SmallVector<int64_t, 4> perm;
  if (auto given = getIntsAttr(q.node.getAttributes(), "perm"))
    perm = *given;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  llvm::SmallVector<int64_t, 4> inverse(rank, 0);
  for (int64_t i = 0; i < rank; ++i)
    inverse[perm[i]] = i;
  return set(q, b.emit(OpCode::Transpose, {q.resultGradients[0]},
                       {{"perm", Attribute::getInts(inverse)}}));
}

} // namespace

llvm::ArrayRef<GradientRuleEntry> getDataMovementGradientRules() {
  static const GradientRuleEntry rules[] = {
      {OpCode::Flatten, reshapeBackRule},   {OpCode::Reshape, reshapeBackRule},
      {OpCode::Squeeze, reshapeBackRule},   {OpCode::Transpose, transposeRule},
      {OpCode::Unsqueeze, reshapeBackRule},
  };
  return rules;
}

} // namespace snug
