//===- ShapeFunctionsNN.cpp - Convolution, pooling, matmul, reductions ----===//
//
// Shape functions of the neural-network ops. Canonical form: Conv,
// ConvTranspose and the pools carry explicit kernel_shape, strides, pads
// (begin values then end values), dilations and group (auto_pad resolved by
// the importer); Gemm carries transA/transB; reductions carry explicit,
// non-negative `axes` and `keepdims`.
//
//===----------------------------------------------------------------------===//
#include "ir/ShapeFunctionsInternal.h"

#include "ir/Verifier.h"
#include "core/AttentionShape.h"

namespace snug {

using ir::DType;
using ir::OpCode;
using ir::TensorType;

namespace {
/// The spatial attributes of a convolution or pool over `spatial` dims.
struct Window {
  llvm::SmallVector<int64_t, 4> kernel, strides, pads, dilations;
};
} // namespace

/// ONNX's Conv and pools take pads >= 0 (the plan verifier refuses others
/// at load, runtime/PlanVerifier.cpp); ConvTranspose's may be negative, as
/// the importer solves them from output_shape.
enum class Pads { NonNegative, AnySign };

static llvm::Expected<Window> readWindow(const ShapeQuery &query,
                                         size_t spatial,
                                         Pads pads = Pads::NonNegative) {
  // The kernels (host and CUDA) implement 1 to 3 spatial dims.
  if (spatial < 1 || spatial > 3)
    return shapeError("snug supports 1 to 3 spatial dims, the input has " +
                      llvm::Twine(spatial));
  Window window;
  auto kernel = requireInts(query, "kernel_shape");
  if (!kernel)
    return kernel.takeError();
  window.kernel = *kernel;
  window.strides = getIntsAttr(query.attributes, "strides")
                       .getValueOr(llvm::SmallVector<int64_t, 4>(spatial, 1));
  window.dilations = getIntsAttr(query.attributes, "dilations")
                         .getValueOr(llvm::SmallVector<int64_t, 4>(spatial, 1));
  window.pads = getIntsAttr(query.attributes, "pads")
                    .getValueOr(llvm::SmallVector<int64_t, 4>(2 * spatial, 0));
  if (window.kernel.size() != spatial || window.strides.size() != spatial ||
      window.dilations.size() != spatial || window.pads.size() != 2 * spatial)
    return shapeError("kernel_shape " + dimsString(window.kernel) +
                      ", strides " + dimsString(window.strides) +
                      ", dilations " + dimsString(window.dilations) +
                      " and pads " + dimsString(window.pads) + " do not fit " +
                      llvm::Twine(spatial) + " spatial dims");
  for (size_t i = 0; i < spatial; ++i)
    if (window.kernel[i] <= 0 || window.strides[i] <= 0 ||
        window.dilations[i] <= 0)
      return shapeError("kernel_shape, strides and dilations must be positive");
  if (pads == Pads::NonNegative)
    for (int64_t pad : window.pads)
      if (pad < 0)
        return shapeError("pads " + dimsString(window.pads) +
                          " must not be negative");
  return window;
}

/// One output dim of a window op: the padded input, the window's extent,
/// and how many strides fit, every step checked (attributes are arbitrary
/// int64 values). `ceilMode` rounds up as the pools may.
static llvm::Expected<int64_t> windowOutput(const Window &window, size_t i,
                                            int64_t inputDim, size_t spatial,
                                            bool ceilMode,
                                            const TensorType &input) {
  auto extent =
      (CheckedInt(window.dilations[i]) * (window.kernel[i] - 1) + 1).get();
  auto padded =
      (CheckedInt(inputDim) + window.pads[i] + window.pads[i + spatial]).get();
  if (!extent || !padded)
    return overflowError("the window of spatial dim " + llvm::Twine(i) +
                         " (kernel_shape, dilations or pads)");
  if (*padded < *extent)
    return shapeError("window larger than the padded input " + input.str());
  int64_t stride = window.strides[i];
  // padded - extent >= 0 and stride >= 1: no overflow below.
  int64_t span = *padded - *extent;
  int64_t out = span / stride + 1;
  if (ceilMode) {
    out += span % stride ? 1 : 0;
    // A ceil-mode window must start inside the input or its begin padding.
    auto begin = (CheckedInt(out - 1) * stride).get();
    auto limit = (CheckedInt(inputDim) + window.pads[i]).get();
    if (!begin || !limit || *begin >= *limit)
      --out;
  }
  return out;
}

static llvm::Expected<ResultTypes> inferConv(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  auto weight = requireOperand(query, 1);
  if (!input)
    return input.takeError();
  if (!weight)
    return weight.takeError();
  llvm::ArrayRef<int64_t> x = (*input)->getDims(), w = (*weight)->getDims();
  if (x.size() < 3 || w.size() != x.size())
    return shapeError("input " + (*input)->str() + " and weight " +
                      (*weight)->str() + " do not fit a convolution");
  size_t spatial = x.size() - 2;
  auto window = readWindow(query, spatial);
  if (!window)
    return window.takeError();
  int64_t group = getIntAttr(query.attributes, "group", 1);
  auto channels = (CheckedInt(w[1]) * group).get();
  if (group <= 0 || !channels || x[1] != *channels || w[0] % group)
    return shapeError("input channels " + llvm::Twine(x[1]) + ", weight " +
                      (*weight)->str() + " and group " + llvm::Twine(group) +
                      " disagree");
  if (query.operands.size() > 2 && query.operands[2] &&
      query.operands[2]->getDims() != llvm::ArrayRef<int64_t>(w[0]))
    return shapeError("bias " + query.operands[2]->str() + " does not match " +
                      llvm::Twine(w[0]) + " output channels");
  llvm::SmallVector<int64_t, 4> dims{x[0], w[0]};
  for (size_t i = 0; i < spatial; ++i) {
    if (w[i + 2] != window->kernel[i])
      return shapeError("kernel_shape " + dimsString(window->kernel) +
                        " disagrees with weight " + (*weight)->str());
    auto out = windowOutput(*window, i, x[i + 2], spatial, false, **input);
    if (!out)
      return out.takeError();
    dims.push_back(*out);
  }
  return ResultTypes{TensorType((*input)->getDType(), dims)};
}

static llvm::Expected<ResultTypes> inferConvTranspose(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  auto weight = requireOperand(query, 1);
  if (!input)
    return input.takeError();
  if (!weight)
    return weight.takeError();
  llvm::ArrayRef<int64_t> x = (*input)->getDims(), w = (*weight)->getDims();
  if (x.size() < 3 || w.size() != x.size() || x[1] != w[0])
    return shapeError("input " + (*input)->str() + " and weight " +
                      (*weight)->str() +
                      " do not fit a transposed convolution");
  size_t spatial = x.size() - 2;
  auto window = readWindow(query, spatial, Pads::AnySign);
  if (!window)
    return window.takeError();
  int64_t group = getIntAttr(query.attributes, "group", 1);
  if (group <= 0 || x[1] % group)
    return shapeError("input channels " + llvm::Twine(x[1]) +
                      " do not divide into group " + llvm::Twine(group));
  auto channels = (CheckedInt(w[1]) * group).get();
  if (!channels)
    return overflowError("weight " + (*weight)->str() + " times group " +
                         llvm::Twine(group));
  if (query.operands.size() > 2 && query.operands[2] &&
      query.operands[2]->getNumElements() != *channels)
    return shapeError("bias " + query.operands[2]->str() + " does not match " +
                      llvm::Twine(*channels) + " output channels");
  auto outputPadding =
      getIntsAttr(query.attributes, "output_padding")
          .getValueOr(llvm::SmallVector<int64_t, 4>(spatial, 0));
  if (outputPadding.size() != spatial)
    return shapeError("output_padding does not fit the spatial dims");
  llvm::SmallVector<int64_t, 4> dims{x[0], *channels};
  for (size_t i = 0; i < spatial; ++i) {
    if (w[i + 2] != window->kernel[i])
      return shapeError("kernel_shape " + dimsString(window->kernel) +
                        " disagrees with weight " + (*weight)->str());
    auto dim = (CheckedInt(window->strides[i]) * (x[i + 2] - 1) +
                outputPadding[i] +
                CheckedInt(window->kernel[i] - 1) * window->dilations[i] + 1 -
                window->pads[i] - window->pads[i + spatial])
                   .get();
    if (!dim)
      return overflowError("the output size of spatial dim " +
                           llvm::Twine(i) +
                           " (strides, output_padding, dilations or pads)");
    dims.push_back(*dim);
  }
  return ResultTypes{TensorType((*input)->getDType(), dims)};
}

static llvm::Expected<ResultTypes> inferPool(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  llvm::ArrayRef<int64_t> x = (*input)->getDims();
  if (x.size() < 3)
    return shapeError("input " + (*input)->str() + " has no spatial dims");
  size_t spatial = x.size() - 2;
  auto window = readWindow(query, spatial);
  if (!window)
    return window.takeError();
  bool ceilMode = getIntAttr(query.attributes, "ceil_mode", 0);
  llvm::SmallVector<int64_t, 4> dims{x[0], x[1]};
  for (size_t i = 0; i < spatial; ++i) {
    auto out = windowOutput(*window, i, x[i + 2], spatial, ceilMode, **input);
    if (!out)
      return out.takeError();
    dims.push_back(*out);
  }
  ResultTypes results{TensorType((*input)->getDType(), dims)};
  if (query.numResults > 1)
    results.push_back(TensorType(DType::I64, dims));
  return results;
}

static llvm::Expected<ResultTypes> inferGlobalPool(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  llvm::SmallVector<int64_t, 4> dims((*input)->getDims().begin(),
                                     (*input)->getDims().end());
  if (dims.size() < 3)
    return shapeError("input " + (*input)->str() + " has no spatial dims");
  for (size_t i = 2; i < dims.size(); ++i)
    dims[i] = 1;
  return ResultTypes{TensorType((*input)->getDType(), dims)};
}

static llvm::Expected<ResultTypes> inferMatMul(const ShapeQuery &query) {
  auto lhs = requireOperand(query, 0);
  auto rhs = requireOperand(query, 1);
  if (!lhs)
    return lhs.takeError();
  if (!rhs)
    return rhs.takeError();
  llvm::SmallVector<int64_t, 4> a((*lhs)->getDims().begin(),
                                  (*lhs)->getDims().end());
  llvm::SmallVector<int64_t, 4> b((*rhs)->getDims().begin(),
                                  (*rhs)->getDims().end());
  if (a.empty() || b.empty())
    return shapeError("MatMul operands must not be scalars");
  if ((*lhs)->getDType() != (*rhs)->getDType())
    return shapeError("operands differ in element type: " + (*lhs)->str() +
                      " and " + (*rhs)->str());
  bool vectorA = a.size() == 1, vectorB = b.size() == 1;
  if (vectorA)
    a.insert(a.begin(), 1);
  if (vectorB)
    b.push_back(1);
  if (a.back() != b[b.size() - 2])
    return shapeError("inner dims differ: " + (*lhs)->str() + " and " +
                      (*rhs)->str());
  auto batch = ir::broadcastShapes(llvm::makeArrayRef(a).drop_back(2),
                                   llvm::makeArrayRef(b).drop_back(2));
  if (!batch)
    return shapeError("batch dims do not broadcast: " + (*lhs)->str() +
                      " and " + (*rhs)->str());
  llvm::SmallVector<int64_t, 4> dims = *batch;
  if (!vectorA)
    dims.push_back(a[a.size() - 2]);
  if (!vectorB)
    dims.push_back(b.back());
  return ResultTypes{TensorType((*lhs)->getDType(), dims)};
}

static llvm::Expected<ResultTypes> inferGemm(const ShapeQuery &query) {
  auto lhs = requireOperand(query, 0);
  auto rhs = requireOperand(query, 1);
  if (!lhs)
    return lhs.takeError();
  if (!rhs)
    return rhs.takeError();
  if ((*lhs)->getRank() != 2 || (*rhs)->getRank() != 2)
    return shapeError("Gemm operands must be matrices: " + (*lhs)->str() +
                      " and " + (*rhs)->str());
  bool transA = getIntAttr(query.attributes, "transA", 0);
  bool transB = getIntAttr(query.attributes, "transB", 0);
  int64_t m = (*lhs)->getDims()[transA ? 1 : 0];
  int64_t k = (*lhs)->getDims()[transA ? 0 : 1];
  int64_t kb = (*rhs)->getDims()[transB ? 1 : 0];
  int64_t n = (*rhs)->getDims()[transB ? 0 : 1];
  if (k != kb)
    return shapeError("inner dims differ: " + (*lhs)->str() + " and " +
                      (*rhs)->str());
  if (query.operands.size() > 2 && query.operands[2]) {
    auto bias = ir::broadcastShapes({m, n}, query.operands[2]->getDims());
    if (!bias || *bias != llvm::SmallVector<int64_t, 4>{m, n})
      return shapeError("C " + query.operands[2]->str() +
                        " does not broadcast to [" + llvm::Twine(m) + "," +
                        llvm::Twine(n) + "]");
  }
  return ResultTypes{TensorType((*lhs)->getDType(), {m, n})};
}

static llvm::Expected<ResultTypes>
inferLayerNormalization(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto axis = requireAxis(query, "axis", (*input)->getRank(), -1);
  if (!axis)
    return axis.takeError();
  ResultTypes results{**input};
  llvm::SmallVector<int64_t, 4> dims((*input)->getDims().begin(),
                                     (*input)->getDims().end());
  int64_t normalized = 1;
  for (size_t i = *axis; i < dims.size(); ++i) {
    normalized *= dims[i];
    dims[i] = 1;
  }
  for (unsigned i = 1; i < 3 && i < query.operands.size(); ++i)
    if (query.operands[i] &&
        query.operands[i]->getNumElements() != normalized)
      return shapeError(llvm::Twine(i == 1 ? "scale " : "bias ") +
                        query.operands[i]->str() + " does not hold the " +
                        llvm::Twine(normalized) +
                        " elements of the normalized dims");
  results.push_back(TensorType(DType::F32, dims));
  results.push_back(TensorType(DType::F32, dims));
  return results;
}

static llvm::Expected<ResultTypes> inferReduce(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto axes = requireInts(query, "axes");
  if (!axes)
    return axes.takeError();
  bool keepDims = getIntAttr(query.attributes, "keepdims", 1);
  llvm::ArrayRef<int64_t> dims = (*input)->getDims();
  llvm::SmallVector<bool, 4> reduced(dims.size(), false);
  for (int64_t axis : *axes) {
    auto normalized = normalizeAxis(axis, dims.size());
    if (!normalized)
      return shapeError("axes " + dimsString(*axes) + " out of range for " +
                        (*input)->str());
    reduced[*normalized] = true;
  }
  llvm::SmallVector<int64_t, 4> result;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!reduced[i])
      result.push_back(dims[i]);
    else if (keepDims)
      result.push_back(1);
  }
  DType dtype =
      (query.op == OpCode::ArgMax || query.op == OpCode::ArgMin)
          ? DType::I64
           : (*input)->getDType();
  return ResultTypes{TensorType(dtype, result)};
}

