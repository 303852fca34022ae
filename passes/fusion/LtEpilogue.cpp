//===- LtEpilogue.cpp - Which epilogues cuBLASLt runs itself --------------===//
//
// The rule and its source are in LtEpilogue.h. The same chain matcher
// reads an epilogue region (after EpiloguePattern) and a consumer about to
// become one (before): a list of at most two nodes over the product's value
// x, their last result the epilogue's result.
//
//===----------------------------------------------------------------------===//
#include "passes/fusion/LtEpilogue.h"

#include "llvm/ADT/STLExtras.h"

namespace snug {
namespace {

/// The product's column count N (the last dim of its row-major result),
/// or 0 when `product` cannot take a cuBLASLt epilogue at all.
int64_t getLtColumns(const ir::Node &product) {
  if (product.getNumResults() != 1 || product.getNumOperands() < 2 ||
      !product.getOperand(0) || !product.getOperand(1))
    return 0;
  const ir::TensorType &type = product.getResult(0)->getType();
  ir::DType dtype = type.getDType();
  if (dtype != ir::DType::F32 && dtype != ir::DType::F16 &&
      dtype != ir::DType::BF16)
    return 0;
  if (product.is(ir::OpCode::MatMul)) {
    // A 1-d B drops N from the result: its last dim is then M.
    llvm::ArrayRef<int64_t> b = product.getOperand(1)->getType().getDims();
    if (b.size() < 2 || type.getRank() == 0 || type.getDims().back() != b.back())
      return 0;
    return b.back();
  }
  if (product.is(ir::OpCode::Gemm)) {
    // Gemm's C would be added before the bias (LtEpilogue.h).
    if (product.getNumOperands() > 2 && product.getOperand(2) &&
        product.getNumOwnOperands() > 2)
      return 0;
    return type.getRank() == 2 ? type.getDims()[1] : 0;
  }
  return 0;
}

/// Whether `value` is a bias cuBLASLt takes for N columns of `dtype`.
bool isBiasVector(const ir::Value *value, int64_t n, ir::DType dtype) {
  const ir::TensorType &type = value->getType();
  return type.getDType() == dtype && type.getRank() >= 1 &&
         type.getDims().back() == n && type.getNumElements() == n;
}

/// Whether `node` is a unary activation cuBLASLt has, and which.
LtEpilogue getActivation(const ir::Node &node) {
  if (node.is(ir::OpCode::Relu))
    return LtEpilogue::Relu;
  if (node.is(ir::OpCode::Gelu)) {
    const ir::Attribute *approximate = node.getAttribute("approximate");
    if (approximate && approximate->getKind() == ir::Attribute::Kind::String &&
        approximate->getString() == "tanh")
      return LtEpilogue::Gelu;
  }
  return LtEpilogue::None;
}

/// Matches `nodes` (in order) over the product's value `x` of `n` columns,
/// the last node's result being `yield`. `bias` is set to the bias value.
LtEpilogue matchChain(llvm::ArrayRef<const ir::Node *> nodes,
                      const ir::Value *yield, const ir::Value *x, int64_t n,
                      const ir::Value *&bias) {
  bias = nullptr;
  if (nodes.empty() || nodes.size() > 2 || !n)
    return LtEpilogue::None;
  const ir::TensorType &type = x->getType();
  const ir::Value *current = x;
  size_t at = 0;
  // Each node: one result of x's type (no broadcast of x, no cast).
  for (const ir::Node *node : nodes)
    if (node->getNumResults() != 1 || node->getResult(0)->getType() != type)
      return LtEpilogue::None;
  if (nodes[0]->is(ir::OpCode::Add) && nodes[0]->getNumOperands() == 2) {
    const ir::Value *lhs = nodes[0]->getOperand(0);
    const ir::Value *rhs = nodes[0]->getOperand(1);
    const ir::Value *other = lhs == x ? rhs : rhs == x ? lhs : nullptr;
    if (!other || other == x || !isBiasVector(other, n, type.getDType()))
      return LtEpilogue::None;
    bias = other;
    current = nodes[0]->getResult(0);
    ++at;
  }
  LtEpilogue activation = LtEpilogue::None;
  if (at < nodes.size()) {
    const ir::Node &node = *nodes[at];
    activation = getActivation(node);
    if (activation == LtEpilogue::None || node.getNumOperands() != 1 ||
        node.getOperand(0) != current)
      return LtEpilogue::None;
    current = node.getResult(0);
    ++at;
  }
  if (at != nodes.size() || current != yield)
    return LtEpilogue::None;
  if (!bias)
    return activation;
  switch (activation) {
  case LtEpilogue::Relu:
    return LtEpilogue::ReluBias;
  case LtEpilogue::Gelu:
    return LtEpilogue::GeluBias;
  default:
    return LtEpilogue::Bias;
  }
}

std::vector<const ir::Node *> bodyNodes(const ir::Region &body) {
  std::vector<const ir::Node *> nodes;
  for (const std::unique_ptr<ir::Node> &node : body.getNodes())
    nodes.push_back(node.get());
  return nodes;
}

} // namespace

const char *getLtEpilogueName(LtEpilogue epilogue) {
  switch (epilogue) {
  case LtEpilogue::None:
    return "none";
  case LtEpilogue::Bias:
    return "bias";
  case LtEpilogue::ReluBias:
    return "relu_bias";
  case LtEpilogue::GeluBias:
    return "gelu_bias";
  case LtEpilogue::Relu:
    return "relu";
  case LtEpilogue::Gelu:
    return "gelu";
  }
  return "none";
}

LtEpilogueMatch matchLtEpilogue(const ir::Node &product) {
  LtEpilogueMatch match;
  const ir::Region *body = product.getBody();
  if (!product.hasEpilogue() || body->getYield().size() != 1 ||
      body->getNumArguments() == 0)
    return match;
  const ir::Value *bias;
  match.kind = matchChain(bodyNodes(*body), body->getYield()[0],
                          body->getArgument(0), getLtColumns(product), bias);
  if (match.kind == LtEpilogue::None || !bias)
    return match;
  // Block argument k > 0 stands for extra operand k - 1 (ir/Module.h).
  for (unsigned k = 1; k < body->getNumArguments(); ++k)
    if (body->getArgument(k) == bias)
      match.biasOperand = int(product.getNumOwnOperands() + k - 1);
  if (match.biasOperand < 0 ||
      unsigned(match.biasOperand) >= product.getNumOperands())
    match = LtEpilogueMatch();
  return match;
}

LtEpilogue matchLtEpilogue(const ir::Node &producer, const ir::Node &consumer,
                           const ir::Value *raw) {
  if (producer.hasBody() || consumer.getNumResults() != 1)
    return LtEpilogue::None;
  int64_t n = getLtColumns(producer);
  const ir::Value *bias;
  if (!consumer.is(ir::OpCode::SnugFused)) {
    const ir::Node *nodes[] = {&consumer};
    return matchChain(nodes, consumer.getResult(0), raw, n, bias);
  }
  // A group: its block argument k stands for its operand k; the product
  // must be one argument, and the bias another operand.
  const ir::Region *body = consumer.getBody();
  if (!body || body->getYield().size() != 1 ||
      body->getNumArguments() != consumer.getNumOperands())
    return LtEpilogue::None;
  const ir::Value *x = nullptr;
  for (unsigned k = 0; k < body->getNumArguments(); ++k)
    if (consumer.getOperand(k) == raw) {
      if (x)
        return LtEpilogue::None;
      x = body->getArgument(k);
    }
  if (!x)
    return LtEpilogue::None;
  return matchChain(bodyNodes(*body), body->getYield()[0], x, n, bias);
}

} // namespace snug
