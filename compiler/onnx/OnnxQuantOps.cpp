//===- OnnxQuantOps.cpp - ONNX's linear quantization as table ops --------===//
//
// The quantization ops of the default domain, imported as compositions of
// table ops (folding, the host executor, the CUDA kernels and fusion need
// nothing new), in the arithmetic of onnx's reference implementation
// (onnx/reference/ops/op_quantize_linear.py and its siblings), which the
// node tests' outputs come from:
//   QuantizeLinear(x, s, z)    Cast(Clip(Round(x / s) + z, lo, hi), T): the
//                              division in s's type (or `precision`), round
//                              half to even, the zero point added in f32
//                              (f64 for f64), saturated to T's range
//   DequantizeLinear(x, s, z)  (Cast(x, f32) - Cast(z, f32)) * s, in f32
//                              (f64 for an f64 scale), cast to s's type or
//                              output_dtype
//   DynamicQuantizeLinear(x)   min and max of x widened to hold 0, scale
//                              (max - min) / 255 (1/255 when they are
//                              equal), zero point Round(Clip(-min / scale,
//                              0, 255)), then QuantizeLinear to uint8
//   MatMulInteger(A, B, za, zb)  MatMul(Cast(A, i32) - za, Cast(B, i32) - zb)
//                              in int32, which snug's MatMul sums exactly
//   QLinearMatMul(..)          that product in f64 times a_scale * b_scale
//                              / y_scale, plus y_zero_point, rounded and
//                              saturated to y's type
// (ConvInteger and QLinearConv are left out: Conv takes float types only.)
// s and z are per tensor (a scalar or one element), per axis (1-d, one per
// element of x's dim `axis`: reshaped to broadcast along it) or blocked
// (block_size: x's shape but ceil(dim / block_size) along `axis`, each
// element repeated block_size times there by Unsqueeze, Expand and Reshape,
// then sliced to the dim). The output types are the integer ones snug has
// (uint8, int8, uint16, int16); float8 and 4-bit types are refused by type, so
// `saturate` (float8 only) never matters.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"

