//===- OnnxOps.cpp - Per-op normalization into snug's canonical form ------===//
//
// One normalizer per ONNX op: it reads the node as its opset spells it
// (attributes in one version, inputs in another), resolves shape parameters
// to constants (on demand, through Importer::getConstant) and emits the
// canonical snug node documented in OnnxImporter.h. This file holds the
// helpers the normalizers share, the elementwise ops and constants, and the
// op table; OnnxShapeOps.cpp has shape computation and data movement,
// OnnxNNOps.cpp reductions, convolution, pooling and normalization. Ops
// without per-opset differences go through importGeneric, which copies
// operands and attributes and fills in the ONNX defaults snug wants
// explicit.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxAttrSpecs.h"
#include "compiler/onnx/OnnxInternal.h"

#include "ir/State.h"
#include "ir/Verifier.h"
#include "passes/simplify/HostAttributes.h"
#include "ir/ShapeFunctions.h"
#include "runtime/host/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace snug {
namespace onnx_import {

using ir::Attribute;
using ir::AttributeMap;
using ir::DType;
using ir::TensorType;
llvm::Expected<llvm::SmallVector<ir::Value *, 4>>
getInputs(Importer &importer, const onnx::NodeProto &node) {
  llvm::SmallVector<ir::Value *, 4> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    auto input = importer.getInput(node, i);
    if (!input)
      return input.takeError();
    inputs.push_back(*input);
  }
  // Trailing absent inputs carry nothing.
  while (!inputs.empty() && !inputs.back())
    inputs.pop_back();
  return inputs;
}

/// How many results to keep: up to the last named output, at most `limit`
/// (optional outputs the model leaves unnamed are not computed).
unsigned countNamedOutputs(const onnx::NodeProto &node, unsigned limit) {
  unsigned count = 1;
  for (int i = 1; i < node.output_size() && i < static_cast<int>(limit); ++i)
    if (!node.output(i).empty())
      count = i + 1;
  return count;
}

/// Input `index`, which must be present.
llvm::Expected<ir::Value *>
requireInput(Importer &importer, const onnx::NodeProto &node, unsigned index) {
  auto input = importer.getInput(node, index);
  if (!input)
    return input.takeError();
  if (!*input)
    return importer.error(node, "input " + llvm::Twine(index) + " is required");
  return *input;
}

static llvm::Expected<Attribute> convertAttribute(Importer &importer,
                                                  onnx::NodeProto &node,
                                                  onnx::AttributeProto &attr) {
  switch (attr.type()) {
  case onnx::AttributeProto::INT:
    return Attribute::getInt(attr.i());
  case onnx::AttributeProto::FLOAT:
    return Attribute::getFloat(attr.f());
  case onnx::AttributeProto::STRING:
    return Attribute::getString(attr.s());
  case onnx::AttributeProto::INTS:
    return Attribute::getInts(Ints(attr.ints().begin(), attr.ints().end()));
  case onnx::AttributeProto::FLOATS:
    return Attribute::getFloats(llvm::SmallVector<float, 4>(
        attr.floats().begin(), attr.floats().end()));
  case onnx::AttributeProto::STRINGS:
    return Attribute::getStrings(
        std::vector<std::string>(attr.strings().begin(), attr.strings().end()));
  case onnx::AttributeProto::TENSOR: {
    auto tensor = importer.readTensorBytes(
        *attr.mutable_t(),
        importer.describe(node) + ": attribute '" + attr.name() + "'");
    if (!tensor)
      return tensor.takeError();
    return Attribute::getTensor(tensor->first, tensor->second);
  }
  default:
    return importer.error(node, "attribute '" + attr.name() +
                                    "' has a kind snug does not support (" +
                                    std::to_string(attr.type()) + ")");
  }
}