static llvm::Expected<ResultTypes> inferArgReduce(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto axis = requireAxis(query, "axis", (*input)->getRank(), 0);
  if (!axis)
    return axis.takeError();
  llvm::SmallVector<int64_t, 4> dims((*input)->getDims().begin(),
                                     (*input)->getDims().end());
  if (getIntAttr(query.attributes, "keepdims", 1))
    dims[*axis] = 1;
  else
    dims.erase(dims.begin() + *axis);
  return ResultTypes{TensorType(DType::I64, dims)};
}

/// The per-channel parameters of a normalization: each holds C elements
/// (dim 1 of the input), as the kernels require.
static llvm::Error checkChannelParameters(const ShapeQuery &query,
                                          unsigned first, unsigned last,
                                          const TensorType &input) {
  int64_t channels = input.getRank() > 1 ? input.getDims()[1] : 1;
  for (unsigned i = first; i <= last; ++i) {
    auto operand = requireOperand(query, i);
    if (!operand)
      return operand.takeError();
    if ((*operand)->getNumElements() != channels)
      return shapeError("operand " + llvm::Twine(i) + " " + (*operand)->str() +
                        " does not hold one value per channel (" +
                        llvm::Twine(channels) + ") of " + input.str());
  }
  return llvm::Error::success();
}

