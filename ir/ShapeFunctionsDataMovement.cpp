//===- ShapeFunctionsDataMovement.cpp - Shapes of data-movement ops -------===//
//
// Shape functions of the shape-computation and data-movement ops: Shape and
// Size, the views (Reshape, Flatten, Squeeze, Unsqueeze), Transpose,
// Concat, Gather, Slice, Split, Expand, Tile, Pad, Resize, DepthToSpace and
// SpaceToDepth, the constants and fills (Constant, ConstantOfShape, Range)
// and Dropout with training's generated mask (snug.dropout_mask). Like the
// rest of the table they assume snug's canonical form: shape-determining
// parameters are attributes the importer resolved, except where a shape
// comes from an operand whose data is known (readIntOperand).
//
//===----------------------------------------------------------------------===//
#include "ir/ShapeFunctionsInternal.h"

#include "ir/Verifier.h"

#include "llvm/ADT/Twine.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace snug {

using ir::DType;
using ir::OpCode;
using ir::TensorType;

static llvm::Expected<ResultTypes> inferShape(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  int64_t rank = (*input)->getRank();
  int64_t start = getIntAttr(query.attributes, "start", 0);
  int64_t end = getIntAttr(query.attributes, "end", rank);
  if (start < 0 || end > rank || start > end)
    return shapeError("start " + llvm::Twine(start) + " and end " +
                      llvm::Twine(end) + " do not fit rank " +
                      llvm::Twine(rank));
  return ResultTypes{TensorType(DType::I64, {end - start})};
}

static llvm::Expected<ResultTypes> inferSize(const ShapeQuery &query) {
  if (auto input = requireOperand(query, 0); !input)
    return input.takeError();
  return ResultTypes{TensorType(DType::I64, {})};
}

static llvm::Expected<ResultTypes> inferReshape(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto shape = requireInts(query, "shape");
  if (!shape)
    return shape.takeError();
  for (int64_t dim : *shape)
    if (dim < 0)
      return shapeError("shape " + dimsString(*shape) +
                        " is not resolved (negative dim)");
  auto bytes = getCheckedByteSize(TensorType(DType::U8, *shape));
  if (!bytes || static_cast<int64_t>(*bytes) != (*input)->getNumElements())
    return shapeError("cannot reshape " + (*input)->str() + " (" +
                      llvm::Twine((*input)->getNumElements()) +
                      " elements) to " + dimsString(*shape));
  return ResultTypes{TensorType((*input)->getDType(), *shape)};
}

static llvm::Expected<ResultTypes> inferFlatten(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  llvm::ArrayRef<int64_t> dims = (*input)->getDims();
  int64_t axis = getIntAttr(query.attributes, "axis", 1);
  if (axis < 0)
    axis += dims.size();
  if (axis < 0 || axis > static_cast<int64_t>(dims.size()))
    return shapeError("axis out of range for " + (*input)->str());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(dims.size()); ++i)
    (i < axis ? outer : inner) *= dims[i];
  return ResultTypes{TensorType((*input)->getDType(), {outer, inner})};
}

static llvm::Expected<ResultTypes> inferTranspose(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  int64_t rank = (*input)->getRank();
  llvm::SmallVector<int64_t, 4> perm;
  if (auto given = getIntsAttr(query.attributes, "perm")) {
    perm = *given;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    return shapeError("perm " + dimsString(perm) + " does not match rank " +
                      llvm::Twine(rank));
  llvm::SmallVector<bool, 4> seen(rank, false);
  llvm::SmallVector<int64_t, 4> dims;
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= rank || seen[axis])
      return shapeError("perm " + dimsString(perm) + " is not a permutation");
    seen[axis] = true;
    dims.push_back((*input)->getDims()[axis]);
  }
  return ResultTypes{TensorType((*input)->getDType(), dims)};
}