/// All of the node's attributes, converted.
llvm::Expected<AttributeMap> convertAttributes(Importer &importer,
                                               onnx::NodeProto &node) {
  AttributeMap attributes;
  for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
    // Attributes the canonical form does not keep (Ops.def ONNX_ATTR).
    if (ir::findOnnxAttrSpec(node.op_type(), attr.name()))
      continue;
    auto converted = convertAttribute(importer, node, attr);
    if (!converted)
      return converted.takeError();
    attributes[attr.name()] = std::move(*converted);
  }
  return attributes;
}

/// ONNX's defaults (the op table's) made explicit on otherwise unchanged
/// ops, so that kernels never need fallbacks of their own.
static void addDefaults(ir::OpCode op, AttributeMap &attributes) {
  for (const ir::AttrSpec &spec : ir::getAttrSpecs(op))
    if (llvm::Optional<Attribute> value = spec.getDefault())
      attributes.emplace(spec.name, std::move(*value));
}

static llvm::Error importGeneric(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  auto attributes = convertAttributes(importer, node);
  if (!attributes)
    return attributes.takeError();
  addDefaults(ir::lookupOp(node.op_type())->code, *attributes);
  return importer.emitAndBind(node, node.op_type(), *inputs,
                              std::move(*attributes));
}

llvm::Expected<int64_t> axisFor(Importer &importer, const onnx::NodeProto &node,
                                int64_t axis, int64_t rank) {
  auto normalized = normalizeAxis(axis, rank);
  if (!normalized)
    return importer.error(node, "axis " + llvm::Twine(axis) +
                                    " is out of range for rank " +
                                    llvm::Twine(rank));
  return *normalized;
}

/// Non-negative, sorted, unique axes.
llvm::Expected<Ints> axesFor(Importer &importer, const onnx::NodeProto &node,
                             Ints axes, int64_t rank) {
  for (int64_t &axis : axes) {
    auto normalized = axisFor(importer, node, axis, rank);
    if (!normalized)
      return normalized.takeError();
    axis = *normalized;
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return importer.error(node, "axes repeat an axis");
  return axes;
}

//===----------------------------------------------------------------------===//
// Elementwise with per-opset differences
//===----------------------------------------------------------------------===//

static llvm::Error importClip(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  AttributeMap attributes;
  if (importer.opset < 11) {
    if (findAttr(node, "min"))
      attributes["min"] = Attribute::getFloat(attrFloat(node, "min", 0));
    if (findAttr(node, "max"))
      attributes["max"] = Attribute::getFloat(attrFloat(node, "max", 0));
  } else {
    const char *names[] = {"min", "max"};
    for (unsigned i = 1; i <= 2; ++i) {
      auto bound = importer.getInput(node, i);
      if (!bound)
        return bound.takeError();
      if (!*bound)
        continue;
      auto values = importer.getConstantFloats(node, i, names[i - 1]);
      if (!values)
        return values.takeError();
      if (values->size() != 1)
        return importer.error(node,
                              llvm::Twine(names[i - 1]) + " must be a scalar");
      attributes[names[i - 1]] =
          Attribute::getFloat(static_cast<float>((*values)[0]));
    }
  }
  return importer.emitAndBind(node, "Clip", {*input}, std::move(attributes));
}

static llvm::Error importSoftmax(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  const TensorType &type = (*input)->getType();
  int64_t rank = type.getRank();
  auto axis =
      axisFor(importer, node,
              attrInt(node, "axis", importer.opset < 13 ? 1 : -1), rank);
  if (!axis)
    return axis.takeError();
  llvm::StringRef op = node.op_type();
  if (importer.opset >= 13 || *axis == rank - 1)
    return importer.emitAndBind(node, op, {*input},
                                {{"axis", Attribute::getInt(*axis)}});
  // Before opset 13 the op normalized over all axes from `axis` on: the same
  // as a one-axis softmax of the input flattened to 2-d there.
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < *axis ? outer : inner) *= type.getDims()[i];
  auto flat = importer.emit(node, "Reshape", {*input},
                            {{"shape", Attribute::getInts({outer, inner})}}, 1,
                            ".flatten");
  if (!flat)
    return flat.takeError();
  auto soft = importer.emit(node, op, {(*flat)[0]},
                            {{"axis", Attribute::getInt(1)}}, 1);
  if (!soft)
    return soft.takeError();
  return importer.emitAndBind(node, "Reshape", {(*soft)[0]},
                              {{"shape", Attribute::getInts(type.getDims())}},
                              1, ".unflatten");
}

