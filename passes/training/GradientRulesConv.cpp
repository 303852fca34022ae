//===- GradientRulesConv.cpp - Rules of Conv, the pools and BatchNorm -----===//
//
// Every rule here is a composition of existing ops, so the backward pass of
// a CNN needs no kernel of its own.
//
// Conv, Y = X * W (N C S..., W M C/g K..., group g, strides s, pads p,
// dilations d; Dumoulin & Visin, "A guide to convolution arithmetic",
// 2016, sec. 4 for the transposes):
//  - dX is ConvTranspose(dY, W) with the same window: W's layout (M, C/g,
//    K...) is ConvTranspose's (input channels, output channels per group).
//    Where the stride leaves a remainder r = (S + pads - extent) mod s the
//    forward conv never read the last r input cells; output_padding r
//    brings the transposed result back to S (those cells get 0).
//  - dW is a Conv of the activations over the result gradient: X viewed as
//    (C/g, g N, S...) (channels and batch swapped, the groups kept apart),
//    dY as (M, N, O...) the filter, group g, strides and dilations swapped,
//    the same pads; its result (C/g, M, K'...) is cut to K (K' exceeds K by
//    the cells the remainder adds) and transposed to (M, C/g, K...).
//  - dB is dY summed over the batch and spatial dims.
// MaxPool sends each result gradient to the input cell its Indices result
// names (flat over N, C and S, row-major, as ONNX defines it; a MaxPool
// without that result gets a second one with it): a ScatterElements with
// reduction=add into zeros, so overlapping windows that pick the same cell
// add up. AveragePool spreads each gradient over its window with a
// depthwise ConvTranspose of ones, after dividing by the window's count: the
// kernel size with count_include_pad, else the cells inside the input,
// counted by a Conv of ones over ones (zero padding counts nothing).
// ceil_mode is refused for AveragePool (its last windows reach past the
// padding, which no Conv shape describes). The global pools expand the
// gradient back over the spatial dims; GlobalMaxPool sends it to every cell
// equal to the maximum (a tie sends it to each).
//
// BatchNormalization is the inference form the importer keeps (it refuses
// training_mode): y = (x - mean) r scale + bias, r = 1 / sqrt(var + eps),
// with per-channel operands. dx = dy scale r; dscale = sum dy (x - mean) r;
// dbias = sum dy; dmean = -dbias scale r; dvar = -1/2 sum dy (x - mean)
// scale r^3, the sums over every dim but the channels.
//
//===----------------------------------------------------------------------===//
#include "passes/training/GradientRules.h"
#include "ir/ShapeFunctions.h"

namespace snug {

using ir::Attribute;
using ir::OpCode;
using ir::Value;

namespace {

using Dims = llvm::SmallVector<int64_t, 4>;

/// The window attributes of a Conv or pool over `spatial` dims, defaults
/// filled in.
struct Window {
  Dims kernel, strides, pads, dilations;

  Window(const ir::AttributeMap &attrs, llvm::ArrayRef<int64_t> kernelDims) {
    size_t spatial = kernelDims.size();
    kernel = getIntsAttr(attrs, "kernel_shape")
                 .getValueOr(Dims(kernelDims.begin(), kernelDims.end()));
    strides = getIntsAttr(attrs, "strides").getValueOr(Dims(spatial, 1));
    dilations = getIntsAttr(attrs, "dilations").getValueOr(Dims(spatial, 1));
    pads = getIntsAttr(attrs, "pads").getValueOr(Dims(2 * spatial, 0));
  }

  /// The cells of input dim `i` (of size `input`) past the last window:
  /// the forward op never read them, the transposed op must add them back.
  int64_t remainder(size_t i, int64_t input) const {
    int64_t extent = dilations[i] * (kernel[i] - 1) + 1;
    return (input + pads[i] + pads[i + kernel.size()] - extent) % strides[i];
  }

  ir::AttributeMap attributes(int64_t group) const {
    return {{"kernel_shape", Attribute::getInts(kernel)},
            {"strides", Attribute::getInts(strides)},
            {"pads", Attribute::getInts(pads)},
            {"dilations", Attribute::getInts(dilations)},
            {"group", Attribute::getInt(group)}};
  }

