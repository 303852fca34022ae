//===- OnnxLossOps.cpp - NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
//-===//
//
// The two losses, imported as compositions of ops the table already has
// (their ONNX function bodies do the same), so that folding, the host
// executor, the CUDA kernels and autodiff need nothing new:
//   NegativeLogLikelihoodLoss(input [N,C,d...], target [N,d...], weight [C])
//     safe   = Where(target == ignore_index, 0, target)   (with ignore_index)
//     picked = Squeeze(GatherElements(input, Unsqueeze(safe, 1), axis 1), 1)
//     w      = Gather(weight, safe), 0 where ignored       (the class weights;
//              with ignore_index only, 0 where ignored and 1 elsewhere)
//     loss   = -picked * w                                 [N,d...]
//   reduction "none" keeps loss, "sum" is ReduceSum over every axis, "mean"
//   ReduceSum(loss) / ReduceSum(w) with weights or ignore_index and
//   ReduceMean(loss) without (onnx's reference implementation).
//   SoftmaxCrossEntropyLoss(scores, labels, weights) is that loss of
//   LogSoftmax(scores, axis 1), whose value is the optional second output.
// A target that is neither a class nor ignore_index is an out-of-range index
// of the GatherElements at run time (a user error naming the node).
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"

namespace snug {
namespace onnx_import {

using ir::Attribute;
using ir::DType;
using ir::TensorType;

namespace {

/// Every axis of a value of `rank`.
Attribute allAxes(int64_t rank) {
  Ints axes;
  for (int64_t i = 0; i < rank; ++i)
    axes.push_back(i);
  return Attribute::getInts(axes);
}

/// The loss of log-probabilities `input` (the whole composition above);
/// `weight` may be null.
llvm::Expected<ir::Value *> emitNllLoss(Importer &importer,
                                        const onnx::NodeProto &node,
                                        ir::Value *input, ir::Value *target,
                                        ir::Value *weight) {
  const TensorType &in = input->getType(), &tt = target->getType();
  if (!ir::isFloatDType(in.getDType()))
    return importer.error(node, "input " + in.str() + " is not a float tensor");
  if (tt.getDType() != DType::I64 && tt.getDType() != DType::I32)
    return importer.error(node,
                          "target " + tt.str() + " is not int64 or int32");
  int64_t rank = in.getRank();
  bool shapesMatch = rank >= 2 && tt.getRank() == rank - 1 &&
                     tt.getDims()[0] == in.getDims()[0];
  for (int64_t i = 2; shapesMatch && i < rank; ++i)
    shapesMatch = tt.getDims()[i - 1] == in.getDims()[i];
  if (!shapesMatch)
    return importer.error(node, "target " + tt.str() +
                                    " does not match input " + in.str() +
                                    " ([N,C,d...] and [N,d...])");
  if (weight && (weight->getType().getRank() != 1 ||
                 weight->getType().getDims()[0] != in.getDims()[1] ||
                 weight->getType().getDType() != in.getDType()))
    return importer.error(node, "weight " + weight->getType().str() +
                                    " is not one " +
                                    ir::getDTypeName(in.getDType()) +
                                    " per class of input " + in.str());
  std::string reduction = attrString(node, "reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return importer.error(node, "reduction '" + reduction +
                                    "' is not none, sum or mean");
  DType dtype = in.getDType();
  ir::Value *safe = target, *ignored = nullptr;
  if (findAttr(node, "ignore_index")) {
    ir::Value *index =
        addScalarWeight(importer, node, ".ignore_index", tt.getDType(),
                        double(attrInt(node, "ignore_index", 0)));
    auto equal = firstResult(
        importer.emit(node, "Equal", {target, index}, {}, 1, ".ignored"));
    if (!equal)
      return equal.takeError();
    ignored = *equal;
    auto where = firstResult(importer.emit(
        node, "Where",
        {ignored, addScalarWeight(importer, node, ".class0", tt.getDType(), 0),
         target},
        {}, 1, ".target"));
    if (!where)
      return where.takeError();
    safe = *where;
  }
  auto index = firstResult(importer.emit(node, "Unsqueeze", {safe},
                                         {{"axes", Attribute::getInts({1})}}, 1,
                                         ".index"));
  if (!index)
    return index.takeError();
  auto gathered = firstResult(
      importer.emit(node, "GatherElements", {input, *index},
                    {{"axis", Attribute::getInt(1)}}, 1, ".picked"));
  if (!gathered)
    return gathered.takeError();
  auto picked = firstResult(importer.emit(node, "Squeeze", {*gathered},
                                          {{"axes", Attribute::getInts({1})}},
                                          1, ".squeezed"));
  if (!picked)
    return picked.takeError();
  auto negated =
      firstResult(importer.emit(node, "Neg", {*picked}, {}, 1, ".neg"));
  if (!negated)
    return negated.takeError();
  ir::Value *loss = *negated;
  // The per-element weight: the class weight, 0 where ignored.
  ir::Value *perElement = nullptr;
  if (weight) {
    auto classWeight = firstResult(
        importer.emit(node, "Gather", {weight, safe},
                      {{"axis", Attribute::getInt(0)}}, 1, ".class_weight"));
    if (!classWeight)
      return classWeight.takeError();
    perElement = *classWeight;
  }
  if (ignored) {
    ir::Value *kept = perElement
                          ? perElement
                          : addScalarWeight(importer, node, ".one", dtype, 1);
    auto masked = firstResult(importer.emit(
        node, "Where",
        {ignored, addScalarWeight(importer, node, ".zero", dtype, 0), kept}, {},
        1, ".weight"));
    if (!masked)
      return masked.takeError();
    perElement = *masked;
  }
  if (perElement) {
    auto weighted = firstResult(
        importer.emit(node, "Mul", {loss, perElement}, {}, 1, ".weighted"));
    if (!weighted)
      return weighted.takeError();
    loss = *weighted;
  }
  if (reduction == "none")
    return loss;
  ir::AttributeMap all = {{"axes", allAxes(tt.getRank())},
                          {"keepdims", Attribute::getInt(0)}};
  if (reduction == "mean" && !perElement)
    return firstResult(
        importer.emit(node, "ReduceMean", {loss}, all, 1, ".mean"));
  auto sum =
      firstResult(importer.emit(node, "ReduceSum", {loss}, all, 1, ".sum"));
  if (!sum || reduction == "sum")
    return sum;
  auto total = firstResult(
      importer.emit(node, "ReduceSum", {perElement}, all, 1, ".weight_sum"));
  if (!total)
    return total.takeError();
  return firstResult(
      importer.emit(node, "Div", {*sum, *total}, {}, 1, ".mean"));
}

llvm::Error importNllLoss(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  if (inputs->size() < 2 || !(*inputs)[0] || !(*inputs)[1])
    return importer.error(node, "needs input and target");
  ir::Value *weight = inputs->size() > 2 ? (*inputs)[2] : nullptr;
  auto loss = emitNllLoss(importer, node, (*inputs)[0], (*inputs)[1], weight);
  if (!loss)
    return loss.takeError();
  importer.bindOutputs(node, {*loss});
  return llvm::Error::success();
}

llvm::Error importSoftmaxCrossEntropy(Importer &importer,
                                      onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  if (inputs->size() < 2 || !(*inputs)[0] || !(*inputs)[1])
    return importer.error(node, "needs scores and labels");
  if ((*inputs)[0]->getType().getRank() < 2)
    return importer.error(node, "scores " + (*inputs)[0]->getType().str() +
                                    " have no class axis ([N,C,d...])");
  auto logProb =
      importer.emit(node, "LogSoftmax", {(*inputs)[0]},
                    {{"axis", Attribute::getInt(1)}}, 1, ".log_prob");
  if (!logProb)
    return logProb.takeError();
  ir::Value *weight = inputs->size() > 2 ? (*inputs)[2] : nullptr;
  auto loss = emitNllLoss(importer, node, (*logProb)[0], (*inputs)[1], weight);
  if (!loss)
    return loss.takeError();
  importer.bindOutputs(node, {*loss, (*logProb)[0]});
  return llvm::Error::success();
}

} // namespace

void registerLossOpImporters(llvm::StringMap<OpImporter> &map) {
  map["NegativeLogLikelihoodLoss"] = importNllLoss;
  map["SoftmaxCrossEntropyLoss"] = importSoftmaxCrossEntropy;
}

} // namespace onnx_import
} // namespace snug