static llvm::Error importCast(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  int64_t to = attrInt(node, "to", 0);
  auto dtype = convertDType(to);
  if (!dtype)
    return importer.error(node,
                          "cast to " + onnxDTypeName(to) + " is not supported");
  return importer.emitAndBind(
      node, "Cast", {*input},
      {{"to", Attribute::getString(ir::getDTypeName(*dtype))}});
}

/// The model's one dropout seed (core/Ops.def: snug.dropout_mask), made at
/// the first training-mode Dropout: an i64 scalar weight, 0 until snugc
/// train's dropout-seed pass gives it --seed and makes it state.
static llvm::Expected<ir::Value *> getDropoutSeed(Importer &importer,
                                                  const onnx::NodeProto &node) {
  if (importer.dropoutSeed)
    return importer.dropoutSeed;
  if (importer.values.count(ir::kDropoutSeedWeight))
    return importer.error(node, llvm::Twine("the model already names a value "
                                            "'") +
                                    ir::kDropoutSeedWeight +
                                    "', the weight training-mode Dropout "
                                    "draws its masks from");
  uint8_t zero[8] = {};
  importer.dropoutSeed = importer.module.addWeight(
      ir::kDropoutSeedWeight, TensorType(ir::DType::I64, {}), zero);
  importer.values[ir::kDropoutSeedWeight] = importer.dropoutSeed;
  return importer.dropoutSeed;
}

/// Training-mode Dropout (snugc train): y = x * mask, the mask
/// snug.dropout_mask(seed) with this node's ratio and a salt of its own
/// (its index among the model's training Dropouts, in import order), so
/// two Dropouts of one step draw different masks. The optional mask
/// output is the mask != 0. Ratio 0 keeps everything: the identity.
/// Dropout's ratio: its constant input from opset 12, its attribute before.
static llvm::Expected<double> getDropoutRatio(Importer &importer,
                                              onnx::NodeProto &node) {
  double ratio = 0.5;
  if (importer.opset >= 12) {
    auto given = importer.getInput(node, 1);
    if (!given)
      return given.takeError();
    if (*given) {
      auto values = importer.getConstantFloats(node, 1, "ratio");
      if (!values)
        return values.takeError();
      if (values->size() != 1)
        return importer.error(node, "ratio must be a scalar");
      ratio = (*values)[0];
    }
  } else {
    ratio = attrFloat(node, "ratio", 0.5f);
  }
  return ratio;
}

