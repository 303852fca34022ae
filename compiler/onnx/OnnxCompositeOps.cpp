//===- OnnxCompositeOps.cpp - Small ONNX ops as compositions --------------===//
//
// ONNX ops that are a few table ops each, imported as those (their ONNX
// function bodies, where they have one, say the same), so folding, the host
// executor, the CUDA kernels and autodiff need nothing new:
//   IsInf(x)            Equal(Abs(x), +inf), Equal(x, +inf) or Equal(x, -inf)
//                       by detect_positive/detect_negative (neither: false)
//   Shrink(x)           Where(x < -lambd, x + bias,
//                             Where(x > lambd, x - bias, 0))
//   Swish(x)            x * Sigmoid(alpha * x)
//   LpNormalization(x)  x / ReduceL1|ReduceL2(x, axis, keepdims), 0 where
//                       that norm is 0
//   EyeLike(x)          a constant: ones on diagonal k of x's 2-d shape
//   OneHot(i, depth, v) Where(Equal(Unsqueeze(i', axis), [0, depth)), v[1],
//                       v[0]), i' = i (cast to i64 when not an integer),
//                       plus depth where negative; depth a constant
//   Einsum(x...)        transposes, reshapes, diagonal slices, ReduceSum,
//                       MatMul and Mul (OnnxEinsum.cpp)
//   MeanVarianceNormalization(x)
//                       (x - E[x]) / (Sqrt(E[x^2] - E[x]^2) + 1e-9), the
//                       means ReduceMean over axes (default [0, 2, 3]),
//                       as its ONNX function body writes it
//   HannWindow, HammingWindow, BlackmanWindow(size)
//                       a constant: the window's generalized-cosine sum at
//                       import (size must be a constant: it is the result's
//                       one dim)
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"

#include "passes/simplify/HostAttributes.h"
#include "runtime/host/Kernels.h"

#include <cmath>
#include <limits>