static llvm::Expected<ResultTypes> inferConcat(const ShapeQuery &query) {
  auto first = requireOperand(query, 0);
  if (!first)
    return first.takeError();
  int64_t rank = (*first)->getRank();
  auto axis = requireAxis(query, "axis", rank, 0);
  if (!axis)
    return axis.takeError();
  llvm::SmallVector<int64_t, 4> dims((*first)->getDims().begin(),
                                     (*first)->getDims().end());
  for (unsigned i = 1; i < query.operands.size(); ++i) {
    auto operand = requireOperand(query, i);
    if (!operand)
      return operand.takeError();
    const TensorType &type = **operand;
    bool same =
        type.getRank() == rank && type.getDType() == (*first)->getDType();
    for (int64_t d = 0; same && d < rank; ++d)
      same = d == *axis || type.getDims()[d] == dims[d];
    if (!same)
      return shapeError("operand " + llvm::Twine(i) + " " + type.str() +
                        " does not concatenate with " + (*first)->str() +
                        " on axis " + llvm::Twine(*axis));
    auto sum = (CheckedInt(dims[*axis]) + type.getDims()[*axis]).get();
    if (!sum)
      return overflowError("the concatenated dim");
    dims[*axis] = *sum;
  }
  return ResultTypes{TensorType((*first)->getDType(), dims)};
}

static llvm::Optional<llvm::SmallVector<int64_t, 4>>
readIntOperand(const ShapeQuery &query, unsigned index);

static llvm::Expected<ResultTypes> inferGather(const ShapeQuery &query) {
  auto data = requireOperand(query, 0);
  auto indices = requireOperand(query, 1);
  if (!data)
    return data.takeError();
  if (!indices)
    return indices.takeError();
  if (!ir::isIntegerDType((*indices)->getDType()))
    return shapeError("indices have element type " +
                      ir::getDTypeName((*indices)->getDType()));
  int64_t rank = (*data)->getRank();
  auto axis = requireAxis(query, "axis", rank, 0);
  if (!axis)
    return axis.takeError();
  llvm::ArrayRef<int64_t> dims = (*data)->getDims();
  // Constant indices are checked now: the kernels refuse an index outside
  // [-dim, dim) only when the bundle runs.
  if (auto values = readIntOperand(query, 1))
    for (int64_t index : *values)
      if (index < -dims[*axis] || index >= dims[*axis])
        return shapeError("index " + llvm::Twine(index) +
                          " is out of range for dim " + llvm::Twine(*axis) +
                          " of " + (*data)->str() + " (size " +
                          llvm::Twine(dims[*axis]) + ")");
  llvm::SmallVector<int64_t, 4> result(dims.begin(), dims.begin() + *axis);
  result.append((*indices)->getDims().begin(), (*indices)->getDims().end());
  result.append(dims.begin() + *axis + 1, dims.end());
  return ResultTypes{TensorType((*data)->getDType(), result)};
}

static llvm::Expected<ResultTypes> inferSqueeze(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  llvm::ArrayRef<int64_t> dims = (*input)->getDims();
  auto axes = requireInts(query, "axes");
  if (!axes)
    return axes.takeError();
  llvm::SmallVector<bool, 4> drop(dims.size(), false);
  for (int64_t axis : *axes) {
    auto normalized = normalizeAxis(axis, dims.size());
    if (!normalized || dims[*normalized] != 1)
      return shapeError("cannot squeeze axis " + llvm::Twine(axis) + " of " +
                        (*input)->str());
    drop[*normalized] = true;
  }
  llvm::SmallVector<int64_t, 4> result;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!drop[i])
      result.push_back(dims[i]);
  return ResultTypes{TensorType((*input)->getDType(), result)};
}

static llvm::Expected<ResultTypes> inferUnsqueeze(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto axes = requireInts(query, "axes");
  if (!axes)
    return axes.takeError();
  int64_t rank = (*input)->getRank() + axes->size();
  llvm::SmallVector<bool, 8> inserted(rank, false);
  for (int64_t axis : *axes) {
    auto normalized = normalizeAxis(axis, rank);
    if (!normalized || inserted[*normalized])
      return shapeError("axes " + dimsString(*axes) + " are invalid for " +
                        (*input)->str());
    inserted[*normalized] = true;
  }
  llvm::SmallVector<int64_t, 4> result;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    result.push_back(inserted[i] ? 1 : (*input)->getDims()[next++]);
  return ResultTypes{TensorType((*input)->getDType(), result)};
}