static llvm::Error importTrainingDropout(Importer &importer,
                                         onnx::NodeProto &node,
                                         ir::Value *input) {
  auto ratioOrError = getDropoutRatio(importer, node);
  if (!ratioOrError)
    return ratioOrError.takeError();
  double ratio = *ratioOrError;
  if (!(ratio >= 0 && ratio < 1)) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", ratio);
    return importer.error(node, llvm::Twine("ratio ") + text +
                                    " is not in [0, 1) (training-mode "
                                    "Dropout divides by 1 - ratio)");
  }
  unsigned numResults = countNamedOutputs(node, 2);
  if (ratio == 0)
    return importer.emitAndBind(node, "Dropout", {input}, {}, numResults);
  auto seed = getDropoutSeed(importer, node);
  if (!seed)
    return seed.takeError();
  const TensorType &type = input->getType();
  auto mask =
      importer.emit(node, "snug.dropout_mask", {*seed},
                    {{"shape", Attribute::getInts(type.getDims())},
                     {"ratio", Attribute::getFloat(float(ratio))},
                     {"salt", Attribute::getInt(importer.dropoutCount++)}},
                    1, ".mask");
  if (!mask)
    return mask.takeError();
  ir::Value *scale = (*mask)[0];
  if (type.getDType() != ir::DType::F32) {
    auto cast = importer.emit(
        node, "Cast", {scale},
        {{"to", Attribute::getString(ir::getDTypeName(type.getDType()))}}, 1,
        ".mask_cast");
    if (!cast)
      return cast.takeError();
    scale = (*cast)[0];
  }
  auto product = importer.emit(node, "Mul", {input, scale}, {}, 1);
  if (!product)
    return product.takeError();
  llvm::SmallVector<ir::Value *, 2> results{(*product)[0]};
  if (numResults > 1) {
    auto kept =
        importer.emit(node, "Cast", {(*mask)[0]},
                      {{"to", Attribute::getString("bool")}}, 1, ".kept");
    if (!kept)
      return kept.takeError();
    results.push_back((*kept)[0]);
  }
  importer.bindOutputs(node, results);
  return llvm::Error::success();
}

static llvm::Error importDropout(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  bool training = false;
  if (importer.opset >= 12) {
    auto mode = importer.getInput(node, 2);
    if (!mode)
      return mode.takeError();
    if (*mode) {
      auto values = importer.getConstantFloats(node, 2, "training_mode");
      if (!values)
        return values.takeError();
      training = !values->empty() && (*values)[0] != 0;
    }
  } else if (importer.opset < 7 && !attrInt(node, "is_test", 0)) {
    training = true;
  }
  if (training && !importer.trainingDropout) {
    // Ratio 0 drops nothing, in either mode: the identity, mask all true.
    auto ratio = getDropoutRatio(importer, node);
    if (!ratio)
      return ratio.takeError();
    if (*ratio != 0)
      return importer.error(node, "training-mode Dropout is not supported "
                                  "(export the model in eval mode)");
    training = false;
  }
  if (training)
    return importTrainingDropout(importer, node, *input);
  return importer.emitAndBind(node, "Dropout", {*input}, {},
                              countNamedOutputs(node, 2));
}

/// A constant the importer materializes (Trilu's mask): refuse results too
/// large to hold (a corrupt or adversarial shape). ConstantOfShape and
/// Range import as ops, which fold-constants folds only when small.
llvm::Error checkMaterialized(Importer &importer, const onnx::NodeProto &node,
                              const TensorType &type) {
  auto bytes = getCheckedByteSize(type);
  if (!bytes || *bytes > (uint64_t(1) << 30))
    return importer.error(node, "result " + type.str() +
                                    " is too large to hold as a constant");
  return llvm::Error::success();
}

ir::Value *addScalarWeight(Importer &importer, const onnx::NodeProto &node,
                           llvm::StringRef suffix, ir::DType dtype,
                           double value) {
  TensorType type(dtype, {});
  std::vector<uint8_t> bytes(type.getByteSize());
  rt::storeDouble(bytes.data(), toBundleCode(dtype), 0, value);
  return importer.module.addWeight(node.output(0) + suffix.str(), type, bytes);
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

static llvm::Error importConstant(Importer &importer, onnx::NodeProto &node) {
  if (node.output_size() != 1 || node.output(0).empty())
    return importer.error(node, "needs exactly one output");
  for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
    llvm::StringRef name = attr.name();
    if (name == "value") {
      auto weight = importer.importTensor(*attr.mutable_t(), node.output(0),
                                          importer.describe(node) +
                                              ": attribute 'value'");
      if (!weight)
        return weight.takeError();
      importer.values[node.output(0)] = *weight;
      return llvm::Error::success();
    }
    auto bind = [&](DType dtype, llvm::ArrayRef<int64_t> dims, const void *data,
                    size_t bytes) {
      importer.bindConstant(
          node, TensorType(dtype, dims),
          llvm::makeArrayRef(static_cast<const uint8_t *>(data), bytes));
    };
    if (name == "value_float") {
      float value = attr.f();
      bind(DType::F32, {}, &value, 4);
      return llvm::Error::success();
    }
    if (name == "value_int") {
      int64_t value = attr.i();
      bind(DType::I64, {}, &value, 8);
      return llvm::Error::success();
    }
    if (name == "value_floats") {
      std::vector<float> values(attr.floats().begin(), attr.floats().end());
      bind(DType::F32, {static_cast<int64_t>(values.size())}, values.data(),
           values.size() * 4);
      return llvm::Error::success();
    }
    if (name == "value_ints") {
      std::vector<int64_t> values(attr.ints().begin(), attr.ints().end());
      bind(DType::I64, {static_cast<int64_t>(values.size())}, values.data(),
           values.size() * 8);
      return llvm::Error::success();
    }
    return importer.error(node, "attribute '" + name +
                                    "' is not supported (sparse or string "
                                    "constants)");
  }
  return importer.error(node, "has no value attribute");
}