static llvm::Expected<ResultTypes>
inferBatchNormalization(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  if (llvm::Error error = checkChannelParameters(query, 1, 4, **input))
    return error;
  // Old opsets' running mean and variance: the inputs, passed through.
  return ResultTypes{**input, *query.operands[3], *query.operands[4]};
}

static llvm::Expected<ResultTypes>
inferInstanceNormalization(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  if ((*input)->getRank() < 2)
    return shapeError("input " + (*input)->str() + " has no channel dim");
  if (llvm::Error error = checkChannelParameters(query, 1, 2, **input))
    return error;
  return ResultTypes{**input};
}

static std::vector<int64_t> dimsOf(const ir::TensorType &type) {
  return std::vector<int64_t>(type.getDims().begin(), type.getDims().end());
}

/// The sizes of a snug.attention over operands of these types (three or
/// four present) and its perms.
static AttentionShape
attentionShapeOf(llvm::ArrayRef<const ir::TensorType *> operands,
                 const ir::AttributeMap &attributes) {
  std::vector<int64_t> dims[5], perms[4];
  const std::vector<int64_t> *permOf[4] = {nullptr, nullptr, nullptr, nullptr};
  const char *permNames[4] = {"q_perm", "k_perm", "v_perm", "y_perm"};
  for (unsigned i = 0; i < 5; ++i)
    if (i < operands.size() && operands[i])
      dims[i] = dimsOf(*operands[i]);
  for (unsigned i = 0; i < 4; ++i) {
    if (auto perm = getIntsAttr(attributes, permNames[i])) {
      perms[i].assign(perm->begin(), perm->end());
      permOf[i] = &perms[i];
    }
  }
  bool hasMask = operands.size() > 3 && operands[3];
  bool hasBias = operands.size() > 4 && operands[4];
  return getAttentionShape({&dims[0], permOf[0]}, {&dims[1], permOf[1]},
                           {&dims[2], permOf[2]}, hasMask ? &dims[3] : nullptr,
                           permOf[3], hasBias ? &dims[4] : nullptr);
}