static llvm::Expected<ResultTypes> inferSlice(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto starts = requireInts(query, "starts");
  auto ends = requireInts(query, "ends");
  auto axes = requireInts(query, "axes");
  auto steps = requireInts(query, "steps");
  for (auto *values : {&starts, &ends, &axes, &steps})
    if (!*values)
      return values->takeError();
  size_t count = starts->size();
  if (ends->size() != count || axes->size() != count || steps->size() != count)
    return shapeError("starts, ends, axes and steps differ in length");
  llvm::SmallVector<int64_t, 4> dims((*input)->getDims().begin(),
                                     (*input)->getDims().end());
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = (*axes)[i], step = (*steps)[i];
    if (axis < 0 || axis >= static_cast<int64_t>(dims.size()) || step == 0)
      return shapeError("slice axis " + llvm::Twine(axis) + " or step " +
                        llvm::Twine(step) + " is invalid for " +
                        (*input)->str());
    // Canonical starts and ends are clamped as ONNX says (the importer
    // does it): [0, dim] going forward, [-1, dim - 1] going back. The
    // kernels read from `start` as given, so an unclamped one is refused
    // rather than clamped here behind their back.
    int64_t dim = dims[axis], start = (*starts)[i], end = (*ends)[i];
    int64_t low = step > 0 ? 0 : -1, high = step > 0 ? dim : dim - 1;
    if (start < low || start > high || end < low || end > high)
      return shapeError("slice of axis " + llvm::Twine(axis) + ": start " +
                        llvm::Twine(start) + " or end " + llvm::Twine(end) +
                        " lies outside [" + llvm::Twine(low) + ", " +
                        llvm::Twine(high) + "] (canonical Slice clamps "
                        "them to the dim)");
    // Both lie within the dim, so the distance cannot overflow; the step
    // may be anything (INT64_MAX and INT64_MIN take one element).
    uint64_t distance = step > 0 ? uint64_t(std::max<int64_t>(end - start, 0))
                                 : uint64_t(std::max<int64_t>(start - end, 0));
    uint64_t stride = step > 0 ? uint64_t(step) : uint64_t(0) - uint64_t(step);
    dims[axis] = distance ? int64_t((distance - 1) / stride + 1) : 0;
  }
  return ResultTypes{TensorType((*input)->getDType(), dims)};
}

static llvm::Expected<ResultTypes> inferSplit(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto axis = requireAxis(query, "axis", (*input)->getRank(), 0);
  if (!axis)
    return axis.takeError();
  // Canonical IR always has `split`; hand-written IR may leave it out for
  // equal parts.
  int64_t dim = (*input)->getDims()[*axis];
  llvm::SmallVector<int64_t, 4> equal(
      query.numResults, query.numResults ? dim / query.numResults : 0);
  auto split = getIntsAttr(query.attributes, "split").getValueOr(equal);
  if (split.size() != query.numResults)
    return shapeError("split has " + llvm::Twine(split.size()) +
                      " parts but the node has " +
                      llvm::Twine(query.numResults) + " results");
  int64_t total = 0;
  ResultTypes results;
  for (int64_t part : split) {
    llvm::SmallVector<int64_t, 4> dims((*input)->getDims().begin(),
                                       (*input)->getDims().end());
    dims[*axis] = part;
    auto sum = (CheckedInt(total) + part).get();
    if (!sum || part < 0)
      return shapeError("split " + dimsString(split) +
                        " has a negative part or overflows");
    total = *sum;
    results.push_back(TensorType((*input)->getDType(), dims));
  }
  if (total != (*input)->getDims()[*axis])
    return shapeError("split " + dimsString(split) +
                      " does not add up to dim " +
                      llvm::Twine((*input)->getDims()[*axis]));
  return results;
}

static llvm::Expected<ResultTypes> inferExpand(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto shape = requireInts(query, "shape");
  if (!shape)
    return shape.takeError();
  auto dims = ir::broadcastShapes((*input)->getDims(), *shape);
  if (!dims)
    return shapeError("cannot expand " + (*input)->str() + " to " +
                      dimsString(*shape));
  return ResultTypes{TensorType((*input)->getDType(), *dims)};
}

static llvm::Expected<ResultTypes> inferTile(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto repeats = requireInts(query, "repeats");
  if (!repeats)
    return repeats.takeError();
  if (repeats->size() != (*input)->getRank())
    return shapeError("repeats " + dimsString(*repeats) +
                      " do not match rank " + llvm::Twine((*input)->getRank()));
  llvm::SmallVector<int64_t, 4> dims;
  for (unsigned i = 0; i < repeats->size(); ++i) {
    if ((*repeats)[i] < 0)
      return shapeError("repeats " + dimsString(*repeats) +
                        " has a negative count");
    auto dim = (CheckedInt((*input)->getDims()[i]) * (*repeats)[i]).get();
    if (!dim)
      return overflowError("repeats " + dimsString(*repeats) + " times " +
                           (*input)->str());
    dims.push_back(*dim);
  }
  return ResultTypes{TensorType((*input)->getDType(), dims)};
}

