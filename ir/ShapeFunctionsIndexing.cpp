//===- ShapeFunctionsIndexing.cpp - Shapes of the indexing ops ------------===//
//
// CumSum (the operand's type), GatherElements (the indices' shape),
// GatherND (the index tuples' batch shape and the slice they name) and the
// scatters (the data's type, with the updates' shape checked against the
// indices). Indices must be integers; their values are the kernels' to
// check, since most are runtime data. GridSample indexes by coordinates: X
// [N, C, spatial...] at grid [N, out spatial..., k] gives [N, C, out
// spatial...], k the spatial rank (1 to 3: core/GridSampleTaps.h).
//
//===----------------------------------------------------------------------===//
#include "ir/ShapeFunctionsInternal.h"

#include "llvm/ADT/Twine.h"

namespace snug {

using ir::TensorType;

namespace {

/// Operands 0 and 1 as data and integer indices.
llvm::Error requireDataAndIndices(const ShapeQuery &query,
                                  const TensorType *&data,
                                  const TensorType *&indices) {
  auto first = requireOperand(query, 0);
  if (!first)
    return first.takeError();
  auto second = requireOperand(query, 1);
  if (!second)
    return second.takeError();
  data = *first, indices = *second;
  if (!ir::isIntegerDType(indices->getDType()))
    return shapeError("indices have element type " +
                      ir::getDTypeName(indices->getDType()));
  return llvm::Error::success();
}

/// Updates (operand 2) of the data's element type and `dims`.
llvm::Error requireUpdates(const ShapeQuery &query, const TensorType &data,
                           llvm::ArrayRef<int64_t> dims) {
  auto updates = requireOperand(query, 2);
  if (!updates)
    return updates.takeError();
  if ((*updates)->getDType() != data.getDType())
    return shapeError("updates " + (*updates)->str() + " differ from data " +
                      data.str() + " in element type");
  if ((*updates)->getDims() != dims)
    return shapeError("updates " + (*updates)->str() + " must be " +
                      TensorType(data.getDType(), dims).str() +
                      " for these indices and data");
  return checkChoice(query, "reduction", {"none", "add", "mul", "max", "min"});
}

llvm::Expected<ResultTypes> inferCumSum(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  int64_t rank = (*input)->getRank();
  if (query.operands.size() > 1 && query.operands[1]) {
    const TensorType &axis = *query.operands[1];
    if (!ir::isIntegerDType(axis.getDType()) || axis.getNumElements() != 1)
      return shapeError("axis " + axis.str() + " must be one integer");
  } else if (!query.attributes.count("axis")) {
    return shapeError("axis is neither an attribute nor an operand");
  } else if (auto axis = requireAxis(query, "axis", rank, 0); !axis) {
    return axis.takeError();
  }
  if (rank == 0)
    return shapeError("operand " + (*input)->str() + " has no axis to sum");
  return ResultTypes{**input};
}

/// Indices of the data's rank, no larger than the data off `axis`.
llvm::Expected<int64_t> requireElementIndices(const ShapeQuery &query,
                                              const TensorType &data,
                                              const TensorType &indices) {
  int64_t rank = data.getRank();
  if (indices.getRank() != rank)
    return shapeError("indices " + indices.str() + " and data " + data.str() +
                      " differ in rank");
  auto axis = requireAxis(query, "axis", rank, 0);
  if (!axis)
    return axis.takeError();
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis && indices.getDims()[d] > data.getDims()[d])
      return shapeError("indices " + indices.str() + " exceed data " +
                        data.str() + " in dim " + llvm::Twine(d));
  return axis;
}

llvm::Expected<ResultTypes> inferGatherElements(const ShapeQuery &query) {
  const TensorType *data = nullptr, *indices = nullptr;
  if (llvm::Error error = requireDataAndIndices(query, data, indices))
    return error;
  if (auto axis = requireElementIndices(query, *data, *indices); !axis)
    return axis.takeError();
  return ResultTypes{TensorType(data->getDType(), indices->getDims())};
}

llvm::Expected<ResultTypes> inferScatterElements(const ShapeQuery &query) {
  const TensorType *data = nullptr, *indices = nullptr;
  if (llvm::Error error = requireDataAndIndices(query, data, indices))
    return error;
  if (auto axis = requireElementIndices(query, *data, *indices); !axis)
    return axis.takeError();
  if (llvm::Error error = requireUpdates(query, *data, indices->getDims()))
    return error;
  return ResultTypes{*data};
}

/// GatherND's and ScatterND's index tuples: the dims of what they select,
/// indices.dims[:-1] + data.dims[batch_dims + depth:].
llvm::Expected<llvm::SmallVector<int64_t, 4>>
selectedDims(const TensorType &data, const TensorType &indices,
             int64_t batchDims) {
  int64_t rank = data.getRank(), q = indices.getRank();
  if (q < 1)
    return shapeError("indices " + indices.str() + " must have rank >= 1");
  if (batchDims < 0 || batchDims >= std::min(rank, q))
    return shapeError("batch_dims " + llvm::Twine(batchDims) +
                      " must be below the ranks of data " + data.str() +
                      " and indices " + indices.str());
  int64_t depth = indices.getDims()[q - 1];
  if (depth < 1 || batchDims + depth > rank)
    return shapeError("index tuples of " + llvm::Twine(depth) +
                      " do not fit data " + data.str() + " after " +
                      llvm::Twine(batchDims) + " batch dims");
  for (int64_t d = 0; d < batchDims; ++d)
    if (indices.getDims()[d] != data.getDims()[d])
      return shapeError("batch dim " + llvm::Twine(d) + " of indices " +
                        indices.str() + " differs from data " + data.str());
  llvm::SmallVector<int64_t, 4> dims(indices.getDims().begin(),
                                     indices.getDims().end() - 1);
  dims.append(data.getDims().begin() + batchDims + depth,
              data.getDims().end());
  return dims;
}

llvm::Expected<ResultTypes> inferGatherND(const ShapeQuery &query) {
  const TensorType *data = nullptr, *indices = nullptr;
  if (llvm::Error error = requireDataAndIndices(query, data, indices))
    return error;
  auto dims = selectedDims(*data, *indices,
                           getIntAttr(query.attributes, "batch_dims", 0));
  if (!dims)
    return dims.takeError();
  return ResultTypes{TensorType(data->getDType(), *dims)};
}

llvm::Expected<ResultTypes> inferScatterND(const ShapeQuery &query) {
  const TensorType *data = nullptr, *indices = nullptr;
  if (llvm::Error error = requireDataAndIndices(query, data, indices))
    return error;
  auto dims = selectedDims(*data, *indices, 0);
  if (!dims)
    return dims.takeError();
  if (llvm::Error error = requireUpdates(query, *data, *dims))
    return error;
  return ResultTypes{*data};
}

/// TopK's k lies in [1, dim]: ONNX allows 0, but snug's values have
/// positive dims; more than the axis holds is an error in ONNX too.
llvm::Expected<ResultTypes> inferTopK(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  const TensorType &x = **input;
  if (x.getRank() == 0)
    return shapeError("operand " + x.str() + " has no axis to select along");
  auto axis = requireAxis(query, "axis", x.getRank(), -1);
  if (!axis)
    return axis.takeError();
  if (query.operands.size() > 1 && query.operands[1])
    return shapeError("k must be the attribute, not an operand");
  if (!query.attributes.count("k"))
    return shapeError("k is not given");
  int64_t k = getIntAttr(query.attributes, "k", 0);
  int64_t dim = x.getDims()[*axis];
  if (k < 1 || k > dim)
    return shapeError("k " + llvm::Twine(k) + " is outside [1, " +
                      llvm::Twine(dim) + "], the size of axis " +
                      llvm::Twine(*axis) + " of " + x.str());
  llvm::SmallVector<int64_t, 4> dims(x.getDims().begin(), x.getDims().end());
  dims[*axis] = k;
  return ResultTypes{TensorType(x.getDType(), dims),
                     TensorType(ir::DType::I64, dims)};
}

llvm::Expected<ResultTypes> inferGridSample(const ShapeQuery &query) {
  auto first = requireOperand(query, 0);
  if (!first)
    return first.takeError();
  auto second = requireOperand(query, 1);
  if (!second)
    return second.takeError();
  const TensorType &x = **first, &grid = **second;
  int64_t rank = x.getRank();
  // core/GridSampleTaps.h's kMaxDims: the kernels' loops.
  if (rank < 3 || rank > 5)
    return shapeError("input " + x.str() +
                      " must have 1 to 3 spatial dims after N and C");
  if (!ir::isFloatDType(grid.getDType()))
    return shapeError("grid " + grid.str() + " is not a float tensor");
  llvm::ArrayRef<int64_t> xDims = x.getDims(), gridDims = grid.getDims();
  if (grid.getRank() != rank || gridDims[0] != xDims[0] ||
      gridDims[rank - 1] != rank - 2)
    return shapeError("grid " + grid.str() + " must be [" +
                      llvm::Twine(xDims[0]) + ", out spatial..., " +
                      llvm::Twine(rank - 2) + "] for input " + x.str());
  if (llvm::Error error = checkChoice(query, "mode", {"nearest", "linear", "cubic"}))
    return error;
  if (llvm::Error error =
          checkChoice(query, "padding_mode", {"zeros", "border", "reflection"}))
    return error;
  llvm::SmallVector<int64_t, 5> dims{xDims[0], xDims[1]};
  dims.append(gridDims.begin() + 1, gridDims.end() - 1);
  TensorType result(x.getDType(), dims);
  if (result.getNumElements() != 0)
    for (int64_t d = 2; d < rank; ++d)
      if (xDims[d] == 0)
        return shapeError("cannot sample the empty input " + x.str());
  return ResultTypes{result};
}

} // namespace

void registerIndexingShapeFunctions(ShapeFunctionTable &map) {
  map[size_t(ir::OpCode::GridSample)] = inferGridSample;
  map[size_t(ir::OpCode::CumSum)] = inferCumSum;
  map[size_t(ir::OpCode::GatherElements)] = inferGatherElements;
  map[size_t(ir::OpCode::GatherND)] = inferGatherND;
  map[size_t(ir::OpCode::ScatterElements)] = inferScatterElements;
  map[size_t(ir::OpCode::ScatterND)] = inferScatterND;
  map[size_t(ir::OpCode::TopK)] = inferTopK;
}

} // namespace snug