  /// ConvTranspose(`gradient`, `weight`) with this window: the gradient of
  /// a window op's input of dims `inputDims` (N C S...).
  llvm::Expected<Value *> transpose(GraphBuilder &b, Value *gradient,
                                    Value *weight, int64_t group,
                                    llvm::ArrayRef<int64_t> inputDims) const {
    Dims outputPadding;
    for (size_t i = 0; i < kernel.size(); ++i)
      outputPadding.push_back(remainder(i, inputDims[i + 2]));
    ir::AttributeMap attrs = attributes(group);
    attrs["output_padding"] = Attribute::getInts(outputPadding);
    return b.emit(OpCode::ConvTranspose, {gradient, weight}, attrs);
  }
};

/// 0, 1, ..., n - 1 with `a` and `b` swapped.
Dims swapped(size_t n, size_t a, size_t b) {
  Dims perm;
  for (size_t i = 0; i < n; ++i)
    perm.push_back(int64_t(i));
  std::swap(perm[a], perm[b]);
  return perm;
}

/// The batch and spatial dims of a rank-`rank` N C S... tensor.
Dims allButChannels(size_t rank) {
  Dims axes{0};
  for (size_t i = 2; i < rank; ++i)
    axes.push_back(int64_t(i));
  return axes;
}

llvm::Expected<Value *> transposeOf(GraphBuilder &b, Value *value,
                                    llvm::ArrayRef<int64_t> perm) {
  return b.emit(OpCode::Transpose, {value},
                {{"perm", Attribute::getInts(perm)}});
}

/// dW of a Conv: see the banner.
llvm::Expected<Value *> convWeightGradient(GraphBuilder &b, const Window &w,
                                           Value *x, Value *g, Value *weight,
                                           int64_t group) {
  llvm::ArrayRef<int64_t> xDims = x->getType().getDims();
  llvm::ArrayRef<int64_t> gDims = g->getType().getDims();
  size_t rank = xDims.size();
  int64_t n = xDims[0], channelsPerGroup = xDims[1] / group;
  // X as (C/g, g N, S...): (N, g, C/g, S...) with N and C/g swapped.
  Dims split{n, group, channelsPerGroup};
  split.append(xDims.begin() + 2, xDims.end());
  auto grouped = b.reshape(x, split);
  if (!grouped)
    return grouped.takeError();
  auto swappedX = transposeOf(b, *grouped, swapped(rank + 1, 0, 2));
  if (!swappedX)
    return swappedX.takeError();
  Dims merged{channelsPerGroup, group * n};
  merged.append(xDims.begin() + 2, xDims.end());
  auto input = b.reshape(*swappedX, merged);
  if (!input)
    return input.takeError();
  auto filter = transposeOf(b, g, swapped(rank, 0, 1));
  if (!filter)
    return filter.takeError();
  ir::AttributeMap attrs = {
      {"kernel_shape", Attribute::getInts(gDims.drop_front(2))},
      {"strides", Attribute::getInts(w.dilations)},
      {"pads", Attribute::getInts(w.pads)},
      {"dilations", Attribute::getInts(w.strides)},
      {"group", Attribute::getInt(group)}};
  auto product = b.emit(OpCode::Conv, {*input, *filter}, attrs);
  if (!product)
    return product.takeError();
  Value *cut = *product;
  llvm::ArrayRef<int64_t> kernel = weight->getType().getDims().drop_front(2);
  if (cut->getType().getDims().drop_front(2) != kernel) {
    Dims starts, axes, steps;
    for (size_t i = 0; i < kernel.size(); ++i) {
      starts.push_back(0);
      axes.push_back(int64_t(i + 2));
      steps.push_back(1);
    }
    auto sliced = b.emit(OpCode::Slice, {cut},
                         {{"starts", Attribute::getInts(starts)},
                          {"ends", Attribute::getInts(kernel)},
                          {"axes", Attribute::getInts(axes)},
                          {"steps", Attribute::getInts(steps)}});
    if (!sliced)
      return sliced.takeError();
    cut = *sliced;
  }
  return transposeOf(b, cut, swapped(rank, 0, 1));
}

/// `g` summed over every dim but the channels, as a [C] vector.
llvm::Expected<Value *> sumPerChannel(GraphBuilder &b, Value *g) {
  return b.emit(
      OpCode::ReduceSum, {g},
      {{"axes", Attribute::getInts(allButChannels(g->getType().getRank()))},
       {"keepdims", Attribute::getInt(0)}});
}

llvm::Error convRule(GraphBuilder &b, const GradientQuery &q) {
  Value *x = q.node.getOperand(0), *weight = q.node.getOperand(1);
  Value *g = q.resultGradients[0];
  Window w(q.node.getAttributes(), weight->getType().getDims().drop_front(2));
  int64_t group = getIntAttr(q.node.getAttributes(), "group", 1);
  if (q.wanted[0])
    if (llvm::Error error = setGradient(
            q, 0, w.transpose(b, g, weight, group, x->getType().getDims())))
      return error;
  if (q.wanted[1])
    if (llvm::Error error =
            setGradient(q, 1, convWeightGradient(b, w, x, g, weight, group)))
      return error;
  if (q.node.getNumOperands() > 2 && q.node.getOperand(2) && q.wanted[2])
    return setGradient(q, 2, sumPerChannel(b, g));
  return llvm::Error::success();
}

llvm::Error maxPoolRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  const ir::AttributeMap &attrs = q.node.getAttributes();
  if (getIntAttr(attrs, "storage_order", 0) != 0)
    return gradientError("storage_order 1 (column-major Indices) has no "
                         "gradient rule");
  Value *x = q.node.getOperand(0), *g = q.resultGradients[0];
  Value *indices = nullptr;
  if (q.node.getNumResults() > 1 && q.node.getResult(1)) {
    indices = q.node.getResult(1);
  } else {
    auto withIndices = b.emitNode(OpCode::MaxPool, {x}, attrs, 2);
    if (!withIndices)
      return withIndices.takeError();
    indices = (*withIndices)->getResult(1);
  }
  int64_t cells = x->getType().getNumElements();
  int64_t picks = g->getType().getNumElements();
  auto zeros = b.fill(0, ir::TensorType(x->getType().getDType(), {cells}));
  auto flatIndices = b.reshape(indices, {picks});
  auto flatGradient = b.reshape(g, {picks});
  for (auto *value : {&zeros, &flatIndices, &flatGradient})
    if (!*value)
      return value->takeError();
  auto scattered =
      b.emit(OpCode::ScatterElements, {*zeros, *flatIndices, *flatGradient},
             {{"axis", Attribute::getInt(0)},
              {"reduction", Attribute::getString("add")}});
  if (!scattered)
    return scattered.takeError();
  return setGradient(q, 0, b.reshape(*scattered, x->getType().getDims()));
}

llvm::Error averagePoolRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  const ir::AttributeMap &attrs = q.node.getAttributes();
  if (getIntAttr(attrs, "ceil_mode", 0))
    return gradientError("ceil_mode 1 has no gradient rule");
  Value *x = q.node.getOperand(0), *g = q.resultGradients[0];
  llvm::ArrayRef<int64_t> xDims = x->getType().getDims();
  ir::DType dtype = x->getType().getDType();
  Dims kernel = *getIntsAttr(attrs, "kernel_shape");
  Window w(attrs, kernel);
  Dims onesDims{1, 1};
  onesDims.append(kernel.begin(), kernel.end());
  llvm::Expected<Value *> scaled = nullptr;
  if (getIntAttr(attrs, "count_include_pad", 0)) {
    int64_t size = 1;
    for (int64_t k : kernel)
      size *= k;
    scaled = b.emit(OpCode::Mul, {g, b.scalar(1.0 / double(size), dtype)});
  } else {
    Dims planeDims{1, 1};
    planeDims.append(xDims.begin() + 2, xDims.end());
    auto plane = b.fill(1, ir::TensorType(dtype, planeDims));
    auto window = b.fill(1, ir::TensorType(dtype, onesDims));
    if (!plane)
      return plane.takeError();
    if (!window)
      return window.takeError();
    auto counts = b.emit(OpCode::Conv, {*plane, *window}, w.attributes(1));
    if (!counts)
      return counts.takeError();
    scaled = b.emit(OpCode::Div, {g, *counts});
  }
  if (!scaled)
    return scaled.takeError();
  Dims depthwise{xDims[1], 1};
  depthwise.append(kernel.begin(), kernel.end());
  auto ones = b.fill(1, ir::TensorType(dtype, depthwise));
  if (!ones)
    return ones.takeError();
  return setGradient(q, 0, w.transpose(b, *scaled, *ones, xDims[1], xDims));
}