static llvm::Expected<ResultTypes> inferPad(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto pads = requireInts(query, "pads");
  if (!pads)
    return pads.takeError();
  unsigned rank = (*input)->getRank();
  if (pads->size() != 2 * rank)
    return shapeError("pads " + dimsString(*pads) + " need " +
                      llvm::Twine(2 * rank) + " values for " + (*input)->str());
  llvm::StringRef mode = getStringAttr(query.attributes, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return shapeError("mode '" + mode +
                      "' is not one of constant, reflect, edge, wrap");
  if (mode != "constant" && (*input)->getNumElements() == 0)
    return shapeError("cannot " + mode + "-pad the empty tensor " +
                      (*input)->str());
  llvm::SmallVector<int64_t, 4> dims;
  for (unsigned i = 0; i < rank; ++i) {
    auto dim = (CheckedInt((*input)->getDims()[i]) + (*pads)[i] +
                (*pads)[i + rank])
                   .get();
    if (!dim)
      return overflowError("pads " + dimsString(*pads));
    if (*dim < 0)
      return shapeError("pads " + dimsString(*pads) + " make a negative dim");
    dims.push_back(*dim);
  }
  return ResultTypes{TensorType((*input)->getDType(), dims)};
}

static llvm::Expected<ResultTypes> inferResize(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto sizes = requireInts(query, "sizes");
  if (!sizes)
    return sizes.takeError();
  if (sizes->size() != (*input)->getRank())
    return shapeError("sizes " + dimsString(*sizes) + " do not match " +
                      (*input)->str());
  // The kernels (core/ResizeCoordinates.h) take any other string as the
  // default: refuse it rather than compute something else.
  if (llvm::Error error =
          checkChoice(query, "mode", {"nearest", "linear", "cubic"}))
    return error;
  if (llvm::Error error = checkChoice(
          query, "coordinate_transformation_mode",
          {"half_pixel", "half_pixel_symmetric", "asymmetric", "align_corners",
           "pytorch_half_pixel", "tf_half_pixel_for_nn",
           "tf_crop_and_resize"}))
    return error;
  if (llvm::Error error =
          checkChoice(query, "nearest_mode",
                      {"round_prefer_floor", "round_prefer_ceil", "floor",
                       "ceil"}))
    return error;
  // tf_crop_and_resize reads its region: a start and an end per axis.
  size_t roiSize = 0;
  auto roi = query.attributes.find("roi");
  if (roi != query.attributes.end() &&
      roi->second.getKind() == ir::Attribute::Kind::Floats)
    roiSize = roi->second.getFloats().size();
  if (getStringAttr(query.attributes, "coordinate_transformation_mode", "") ==
          "tf_crop_and_resize" &&
      roiSize != 2 * (*input)->getRank())
    return shapeError("tf_crop_and_resize needs a roi of " +
                      llvm::Twine(2 * (*input)->getRank()) + " floats");
  TensorType result((*input)->getDType(), *sizes);
  if ((*input)->getNumElements() == 0 && result.getNumElements() != 0)
    return shapeError("cannot resize the empty tensor " + (*input)->str() +
                      " to " + dimsString(*sizes));
  return ResultTypes{result};
}

static llvm::Expected<ResultTypes> inferDepthToSpace(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  int64_t block = getIntAttr(query.attributes, "blocksize", 0);
  llvm::ArrayRef<int64_t> dims = (*input)->getDims();
  if (dims.size() != 4 || block <= 0)
    return shapeError("expects a 4-d input and a positive blocksize");
  if (query.op == OpCode::DepthToSpace)
    if (llvm::Error error = checkChoice(query, "mode", {"DCR", "CRD"}))
      return error;
  // Dims are at most 2^50, so a block past 2^25 already exceeds any of
  // them squared; refusing it keeps the products below in range.
  if (block > (int64_t(1) << 25))
    return shapeError("blocksize " + llvm::Twine(block) + " is too large");
  bool toSpace = query.op == OpCode::DepthToSpace;
  if (toSpace ? dims[1] % (block * block)
              : (dims[2] % block || dims[3] % block))
    return shapeError((*input)->str() + " does not divide by blocksize " +
                      llvm::Twine(block));
  llvm::SmallVector<int64_t, 4> result =
      toSpace
          ? llvm::SmallVector<int64_t, 4>{dims[0], dims[1] / (block * block),
                                          dims[2] * block, dims[3] * block}
          : llvm::SmallVector<int64_t, 4>{dims[0], dims[1] * block * block,
                                          dims[2] / block, dims[3] / block};
  return ResultTypes{TensorType((*input)->getDType(), result)};
}

static llvm::Expected<ResultTypes> inferConstant(const ShapeQuery &query) {
  auto it = query.attributes.find("value");
  if (it == query.attributes.end() ||
      it->second.getKind() != ir::Attribute::Kind::Tensor)
    return shapeError("attribute 'value' (tensor) is required");
  return ResultTypes{it->second.getTensorType()};
}

/// Integer elements of operand `index` when it is known data.
static llvm::Optional<llvm::SmallVector<int64_t, 4>>
readIntOperand(const ShapeQuery &query, unsigned index) {
  if (index >= query.operandData.size() || !query.operandData[index] ||
      !query.operands[index])
    return llvm::None;
  const TensorType &type = *query.operands[index];
  llvm::ArrayRef<uint8_t> bytes = *query.operandData[index];
  llvm::SmallVector<int64_t, 4> values;
  if (!ir::isIntegerDType(type.getDType()) ||
      bytes.size() < uint64_t(type.getNumElements()) *
                         ir::getDTypeSize(type.getDType()))
    return llvm::None;
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    switch (type.getDType()) {
    case DType::I64: {
      int64_t value;
      std::memcpy(&value, bytes.data() + 8 * i, 8);
      values.push_back(value);
      break;
    }
    case DType::I32: {
      int32_t value;
      std::memcpy(&value, bytes.data() + 4 * i, 4);
      values.push_back(value);
      break;
    }
    case DType::I16: {
      int16_t value;
      std::memcpy(&value, bytes.data() + 2 * i, 2);
      values.push_back(value);
      break;
    }
    case DType::I8:
      values.push_back(static_cast<int8_t>(bytes[i]));
      break;
    case DType::U16: {
      uint16_t value;
      std::memcpy(&value, bytes.data() + 2 * i, 2);
      values.push_back(value);
      break;
    }
    case DType::U32: {
      uint32_t value;
      std::memcpy(&value, bytes.data() + 4 * i, 4);
      values.push_back(value);
      break;
    }
    case DType::U64: { // as i64, wrapped: a shape or index past 2^63 is
                       // as out of range as a negative one
      uint64_t value;
      std::memcpy(&value, bytes.data() + 8 * i, 8);
      values.push_back(int64_t(value));
      break;
    }
    default:
      values.push_back(bytes[i]);
      break;
    }
  }
  return values;
}

