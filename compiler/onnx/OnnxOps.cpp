//===- OnnxOps.cpp - Per-op normalization into snug's canonical form ------===//
//
// One normalizer per ONNX op: it reads the node as its opset spells it
// (attributes in one version, inputs in another), resolves shape parameters
// to constants (on demand, through Importer::getConstant) and emits the
// canonical snug node documented in OnnxImporter.h. Ops without per-opset
// differences go through importGeneric, which copies operands and attributes
// and fills in the ONNX defaults snug wants explicit.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"

#include "ir/Verifier.h"
#include "passes/ShapeFunctions.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace snug {
namespace onnx_import {

using ir::Attribute;
using ir::AttributeMap;
using ir::DType;
using ir::TensorType;

using Ints = llvm::SmallVector<int64_t, 4>;

static llvm::Expected<llvm::SmallVector<ir::Value *, 4>>
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
static unsigned countNamedOutputs(const onnx::NodeProto &node,
                                  unsigned limit) {
  unsigned count = 1;
  for (int i = 1; i < node.output_size() && i < static_cast<int>(limit); ++i)
    if (!node.output(i).empty())
      count = i + 1;
  return count;
}

/// Input `index`, which must be present.
static llvm::Expected<ir::Value *> requireInput(Importer &importer,
                                                const onnx::NodeProto &node,
                                                unsigned index) {
  auto input = importer.getInput(node, index);
  if (!input)
    return input.takeError();
  if (!*input)
    return importer.error(node, "input " + llvm::Twine(index) +
                                    " is required");
  return *input;
}

static llvm::Expected<Attribute> convertAttribute(Importer &importer,
                                                  onnx::NodeProto &node,
                                                  onnx::AttributeProto &attr) {
  switch (attr.type()) {
  case onnx::AttributeProto::INT: return Attribute::getInt(attr.i());
  case onnx::AttributeProto::FLOAT: return Attribute::getFloat(attr.f());
  case onnx::AttributeProto::STRING: return Attribute::getString(attr.s());
  case onnx::AttributeProto::INTS:
    return Attribute::getInts(Ints(attr.ints().begin(), attr.ints().end()));
  case onnx::AttributeProto::FLOATS:
    return Attribute::getFloats(llvm::SmallVector<float, 4>(
        attr.floats().begin(), attr.floats().end()));
  case onnx::AttributeProto::STRINGS:
    return Attribute::getStrings(std::vector<std::string>(
        attr.strings().begin(), attr.strings().end()));
  case onnx::AttributeProto::TENSOR: {
    auto tensor = importer.readTensorBytes(
        *attr.mutable_t(), importer.describe(node) + ": attribute '" +
                               attr.name() + "'");
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
static llvm::Expected<AttributeMap> convertAttributes(Importer &importer,
                                                      onnx::NodeProto &node) {
  AttributeMap attributes;
  for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
    auto converted = convertAttribute(importer, node, attr);
    if (!converted)
      return converted.takeError();
    attributes[attr.name()] = std::move(*converted);
  }
  return attributes;
}

static void setDefault(AttributeMap &attributes, llvm::StringRef name,
                       Attribute value) {
  attributes.emplace(name.str(), std::move(value));
}

/// ONNX defaults that snug makes explicit on otherwise unchanged ops.
static void addDefaults(llvm::StringRef op, AttributeMap &attributes) {
  if (op == "LeakyRelu")
    setDefault(attributes, "alpha", Attribute::getFloat(0.01f));
  else if (op == "HardSigmoid") {
    setDefault(attributes, "alpha", Attribute::getFloat(0.2f));
    setDefault(attributes, "beta", Attribute::getFloat(0.5f));
  } else if (op == "Elu")
    setDefault(attributes, "alpha", Attribute::getFloat(1.0f));
  else if (op == "Selu") {
    setDefault(attributes, "alpha", Attribute::getFloat(1.67326319f));
    setDefault(attributes, "gamma", Attribute::getFloat(1.05070102f));
  } else if (op == "Gelu")
    setDefault(attributes, "approximate", Attribute::getString("none"));
  else if (op == "LRN") {
    setDefault(attributes, "alpha", Attribute::getFloat(1e-4f));
    setDefault(attributes, "beta", Attribute::getFloat(0.75f));
    setDefault(attributes, "bias", Attribute::getFloat(1.0f));
  } else if (op == "InstanceNormalization")
    setDefault(attributes, "epsilon", Attribute::getFloat(1e-5f));
  else if (op == "Mod")
    setDefault(attributes, "fmod", Attribute::getInt(0));
  else if (op == "DepthToSpace")
    setDefault(attributes, "mode", Attribute::getString("DCR"));
  else if (op == "Gemm") {
    setDefault(attributes, "alpha", Attribute::getFloat(1.0f));
    setDefault(attributes, "beta", Attribute::getFloat(1.0f));
    setDefault(attributes, "transA", Attribute::getInt(0));
    setDefault(attributes, "transB", Attribute::getInt(0));
  }
}

static llvm::Error importGeneric(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  auto attributes = convertAttributes(importer, node);
  if (!attributes)
    return attributes.takeError();
  addDefaults(node.op_type(), *attributes);
  return importer.emitAndBind(node, node.op_type(), *inputs,
                              std::move(*attributes));
}

static llvm::Expected<int64_t> axisFor(Importer &importer,
                                       const onnx::NodeProto &node,
                                       int64_t axis, int64_t rank) {
  auto normalized = normalizeAxis(axis, rank);
  if (!normalized)
    return importer.error(node, "axis " + llvm::Twine(axis) +
                                    " is out of range for rank " +
                                    llvm::Twine(rank));
  return *normalized;
}

/// Non-negative, sorted, unique axes.
static llvm::Expected<Ints> axesFor(Importer &importer,
                                    const onnx::NodeProto &node, Ints axes,
                                    int64_t rank) {
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
        return importer.error(node, llvm::Twine(names[i - 1]) +
                                        " must be a scalar");
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
  auto axis = axisFor(importer, node,
                      attrInt(node, "axis", importer.opset < 13 ? 1 : -1),
                      rank);
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
  return importer.emitAndBind(
      node, "Reshape", {(*soft)[0]},
      {{"shape", Attribute::getInts(type.getDims())}});
}

static llvm::Error importCast(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  int64_t to = attrInt(node, "to", 0);
  auto dtype = convertDType(to);
  if (!dtype)
    return importer.error(node, "cast to " + onnxDTypeName(to) +
                                    " is not supported");
  return importer.emitAndBind(
      node, "Cast", {*input},
      {{"to", Attribute::getString(ir::getDTypeName(*dtype))}});
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
  if (training)
    return importer.error(node, "training-mode Dropout is not supported "
                                "(export the model in eval mode)");
  return importer.emitAndBind(node, "Dropout", {*input}, {},
                              countNamedOutputs(node, 2));
}

//===----------------------------------------------------------------------===//
// Shape computation and data movement
//===----------------------------------------------------------------------===//

static llvm::Error importShape(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  int64_t rank = (*input)->getType().getRank();
  auto clamp = [&](int64_t value) {
    if (value < 0)
      value += rank;
    return std::min(std::max<int64_t>(value, 0), rank);
  };
  int64_t start = clamp(attrInt(node, "start", 0));
  int64_t end = clamp(attrInt(node, "end", rank));
  AttributeMap attributes;
  if (start != 0 || end != rank) {
    attributes["start"] = Attribute::getInt(start);
    attributes["end"] = Attribute::getInt(std::max(start, end));
  }
  return importer.emitAndBind(node, "Shape", {*input}, std::move(attributes));
}

static llvm::Error importReshape(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  Ints shape;
  if (importer.opset < 5) {
    shape = attrInts(node, "shape").getValueOr(Ints());
  } else {
    auto given = importer.getConstantInts(node, 1, "shape");
    if (!given)
      return given.takeError();
    shape = *given;
  }
  llvm::ArrayRef<int64_t> dims = (*input)->getType().getDims();
  bool allowZero = attrInt(node, "allowzero", 0);
  int64_t known = 1;
  const int64_t knownLimit = int64_t(1) << 50;
  int inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (i >= dims.size())
        return importer.error(node, "shape " + dimsString(shape) +
                                        " copies dim " + llvm::Twine(i) +
                                        " that " + (*input)->getType().str() +
                                        " lacks");
      shape[i] = dims[i];
    }
    if (shape[i] == -1) {
      if (inferred >= 0)
        return importer.error(node, "shape " + dimsString(shape) +
                                        " has two -1 dims");
      inferred = i;
      continue;
    }
    if (shape[i] < 0)
      return importer.error(node, "shape " + dimsString(shape) +
                                      " has a negative dim");
    if (shape[i] > knownLimit || (shape[i] && known > knownLimit / shape[i]))
      return importer.error(node, "shape " + dimsString(shape) +
                                      " is too large");
    known *= shape[i];
  }
  int64_t count = (*input)->getType().getNumElements();
  if (inferred >= 0) {
    if (known == 0 || count % known)
      return importer.error(node, "cannot reshape " +
                                      (*input)->getType().str() + " to " +
                                      dimsString(shape));
    shape[inferred] = count / known;
  }
  return importer.emitAndBind(node, "Reshape", {*input},
                              {{"shape", Attribute::getInts(shape)}});
}

static llvm::Error importFlatten(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  int64_t rank = (*input)->getType().getRank();
  int64_t axis = attrInt(node, "axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return importer.error(node, "axis " + llvm::Twine(attrInt(node, "axis", 1)) +
                                    " is out of range for rank " +
                                    llvm::Twine(rank));
  return importer.emitAndBind(node, "Flatten", {*input},
                              {{"axis", Attribute::getInt(axis)}});
}

static llvm::Error importTranspose(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  Ints perm;
  if (auto given = attrInts(node, "perm")) {
    perm = *given;
  } else {
    for (int64_t i = (*input)->getType().getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  }
  return importer.emitAndBind(node, "Transpose", {*input},
                              {{"perm", Attribute::getInts(perm)}});
}

/// Ops with one `axis` attribute made non-negative (Concat, Gather).
static llvm::Error importWithAxis(Importer &importer, onnx::NodeProto &node) {
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  if (inputs->empty() || !(*inputs)[0])
    return importer.error(node, "input 0 is required");
  auto attributes = convertAttributes(importer, node);
  if (!attributes)
    return attributes.takeError();
  auto axis = axisFor(importer, node, attrInt(node, "axis", 0),
                      (*inputs)[0]->getType().getRank());
  if (!axis)
    return axis.takeError();
  (*attributes)["axis"] = Attribute::getInt(*axis);
  return importer.emitAndBind(node, node.op_type(), *inputs,
                              std::move(*attributes));
}

static llvm::Error importSplit(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  const TensorType &type = (*input)->getType();
  auto axis = axisFor(importer, node, attrInt(node, "axis", 0), type.getRank());
  if (!axis)
    return axis.takeError();
  int64_t dim = type.getDims()[*axis];
  int64_t parts = node.output_size();
  Ints split;
  auto splitInput = importer.getInput(node, 1);
  if (!splitInput)
    return splitInput.takeError();
  if (importer.opset < 13 && findAttr(node, "split")) {
    split = *attrInts(node, "split");
  } else if (importer.opset >= 13 && *splitInput) {
    auto given = importer.getConstantInts(node, 1, "split");
    if (!given)
      return given.takeError();
    split = *given;
  } else {
    if (importer.opset >= 18 && findAttr(node, "num_outputs"))
      parts = attrInt(node, "num_outputs", parts);
    if (parts <= 0)
      return importer.error(node, "has no outputs to split into");
    int64_t chunk = (dim + parts - 1) / parts;
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= chunk)
      split.push_back(std::max<int64_t>(0, std::min(chunk, left)));
  }
  return importer.emitAndBind(node, "Split", {*input},
                              {{"axis", Attribute::getInt(*axis)},
                               {"split", Attribute::getInts(split)}},
                              split.size());
}

static llvm::Error importSlice(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  Ints starts, ends, axes, steps;
  if (importer.opset < 10) {
    starts = attrInts(node, "starts").getValueOr(Ints());
    ends = attrInts(node, "ends").getValueOr(Ints());
    axes = attrInts(node, "axes").getValueOr(Ints());
  } else {
    auto s = importer.getConstantInts(node, 1, "starts");
    if (!s)
      return s.takeError();
    auto e = importer.getConstantInts(node, 2, "ends");
    if (!e)
      return e.takeError();
    starts = *s;
    ends = *e;
    for (unsigned index : {3u, 4u}) {
      auto present = importer.getInput(node, index);
      if (!present)
        return present.takeError();
      if (!*present)
        continue;
      auto values = importer.getConstantInts(node, index,
                                             index == 3 ? "axes" : "steps");
      if (!values)
        return values.takeError();
      (index == 3 ? axes : steps) = *values;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return importer.error(node, "starts, ends, axes and steps differ in length");
  llvm::ArrayRef<int64_t> dims = (*input)->getType().getDims();
  for (size_t i = 0; i < starts.size(); ++i) {
    auto axis = axisFor(importer, node, axes[i], dims.size());
    if (!axis)
      return axis.takeError();
    axes[i] = *axis;
    int64_t dim = dims[*axis], step = steps[i];
    if (step == 0)
      return importer.error(node, "slice step is 0");
    int64_t start = starts[i], end = ends[i];
    // ONNX clamps: large values mean "to the end" (INT64_MAX is common).
    if (start < 0)
      start = start < -dim ? -1 : start + dim;
    if (end < 0)
      end = end < -dim ? -1 : end + dim;
    if (step > 0) {
      start = std::min(std::max<int64_t>(start, 0), dim);
      end = std::min(std::max<int64_t>(end, 0), dim);
    } else {
      start = std::min(std::max<int64_t>(start, -1), dim - 1);
      end = std::min(std::max<int64_t>(end, -1), dim - 1);
    }
    starts[i] = start;
    ends[i] = end;
  }
  return importer.emitAndBind(node, "Slice", {*input},
                              {{"starts", Attribute::getInts(starts)},
                               {"ends", Attribute::getInts(ends)},
                               {"axes", Attribute::getInts(axes)},
                               {"steps", Attribute::getInts(steps)}});
}

/// Axes of Squeeze/Unsqueeze/Reduce*: an attribute before `inputOpset`, an
/// optional input from it on. None when the model gives none.
static llvm::Expected<llvm::Optional<Ints>>
readAxes(Importer &importer, onnx::NodeProto &node, int64_t inputOpset) {
  if (importer.opset < inputOpset) {
    if (auto axes = attrInts(node, "axes"))
      return llvm::Optional<Ints>(*axes);
    return llvm::Optional<Ints>();
  }
  auto input = importer.getInput(node, 1);
  if (!input)
    return input.takeError();
  if (!*input)
    return llvm::Optional<Ints>();
  auto axes = importer.getConstantInts(node, 1, "axes");
  if (!axes)
    return axes.takeError();
  return llvm::Optional<Ints>(*axes);
}

static llvm::Error importSqueeze(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  auto given = readAxes(importer, node, 13);
  if (!given)
    return given.takeError();
  llvm::ArrayRef<int64_t> dims = (*input)->getType().getDims();
  Ints axes;
  if (*given) {
    auto normalized = axesFor(importer, node, **given, dims.size());
    if (!normalized)
      return normalized.takeError();
    axes = *normalized;
  } else {
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i] == 1)
        axes.push_back(i);
  }
  return importer.emitAndBind(node, "Squeeze", {*input},
                              {{"axes", Attribute::getInts(axes)}});
}

static llvm::Error importUnsqueeze(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  auto given = readAxes(importer, node, 13);
  if (!given)
    return given.takeError();
  if (!*given)
    return importer.error(node, "axes are required");
  int64_t rank = (*input)->getType().getRank() + (*given)->size();
  auto axes = axesFor(importer, node, **given, rank);
  if (!axes)
    return axes.takeError();
  return importer.emitAndBind(node, "Unsqueeze", {*input},
                              {{"axes", Attribute::getInts(*axes)}});
}

static llvm::Error importExpand(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  auto shape = importer.getConstantInts(node, 1, "shape");
  if (!shape)
    return shape.takeError();
  auto dims = ir::broadcastShapes((*input)->getType().getDims(), *shape);
  if (!dims)
    return importer.error(node, "cannot expand " + (*input)->getType().str() +
                                    " to " + dimsString(*shape));
  return importer.emitAndBind(node, "Expand", {*input},
                              {{"shape", Attribute::getInts(*dims)}});
}

static llvm::Error importTile(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  auto repeats = importer.getConstantInts(node, 1, "repeats");
  if (!repeats)
    return repeats.takeError();
  return importer.emitAndBind(node, "Tile", {*input},
                              {{"repeats", Attribute::getInts(*repeats)}});
}

static llvm::Error importPad(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  int64_t rank = (*input)->getType().getRank();
  Ints pads;
  float value = 0;
  if (importer.opset < 11) {
    pads = attrInts(node, "pads").getValueOr(Ints());
    value = attrFloat(node, "value", 0);
  } else {
    auto given = importer.getConstantInts(node, 1, "pads");
    if (!given)
      return given.takeError();
    pads = *given;
    auto constant = importer.getInput(node, 2);
    if (!constant)
      return constant.takeError();
    if (*constant) {
      auto values = importer.getConstantFloats(node, 2, "constant_value");
      if (!values)
        return values.takeError();
      if (!values->empty())
        value = static_cast<float>((*values)[0]);
    }
    auto axesInput = importer.getInput(node, 3);
    if (!axesInput)
      return axesInput.takeError();
    if (*axesInput) {
      auto axesValues = importer.getConstantInts(node, 3, "axes");
      if (!axesValues)
        return axesValues.takeError();
      size_t count = axesValues->size();
      if (pads.size() != 2 * count)
        return importer.error(node, "pads do not match axes");
      Ints full(2 * rank, 0);
      for (size_t i = 0; i < count; ++i) {
        auto axis = axisFor(importer, node, (*axesValues)[i], rank);
        if (!axis)
          return axis.takeError();
        full[*axis] = pads[i];
        full[*axis + rank] = pads[i + count];
      }
      pads = full;
    }
  }
  std::string mode = attrString(node, "mode", "constant");
  return importer.emitAndBind(node, "Pad", {*input},
                              {{"pads", Attribute::getInts(pads)},
                               {"mode", Attribute::getString(mode)},
                               {"value", Attribute::getFloat(value)}});
}

static llvm::Error importResize(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  llvm::ArrayRef<int64_t> dims = (*input)->getType().getDims();
  bool upsample = node.op_type() == "Upsample";
  std::string mode = attrString(node, "mode", "nearest");
  std::string transform = "asymmetric", nearest = "floor";
  llvm::SmallVector<double, 4> scales;
  Ints sizes;
  if (upsample && importer.opset < 9) {
    auto given = attrFloats(node, "scales").getValueOr(llvm::SmallVector<float, 4>());
    scales.assign(given.begin(), given.end());
  } else if (upsample || importer.opset < 11) {
    auto given = importer.getConstantFloats(node, 1, "scales");
    if (!given)
      return given.takeError();
    scales = *given;
  } else {
    transform = attrString(node, "coordinate_transformation_mode", "half_pixel");
    nearest = attrString(node, "nearest_mode", "round_prefer_floor");
    if (findAttr(node, "axes"))
      return importer.error(node, "the axes attribute of Resize is not "
                                  "supported");
    if (transform == "tf_crop_and_resize")
      return importer.error(node, "coordinate_transformation_mode "
                                  "tf_crop_and_resize is not supported");
    for (unsigned index : {2u, 3u}) {
      auto present = importer.getInput(node, index);
      if (!present)
        return present.takeError();
      if (!*present || (*present)->getType().getNumElements() == 0)
        continue;
      if (index == 2) {
        auto given = importer.getConstantFloats(node, 2, "scales");
        if (!given)
          return given.takeError();
        scales = *given;
      } else {
        auto given = importer.getConstantInts(node, 3, "sizes");
        if (!given)
          return given.takeError();
        sizes = *given;
      }
    }
  }
  if (mode != "nearest" && mode != "linear" && mode != "bilinear")
    return importer.error(node, "mode '" + mode + "' is not supported "
                                                  "(nearest, linear)");
  if (mode == "bilinear")
    mode = "linear";
  if (!sizes.empty()) {
    if (sizes.size() != dims.size())
      return importer.error(node, "sizes " + dimsString(sizes) +
                                      " do not match the input rank");
    scales.clear();
    for (size_t i = 0; i < dims.size(); ++i)
      scales.push_back(static_cast<double>(sizes[i]) / dims[i]);
  } else {
    if (scales.size() != dims.size())
      return importer.error(node, "needs scales or sizes for every axis of " +
                                      (*input)->getType().str());
    for (size_t i = 0; i < dims.size(); ++i)
      sizes.push_back(static_cast<int64_t>(
          std::floor(dims[i] * static_cast<float>(scales[i]))));
  }
  llvm::SmallVector<float, 4> floatScales(scales.begin(), scales.end());
  AttributeMap attributes{
      {"mode", Attribute::getString(mode)},
      {"coordinate_transformation_mode", Attribute::getString(transform)},
      {"nearest_mode", Attribute::getString(nearest)},
      {"cubic_coeff_a",
       Attribute::getFloat(attrFloat(node, "cubic_coeff_a", -0.75f))},
      {"scales", Attribute::getFloats(floatScales)},
      {"sizes", Attribute::getInts(sizes)}};
  return importer.emitAndBind(node, "Resize", {*input}, std::move(attributes));
}

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
  return importer.emitAndBind(
      node, node.op_type(), {*input},
      {{"axes", Attribute::getInts(axes)},
       {"keepdims", Attribute::getInt(attrInt(node, "keepdims", 1))}});
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

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

static llvm::Error importConstant(Importer &importer, onnx::NodeProto &node) {
  if (node.output_size() != 1 || node.output(0).empty())
    return importer.error(node, "needs exactly one output");
  for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
    llvm::StringRef name = attr.name();
    if (name == "value") {
      auto weight = importer.importTensor(
          *attr.mutable_t(), node.output(0),
          importer.describe(node) + ": attribute 'value'");
      if (!weight)
        return weight.takeError();
      importer.values[node.output(0)] = *weight;
      return llvm::Error::success();
    }
    auto bind = [&](DType dtype, llvm::ArrayRef<int64_t> dims,
                    const void *data, size_t bytes) {
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

/// Range and ConstantOfShape become weights at import: refuse results too
/// large to hold (a corrupt or adversarial shape).
static llvm::Error checkMaterialized(Importer &importer,
                                     const onnx::NodeProto &node,
                                     const TensorType &type) {
  auto bytes = getCheckedByteSize(type);
  if (!bytes || *bytes > (uint64_t(1) << 30))
    return importer.error(node, "result " + type.str() +
                                    " is too large to hold as a constant");
  return llvm::Error::success();
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
  if (onnx::AttributeProto *attr = const_cast<onnx::AttributeProto *>(
          findAttr(node, "value"))) {
    auto tensor = importer.readTensorBytes(
        *attr->mutable_t(), importer.describe(node) + ": attribute 'value'");
    if (!tensor)
      return tensor.takeError();
    if (tensor->first.getNumElements() != 1)
      return importer.error(node, "value must hold one element");
    elementType = tensor->first;
    element = tensor->second;
  }
  TensorType type(elementType.getDType(), *shape);
  if (llvm::Error error = checkMaterialized(importer, node, type))
    return error;
  std::vector<uint8_t> bytes(type.getByteSize());
  for (size_t at = 0; at < bytes.size(); at += element.size())
    std::memcpy(bytes.data() + at, element.data(), element.size());
  importer.bindConstant(node, type, bytes);
  return llvm::Error::success();
}

static llvm::Error importRange(Importer &importer, onnx::NodeProto &node) {
  llvm::SmallVector<double, 3> values;
  DType dtype = DType::F32;
  for (unsigned i = 0; i < 3; ++i) {
    auto input = requireInput(importer, node, i);
    if (!input)
      return input.takeError();
    dtype = (*input)->getType().getDType();
    auto given = importer.getConstantFloats(
        node, i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
    if (!given)
      return given.takeError();
    if (given->size() != 1)
      return importer.error(node, "start, limit and delta must be scalars");
    values.push_back((*given)[0]);
  }
  double start = values[0], limit = values[1], delta = values[2];
  if (delta == 0)
    return importer.error(node, "delta is 0");
  double steps = std::ceil((limit - start) / delta);
  if (!(steps < 1e15))
    return importer.error(node, "the range has too many elements");
  int64_t count = std::max<int64_t>(0, static_cast<int64_t>(steps));
  TensorType type(dtype, {count});
  if (llvm::Error error = checkMaterialized(importer, node, type))
    return error;
  std::vector<uint8_t> bytes(type.getByteSize());
  for (int64_t i = 0; i < count; ++i) {
    double value = start + i * delta;
    switch (dtype) {
    case DType::F32: { float v = value; std::memcpy(&bytes[4 * i], &v, 4); break; }
    case DType::F64: std::memcpy(&bytes[8 * i], &value, 8); break;
    case DType::I64: { int64_t v = static_cast<int64_t>(start) + i * static_cast<int64_t>(delta); std::memcpy(&bytes[8 * i], &v, 8); break; }
    case DType::I32: { int32_t v = static_cast<int32_t>(start + i * delta); std::memcpy(&bytes[4 * i], &v, 4); break; }
    case DType::I16: { int16_t v = static_cast<int16_t>(start + i * delta); std::memcpy(&bytes[2 * i], &v, 2); break; }
    default:
      return importer.error(node, "element type " +
                                      ir::getDTypeName(dtype) +
                                      " is not supported");
    }
  }
  importer.bindConstant(node, type, bytes);
  return llvm::Error::success();
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
  std::string autoPad = attrString(node, "auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    window.pads.assign(2 * spatial, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < spatial; ++i) {
      int64_t in = spatialDims[i], stride = window.strides[i];
      int64_t out = (in + stride - 1) / stride;
      int64_t extent = (window.kernel[i] - 1) * window.dilations[i] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - in);
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
    return importer.error(node, "input " + (*inputs)[0]->getType().str() +
                                    " and weight " +
                                    (*inputs)[1]->getType().str() +
                                    " do not fit a convolution");
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
          target.push_back(x[i + 2] * window->strides[i]);
      }
      for (size_t i = 0; i < spatial; ++i) {
        int64_t total = window->strides[i] * (x[i + 2] - 1) + outputPadding[i] +
                        (window->kernel[i] - 1) * window->dilations[i] + 1 -
                        target[i];
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
  if (isMax)
    attributes["dilations"] = Attribute::getInts(window->dilations);
  else
    attributes["count_include_pad"] =
        Attribute::getInt(attrInt(node, "count_include_pad", 0));
  unsigned results =
      isMax && node.output_size() > 1 && !node.output(1).empty() ? 2 : 1;
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
  return importer.emitAndBind(
      node, "BatchNormalization", *inputs,
      {{"epsilon", Attribute::getFloat(attrFloat(node, "epsilon", 1e-5f))}});
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

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

OpImporter lookupOpImporter(llvm::StringRef opType) {
  static const llvm::StringMap<OpImporter> table = [] {
    llvm::StringMap<OpImporter> map;
    for (const char *op :
         {"Abs", "Ceil", "Cos", "Elu", "Erf", "Exp", "Floor", "Gelu",
          "HardSigmoid", "HardSwish", "Identity", "LeakyRelu", "Log", "Neg",
          "Not", "Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign",
          "Sin", "Softplus", "Softsign", "Sqrt", "Tanh", "Add", "And", "Div",
          "Max", "Mean", "Min", "Mod", "Mul", "Or", "Sub", "Sum", "Xor",
          "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Pow",
          "PRelu", "Where", "MatMul", "Gemm", "GlobalAveragePool",
          "GlobalMaxPool", "InstanceNormalization", "LRN", "Size",
          "DepthToSpace", "SpaceToDepth"})
      map[op] = importGeneric;
    map["Clip"] = importClip;
    map["Softmax"] = importSoftmax;
    map["LogSoftmax"] = importSoftmax;
    map["Cast"] = importCast;
    map["Dropout"] = importDropout;
    map["Shape"] = importShape;
    map["Reshape"] = importReshape;
    map["Flatten"] = importFlatten;
    map["Transpose"] = importTranspose;
    map["Concat"] = importWithAxis;
    map["Gather"] = importWithAxis;
    map["Split"] = importSplit;
    map["Slice"] = importSlice;
    map["Squeeze"] = importSqueeze;
    map["Unsqueeze"] = importUnsqueeze;
    map["Expand"] = importExpand;
    map["Tile"] = importTile;
    map["Pad"] = importPad;
    map["Resize"] = importResize;
    map["Upsample"] = importResize;
    for (const char *op : {"ReduceL1", "ReduceL2", "ReduceLogSumExp",
                           "ReduceMax", "ReduceMean", "ReduceMin",
                           "ReduceProd", "ReduceSum", "ReduceSumSquare"})
      map[op] = importReduce;
    map["ArgMax"] = importArgReduce;
    map["ArgMin"] = importArgReduce;
    map["Constant"] = importConstant;
    map["ConstantOfShape"] = importConstantOfShape;
    map["Range"] = importRange;
    map["Conv"] = importConv;
    map["ConvTranspose"] = importConv;
    map["MaxPool"] = importPool;
    map["AveragePool"] = importPool;
    map["BatchNormalization"] = importBatchNorm;
    map["LayerNormalization"] = importLayerNorm;
    return map;
  }();
  auto it = table.find(opType);
  return it == table.end() ? nullptr : it->second;
}

} // namespace onnx_import
} // namespace snug