llvm::Error globalPoolRule(GraphBuilder &b, const GradientQuery &q) {
  if (!q.wanted[0])
    return llvm::Error::success();
  Value *x = q.node.getOperand(0), *g = q.resultGradients[0];
  const ir::TensorType &xType = x->getType();
  llvm::Expected<Value *> spread = nullptr;
  if (q.node.is(OpCode::GlobalMaxPool)) {
    auto isMax = b.emit(OpCode::Equal, {x, q.node.getResult(0)});
    if (!isMax)
      return isMax.takeError();
    spread = b.emit(OpCode::Where, {*isMax, g, b.scalar(0, xType.getDType())});
  } else {
    int64_t cells =
        xType.getNumElements() / (xType.getDims()[0] * xType.getDims()[1]);
    auto mean = b.emit(OpCode::Mul,
                       {g, b.scalar(1.0 / double(cells), xType.getDType())});
    if (!mean)
      return mean.takeError();
    spread = b.emit(OpCode::Expand, {*mean},
                    {{"shape", Attribute::getInts(xType.getDims())}});
  }
  return setGradient(q, 0, std::move(spread));
}

llvm::Error batchNormRule(GraphBuilder &b, const GradientQuery &q) {
  for (unsigned i = 1; i < q.resultGradients.size(); ++i)
    if (q.resultGradients[i])
      return gradientError("the running-statistics results have no gradient "
                           "rule (training-mode BatchNormalization)");
  Value *x = q.node.getOperand(0), *scale = q.node.getOperand(1);
  Value *mean = q.node.getOperand(3), *var = q.node.getOperand(4);
  Value *g = q.resultGradients[0];
  ir::DType dtype = x->getType().getDType();
  size_t rank = x->getType().getRank();
  int64_t channels = x->getType().getDims()[1];
  // Per-channel [C] values broadcast against N C S... as C 1....
  Dims column(rank - 1, 1);
  column[0] = channels;
  auto broadcast = [&](Value *value) { return b.reshape(value, column); };
  float epsilon = getFloatAttr(q.node.getAttributes(), "epsilon", 1e-5f);
  auto shifted = b.emit(OpCode::Add, {var, b.scalar(epsilon, dtype)});
  if (!shifted)
    return shifted.takeError();
  auto deviation = b.emit(OpCode::Sqrt, {*shifted});
  if (!deviation)
    return deviation.takeError();
  auto r = b.emit(OpCode::Div, {b.scalar(1, dtype), *deviation});
  if (!r)
    return r.takeError();
  auto scaleR = b.emit(OpCode::Mul, {scale, *r});
  if (!scaleR)
    return scaleR.takeError();
  if (q.wanted[0]) {
    auto factor = broadcast(*scaleR);
    if (!factor)
      return factor.takeError();
    if (llvm::Error error =
            setGradient(q, 0, b.emit(OpCode::Mul, {g, *factor})))
      return error;
  }
  // sum dy (x - mean), shared by dscale and dvar.
  llvm::Expected<Value *> centeredSum = nullptr;
  if (q.wanted[1] || q.wanted[4]) {
    auto meanColumn = broadcast(mean);
    if (!meanColumn)
      return meanColumn.takeError();
    auto centered = b.emit(OpCode::Sub, {x, *meanColumn});
    if (!centered)
      return centered.takeError();
    auto product = b.emit(OpCode::Mul, {g, *centered});
    if (!product)
      return product.takeError();
    centeredSum = sumPerChannel(b, *product);
    if (!centeredSum)
      return centeredSum.takeError();
  }
  if (q.wanted[1])
    if (llvm::Error error =
            setGradient(q, 1, b.emit(OpCode::Mul, {*centeredSum, *r})))
      return error;
  llvm::Expected<Value *> biasSum = nullptr;
  if (q.wanted[2] || q.wanted[3]) {
    biasSum = sumPerChannel(b, g);
    if (!biasSum)
      return biasSum.takeError();
  }
  if (q.wanted[2])
    if (llvm::Error error = setGradient(q, 2, *biasSum))
      return error;
  if (q.wanted[3]) {
    auto product = b.emit(OpCode::Mul, {*biasSum, *scaleR});
    if (!product)
      return product.takeError();
    if (llvm::Error error = setGradient(q, 3, b.emit(OpCode::Neg, {*product})))
      return error;
  }
  if (!q.wanted[4])
    return llvm::Error::success();
  auto rCubed = b.emit(OpCode::Mul, {*r, *r});
  if (!rCubed)
    return rCubed.takeError();
  auto factor = b.emit(OpCode::Mul, {*rCubed, *scaleR});
  if (!factor)
    return factor.takeError();
  auto half = b.emit(OpCode::Mul, {*factor, b.scalar(-0.5, dtype)});
  if (!half)
    return half.takeError();
  return setGradient(q, 4, b.emit(OpCode::Mul, {*centeredSum, *half}));
}

} // namespace

llvm::ArrayRef<GradientRuleEntry> getConvGradientRules() {
  static const GradientRuleEntry rules[] = {
      {OpCode::AveragePool, averagePoolRule},
      {OpCode::BatchNormalization, batchNormRule},
      {OpCode::Conv, convRule},
      {OpCode::GlobalAveragePool, globalPoolRule},
      {OpCode::GlobalMaxPool, globalPoolRule},
      {OpCode::MaxPool, maxPoolRule},
  };
  return rules;
}

} // namespace snug