static llvm::Expected<ResultTypes>
inferConstantOfShape(const ShapeQuery &query) {
  auto shape = readIntOperand(query, 0);
  if (!shape)
    return shapeError("the shape operand must be an i64 weight with data");
  DType dtype = DType::F32;
  auto it = query.attributes.find("value");
  if (it != query.attributes.end() &&
      it->second.getKind() == ir::Attribute::Kind::Tensor)
    dtype = it->second.getTensorType().getDType();
  return ResultTypes{TensorType(dtype, *shape)};
}

static llvm::Expected<ResultTypes> inferRange(const ShapeQuery &query) {
  for (unsigned i = 0; i < 3; ++i)
    if (i >= query.operandData.size() || !query.operandData[i])
      return shapeError("start, limit and delta must be weights with data");
  const TensorType &type = *query.operands[0];
  // ONNX's Range takes three scalars of one type; each is read as that
  // type, so a mismatched one would be read past its bytes.
  for (unsigned i = 0; i < 3; ++i)
    if (query.operands[i]->getDType() != type.getDType() ||
        query.operands[i]->getNumElements() != 1)
      return shapeError("start, limit and delta must be scalars of one type, "
                        "got " + query.operands[0]->str() + ", " +
                        query.operands[1]->str() + " and " +
                        query.operands[2]->str());
  if (type.getDType() != DType::F32 && type.getDType() != DType::F64 &&
      type.getDType() != DType::I32 && type.getDType() != DType::I64)
    return shapeError("Range takes f32, f64, i32 or i64, not " +
                      ir::getDTypeName(type.getDType()));
  for (unsigned i = 0; i < 3; ++i)
    if (query.operandData[i]->size() < ir::getDTypeSize(type.getDType()))
      return shapeError("operand " + llvm::Twine(i) + " holds " +
                        llvm::Twine(query.operandData[i]->size()) +
                        " bytes, less than one element");
  auto read = [&](unsigned index) -> double {
    llvm::ArrayRef<uint8_t> bytes = *query.operandData[index];
    switch (type.getDType()) {
    case DType::F32: {
      float v;
      std::memcpy(&v, bytes.data(), 4);
      return v;
    }
    case DType::F64: {
      double v;
      std::memcpy(&v, bytes.data(), 8);
      return v;
    }
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, bytes.data(), 4);
      return v;
    }
    case DType::I64: {
      int64_t v;
      std::memcpy(&v, bytes.data(), 8);
      return v;
    }
    default:
      return 0;
    }
  };
  double start = read(0), limit = read(1), delta = read(2);
  if (delta == 0)
    return shapeError("delta is zero");
  double steps = std::ceil((limit - start) / delta);
  if (!(steps < 1e15))
    return shapeError("the range has too many elements");
  int64_t count = std::max<int64_t>(0, static_cast<int64_t>(steps));
  return ResultTypes{TensorType(type.getDType(), {count})};
}

