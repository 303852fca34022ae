//===- OnnxShapeOps.cpp - Shape computation and data movement ops ---------===//
//
// Normalizers of the ops whose shape parameters moved between attributes and
// inputs across opsets (Reshape, Slice, Split, Squeeze, Unsqueeze, Pad,
// Resize/Upsample, ...): each reads either spelling, resolves the parameters
// to constants and emits the canonical form of OnnxImporter.h.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"

#include "ir/Verifier.h"
#include "ir/ShapeFunctions.h"

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
      return importer.error(node,
                            "shape " + dimsString(shape) + " is too large");
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
    return importer.error(node,
                          "axis " + llvm::Twine(attrInt(node, "axis", 1)) +
                              " is out of range for rank " + llvm::Twine(rank));
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
    // Signed: a scalar's rank 0, less 1 as unsigned, pushed 4 billion.
    int64_t rank = (*input)->getType().getRank();
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  }
  return importer.emitAndBind(node, "Transpose", {*input},
                              {{"perm", Attribute::getInts(perm)}});
}

/// Ops with one `axis` attribute made non-negative (Concat, Gather,
/// GatherElements, ScatterElements and its old name Scatter).
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
  llvm::StringRef op = node.op_type();
  if (op == "Scatter")
    op = "ScatterElements";
  return importer.emitAndBind(node, op, *inputs, std::move(*attributes));
}