namespace snug {
namespace onnx_import {

using ir::Attribute;
using ir::DType;
using ir::TensorType;

namespace {

/// Input 0, which must be a float tensor.
llvm::Expected<ir::Value *> floatInput(Importer &importer,
                                       const onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  if (!ir::isFloatDType((*input)->getType().getDType()))
    return importer.error(node, "input " + (*input)->getType().str() +
                                    " is not a float tensor");
  return *input;
}

llvm::Error importIsInf(Importer &importer, onnx::NodeProto &node) {
  auto x = floatInput(importer, node);
  if (!x)
    return x.takeError();
  bool positive = attrInt(node, "detect_positive", 1);
  bool negative = attrInt(node, "detect_negative", 1);
  const TensorType &type = (*x)->getType();
  if (!positive && !negative) {
    TensorType result(DType::Bool, type.getDims());
    if (llvm::Error error = checkMaterialized(importer, node, result))
      return error;
    importer.bindConstant(node, result,
                          std::vector<uint8_t>(result.getByteSize(), 0));
    return llvm::Error::success();
  }
  double inf = std::numeric_limits<double>::infinity();
  ir::Value *compared = *x;
  if (positive && negative) {
    auto magnitude =
        firstResult(importer.emit(node, "Abs", {*x}, {}, 1, ".abs"));
    if (!magnitude)
      return magnitude.takeError();
    compared = *magnitude;
  }
  ir::Value *limit = addScalarWeight(importer, node, ".inf", type.getDType(),
                                     negative && !positive ? -inf : inf);
  return importer.emitAndBind(node, "Equal", {compared, limit}, {});
}

llvm::Error importShrink(Importer &importer, onnx::NodeProto &node) {
  auto x = requireInput(importer, node, 0);
  if (!x)
    return x.takeError();
  DType dtype = (*x)->getType().getDType();
  if (dtype == DType::Bool)
    return importer.error(node, "input " + (*x)->getType().str() +
                                    " is not a numeric tensor");
  double lambd = attrFloat(node, "lambd", 0.5f);
  double bias = attrFloat(node, "bias", 0.0f);
  auto weight = [&](llvm::StringRef suffix, double value) {
    return addScalarWeight(importer, node, suffix, dtype, value);
  };
  auto low = firstResult(importer.emit(
      node, "Less", {*x, weight(".low", -lambd)}, {}, 1, ".below"));
  if (!low)
    return low.takeError();
  auto high = firstResult(importer.emit(
      node, "Greater", {*x, weight(".high", lambd)}, {}, 1, ".above"));
  if (!high)
    return high.takeError();
  ir::Value *biasWeight = weight(".bias", bias);
  auto raised = firstResult(
      importer.emit(node, "Add", {*x, biasWeight}, {}, 1, ".raised"));
  if (!raised)
    return raised.takeError();
  auto lowered = firstResult(
      importer.emit(node, "Sub", {*x, biasWeight}, {}, 1, ".lowered"));
  if (!lowered)
    return lowered.takeError();
  auto upper = firstResult(importer.emit(
      node, "Where", {*high, *lowered, weight(".zero", 0)}, {}, 1, ".upper"));
  if (!upper)
    return upper.takeError();
  return importer.emitAndBind(node, "Where", {*low, *raised, *upper}, {});
}

llvm::Error importSwish(Importer &importer, onnx::NodeProto &node) {
  auto x = floatInput(importer, node);
  if (!x)
    return x.takeError();
  double alpha = attrFloat(node, "alpha", 1.0f);
  ir::Value *gateInput = *x;
  if (alpha != 1.0) {
    auto scaled = firstResult(
        importer.emit(node, "Mul",
                      {*x, addScalarWeight(importer, node, ".alpha",
                                           (*x)->getType().getDType(), alpha)},
                      {}, 1, ".scaled"));
    if (!scaled)
      return scaled.takeError();
    gateInput = *scaled;
  }
  auto gate =
      firstResult(importer.emit(node, "Sigmoid", {gateInput}, {}, 1, ".gate"));
  if (!gate)
    return gate.takeError();
  return importer.emitAndBind(node, "Mul", {*x, *gate}, {});
}

llvm::Error importLpNormalization(Importer &importer, onnx::NodeProto &node) {
  auto x = floatInput(importer, node);
  if (!x)
    return x.takeError();
  int64_t p = attrInt(node, "p", 2);
  if (p != 1 && p != 2)
    return importer.error(node, "p " + std::to_string(p) + " is not 1 or 2");
  auto axis = axisFor(importer, node, attrInt(node, "axis", -1),
                      (*x)->getType().getRank());
  if (!axis)
    return axis.takeError();
  auto norm =
      firstResult(importer.emit(node, p == 1 ? "ReduceL1" : "ReduceL2", {*x},
                                {{"axes", Attribute::getInts({*axis})},
                                 {"keepdims", Attribute::getInt(1)}},
                                1, ".norm"));
  if (!norm)
    return norm.takeError();
  // A zero norm gives 0, not 0/0 (onnx's reference: its node tests hold a
  // vector of zeros).
  DType dtype = (*x)->getType().getDType();
  ir::Value *zero = addScalarWeight(importer, node, ".zero", dtype, 0);
  auto isZero = firstResult(
      importer.emit(node, "Equal", {*norm, zero}, {}, 1, ".zero_norm"));
  if (!isZero)
    return isZero.takeError();
  auto divided =
      firstResult(importer.emit(node, "Div", {*x, *norm}, {}, 1, ".divided"));
  if (!divided)
    return divided.takeError();
  return importer.emitAndBind(node, "Where", {*isZero, zero, *divided}, {});
}

llvm::Error importEyeLike(Importer &importer, onnx::NodeProto &node) {
  auto x = requireInput(importer, node, 0);
  if (!x)
    return x.takeError();
  const TensorType &type = (*x)->getType();
  if (type.getRank() != 2)
    return importer.error(node, "input " + type.str() + " is not 2-d");
  DType dtype = type.getDType();
  if (findAttr(node, "dtype")) {
    int64_t code = attrInt(node, "dtype", 0);
    auto converted = convertDType(int(code));
    if (!converted)
      return importer.error(node, "dtype " + onnxDTypeName(int(code)) +
                                      " is not supported");
    dtype = *converted;
  }
  TensorType result(dtype, type.getDims());
  if (llvm::Error error = checkMaterialized(importer, node, result))
    return error;
  int64_t rows = type.getDims()[0], cols = type.getDims()[1];
  int64_t k = attrInt(node, "k", 0);
  std::vector<uint8_t> bytes(result.getByteSize(), 0);
  uint8_t code = toBundleCode(dtype);
  for (int64_t i = 0; i < rows; ++i)
    if (i + k >= 0 && i + k < cols)
      rt::storeDouble(bytes.data(), code, i * cols + i + k, 1.0);
  importer.bindConstant(node, result, bytes);
  return llvm::Error::success();
}


llvm::Error importOneHot(Importer &importer, onnx::NodeProto &node) {
  auto indices = requireInput(importer, node, 0);
  if (!indices)
    return indices.takeError();
  auto values = requireInput(importer, node, 2);
  if (!values)
    return values.takeError();
  const TensorType &valuesType = (*values)->getType();
  if (valuesType.getNumElements() != 2)
    return importer.error(node, "values " + valuesType.str() +
                                    " does not hold exactly two elements");
  // The result's shape holds depth, so depth must be known at import.
  auto depthValues =
      importer.getConstantFloats(node, 1, "depth");
  if (!depthValues)
    return depthValues.takeError();
  if (depthValues->size() != 1 || !((*depthValues)[0] >= 1))
    return importer.error(node, "depth must be one value of at least 1");
  int64_t depth = int64_t((*depthValues)[0]);
  int64_t rank = (*indices)->getType().getRank();
  auto axis = axisFor(importer, node, attrInt(node, "axis", -1), rank + 1);
  if (!axis)
    return axis.takeError();

  ir::Value *index = *indices;
  if (!ir::isIntegerDType(index->getType().getDType())) {
    // ONNX casts non-integer indices to int64 before use.
    auto cast = firstResult(importer.emit(
        node, "Cast", {index},
        {{"to", Attribute::getString(ir::getDTypeName(DType::I64))}}, 1, ".index"));
    if (!cast)
      return cast.takeError();
    index = *cast;
  }
  DType indexType = index->getType().getDType();
  // Negative indices count from depth back.
  ir::Value *zero = addScalarWeight(importer, node, ".zero", indexType, 0);
  auto negative = firstResult(
      importer.emit(node, "Less", {index, zero}, {}, 1, ".negative"));
  if (!negative)
    return negative.takeError();
  auto wrapped = firstResult(importer.emit(
      node, "Add",
      {index, addScalarWeight(importer, node, ".depth", indexType,
                              double(depth))},
      {}, 1, ".wrapped"));
  if (!wrapped)
    return wrapped.takeError();
  auto normalized = firstResult(importer.emit(
      node, "Where", {*negative, *wrapped, index}, {}, 1, ".normalized"));
  if (!normalized)
    return normalized.takeError();
  auto unsqueezed = firstResult(
      importer.emit(node, "Unsqueeze", {*normalized},
                    {{"axes", Attribute::getInts({*axis})}}, 1, ".unsqueezed"));
  if (!unsqueezed)
    return unsqueezed.takeError();

  // [0, depth) along the result's axis, 1 on the dims after it.
  llvm::SmallVector<int64_t, 4> rangeDims{depth};
  rangeDims.append(size_t(rank - *axis), 1);
  TensorType rangeType(indexType, rangeDims);
  if (llvm::Error error = checkMaterialized(importer, node, rangeType))
    return error;
  std::vector<uint8_t> bytes(rangeType.getByteSize());
  uint8_t code = toBundleCode(indexType);
  for (int64_t k = 0; k < depth; ++k)
    rt::storeDouble(bytes.data(), code, k, double(k));
  ir::Value *range =
      importer.module.addWeight(node.output(0) + ".range", rangeType, bytes);
  auto hot = firstResult(
      importer.emit(node, "Equal", {*unsqueezed, range}, {}, 1, ".hot"));
  if (!hot)
    return hot.takeError();

  ir::Value *flat = *values;
  if (valuesType.getRank() != 1) {
    auto reshaped = firstResult(importer.emit(
        node, "Reshape",
        {*values, addScalarWeight(importer, node, ".two", DType::I64, 2)},
        {}, 1, ".values"));
    if (!reshaped)
      return reshaped.takeError();
    flat = *reshaped;
  }
  auto pick = [&](int64_t which, llvm::StringRef suffix) {
    return firstResult(importer.emit(
        node, "Gather",
        {flat, addScalarWeight(importer, node, (suffix + ".at").str(),
                               DType::I64, double(which))},
        {{"axis", Attribute::getInt(0)}}, 1, suffix));
  };
  auto off = pick(0, ".off");
  if (!off)
    return off.takeError();
  auto on = pick(1, ".on");
  if (!on)
    return on.takeError();
  return importer.emitAndBind(node, "Where", {*hot, *on, *off}, {});
}

llvm::Error importMeanVarianceNormalization(Importer &importer,
                                            onnx::NodeProto &node) {
  auto x = floatInput(importer, node);
  if (!x)
    return x.takeError();
  int64_t rank = (*x)->getType().getRank();
  Ints given{0, 2, 3};
  if (auto attr = attrInts(node, "axes"))
    given = *attr;
  auto axes = axesFor(importer, node, given, rank);
  if (!axes)
    return axes.takeError();
  ir::AttributeMap reduce{{"axes", Attribute::getInts(*axes)},
                          {"keepdims", Attribute::getInt(1)}};
  auto step = [&](llvm::StringRef op, llvm::ArrayRef<ir::Value *> operands,
                  llvm::StringRef suffix, ir::AttributeMap attributes = {}) {
    return firstResult(
        importer.emit(node, op, operands, std::move(attributes), 1, suffix));
  };
  auto mean = step("ReduceMean", {*x}, ".mean", reduce);
  if (!mean)
    return mean.takeError();
  auto meanSquared = step("Mul", {*mean, *mean}, ".mean_squared");
  if (!meanSquared)
    return meanSquared.takeError();
  auto squares = step("Mul", {*x, *x}, ".squares");
  if (!squares)
    return squares.takeError();
  auto meanOfSquares = step("ReduceMean", {*squares}, ".mean_of_squares",
                            reduce);
  if (!meanOfSquares)
    return meanOfSquares.takeError();
  auto variance =
      step("Sub", {*meanOfSquares, *meanSquared}, ".variance");
  if (!variance)
    return variance.takeError();
  auto deviation = step("Sqrt", {*variance}, ".std");
  if (!deviation)
    return deviation.takeError();
  auto centered = step("Sub", {*x, *mean}, ".centered");
  if (!centered)
    return centered.takeError();
  auto denominator = step(
      "Add",
      {*deviation, addScalarWeight(importer, node, ".epsilon",
                                   (*x)->getType().getDType(), 1e-9)},
      ".denominator");
  if (!denominator)
    return denominator.takeError();
  return importer.emitAndBind(node, "Div", {*centered, *denominator}, {});
}

/// The generalized cosine windows of opset 17: w[n] = a0 - a1 cos(2 pi n /
/// N) + a2 cos(4 pi n / N) for n in [0, size), N = size when periodic, size
/// - 1 otherwise (the ONNX spec's formulas; Hann a = (1/2, 1/2, 0), Hamming
/// (25/46, 21/46, 0), Blackman (0.42, 0.5, 0.08)). Computed in double and
/// stored once in output_datatype. A symmetric window of size 1 divides by
/// N = 0, as the spec's formula does (its reference gives NaN there too).
llvm::Error importWindow(Importer &importer, onnx::NodeProto &node) {
  llvm::StringRef op = node.op_type();
  double a0 = 0.5, a1 = 0.5, a2 = 0.0;
  if (op == "HammingWindow") {
    a0 = 25.0 / 46.0;
    a1 = 21.0 / 46.0;
  } else if (op == "BlackmanWindow") {
    a0 = 0.42;
    a2 = 0.08;
  }
  auto size = importer.getConstantFloats(node, 0, "size");
  if (!size)
    return size.takeError();
  if (size->size() != 1 || !((*size)[0] >= 0))
    return importer.error(node, "size must be one non-negative value");
  int64_t count = int64_t((*size)[0]);
  int64_t code = attrInt(node, "output_datatype", 1);
  auto dtype = convertDType(int(code));
  if (!dtype || *dtype == DType::Bool)
    return importer.error(node, "output_datatype " +
                                    onnxDTypeName(int(code)) +
                                    " is not a supported numeric type");
  TensorType result(*dtype, {count});
  if (llvm::Error error = checkMaterialized(importer, node, result))
    return error;
  double period = double(attrInt(node, "periodic", 1) ? count : count - 1);
  const double kTwoPi = 6.283185307179586476925286766559;
  std::vector<uint8_t> bytes(result.getByteSize());
  uint8_t hostCode = toBundleCode(*dtype);
  for (int64_t n = 0; n < count; ++n) {
    double angle = kTwoPi * double(n) / period;
    rt::storeDouble(bytes.data(), hostCode, n,
                    a0 - a1 * std::cos(angle) + a2 * std::cos(2 * angle));
  }
  importer.bindConstant(node, result, bytes);
  return llvm::Error::success();
}

} // namespace

void registerCompositeOpImporters(llvm::StringMap<OpImporter> &map) {
  map["IsInf"] = importIsInf;
  map["Shrink"] = importShrink;
  map["Swish"] = importSwish;
  map["LpNormalization"] = importLpNormalization;
  map["EyeLike"] = importEyeLike;
  map["OneHot"] = importOneHot;
  map["Einsum"] = importEinsum;
  map["MeanVarianceNormalization"] = importMeanVarianceNormalization;
  map["HannWindow"] = importWindow;
  map["HammingWindow"] = importWindow;
  map["BlackmanWindow"] = importWindow;
}

} // namespace onnx_import
} // namespace snug