AttentionShape getAttentionShape(const ir::Node &node) {
  assert(node.is(OpCode::SnugAttention) && node.getNumOperands() >= 3);
  llvm::SmallVector<const ir::TensorType *, 4> types;
  for (const ir::Value *operand : node.getOperands())
    types.push_back(operand ? &operand->getType() : nullptr);
  return attentionShapeOf(types, node.getAttributes());
}

AttentionMaskKind getAttentionMaskKind(const ir::Node &node) {
  return getAttentionMaskKind(
      getStringAttr(node.getAttributes(), "mask", "none").str());
}

/// snug.attention: the result is Q's logical dims with V's last, stored
/// through y_perm (AttentionShape.h); the mask's kind says its element type.
static llvm::Expected<ResultTypes> inferAttention(const ShapeQuery &query) {
  for (unsigned i = 0; i < 3; ++i)
    if (auto type = requireOperand(query, i); !type)
      return type.takeError();
  DType dtype = query.operands[0]->getDType();
  if (query.operands[1]->getDType() != dtype ||
      query.operands[2]->getDType() != dtype)
    return shapeError("Q, K and V differ in element type");
  const ir::TensorType *mask =
      query.operands.size() > 3 ? query.operands[3] : nullptr;
  std::string maskKind =
      getStringAttr(query.attributes, "mask", "none").str();
  const ir::TensorType *bias =
      query.operands.size() > 4 ? query.operands[4] : nullptr;
  AttentionMaskKind kind = getAttentionMaskKind(maskKind);
  if (!kind.valid)
    return shapeError("mask kind '" + maskKind + "' is none of " +
                      attentionMaskKindsText());
  if (kind.hasMaskOperand() != !!mask)
    return shapeError(mask
                          ? "a mask operand needs mask = \"add\", "
                            "\"add_add\", \"where\", \"where_add\" or "
                            "\"causal_add\""
                          : "mask = \"" + maskKind + "\" needs a mask operand");
  if (kind.hasSecondMask() != !!bias)
    return shapeError(bias ? "a second mask (operand 4) needs mask = "
                             "\"where_add\", \"add_add\" or \"add_where\""
                           : "mask = \"" + maskKind + "\" needs a second mask "
                             "(operand 4)");
  if (mask && mask->getDType() != (kind.where ? DType::Bool : dtype))
    return shapeError("mask " + mask->str() + " must be " +
                      (kind.where ? "bool" : "of Q's element type") +
                      " for mask = \"" + maskKind + "\"");
  if (bias && bias->getDType() != (kind.whereAfter ? DType::Bool : dtype))
    return shapeError("second mask " + bias->str() + " must be " +
                      (kind.whereAfter ? "bool" : "of Q's element type") +
                      " for mask = \"" + maskKind + "\"");
  if (getIntAttr(query.attributes, "zero_filled", 0) && !kind.fills())
    return shapeError("zero_filled needs a mask kind that fills (\"where\", "
                      "\"where_add\", \"add_where\", \"causal\" or "
                      "\"causal_add\")");
  AttentionShape shape = attentionShapeOf(query.operands, query.attributes);
  if (!shape.isValid())
    return shapeError(shape.error);
  return ResultTypes{TensorType(dtype, shape.resultDims)};
}