/// CumSum's axis is an input; a constant one becomes the `axis` attribute
/// (non-negative), a runtime one stays operand 1 (the result's shape does
/// not depend on it, and the kernels read it).
static llvm::Error importCumSum(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  auto axisInput = requireInput(importer, node, 1);
  if (!axisInput)
    return axisInput.takeError();
  auto attributes = convertAttributes(importer, node);
  if (!attributes)
    return attributes.takeError();
  auto known = importer.getConstant(*axisInput);
  if (!known)
    return known.takeError();
  if (!*known)
    return importer.emitAndBind(node, "CumSum", {*input, *axisInput},
                                std::move(*attributes));
  auto given = importer.getConstantInts(node, 1, "axis");
  if (!given)
    return given.takeError();
  if (given->size() != 1)
    return importer.error(node, "axis must hold one value, not " +
                                    llvm::Twine(given->size()));
  auto axis = axisFor(importer, node, (*given)[0],
                      (*input)->getType().getRank());
  if (!axis)
    return axis.takeError();
  (*attributes)["axis"] = Attribute::getInt(*axis);
  return importer.emitAndBind(node, "CumSum", {*input},
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
    // num_outputs names the node's output count; a different one (say
    // 2^62) would make the loop below run that long.
    if (importer.opset >= 18 && findAttr(node, "num_outputs") &&
        attrInt(node, "num_outputs", parts) != parts)
      return importer.error(node, "num_outputs " +
                                      llvm::Twine(attrInt(node, "num_outputs",
                                                          parts)) +
                                      " differs from the node's " +
                                      llvm::Twine(parts) + " outputs");
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
      auto values =
          importer.getConstantInts(node, index, index == 3 ? "axes" : "steps");
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
    return importer.error(node,
                          "starts, ends, axes and steps differ in length");
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
llvm::Expected<llvm::Optional<Ints>>
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

/// Resize's per-axis parameters as given: scales or sizes (one of them),
/// the roi, and the axes they name (every axis when the node names none).
struct ResizeParameters {
  llvm::SmallVector<double, 4> scales;
  Ints sizes;
  llvm::SmallVector<double, 8> roi;
  Ints axes;
};

/// Reads Resize's (opset 11+) scales, sizes, roi and axes inputs and
/// attributes, checks their counts against the axes, and spreads them over
/// every axis: an axis not named keeps its size (scale 1, roi [0, 1]), as
/// the reference does.
static llvm::Error readResizeInputs(Importer &importer, onnx::NodeProto &node,
                                    llvm::ArrayRef<int64_t> dims,
                                    bool crop, ResizeParameters &given) {
  int64_t rank = dims.size();
  if (auto axes = attrInts(node, "axes")) {
    for (int64_t value : *axes) {
      auto axis = axisFor(importer, node, value, rank);
      if (!axis)
        return axis.takeError();
      if (llvm::is_contained(given.axes, *axis))
        return importer.error(node, "axes " + dimsString(*axes) +
                                        " name an axis twice");
      given.axes.push_back(*axis);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d)
      given.axes.push_back(d);
  }
  size_t count = given.axes.size();
  for (unsigned index : {2u, 3u}) {
    auto present = importer.getInput(node, index);
    if (!present)
      return present.takeError();
    if (!*present || (*present)->getType().getNumElements() == 0)
      continue;
    if (index == 2) {
      auto values = importer.getConstantFloats(node, 2, "scales");
      if (!values)
        return values.takeError();
      given.scales = *values;
    } else {
      auto values = importer.getConstantInts(node, 3, "sizes");
      if (!values)
        return values.takeError();
      given.sizes = *values;
    }
  }
  if (!given.scales.empty() && !given.sizes.empty())
    return importer.error(node, "gives both scales and sizes (one of them)");
  if (given.scales.size() + given.sizes.size() != count)
    return importer.error(node, "needs scales or sizes for each of its " +
                                    llvm::Twine(count) + " axes");
  for (int64_t size : given.sizes)
    if (size < 0)
      return importer.error(node, "sizes " + dimsString(given.sizes) +
                                      " hold a negative size");
  if (crop) {
    // The region is read only under tf_crop_and_resize (other modes
    // ignore it): a start per axis, then an end per axis.
    auto roi = importer.getConstantFloats(node, 1, "roi");
    if (!roi)
      return roi.takeError();
    if (roi->size() != 2 * count)
      return importer.error(node, "roi of " + llvm::Twine(roi->size()) +
                                      " values does not match its " +
                                      llvm::Twine(count) +
                                      " axes (a start and an end each)");
    given.roi.assign(2 * rank, 0.0);
    for (int64_t d = 0; d < rank; ++d)
      given.roi[rank + d] = 1.0;
    for (size_t i = 0; i < count; ++i) {
      given.roi[given.axes[i]] = (*roi)[i];
      given.roi[rank + given.axes[i]] = (*roi)[count + i];
    }
  }
  // Spread over every axis.
  if (!given.scales.empty()) {
    llvm::SmallVector<double, 4> scales(rank, 1.0);
    for (size_t i = 0; i < count; ++i)
      scales[given.axes[i]] = given.scales[i];
    given.scales = scales;
  } else {
    Ints sizes(dims.begin(), dims.end());
    for (size_t i = 0; i < count; ++i)
      sizes[given.axes[i]] = given.sizes[i];
    given.sizes = sizes;
  }
  return llvm::Error::success();
}

/// keep_aspect_ratio_policy not_larger / not_smaller (opset 18, with
/// sizes): one scale for every named axis, the smallest or largest of the
/// sizes' ratios, and the sizes it rounds to (half up).
static void applyAspectPolicy(llvm::StringRef policy,
                              llvm::ArrayRef<int64_t> dims,
                              ResizeParameters &given) {
  double scale = policy == "not_larger" ? INFINITY : 0.0;
  for (int64_t d : given.axes) {
    double ratio = double(given.sizes[d]) / double(dims[d]);
    scale = policy == "not_larger" ? std::min(scale, ratio)
                                   : std::max(scale, ratio);
  }
  given.scales.assign(dims.size(), 1.0);
  for (int64_t d : given.axes) {
    given.scales[d] = scale;
    given.sizes[d] = int64_t(scale * double(dims[d]) + 0.5);
  }
}

static llvm::Error importResize(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  llvm::ArrayRef<int64_t> dims = (*input)->getType().getDims();
  bool upsample = node.op_type() == "Upsample";
  bool modern = !upsample && importer.opset >= 11;
  std::string mode = attrString(node, "mode", "nearest");
  std::string transform = "asymmetric", nearest = "floor";
  ResizeParameters given;
  if (upsample && importer.opset < 9) {
    auto scales =
        attrFloats(node, "scales").getValueOr(llvm::SmallVector<float, 4>());
    given.scales.assign(scales.begin(), scales.end());
  } else if (!modern) {
    auto scales = importer.getConstantFloats(node, 1, "scales");
    if (!scales)
      return scales.takeError();
    given.scales = *scales;
  } else {
    transform =
        attrString(node, "coordinate_transformation_mode", "half_pixel");
    nearest = attrString(node, "nearest_mode", "round_prefer_floor");
  }
  bool cubic = modern && mode == "cubic";
  if (mode != "nearest" && mode != "linear" && mode != "bilinear" && !cubic)
    return importer.error(node, "mode '" + mode + "' is not supported (" +
                                    (modern ? "nearest, linear, cubic"
                                            : "nearest, linear") +
                                    ")");
  if (mode == "bilinear")
    mode = "linear";
  std::string policy = attrString(node, "keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return importer.error(node, "keep_aspect_ratio_policy '" + policy +
                                    "' is not one of stretch, not_larger, "
                                    "not_smaller");
  if (modern)
    if (llvm::Error error = readResizeInputs(
            importer, node, dims, transform == "tf_crop_and_resize", given))
      return error;
  if (!given.sizes.empty() && policy != "stretch")
    applyAspectPolicy(policy, dims, given);
  if (given.sizes.empty()) {
    if (given.scales.size() != dims.size())
      return importer.error(node, "needs scales or sizes for every axis of " +
                                      (*input)->getType().str());
    for (size_t i = 0; i < dims.size(); ++i) {
      double size = std::floor(dims[i] * static_cast<float>(given.scales[i]));
      // A NaN, negative or huge scale would make the cast below undefined.
      if (!(size >= 0 && size < 1e15))
        return importer.error(node, "scale " + std::to_string(given.scales[i]) +
                                        " of axis " + llvm::Twine(i) +
                                        " gives no valid size");
      given.sizes.push_back(static_cast<int64_t>(size));
    }
  }
  AttributeMap attributes{
      {"mode", Attribute::getString(mode)},
      {"coordinate_transformation_mode", Attribute::getString(transform)},
      {"nearest_mode", Attribute::getString(nearest)},
      {"cubic_coeff_a",
       Attribute::getFloat(attrFloat(node, "cubic_coeff_a", -0.75f))},
      {"sizes", Attribute::getInts(given.sizes)}};
  // The rest only where they change something (the IR's defaults else).
  if (attrInt(node, "antialias", 0) && mode != "nearest")
    attributes["antialias"] = Attribute::getInt(1);
  if (attrInt(node, "exclude_outside", 0) && cubic)
    attributes["exclude_outside"] = Attribute::getInt(1);
  // Given sizes alone, the kernels take out / in in double as the scale,
  // as the reference does; given scales (or a policy's), these.
  if (!given.scales.empty()) {
    llvm::SmallVector<float, 4> scales(given.scales.begin(),
                                       given.scales.end());
    attributes["scales"] = Attribute::getFloats(scales);
  }
  if (!given.roi.empty()) {
    llvm::SmallVector<float, 8> roi(given.roi.begin(), given.roi.end());
    attributes["roi"] = Attribute::getFloats(roi);
    attributes["extrapolation_value"] =
        Attribute::getFloat(attrFloat(node, "extrapolation_value", 0.0f));
  }
  return importer.emitAndBind(node, "Resize", {*input}, std::move(attributes));
}

/// GridSample: opset 16 spells the interpolations bilinear and bicubic and
/// takes 4-d input only; opset 20 renamed them linear and cubic (the
/// canonical names) and allowed 1 to N spatial dims. Each opset's names are
/// taken at that opset only.
static llvm::Error importGridSample(Importer &importer, onnx::NodeProto &node) {
  auto input = requireInput(importer, node, 0);
  if (!input)
    return input.takeError();
  auto grid = requireInput(importer, node, 1);
  if (!grid)
    return grid.takeError();
  bool renamed = importer.opset >= 20;
  std::string mode = attrString(node, "mode", renamed ? "linear" : "bilinear");
  if (!renamed && mode != "nearest") {
    if (mode != "bilinear" && mode != "bicubic")
      return importer.error(node, "mode '" + mode +
                                      "' is not an opset-16 mode (bilinear, "
                                      "nearest, bicubic)");
    mode = mode == "bilinear" ? "linear" : "cubic";
  } else if (renamed && mode != "linear" && mode != "nearest" &&
             mode != "cubic") {
    return importer.error(node, "mode '" + mode +
                                    "' is not one of linear, nearest, cubic");
  }
  if (!renamed && (*input)->getType().getRank() != 4)
    return importer.error(node, "input " + (*input)->getType().str() +
                                    " is not 4-d (opset 16 samples 2-d "
                                    "images only)");
  return importer.emitAndBind(
      node, "GridSample", {*input, *grid},
      {{"mode", Attribute::getString(mode)},
       {"padding_mode",
        Attribute::getString(attrString(node, "padding_mode", "zeros"))},
       {"align_corners",
        Attribute::getInt(attrInt(node, "align_corners", 0))}});
}

void registerShapeOpImporters(llvm::StringMap<OpImporter> &map) {
  map["GridSample"] = importGridSample;
  map["Shape"] = importShape;
  map["Reshape"] = importReshape;
  map["Flatten"] = importFlatten;
  map["Transpose"] = importTranspose;
  map["Concat"] = importWithAxis;
  map["Gather"] = importWithAxis;
  map["GatherElements"] = importWithAxis;
  map["ScatterElements"] = importWithAxis;
  map["Scatter"] = importWithAxis;
  map["CumSum"] = importCumSum;
  map["Split"] = importSplit;
  map["Slice"] = importSlice;
  map["Squeeze"] = importSqueeze;
  map["Unsqueeze"] = importUnsqueeze;
  map["Expand"] = importExpand;
  map["Tile"] = importTile;
  map["Pad"] = importPad;
  map["Resize"] = importResize;
  map["Upsample"] = importResize;
}

} // namespace onnx_import
} // namespace snug