static llvm::Expected<ResultTypes> inferDropout(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  ResultTypes results{**input};
  if (query.numResults > 1)
    results.push_back(TensorType(DType::Bool, (*input)->getDims()));
  return results;
}

/// snug.dropout_mask(seed): f32[shape] from an i64 scalar seed, ratio in
/// [0, 1) (the kernels divide by 1 - ratio).
static llvm::Expected<ResultTypes> inferDropoutMask(const ShapeQuery &query) {
  auto seed = requireOperand(query, 0);
  if (!seed)
    return seed.takeError();
  if ((*seed)->getDType() != DType::I64 || (*seed)->getNumElements() != 1)
    return shapeError("the seed must be an i64 scalar, got " + (*seed)->str());
  auto shape = requireInts(query, "shape");
  if (!shape)
    return shape.takeError();
  for (int64_t dim : *shape)
    if (dim < 0)
      return shapeError("shape " + dimsString(*shape) + " has a negative dim");
  if (!getCheckedByteSize(TensorType(DType::F32, *shape)))
    return overflowError("the mask's size");
  float ratio = getFloatAttr(query.attributes, "ratio", 0.5f);
  if (!(ratio >= 0.0f && ratio < 1.0f)) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", double(ratio));
    return shapeError(llvm::Twine("ratio ") + text + " is not in [0, 1)");
  }
  return ResultTypes{TensorType(DType::F32, *shape)};
}

void registerDataMovementShapeFunctions(ShapeFunctionTable &map) {
  map[size_t(OpCode::Shape)] = inferShape;
  map[size_t(OpCode::Size)] = inferSize;
  map[size_t(OpCode::Reshape)] = inferReshape;
  map[size_t(OpCode::Flatten)] = inferFlatten;
  map[size_t(OpCode::Transpose)] = inferTranspose;
  map[size_t(OpCode::Concat)] = inferConcat;
  map[size_t(OpCode::Gather)] = inferGather;
  map[size_t(OpCode::Squeeze)] = inferSqueeze;
  map[size_t(OpCode::Unsqueeze)] = inferUnsqueeze;
  map[size_t(OpCode::Slice)] = inferSlice;
  map[size_t(OpCode::Split)] = inferSplit;
  map[size_t(OpCode::Expand)] = inferExpand;
  map[size_t(OpCode::Tile)] = inferTile;
  map[size_t(OpCode::Pad)] = inferPad;
  map[size_t(OpCode::Resize)] = inferResize;
  map[size_t(OpCode::DepthToSpace)] = inferDepthToSpace;
  map[size_t(OpCode::SpaceToDepth)] = inferDepthToSpace;
  map[size_t(OpCode::Constant)] = inferConstant;
  map[size_t(OpCode::ConstantOfShape)] = inferConstantOfShape;
  map[size_t(OpCode::Range)] = inferRange;
  map[size_t(OpCode::Dropout)] = inferDropout;
  map[size_t(OpCode::SnugDropoutMask)] = inferDropoutMask;
}

} // namespace snug
