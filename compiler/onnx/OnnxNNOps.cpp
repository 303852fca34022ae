//===- OnnxNNOps.cpp - Reductions, convolution, pooling, normalization ----===//
//
// Normalizers of the reductions (axes made explicit, ReduceLogSum as
// ReduceSum then Log), TopK (k an attribute), CastLike and Trilu (as Cast and a masked Where),
// and the windowed ops: Conv, ConvTranspose and the pools get explicit
// kernel_shape, strides, pads and dilations with auto_pad and output_shape
// resolved into pads; BatchNormalization and LayerNormalization their
// inference form.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"

#include "ir/Verifier.h"
#include "ir/ShapeFunctions.h"
#include "core/CheckedArithmetic.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace snug {
namespace onnx_import {

using ir::Attribute;
using ir::AttributeMap;
using ir::DType;
using ir::TensorType;
//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static llvm::Error importReduce(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  int64_t inputOpset = node.op_type() == "ReduceSum" ? 13 : 18;
  auto given = readAxes(importer, node, inputOpset);
  if (!given)
    return given.takeError();
  int64_t rank = (*input)->getType().getRank();
  Ints axes;
  if (*given && !(*given)->empty()) {
    auto normalized = axesFor(importer, node, **given, rank);
    if (!normalized)
      return normalized.takeError();
    axes = *normalized;
  } else if (attrInt(node, "noop_with_empty_axes", 0)) {
    return importer.emitAndBind(node, "Identity", {*input}, {});
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  AttributeMap attributes{
      {"axes", Attribute::getInts(axes)},
      {"keepdims", Attribute::getInt(attrInt(node, "keepdims", 1))}};
  if (node.op_type() == "ReduceLogSum") {
    // log(sum(x)): two canonical nodes rather than a new op.
    auto sum = importer.emit(node, "ReduceSum", {*input}, std::move(attributes),
                             1, ".sum");
    if (!sum)
      return sum.takeError();
    return importer.emitAndBind(node, "Log", {(*sum)[0]}, {});
  }
  return importer.emitAndBind(node, node.op_type(), {*input},
                              std::move(attributes));
}

/// CastLike(x, like) is Cast(x) to like's element type.
static llvm::Error importCastLike(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  auto like = requireInput(importer, node, 1);
  if (!like)
    return like.takeError();
  return importer.emitAndBind(node, "Cast", {*input},
                              {{"to", Attribute::getString(ir::getDTypeName(
                                          (*like)->getType().getDType()))}});
}

/// Trilu(x, k) keeps the upper (or lower) triangle of the last two dims:
/// Where(mask, x, 0) with the mask a constant bool weight, since k must be
/// known.
static llvm::Error importTrilu(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  int64_t k = 0;
  auto kInput = importer.getInput(node, 1);
  if (!kInput)
    return kInput.takeError();
  if (*kInput) {
    auto values = importer.getConstantInts(node, 1, "k");
    if (!values)
      return values.takeError();
    if (values->size() != 1)
      return importer.error(node, "k must be a scalar");
    k = (*values)[0];
  }
  const TensorType &type = (*input)->getType();
  if (type.getRank() < 2)
    return importer.error(node, "input " + type.str() + " has rank below 2");
  int64_t rows = type.getDims()[type.getRank() - 2];
  int64_t cols = type.getDims().back();
  bool upper = attrInt(node, "upper", 1);
  TensorType maskType(DType::Bool, {rows, cols});
  if (llvm::Error error = checkMaterialized(importer, node, maskType))
    return error;
  std::vector<uint8_t> mask(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask[i * cols + j] = upper ? j - i >= k : j - i <= k;
  std::string base = node.output(0);
  ir::Value *maskWeight =
      importer.module.addWeight(base + ".mask", maskType, mask);
  ir::Value *zeroWeight =
      addScalarWeight(importer, node, ".zero", type.getDType(), 0);
  return importer.emitAndBind(node, "Where", {maskWeight, *input, zeroWeight},
                              {});
}

static llvm::Error importArgReduce(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  auto axis = axisFor(importer, node, attrInt(node, "axis", 0),
                      (*input)->getType().getRank());
  if (!axis)
    return axis.takeError();
  return importer.emitAndBind(
      node, node.op_type(), {*input},
      {{"axis", Attribute::getInt(*axis)},
       {"keepdims", Attribute::getInt(attrInt(node, "keepdims", 1))},
       {"select_last_index",
        Attribute::getInt(attrInt(node, "select_last_index", 0))}});
}

/// TopK's k is an attribute before opset 10 and an input from it on; the
/// result's shape holds it, so the input must be a constant. The canonical
/// form makes it the `k` attribute and the axis non-negative.
static llvm::Error importTopK(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  auto axis = axisFor(importer, node, attrInt(node, "axis", -1),
                      (*input)->getType().getRank());
  if (!axis)
    return axis.takeError();
  int64_t k;
  if (importer.opset < 10) {
    if (!findAttr(node, "k"))
      return importer.error(node, "attribute k is required");
    k = attrInt(node, "k", 0);
  } else {
    auto given = importer.getConstantInts(node, 1, "k");
    if (!given)
      return given.takeError();
    if (given->size() != 1)
      return importer.error(node, "k must hold one value, not " +
                                      llvm::Twine(given->size()));
    k = (*given)[0];
  }
  return importer.emitAndBind(
      node, "TopK", {*input},
      {{"axis", Attribute::getInt(*axis)},
       {"k", Attribute::getInt(k)},
       {"largest", Attribute::getInt(attrInt(node, "largest", 1))},
       {"sorted", Attribute::getInt(attrInt(node, "sorted", 1))}},
      2);
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

namespace {
struct WindowAttrs {
  Ints kernel, strides, dilations, pads;
};
} // namespace

/// Reads kernel, strides, dilations and pads, resolving auto_pad (SAME_*
/// pads so that out = ceil(in / stride); VALID pads nothing).
static llvm::Expected<WindowAttrs>
readWindow(Importer &importer, const onnx::NodeProto &node,
           llvm::ArrayRef<int64_t> spatialDims, const Ints *kernelFromWeight) {
  size_t spatial = spatialDims.size();
  WindowAttrs window;
  if (auto kernel = attrInts(node, "kernel_shape"))
    window.kernel = *kernel;
  else if (kernelFromWeight)
    window.kernel = *kernelFromWeight;
  else
    return importer.error(node, "kernel_shape is required");
  window.strides = attrInts(node, "strides").getValueOr(Ints(spatial, 1));
  window.dilations = attrInts(node, "dilations").getValueOr(Ints(spatial, 1));
  window.pads = attrInts(node, "pads").getValueOr(Ints(2 * spatial, 0));
  if (window.kernel.size() != spatial || window.strides.size() != spatial ||
      window.dilations.size() != spatial || window.pads.size() != 2 * spatial)
    return importer.error(node, "kernel_shape " + dimsString(window.kernel) +
                                    ", strides, dilations or pads do not fit " +
                                    llvm::Twine(spatial) + " spatial dims");
  // Before auto_pad divides by the strides.
  for (size_t i = 0; i < spatial; ++i)
    if (window.kernel[i] <= 0 || window.strides[i] <= 0 ||
        window.dilations[i] <= 0)
      return importer.error(node, "kernel_shape, strides and dilations must "
                                  "be positive");
  std::string autoPad = attrString(node, "auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    window.pads.assign(2 * spatial, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < spatial; ++i) {
      int64_t in = spatialDims[i], stride = window.strides[i];
      // in > 0 and stride > 0: ceil(in / stride) without overflow.
      int64_t out = (in - 1) / stride + 1;
      auto needed = (CheckedInt(out - 1) * stride +
                     CheckedInt(window.kernel[i] - 1) * window.dilations[i] +
                     1 - in)
                        .get();
      if (!needed)
        return importer.error(node, "auto_pad " + autoPad + " of spatial dim " +
                                        llvm::Twine(i) +
                                        " overflows a 64-bit integer "
                                        "(strides, kernel_shape or dilations)");
      int64_t total = std::max<int64_t>(0, *needed);
      int64_t small = total / 2, large = total - small;
      window.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      window.pads[i + spatial] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return importer.error(node, "auto_pad '" + autoPad + "' is unknown");
  }
  return window;
}

static llvm::Error importConv(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  if (inputs->size() < 2 || !(*inputs)[0] || !(*inputs)[1])
    return importer.error(node, "needs an input and a weight");
  llvm::ArrayRef<int64_t> x = (*inputs)[0]->getType().getDims();
  llvm::ArrayRef<int64_t> w = (*inputs)[1]->getType().getDims();
  if (x.size() < 3 || w.size() != x.size())
    return importer.error(
        node, "input " + (*inputs)[0]->getType().str() + " and weight " +
                  (*inputs)[1]->getType().str() + " do not fit a convolution");
  Ints kernel(w.begin() + 2, w.end());
  auto window = readWindow(importer, node, x.drop_front(2), &kernel);
  if (!window)
    return window.takeError();
  int64_t group = attrInt(node, "group", 1);
  AttributeMap attributes{{"kernel_shape", Attribute::getInts(window->kernel)},
                          {"strides", Attribute::getInts(window->strides)},
                          {"dilations", Attribute::getInts(window->dilations)},
                          {"group", Attribute::getInt(group)}};
  bool transposed = node.op_type() == "ConvTranspose";
  if (transposed) {
    size_t spatial = x.size() - 2;
    Ints outputPadding =
        attrInts(node, "output_padding").getValueOr(Ints(spatial, 0));
    auto outputShape = attrInts(node, "output_shape");
    std::string autoPad = attrString(node, "auto_pad", "NOTSET");
    Ints pads = attrInts(node, "pads").getValueOr(Ints(2 * spatial, 0));
    if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      Ints target;
      if (outputShape) {
        if (outputShape->size() < spatial)
          return importer.error(node, "output_shape is too short");
        target.assign(outputShape->end() - spatial, outputShape->end());
      } else {
        for (size_t i = 0; i < spatial; ++i)
          target.push_back(x[i + 2]);
      }
      if (outputPadding.size() != spatial)
        return importer.error(node, "output_padding does not fit " +
                                        llvm::Twine(spatial) + " spatial dims");
      for (size_t i = 0; i < spatial; ++i) {
        // SAME: the output is the input times the stride.
        auto wanted = outputShape ? CheckedInt(target[i])
                                  : CheckedInt(target[i]) * window->strides[i];
        auto needed =
            (CheckedInt(window->strides[i]) * (x[i + 2] - 1) +
             outputPadding[i] +
             CheckedInt(window->kernel[i] - 1) * window->dilations[i] + 1 -
             wanted)
                .get();
        if (!needed)
          return importer.error(node, "the pads of spatial dim " +
                                          llvm::Twine(i) +
                                          " overflow a 64-bit integer "
                                          "(strides, output_padding, "
                                          "output_shape or dilations)");
        int64_t total = *needed;
        int64_t half = total / 2;
        bool lower = autoPad == "SAME_LOWER";
        pads[i] = lower ? total - half : half;
        pads[i + spatial] = lower ? half : total - half;
      }
    } else if (autoPad == "VALID") {
      pads.assign(2 * spatial, 0);
    }
    attributes["pads"] = Attribute::getInts(pads);
    attributes["output_padding"] = Attribute::getInts(outputPadding);
  } else {
    attributes["pads"] = Attribute::getInts(window->pads);
  }
  return importer.emitAndBind(node, node.op_type(), *inputs,
                              std::move(attributes));
}

static llvm::Error importPool(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  llvm::ArrayRef<int64_t> x = (*input)->getType().getDims();
  if (x.size() < 3)
    return importer.error(node, "input " + (*input)->getType().str() +
                                    " has no spatial dims");
  auto window = readWindow(importer, node, x.drop_front(2), nullptr);
  if (!window)
    return window.takeError();
  bool isMax = node.op_type() == "MaxPool";
  AttributeMap attributes{
      {"kernel_shape", Attribute::getInts(window->kernel)},
      {"strides", Attribute::getInts(window->strides)},
      {"pads", Attribute::getInts(window->pads)},
      {"ceil_mode", Attribute::getInt(attrInt(node, "ceil_mode", 0))}};
  // AveragePool has dilations from opset 19; kept only when given, so
  // older models' canonical form does not change.
  if (isMax || findAttr(node, "dilations"))
    attributes["dilations"] = Attribute::getInts(window->dilations);
  if (!isMax)
    attributes["count_include_pad"] =
        Attribute::getInt(attrInt(node, "count_include_pad", 0));
  unsigned results =
      isMax && node.output_size() > 1 && !node.output(1).empty() ? 2 : 1;
  // The layout of the Indices result (0 row-major, 1 column-major).
  if (results == 2)
    attributes["storage_order"] =
        Attribute::getInt(attrInt(node, "storage_order", 0));
  return importer.emitAndBind(node, node.op_type(), {*input},
                              std::move(attributes), results);
}

static llvm::Error importBatchNorm(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  if (inputs->size() != 5 || llvm::is_contained(*inputs, nullptr))
    return importer.error(node, "needs X, scale, B, mean and var");
  if (attrInt(node, "training_mode", 0))
    return importer.error(node, "training-mode BatchNormalization is not "
                                "supported (export in eval mode)");
  // Opsets 7 and 8: spatial 0 keeps statistics per element, not per
  // channel, which the canonical op does not express.
  if (!attrInt(node, "spatial", 1))
    return importer.error(node, "spatial 0 (per-element statistics) is not "
                                "supported");
  ir::AttributeMap attributes = {
      {"epsilon", Attribute::getFloat(attrFloat(node, "epsilon", 1e-5f))}};
  // The running statistics' update rate, read by `snugc train
  // --batchnorm=batch`; kept only when it is not the default, so models
  // that never train print as before.
  float momentum = attrFloat(node, "momentum", 0.9f);
  if (momentum != 0.9f)
    attributes["momentum"] = Attribute::getFloat(momentum);
  return importer.emitAndBind(node, "BatchNormalization", *inputs,
                              std::move(attributes));
}

static llvm::Error importLayerNorm(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  if (inputs->size() < 2 || !(*inputs)[0] || !(*inputs)[1])
    return importer.error(node, "needs X and Scale");
  auto axis = axisFor(importer, node, attrInt(node, "axis", -1),
                      (*inputs)[0]->getType().getRank());
  if (!axis)
    return axis.takeError();
  return importer.emitAndBind(
      node, "LayerNormalization", *inputs,
      {{"axis", Attribute::getInt(*axis)},
       {"epsilon", Attribute::getFloat(attrFloat(node, "epsilon", 1e-5f))}},
      countNamedOutputs(node, 3));
}

/// RMSNormalization (opset 23): X / sqrt(mean(X^2 over axes axis..) + eps)
/// * scale, as its ONNX function body computes it, in ops the table has
/// (fused back into one snug.rms_norm where it is f32).
/// stash_type 1 (the default) computes a 16-bit X's statistics in f32:
/// casts around the composition.
static llvm::Error importRmsNorm(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  if (inputs->size() < 2 || !(*inputs)[0] || !(*inputs)[1])
    return importer.error(node, "needs X and scale");
  ir::Value *x = (*inputs)[0], *scale = (*inputs)[1];
  const TensorType &type = x->getType();
  if (!ir::isFloatDType(type.getDType()))
    return importer.error(node, "X " + type.str() + " is not a float tensor");
  int64_t rank = type.getRank();
  auto axis = axisFor(importer, node, attrInt(node, "axis", -1), rank);
  if (!axis)
    return axis.takeError();
  int64_t stash = attrInt(node, "stash_type", 1);
  if (stash != 1 && stash != int64_t(onnx::TensorProto::FLOAT16) &&
      stash != int64_t(onnx::TensorProto::BFLOAT16) &&
      stash != int64_t(onnx::TensorProto::DOUBLE))
    return importer.error(node, "stash_type " + std::to_string(stash) +
                                    " is not a float type");
  auto one = [&](llvm::StringRef op, llvm::ArrayRef<ir::Value *> operands,
                 ir::AttributeMap attributes,
                 llvm::StringRef suffix) -> llvm::Expected<ir::Value *> {
    auto results =
        importer.emit(node, op, operands, std::move(attributes), 1, suffix);
    if (!results)
      return results.takeError();
    return (*results)[0];
  };
  DType compute = *convertDType(stash);
  bool cast = compute != type.getDType();
  auto castTo = [&](ir::Value *value, DType to,
                    llvm::StringRef suffix) -> llvm::Expected<ir::Value *> {
    return one("Cast", {value},
               {{"to", Attribute::getString(ir::getDTypeName(to))}}, suffix);
  };
  ir::Value *wide = x;
  if (cast) {
    auto widened = castTo(x, compute, ".stash");
    if (!widened)
      return widened.takeError();
    wide = *widened;
  }
  Ints axes;
  for (int64_t i = *axis; i < rank; ++i)
    axes.push_back(i);
  // Pow(x, 2), the exporters' form, which the fuse pass makes one
  // snug.rms_norm kernel (passes/fusion/LayerNormPattern.cpp).
  ir::Value *two = addScalarWeight(importer, node, ".two", compute, 2);
  auto square = one("Pow", {wide, two}, {}, ".square");
  if (!square)
    return square.takeError();
  auto mean = one("ReduceMean", {*square},
                  {{"axes", Attribute::getInts(axes)},
                   {"keepdims", Attribute::getInt(1)}},
                  ".mean_square");
  if (!mean)
    return mean.takeError();
  ir::Value *epsilonWeight = addScalarWeight(
      importer, node, ".epsilon", compute, attrFloat(node, "epsilon", 1e-5f));
  auto shifted = one("Add", {*mean, epsilonWeight}, {}, ".shifted");
  if (!shifted)
    return shifted.takeError();
  auto root = one("Sqrt", {*shifted}, {}, ".rms");
  if (!root)
    return root.takeError();
  auto normalized = one("Div", {wide, *root}, {}, ".normalized");
  if (!normalized)
    return normalized.takeError();
  ir::Value *result = *normalized;
  if (cast) {
    auto narrowed = castTo(result, type.getDType(), ".unstash");
    if (!narrowed)
      return narrowed.takeError();
    result = *narrowed;
  }
  return importer.emitAndBind(node, "Mul", {result, scale}, {});
}

void registerNNOpImporters(llvm::StringMap<OpImporter> &map) {
  for (const char *op :
       {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
        "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
        "ReduceSumSquare"})
    map[op] = importReduce;
  map["ArgMax"] = importArgReduce;
  map["ArgMin"] = importArgReduce;
  map["TopK"] = importTopK;
  map["CastLike"] = importCastLike;
  map["Trilu"] = importTrilu;
  map["Conv"] = importConv;
  map["ConvTranspose"] = importConv;
  map["MaxPool"] = importPool;
  map["AveragePool"] = importPool;
  map["BatchNormalization"] = importBatchNorm;
  map["LayerNormalization"] = importLayerNorm;
  map["RMSNormalization"] = importRmsNorm;
}

} // namespace onnx_import
} // namespace snug