/// snug.rms_norm: x's type; the scale holds one value per normalized
/// element.
static llvm::Expected<ResultTypes> inferRmsNorm(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  auto axis = requireAxis(query, "axis", (*input)->getRank(), -1);
  if (!axis)
    return axis.takeError();
  int64_t normalized = 1;
  for (int64_t i = *axis; i < int64_t((*input)->getRank()); ++i)
    normalized *= (*input)->getDims()[size_t(i)];
  if (query.operands.size() > 1 && query.operands[1] &&
      (query.operands[1]->getNumElements() != normalized ||
       query.operands[1]->getDType() != (*input)->getDType()))
    return shapeError("scale " + query.operands[1]->str() +
                      " does not hold one value of the input's type per "
                      "normalized element (" +
                      llvm::Twine(normalized) + ")");
  return ResultTypes{**input};
}

/// snug.rotary: x's type; cos and sin of x's type broadcast to it (no
/// wider); the last dim even.
static llvm::Expected<ResultTypes> inferRotary(const ShapeQuery &query) {
  for (unsigned i = 0; i < 3; ++i)
    if (auto type = requireOperand(query, i); !type)
      return type.takeError();
  const TensorType &x = *query.operands[0];
  if (x.getRank() == 0 || x.getDims().back() % 2 != 0)
    return shapeError("x " + x.str() + " needs an even last dim");
  for (unsigned i = 1; i < 3; ++i) {
    const TensorType &table = *query.operands[i];
    llvm::ArrayRef<int64_t> dims = table.getDims(), to = x.getDims();
    bool fits = table.getDType() == x.getDType() && dims.size() <= to.size();
    for (size_t d = 0; fits && d < dims.size(); ++d) {
      int64_t dim = dims[dims.size() - 1 - d], out = to[to.size() - 1 - d];
      fits = dim == 1 || dim == out;
    }
    if (!fits)
      return shapeError(llvm::Twine(i == 1 ? "cos " : "sin ") + table.str() +
                        " does not broadcast to x " + x.str());
  }
  return ResultTypes{x};
}