namespace snug {
namespace onnx_import {

using ir::Attribute;
using ir::DType;
using ir::TensorType;

namespace {

/// `value` cast to `dtype` (itself when it has that type already).
llvm::Expected<ir::Value *> castTo(Importer &importer,
                                   const onnx::NodeProto &node,
                                   ir::Value *value, DType dtype,
                                   llvm::StringRef suffix) {
  if (value->getType().getDType() == dtype)
    return value;
  return firstResult(importer.emit(
      node, "Cast", {value},
      {{"to", Attribute::getString(ir::getDTypeName(dtype))}}, 1, suffix));
}

/// The range of a quantized integer type; None for the types QuantizeLinear
/// does not produce.
llvm::Optional<std::pair<double, double>> quantRange(DType dtype) {
  switch (dtype) {
  case DType::U8:
    return std::make_pair(0.0, 255.0);
  case DType::I8:
    return std::make_pair(-128.0, 127.0);
  case DType::I16:
    return std::make_pair(-32768.0, 32767.0);
  case DType::U16:
    return std::make_pair(0.0, 65535.0);
  default:
    return llvm::None;
  }
}

/// How a scale or zero point lines up with x.
struct QuantLayout {
  const TensorType &x;
  int64_t axisAttr;  // ONNX's axis attribute, not yet normalized
  int64_t blockSize; // 0: per tensor or per axis
};

/// `param` (a scale or zero point, named `what` in errors) made to
/// broadcast to x element for element.
llvm::Expected<ir::Value *> alignParam(Importer &importer,
                                       const onnx::NodeProto &node,
                                       ir::Value *param,
                                       const QuantLayout &layout,
                                       llvm::StringRef what) {
  const TensorType &type = param->getType();
  std::string suffix = ("." + what).str();
  if (type.getRank() == 0)
    return param;
  int64_t rank = layout.x.getRank();
  if (layout.blockSize == 0 && type.getNumElements() == 1)
    return firstResult(importer.emit(node, "Reshape", {param},
                                     {{"shape", Attribute::getInts({})}}, 1,
                                     suffix));
  auto axis = axisFor(importer, node, layout.axisAttr, rank);
  if (!axis)
    return axis.takeError();
  int64_t extent = layout.x.getDims()[*axis];
  if (layout.blockSize == 0) {
    if (type.getRank() != 1 || type.getDims()[0] != extent)
      return importer.error(node, what + " " + type.str() +
                                      " is neither one value nor one per "
                                      "element of axis " +
                                      llvm::Twine(*axis) + " of x " +
                                      layout.x.str());
    Ints dims(size_t(rank), 1);
    dims[*axis] = extent;
    dims.erase(dims.begin(), dims.begin() + *axis);
    if (dims.size() == 1)
      return param;
    return firstResult(importer.emit(node, "Reshape", {param},
                                     {{"shape", Attribute::getInts(dims)}}, 1,
                                     suffix));
  }
  if (layout.blockSize < 0)
    return importer.error(node, "block_size " +
                                    llvm::Twine(layout.blockSize) +
                                    " is negative");
  int64_t blocks = (extent + layout.blockSize - 1) / layout.blockSize;
  Ints expected(layout.x.getDims().begin(), layout.x.getDims().end());
  expected[*axis] = blocks;
  if (type.getDims() != llvm::makeArrayRef(expected))
    return importer.error(
        node, what + " " + type.str() + " does not hold one value per block of " +
                  llvm::Twine(layout.blockSize) + " along axis " +
                  llvm::Twine(*axis) + " of x " + layout.x.str() +
                  " (expected " + TensorType(type.getDType(), expected).str() +
                  ")");
  // [.., blocks, ..] -> [.., blocks, 1, ..] -> [.., blocks, block_size, ..]
  // -> [.., blocks * block_size, ..], sliced to the dim.
  auto unsqueezed = firstResult(
      importer.emit(node, "Unsqueeze", {param},
                    {{"axes", Attribute::getInts({*axis + 1})}}, 1,
                    suffix + ".blocks"));
  if (!unsqueezed)
    return unsqueezed.takeError();
  Ints wide = expected;
  wide.insert(wide.begin() + *axis + 1, layout.blockSize);
  auto expanded = firstResult(
      importer.emit(node, "Expand", {*unsqueezed},
                    {{"shape", Attribute::getInts(wide)}}, 1,
                    suffix + ".repeated"));
  if (!expanded)
    return expanded.takeError();
  Ints flat = expected;
  flat[*axis] = blocks * layout.blockSize;
  auto reshaped = firstResult(
      importer.emit(node, "Reshape", {*expanded},
                    {{"shape", Attribute::getInts(flat)}}, 1, suffix));
  if (!reshaped || flat[*axis] == extent)
    return reshaped;
  return firstResult(importer.emit(node, "Slice", {*reshaped},
                                   {{"starts", Attribute::getInts({0})},
                                    {"ends", Attribute::getInts({extent})},
                                    {"axes", Attribute::getInts({*axis})},
                                    {"steps", Attribute::getInts({1})}},
                                   1, suffix + ".sliced"));
}

/// An optional dtype attribute (output_dtype, precision); None when absent
/// or 0 (ONNX's "unset").
llvm::Expected<llvm::Optional<DType>>
dtypeAttr(Importer &importer, const onnx::NodeProto &node,
          llvm::StringRef name) {
  int64_t code = attrInt(node, name, 0);
  if (code == 0)
    return llvm::None;
  auto converted = convertDType(int(code));
  if (!converted)
    return importer.error(node, name + " " + onnxDTypeName(int(code)) +
                                    " is not supported");
  return converted;
}

/// Round(x / scale) (+ zero point), saturated to `out`'s range and cast to
/// it: QuantizeLinear's arithmetic, bound to the node's output 0 unless
/// `bind` is false. `divideIn` is the division's type.
llvm::Expected<ir::Value *> quantize(Importer &importer,
                                     const onnx::NodeProto &node, ir::Value *x,
                                     ir::Value *scale, ir::Value *zeroPoint,
                                     DType divideIn, DType out) {
  auto range = quantRange(out);
  if (!range)
    return importer.error(node, "output type " + ir::getDTypeName(out) +
                                    " is not a quantized type snug has "
                                    "(uint8, int8, uint16, int16)");
  auto dividend = castTo(importer, node, x, divideIn, ".x");
  if (!dividend)
    return dividend.takeError();
  auto divisor = castTo(importer, node, scale, divideIn, ".scale_cast");
  if (!divisor)
    return divisor.takeError();
  auto scaled = firstResult(
      importer.emit(node, "Div", {*dividend, *divisor}, {}, 1, ".scaled"));
  if (!scaled)
    return scaled.takeError();
  auto rounded =
      firstResult(importer.emit(node, "Round", {*scaled}, {}, 1, ".rounded"));
  if (!rounded)
    return rounded.takeError();
  // Every integer of the quantized ranges, and every f16 and bf16 value, is
  // exact in f32: the zero point's sum there is the reference's int32 sum
  // wherever the result is not saturated.
  DType sumIn = divideIn == DType::F64 ? DType::F64 : DType::F32;
  auto sum = castTo(importer, node, *rounded, sumIn, ".widened");
  if (!sum)
    return sum.takeError();
  if (zeroPoint) {
    auto offset = castTo(importer, node, zeroPoint, sumIn, ".zero_point");
    if (!offset)
      return offset.takeError();
    sum = firstResult(
        importer.emit(node, "Add", {*sum, *offset}, {}, 1, ".shifted"));
    if (!sum)
      return sum.takeError();
  }
  auto saturated = firstResult(importer.emit(
      node, "Clip", {*sum},
      {{"min", Attribute::getFloat(float(range->first))},
       {"max", Attribute::getFloat(float(range->second))}},
      1, ".saturated"));
  if (!saturated)
    return saturated.takeError();
  return castTo(importer, node, *saturated, out, ".quantized");
}

llvm::Error importQuantizeLinear(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  if (inputs->size() < 2 || !(*inputs)[0] || !(*inputs)[1])
    return importer.error(node, "needs x and y_scale");
  ir::Value *x = (*inputs)[0], *scale = (*inputs)[1];
  ir::Value *zeroPoint = inputs->size() > 2 ? (*inputs)[2] : nullptr;
  DType xType = x->getType().getDType(), scaleType = scale->getType().getDType();
  if (!ir::isFloatDType(xType))
    return importer.error(node, "x " + x->getType().str() +
                                    " is not a float tensor");
  if (!ir::isFloatDType(scaleType))
    return importer.error(node, "y_scale " + scale->getType().str() +
                                    " is not a float tensor");
  auto outputDType = dtypeAttr(importer, node, "output_dtype");
  if (!outputDType)
    return outputDType.takeError();
  DType out = DType::U8;
  if (zeroPoint) {
    out = zeroPoint->getType().getDType();
    if (*outputDType && **outputDType != out)
      return importer.error(node, "output_dtype " +
                                      ir::getDTypeName(**outputDType) +
                                      " differs from the zero point's " +
                                      zeroPoint->getType().str());
  } else if (*outputDType) {
    out = **outputDType;
  }
  // The division runs in `precision`, else in the scale's type; an x of
  // another type promotes with it as numpy does.
  auto precision = dtypeAttr(importer, node, "precision");
  if (!precision)
    return precision.takeError();
  DType divideIn = scaleType;
  if (*precision)
    divideIn = **precision;
  else if (xType != scaleType)
    divideIn = xType == DType::F64 || scaleType == DType::F64 ? DType::F64
                                                              : DType::F32;
  if (!ir::isFloatDType(divideIn))
    return importer.error(node, "precision " + ir::getDTypeName(divideIn) +
                                    " is not a float type");

  QuantLayout layout{x->getType(), attrInt(node, "axis", 1),
                     attrInt(node, "block_size", 0)};
  auto alignedScale = alignParam(importer, node, scale, layout, "y_scale");
  if (!alignedScale)
    return alignedScale.takeError();
  ir::Value *alignedZero = nullptr;
  if (zeroPoint) {
    auto aligned =
        alignParam(importer, node, zeroPoint, layout, "y_zero_point");
    if (!aligned)
      return aligned.takeError();
    alignedZero = *aligned;
  }
  auto y = quantize(importer, node, x, *alignedScale, alignedZero, divideIn,
                    out);
  if (!y)
    return y.takeError();
  importer.bindOutputs(node, {*y});
  return llvm::Error::success();
}

llvm::Error importDequantizeLinear(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  if (inputs->size() < 2 || !(*inputs)[0] || !(*inputs)[1])
    return importer.error(node, "needs x and x_scale");
  ir::Value *x = (*inputs)[0], *scale = (*inputs)[1];
  ir::Value *zeroPoint = inputs->size() > 2 ? (*inputs)[2] : nullptr;
  DType xType = x->getType().getDType(), scaleType = scale->getType().getDType();
  if (!ir::isIntegerDType(xType))
    return importer.error(node, "x " + x->getType().str() +
                                    " is not an integer tensor");
  if (!ir::isFloatDType(scaleType))
    return importer.error(node, "x_scale " + scale->getType().str() +
                                    " is not a float tensor");
  if (zeroPoint && zeroPoint->getType().getDType() != xType)
    return importer.error(node, "x_zero_point " + zeroPoint->getType().str() +
                                    " does not have x's element type " +
                                    ir::getDTypeName(xType));
  auto outputDType = dtypeAttr(importer, node, "output_dtype");
  if (!outputDType)
    return outputDType.takeError();
  DType out = *outputDType ? **outputDType : scaleType;
  if (!ir::isFloatDType(out))
    return importer.error(node, "output_dtype " + ir::getDTypeName(out) +
                                    " is not a float type");

  QuantLayout layout{x->getType(), attrInt(node, "axis", 1),
                     attrInt(node, "block_size", 0)};
  // The reference's x.astype(float32) - zero point, then the product in
  // numpy's promotion of f32 with the scale's type.
  auto value = castTo(importer, node, x, DType::F32, ".x");
  if (!value)
    return value.takeError();
  if (zeroPoint) {
    auto aligned =
        alignParam(importer, node, zeroPoint, layout, "x_zero_point");
    if (!aligned)
      return aligned.takeError();
    auto offset = castTo(importer, node, *aligned, DType::F32, ".zero_point");
    if (!offset)
      return offset.takeError();
    value = firstResult(
        importer.emit(node, "Sub", {*value, *offset}, {}, 1, ".centered"));
    if (!value)
      return value.takeError();
  }
  DType multiplyIn = scaleType == DType::F64 ? DType::F64 : DType::F32;
  auto alignedScale = alignParam(importer, node, scale, layout, "x_scale");
  if (!alignedScale)
    return alignedScale.takeError();
  auto factor =
      castTo(importer, node, *alignedScale, multiplyIn, ".scale_cast");
  if (!factor)
    return factor.takeError();
  value = castTo(importer, node, *value, multiplyIn, ".widened");
  if (!value)
    return value.takeError();
  auto product = firstResult(
      importer.emit(node, "Mul", {*value, *factor}, {}, 1, ".scaled"));
  if (!product)
    return product.takeError();
  auto y = castTo(importer, node, *product, out, ".dequantized");
  if (!y)
    return y.takeError();
  importer.bindOutputs(node, {*y});
  return llvm::Error::success();
}

llvm::Error importDynamicQuantizeLinear(Importer &importer,
                                        onnx::NodeProto &node) {
  auto x = requireInput(importer, node, 0);
  if (!x)
    return x.takeError();
  if ((*x)->getType().getDType() != DType::F32)
    return importer.error(node, "x " + (*x)->getType().str() +
                                    " is not an f32 tensor");
  auto weight = [&](llvm::StringRef suffix, double value) {
    return addScalarWeight(importer, node, suffix, DType::F32, value);
  };
  ir::Value *zero = weight(".zero", 0);
  Ints every;
  for (int64_t d = 0; d < (*x)->getType().getRank(); ++d)
    every.push_back(d);
  ir::AttributeMap all{{"axes", Attribute::getInts(every)},
                       {"keepdims", Attribute::getInt(0)}};
  // The range of x widened to hold 0, so that 0 quantizes exactly.
  auto extreme = [&](llvm::StringRef reduce, llvm::StringRef widen,
                     llvm::StringRef suffix) -> llvm::Expected<ir::Value *> {
    auto reduced =
        firstResult(importer.emit(node, reduce, {*x}, all, 1, suffix));
    if (!reduced)
      return reduced.takeError();
    return firstResult(importer.emit(node, widen, {*reduced, zero}, {}, 1,
                                     (suffix + "_adjusted").str()));
  };
  auto low = extreme("ReduceMin", "Min", ".min");
  if (!low)
    return low.takeError();
  auto high = extreme("ReduceMax", "Max", ".max");
  if (!high)
    return high.takeError();
  auto width =
      firstResult(importer.emit(node, "Sub", {*high, *low}, {}, 1, ".range"));
  if (!width)
    return width.takeError();
  // An all-zero x has range 0: the reference (and onnxruntime) take 1.
  auto empty =
      firstResult(importer.emit(node, "Equal", {*high, *low}, {}, 1, ".empty"));
  if (!empty)
    return empty.takeError();
  auto span = firstResult(importer.emit(
      node, "Where", {*empty, weight(".one", 1), *width}, {}, 1, ".span"));
  if (!span)
    return span.takeError();
  auto scale = firstResult(importer.emit(
      node, "Div", {*span, weight(".levels", 255)}, {}, 1, ".scale"));
  if (!scale)
    return scale.takeError();
  auto lowScaled = firstResult(
      importer.emit(node, "Div", {*low, *scale}, {}, 1, ".min_scaled"));
  if (!lowScaled)
    return lowScaled.takeError();
  auto initial = firstResult(importer.emit(node, "Sub", {zero, *lowScaled}, {},
                                           1, ".initial_zero_point"));
  if (!initial)
    return initial.takeError();
  auto clipped = firstResult(importer.emit(
      node, "Clip", {*initial},
      {{"min", Attribute::getFloat(0)}, {"max", Attribute::getFloat(255)}}, 1,
      ".clipped_zero_point"));
  if (!clipped)
    return clipped.takeError();
  auto zeroPointF = firstResult(importer.emit(node, "Round", {*clipped}, {}, 1,
                                              ".rounded_zero_point"));
  if (!zeroPointF)
    return zeroPointF.takeError();
  auto zeroPoint =
      castTo(importer, node, *zeroPointF, DType::U8, ".zero_point_u8");
  if (!zeroPoint)
    return zeroPoint.takeError();
  auto y = quantize(importer, node, *x, *scale, *zeroPointF, DType::F32,
                    DType::U8);
  if (!y)
    return y.takeError();
  importer.bindOutputs(node, {*y, *scale, *zeroPoint});
  return llvm::Error::success();
}

/// A zero point or scale of a MatMul operand (`rows`: A's, one per row;
/// else B's, one per column) made to broadcast to it: one value as a
/// scalar, one per row as [M, 1], one per column as it is.
llvm::Expected<ir::Value *> alignMatMulParam(Importer &importer,
                                             const onnx::NodeProto &node,
                                             ir::Value *param,
                                             const TensorType &operand,
                                             bool rows, llvm::StringRef what) {
  const TensorType &type = param->getType();
  std::string suffix = ("." + what).str();
  if (type.getRank() == 0)
    return param;
  if (type.getNumElements() == 1)
    return firstResult(importer.emit(node, "Reshape", {param},
                                     {{"shape", Attribute::getInts({})}}, 1,
                                     suffix));
  int64_t rank = operand.getRank();
  int64_t extent =
      rank == 0 ? 0 : operand.getDims()[rows ? std::max<int64_t>(rank - 2, 0)
                                             : rank - 1];
  if (type.getRank() != 1 || rank < (rows ? 2 : 1) ||
      type.getDims()[0] != extent)
    return importer.error(node, what + " " + type.str() +
                                    " is neither one value nor one per " +
                                    (rows ? "row" : "column") + " of " +
                                    operand.str());
  if (!rows)
    return param;
  return firstResult(importer.emit(node, "Reshape", {param},
                                   {{"shape", Attribute::getInts({extent, 1})}},
                                   1, suffix));
}

/// Input `index` (A or B) minus its zero point (input `zeroIndex`, optional),
/// in int32: the exact operands of MatMulInteger and QLinearMatMul.
llvm::Expected<ir::Value *> centeredOperand(Importer &importer,
                                            const onnx::NodeProto &node,
                                            unsigned index, unsigned zeroIndex,
                                            bool rows, llvm::StringRef name) {
  auto operand = requireInput(importer, node, index);
  if (!operand)
    return operand.takeError();
  const TensorType &type = (*operand)->getType();
  if (!ir::isIntegerDType(type.getDType()) || type.getDType() == DType::I64 ||
      type.getDType() == DType::I32)
    return importer.error(node, name + " " + type.str() +
                                    " is not an 8- or 16-bit integer tensor");
  auto zeroPoint = importer.getInput(node, zeroIndex);
  if (!zeroPoint)
    return zeroPoint.takeError();
  std::string suffix = ("." + name).str();
  auto wide = castTo(importer, node, *operand, DType::I32, suffix);
  if (!wide || !*zeroPoint)
    return wide;
  if ((*zeroPoint)->getType().getDType() != type.getDType())
    return importer.error(node, "the zero point of " + name + ", " +
                                    (*zeroPoint)->getType().str() +
                                    ", does not have its element type");
  auto aligned = alignMatMulParam(importer, node, *zeroPoint, type, rows,
                                  (name + "_zero_point").str());
  if (!aligned)
    return aligned.takeError();
  auto offset = castTo(importer, node, *aligned, DType::I32,
                       suffix + "_zero_point_i32");
  if (!offset)
    return offset.takeError();
  return firstResult(importer.emit(node, "Sub", {*wide, *offset}, {}, 1,
                                   suffix + "_centered"));
}

llvm::Error importMatMulInteger(Importer &importer, onnx::NodeProto &node) {
  auto a = centeredOperand(importer, node, 0, 2, true, "A");
  if (!a)
    return a.takeError();
  auto b = centeredOperand(importer, node, 1, 3, false, "B");
  if (!b)
    return b.takeError();
  return importer.emitAndBind(node, "MatMul", {*a, *b}, {});
}

/// A float scale, input `index`, aligned as alignMatMulParam does.
llvm::Expected<ir::Value *> matMulScale(Importer &importer,
                                        const onnx::NodeProto &node,
                                        unsigned index,
                                        const TensorType &operand, bool rows,
                                        llvm::StringRef what) {
  auto scale = requireInput(importer, node, index);
  if (!scale)
    return scale.takeError();
  if (!ir::isFloatDType((*scale)->getType().getDType()))
    return importer.error(node, what + " " + (*scale)->getType().str() +
                                    " is not a float tensor");
  return alignMatMulParam(importer, node, *scale, operand, rows, what);
}

/// The reference's arithmetic: the int32 product of the centered operands,
/// times a_scale * b_scale / y_scale (in the scales' type) in f64, plus
/// y_zero_point, rounded half to even, saturated to y's type.
llvm::Error importQLinearMatMul(Importer &importer, onnx::NodeProto &node) {
  auto a = centeredOperand(importer, node, 0, 2, true, "a");
  if (!a)
    return a.takeError();
  auto b = centeredOperand(importer, node, 3, 5, false, "b");
  if (!b)
    return b.takeError();
  auto aIn = requireInput(importer, node, 0);
  auto bIn = requireInput(importer, node, 3);
  auto outZero = requireInput(importer, node, 7);
  if (!aIn || !bIn || !outZero)
    return llvm::joinErrors(
        llvm::joinErrors(aIn.takeError(), bIn.takeError()),
        outZero.takeError());
  auto aScale =
      matMulScale(importer, node, 1, (*aIn)->getType(), true, "a_scale");
  if (!aScale)
    return aScale.takeError();
  auto bScale =
      matMulScale(importer, node, 4, (*bIn)->getType(), false, "b_scale");
  if (!bScale)
    return bScale.takeError();
  auto yScale = requireInput(importer, node, 6);
  if (!yScale)
    return yScale.takeError();
  for (ir::Value *perTensor : {*yScale, *outZero})
    if (perTensor->getType().getNumElements() != 1)
      return importer.error(node, "y_scale and y_zero_point must hold one "
                                  "value each, not " +
                                      perTensor->getType().str());
  DType scaleType = (*aScale)->getType().getDType();
  if ((*bScale)->getType().getDType() != scaleType ||
      (*yScale)->getType().getDType() != scaleType)
    return importer.error(node, "a_scale, b_scale and y_scale differ in "
                                "element type");
  DType out = (*outZero)->getType().getDType();
  auto range = quantRange(out);
  if (!range)
    return importer.error(node, "y_zero_point " + (*outZero)->getType().str() +
                                    " is not a quantized type snug has "
                                    "(uint8, int8, uint16, int16)");

  auto product =
      firstResult(importer.emit(node, "MatMul", {*a, *b}, {}, 1, ".product"));
  if (!product)
    return product.takeError();
  auto wide = castTo(importer, node, *product, DType::F64, ".product_f64");
  if (!wide)
    return wide.takeError();
  auto both = firstResult(importer.emit(node, "Mul", {*aScale, *bScale}, {}, 1,
                                        ".input_scale"));
  if (!both)
    return both.takeError();
  auto yScalar = alignMatMulParam(importer, node, *yScale, (*aIn)->getType(),
                                  true, "y_scale");
  if (!yScalar)
    return yScalar.takeError();
  auto factor = firstResult(
      importer.emit(node, "Div", {*both, *yScalar}, {}, 1, ".factor"));
  if (!factor)
    return factor.takeError();
  auto factorWide = castTo(importer, node, *factor, DType::F64, ".factor_f64");
  if (!factorWide)
    return factorWide.takeError();
  auto scaled = firstResult(
      importer.emit(node, "Mul", {*wide, *factorWide}, {}, 1, ".scaled"));
  if (!scaled)
    return scaled.takeError();
  auto zeroScalar = alignMatMulParam(importer, node, *outZero,
                                     (*aIn)->getType(), true, "y_zero_point");
  if (!zeroScalar)
    return zeroScalar.takeError();
  auto offset = castTo(importer, node, *zeroScalar, DType::F64, ".y_zero_f64");
  if (!offset)
    return offset.takeError();
  auto shifted = firstResult(
      importer.emit(node, "Add", {*scaled, *offset}, {}, 1, ".shifted"));
  if (!shifted)
    return shifted.takeError();
  auto rounded =
      firstResult(importer.emit(node, "Round", {*shifted}, {}, 1, ".rounded"));
  if (!rounded)
    return rounded.takeError();
  auto saturated = firstResult(importer.emit(
      node, "Clip", {*rounded},
      {{"min", Attribute::getFloat(float(range->first))},
       {"max", Attribute::getFloat(float(range->second))}},
      1, ".saturated"));
  if (!saturated)
    return saturated.takeError();
  return importer.emitAndBind(
      node, "Cast", {*saturated},
      {{"to", Attribute::getString(ir::getDTypeName(out))}});
}

} // namespace

void registerQuantOpImporters(llvm::StringMap<OpImporter> &map) {
  map["MatMulInteger"] = importMatMulInteger;
  map["QLinearMatMul"] = importQLinearMatMul;
  map["QuantizeLinear"] = importQuantizeLinear;
  map["DequantizeLinear"] = importDequantizeLinear;
  map["DynamicQuantizeLinear"] = importDynamicQuantizeLinear;
}

} // namespace onnx_import
} // namespace snug