static llvm::Error importConstantOfShape(Importer &importer,
                                         onnx::NodeProto &node) {
  auto shape = importer.getConstantInts(node, 0, "shape");
  if (!shape)
    return shape.takeError();
  for (int64_t dim : *shape)
    if (dim < 0)
      return importer.error(node, "shape " + dimsString(*shape) +
                                      " has a negative dim");
  TensorType elementType(DType::F32, {});
  std::vector<uint8_t> element(4, 0);
  if (onnx::AttributeProto *attr =
          const_cast<onnx::AttributeProto *>(findAttr(node, "value"))) {
    auto tensor = importer.readTensorBytes(
        *attr->mutable_t(), importer.describe(node) + ": attribute 'value'");
    if (!tensor)
      return tensor.takeError();
    if (tensor->first.getNumElements() != 1)
      return importer.error(node, "value must hold one element");
    elementType = tensor->first;
    element = tensor->second;
  }
  // An op, not a weight: fold-constants folds a small fill (shape
  // arithmetic) and leaves a large or batch-sized one to run, so the
  // weights do not grow with --dim (passes/simplify/FoldConstants.cpp).
  TensorType type(elementType.getDType(), *shape);
  if (!getCheckedByteSize(type))
    return importer.error(node, "result " + type.str() + " is too large");
  std::vector<uint8_t> dims(shape->size() * sizeof(int64_t));
  if (!dims.empty())
    std::memcpy(dims.data(), shape->data(), dims.size());
  ir::Value *shapeWeight = importer.module.addWeight(
      node.output(0) + ".shape",
      TensorType(DType::I64, {static_cast<int64_t>(shape->size())}), dims);
  return importer.emitAndBind(
      node, "ConstantOfShape", {shapeWeight},
      {{"value", Attribute::getTensor(elementType, element)}});
}