static llvm::Expected<ResultTypes> inferLrn(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  if ((*input)->getRank() < 2)
    return shapeError("input " + (*input)->str() + " has no channel dim");
  int64_t size = getIntAttr(query.attributes, "size", 0);
  if (size <= 0)
    return shapeError("size " + llvm::Twine(size) + " must be positive");
  return ResultTypes{**input};
}

void registerNNShapeFunctions(ShapeFunctionTable &map) {
  auto set = [&](OpCode op, ShapeFunctionPtr function) {
    map[size_t(op)] = function;
  };
  set(OpCode::Conv, inferConv);
  set(OpCode::ConvTranspose, inferConvTranspose);
  set(OpCode::MaxPool, inferPool);
  set(OpCode::AveragePool, inferPool);
  set(OpCode::GlobalAveragePool, inferGlobalPool);
  set(OpCode::GlobalMaxPool, inferGlobalPool);
  set(OpCode::MatMul, inferMatMul);
  set(OpCode::Gemm, inferGemm);
  set(OpCode::LayerNormalization, inferLayerNormalization);
  set(OpCode::SnugRmsNorm, inferRmsNorm);
  set(OpCode::SnugRotary, inferRotary);
  set(OpCode::BatchNormalization, inferBatchNormalization);
  set(OpCode::InstanceNormalization, inferInstanceNormalization);
  set(OpCode::LRN, inferLrn);
  set(OpCode::SnugAttention, inferAttention);
  for (OpCode op : {OpCode::ReduceL1, OpCode::ReduceL2,
                    OpCode::ReduceLogSumExp, OpCode::ReduceMax,
                    OpCode::ReduceMean, OpCode::ReduceMin, OpCode::ReduceProd,
                    OpCode::ReduceSum, OpCode::ReduceSumSquare})
    set(op, inferReduce);
  set(OpCode::ArgMax, inferArgReduce);
  set(OpCode::ArgMin, inferArgReduce);
}

} // namespace snug
