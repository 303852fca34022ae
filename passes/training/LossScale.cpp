//===- LossScale.cpp - Dynamic loss scaling as graph nodes ----------------===//
#include "passes/training/LossScale.h"

#include <numeric>

namespace snug {

using ir::OpCode;
using ir::Value;

llvm::Expected<Value *>
unscaleGradients(GraphBuilder &builder, Value *scale,
                 llvm::MutableArrayRef<Value *> gradients) {
  ir::DType dtype = scale->getType().getDType();
  auto inverse =
      builder.emit(OpCode::Div, {builder.scalar(1.0, dtype), scale});
  if (!inverse)
    return inverse.takeError();
  Value *zero = builder.scalar(0.0, dtype);
  Value *total = nullptr;
  for (Value *&gradient : gradients) {
    auto unscaled = builder.emit(OpCode::Mul, {gradient, *inverse});
    if (!unscaled)
      return unscaled.takeError();
    gradient = *unscaled;
    // g * 0 is 0 for every finite g and NaN for Inf or NaN; summing the
    // products spreads a NaN to the total.
    auto products = builder.emit(OpCode::Mul, {gradient, zero});
    if (!products)
      return products.takeError();
    Value *sum = *products;
    unsigned rank = gradient->getType().getRank();
    if (rank) {
      std::vector<int64_t> axes(rank);
      std::iota(axes.begin(), axes.end(), 0);
      auto reduced = builder.emit(OpCode::ReduceSum, {sum},
                                  {{"axes", ir::Attribute::getInts(axes)},
                                   {"keepdims", ir::Attribute::getInt(0)}});
      if (!reduced)
        return reduced.takeError();
      sum = *reduced;
    }
    if (total) {
      auto added = builder.emit(OpCode::Add, {total, sum});
      if (!added)
        return added.takeError();
      sum = *added;
    }
    total = sum;
  }
  if (!total)
    return gradientError("loss scaling: no gradient to check");
  return builder.emit(OpCode::Equal, {total, zero});
}

llvm::Error guardStep(GraphBuilder &builder, Value *finite,
                      std::vector<std::pair<Value *, Value *>> &pairs) {
  for (auto &[state, next] : pairs) {
    auto kept = builder.emit(OpCode::Where, {finite, next, state});
    if (!kept)
      return kept.takeError();
    std::string name = next->getName().str();
    next->setName("");
    (*kept)->setName(name);
    next = *kept;
  }
  return llvm::Error::success();
}

llvm::Error
updateLossScale(GraphBuilder &builder, Value *finite, Value *scale,
                const LossScaleRules &rules,
                std::vector<std::pair<Value *, Value *>> &pairs) {
  const ir::TensorType &type = scale->getType();
  ir::DType dtype = type.getDType();
  auto c = [&](double value) { return builder.scalar(value, dtype); };
  Value *good =
      builder.constant(type, std::vector<double>(type.getNumElements(), 0.0));
  good->setName(std::string(kLossScaleWeight) + ".good_steps");
  // Each emit reads the one before; the first failure is returned.
  llvm::Error error = llvm::Error::success();
  auto emit = [&](OpCode op, std::initializer_list<Value *> operands) {
    for (Value *operand : operands)
      if (!operand)
        return static_cast<Value *>(nullptr);
    auto result = builder.emit(op, operands);
    if (result)
      return *result;
    if (!error)
      error = result.takeError();
    else
      llvm::consumeError(result.takeError());
    return static_cast<Value *>(nullptr);
  };
  Value *counted = emit(OpCode::Add, {good, c(1)});
  Value *grow =
      emit(OpCode::Equal, {counted, c(double(rules.growthInterval))});
  Value *grown = emit(OpCode::Where,
                      {grow, emit(OpCode::Mul, {scale, c(rules.growthFactor)}),
                       scale});
  Value *nextScale = emit(
      OpCode::Where,
      {finite, grown, emit(OpCode::Mul, {scale, c(rules.backoffFactor)})});
  Value *nextGood = emit(
      OpCode::Where, {finite, emit(OpCode::Where, {grow, c(0), counted}), c(0)});
  if (error)
    return error;
  nextScale->setName(std::string(kLossScaleWeight) + ".updated");
  nextGood->setName(good->getName().str() + ".updated");
  pairs.push_back({scale, nextScale});
  pairs.push_back({good, nextGood});
  return llvm::Error::success();
}

} // namespace snug