static llvm::Error importRange(Importer &importer, onnx::NodeProto &node) {
  llvm::SmallVector<double, 3> values;
  llvm::SmallVector<ir::Value *, 3> operands;
  DType dtype = DType::F32;
  for (unsigned i = 0; i < 3; ++i) {
    auto input = requireInput(importer, node, i);
    if (!input)
      return input.takeError();
    dtype = (*input)->getType().getDType();
    auto given = importer.getConstantFloats(node, i,
                                            i == 0   ? "start"
                                            : i == 1 ? "limit"
                                                     : "delta");
    if (!given)
      return given.takeError();
    if (given->size() != 1)
      return importer.error(node, "start, limit and delta must be scalars");
    values.push_back((*given)[0]);
    operands.push_back(*input);
  }
  if (dtype != DType::F32 && dtype != DType::F64 && dtype != DType::I64 &&
      dtype != DType::I32 && dtype != DType::I16)
    return importer.error(node, "element type " + ir::getDTypeName(dtype) +
                                    " is not supported");
  double start = values[0], limit = values[1], delta = values[2];
  if (delta == 0)
    return importer.error(node, "delta is 0");
  double steps = std::ceil((limit - start) / delta);
  if (!(steps < 1e15))
    return importer.error(node, "the range has too many elements");
  // An op, not a weight (as ConstantOfShape): fold-constants folds a short
  // range and leaves a long one to run. The op reads start, limit and delta
  // as weights: a computed one becomes a weight of its bytes.
  static const char *const kSuffixes[] = {".start", ".limit", ".delta"};
  for (unsigned i = 0; i < 3; ++i) {
    if (operands[i]->isWeight() && !operands[i]->isWeightElided())
      continue;
    auto data = importer.getConstant(operands[i]);
    if (!data)
      return data.takeError();
    if (!*data)
      return importer.error(node, "start, limit and delta must be constants");
    operands[i] = importer.module.addWeight(node.output(0) + kSuffixes[i],
                                            operands[i]->getType(), **data);
  }
  return importer.emitAndBind(node, "Range", operands, {});
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

/// Ops whose ONNX form is already canonical (attributes copied as they
/// are): every elementwise op of the op table, so that adding one needs no
/// importer change, and these.
static bool importsAsIs(llvm::StringRef opType) {
  const ir::OpInfo *info = ir::lookupOp(opType);
  if (!info)
    return false;
  if (info->isElementwise())
    return true;
  switch (info->code) {
  case ir::OpCode::Identity:
  case ir::OpCode::MatMul:
  case ir::OpCode::Gemm:
  case ir::OpCode::GlobalAveragePool:
  case ir::OpCode::GlobalMaxPool:
  case ir::OpCode::InstanceNormalization:
  case ir::OpCode::LRN:
  case ir::OpCode::Size:
  case ir::OpCode::DepthToSpace:
  case ir::OpCode::SpaceToDepth:
  case ir::OpCode::GatherND:
  case ir::OpCode::ScatterND:
    return true;
  default:
    return false;
  }
}

static const llvm::StringMap<OpImporter> &getOpImporters() {
  static const llvm::StringMap<OpImporter> table = [] {
    llvm::StringMap<OpImporter> map;
    map["Clip"] = importClip;
    map["Softmax"] = importSoftmax;
    map["LogSoftmax"] = importSoftmax;
    map["Hardmax"] = importSoftmax;
    map["Cast"] = importCast;
    map["Dropout"] = importDropout;
    map["Constant"] = importConstant;
    map["ConstantOfShape"] = importConstantOfShape;
    map["Range"] = importRange;
    map["If"] = importIf;
    map["Loop"] = importLoop;
    map["Scan"] = importScan;
    registerShapeOpImporters(map);
    registerNNOpImporters(map);
    registerLossOpImporters(map);
    registerCompositeOpImporters(map);
    registerRecurrentOpImporters(map);
    registerAttentionOpImporters(map);
    registerQuantOpImporters(map);
    return map;
  }();
  return table;
}

OpImporter lookupOpImporter(llvm::StringRef opType) {
  const llvm::StringMap<OpImporter> &table = getOpImporters();
  auto it = table.find(opType);
  if (it != table.end())
    return it->second;
  // snug's own ops (snug.*) are not ONNX ops.
  if (!opType.startswith("snug.") && importsAsIs(opType))
    return importGeneric;
  return nullptr;
}

} // namespace onnx_import

std::vector<std::string> getImportedOnnxOps() {
  std::vector<std::string> ops;
  for (const auto &entry : onnx_import::getOpImporters())
    ops.push_back(entry.getKey().str());
  for (const ir::OpInfo &info : ir::getAllOps())
    if (!onnx_import::getOpImporters().count(info.name) &&
        onnx_import::lookupOpImporter(info.name))
      ops.push_back(info.name);
  llvm::sort(ops);
  return ops;
}

} // namespace snug
