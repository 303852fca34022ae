//===- PlanVerifier.cpp - Load-time checks of a decoded plan --------------===//
//
// The op table is core/Ops.def read as data (its OP and ATTR lines), so the
// arity and attribute kinds checked here are the compiler's. Every number
// that feeds a kernel's index arithmetic is bounded here with
// core/CheckedArithmetic.h, so the kernels can compute in int64_t
// without overflow.
//
//===----------------------------------------------------------------------===//
#include "runtime/PlanVerifier.h"

#include "core/CheckedArithmetic.h"
#include "core/OpTable.h"
#include "core/ScalarOpTable.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

using OpSpec = OpInfo;
using AttrKindSpec = scalar::table::AttrKind;

/// The largest kernel size, stride, dilation or pad a window may have; with
/// dims below kMaxTensorBytes, sums and products of a few stay in int64_t.
constexpr int64_t kMaxWindowValue = int64_t(1) << 31;
/// The bound on a window's index span (see checkWindow).
constexpr int64_t kMaxWindowSpan = int64_t(1) << 60;

const OpSpec *findOp(const std::string &name) {
  std::optional<OpCode> code = findOpCode(name);
  return code ? &getOpInfo(*code) : nullptr;
}

const char *kindName(AttrKindSpec kind) {
  switch (kind) {
  case AttrKindSpec::Int:
    return "an int";
  case AttrKindSpec::Float:
    return "a float";
  case AttrKindSpec::String:
    return "a string";
  case AttrKindSpec::Ints:
    return "a list of ints";
  case AttrKindSpec::Floats:
    return "a list of floats";
  case AttrKindSpec::Tensor:
    return "a tensor";
  }
  return "?";
}

uint8_t bundleKind(AttrKindSpec kind) {
  switch (kind) {
  case AttrKindSpec::Int:
    return AttrInt;
  case AttrKindSpec::Float:
    return AttrFloat;
  case AttrKindSpec::String:
    return AttrString;
  case AttrKindSpec::Ints:
    return AttrInts;
  case AttrKindSpec::Floats:
    return AttrFloats;
  case AttrKindSpec::Tensor:
    return AttrTensor;
  }
  return 0;
}

using Attributes = std::vector<std::pair<std::string, Attr>>;

const Attr *findAttr(const Attributes &attributes, const char *name) {
  for (const auto &entry : attributes)
    if (entry.first == name)
      return &entry.second;
  return nullptr;
}

/// Known op, arity and attribute kinds: what every op, body ops included,
/// is held to. Returns the reason or "".
std::string checkSignature(const std::string &opName, size_t operands,
                           size_t results, const Attributes &attributes,
                           const OpSpec *&found) {
  found = findOp(opName);
  if (!found)
    return "unknown op '" + opName + "'";
  auto within = [](size_t count, int min, int max) {
    return count >= size_t(min) && (max < 0 || count <= size_t(max));
  };
  auto range = [](int min, int max) {
    if (min == max)
      return std::to_string(min);
    return max < 0 ? "at least " + std::to_string(min)
                   : std::to_string(min) + " to " + std::to_string(max);
  };
  if (!within(operands, found->minOperands, found->maxOperands))
    return "has " + std::to_string(operands) + " operands, expects " +
           range(found->minOperands, found->maxOperands);
  if (!within(results, found->minResults, found->maxResults))
    return "has " + std::to_string(results) + " results, expects " +
           range(found->minResults, found->maxResults);
  for (const scalar::table::AttrSpec &attr : scalar::table::kAttrs) {
    if (attr.op != size_t(found->code))
      continue;
    const Attr *given = findAttr(attributes, attr.name);
    if (given && given->kind != bundleKind(attr.kind))
      return std::string("attribute '") + attr.name + "' must be " +
             kindName(attr.kind);
  }
  return "";
}

std::string dimsText(const std::vector<int64_t> &dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

/// An `axis` attribute in [-rank, rank) (or [-rank, rank] when
/// `inclusive`), when present.
std::string checkAxis(const PlanOp &op, int64_t rank, bool inclusive) {
  const Attr *axis = op.getAttr("axis");
  if (!axis)
    return "";
  int64_t high = inclusive ? rank : rank - 1;
  if (axis->i < -rank || axis->i > high)
    return "axis " + std::to_string(axis->i) + " is out of range for rank " +
           std::to_string(rank);
  return "";
}

/// The window of Conv, ConvTranspose, MaxPool and AveragePool: ranks, the
/// attribute lengths and ranges, and per spatial axis a bound on
///   max(in, out) * stride + kernel * dilation + pads + in + out
/// that covers every index the kernels compute (runtime/host/kernels/
/// ConvKernels.cpp), so none overflows.
std::string checkWindow(const PlanOp &op, OpCode code,
                        const Location *weight) {
  const Location &x = op.operands[0], &y = op.results[0];
  size_t rank = x.dims.size();
  if (rank < 3 || rank > 5)
    return "operand 0 has rank " + std::to_string(rank) +
           ", expects 3 to 5 (1 to 3 spatial dims)";
  if (y.dims.size() != rank)
    return "result 0 has rank " + std::to_string(y.dims.size()) +
           ", operand 0 has " + std::to_string(rank);
  if (weight && weight->dims.size() != rank)
    return "weight has rank " + std::to_string(weight->dims.size()) +
           ", operand 0 has " + std::to_string(rank);
  size_t spatial = rank - 2;
  int64_t kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1},
          pads[6] = {0, 0, 0, 0, 0, 0};
  if (weight)
    for (size_t i = 0; i < spatial; ++i)
      kernel[i] = weight->dims[2 + i];
  struct Field {
    const char *name;
    int64_t *values;
    size_t count;
    int64_t low;
  } fields[] = {{"kernel_shape", kernel, spatial, 1},
                {"strides", stride, spatial, 1},
                {"dilations", dilation, spatial, 1},
                // ConvTranspose's pads may be negative: the importer solves
                // them from output_shape, which can ask for more output than
                // the stride gives (ONNX's test_convtranspose_output_shape);
                // its kernel checks every output index.
                {"pads", pads, 2 * spatial,
                 code == OpCode::ConvTranspose ? -kMaxWindowValue : 0}};
  for (const Field &field : fields) {
    const Attr *attr = op.getAttr(field.name);
    if (!attr)
      continue;
    if (attr->ints.size() != field.count)
      return std::string(field.name) + " has " +
             std::to_string(attr->ints.size()) + " values, expects " +
             std::to_string(field.count);
    for (size_t i = 0; i < field.count; ++i) {
      int64_t v = attr->ints[i];
      if (v < field.low || v > kMaxWindowValue)
        return std::string(field.name) + "[" + std::to_string(i) +
               "] = " + std::to_string(v) + " is out of range [" +
               std::to_string(field.low) + ", " +
               std::to_string(kMaxWindowValue) + "]";
      field.values[i] = v;
    }
  }
  if (!weight && !op.getAttr("kernel_shape"))
    return "kernel_shape is required";
  std::optional<uint64_t> taps = uint64_t(1);
  for (size_t i = 0; i < spatial; ++i) {
    if (kernel[i] < 1)
      return "kernel size " + std::to_string(kernel[i]) + " of spatial dim " +
             std::to_string(i) + " is not positive";
    if (taps)
      taps = checkedMul(*taps, uint64_t(kernel[i]));
    int64_t in = x.dims[2 + i], out = y.dims[2 + i];
    std::optional<int64_t> span =
        checkedMulSigned(std::max(in, out), stride[i]);
    for (std::optional<int64_t> term :
         {checkedMulSigned(kernel[i], dilation[i]),
          std::optional<int64_t>(std::abs(pads[i])),
          std::optional<int64_t>(std::abs(pads[spatial + i])),
          std::optional<int64_t>(in),
          std::optional<int64_t>(out)})
      span = span && term ? checkedAddSigned(*span, *term) : std::nullopt;
    if (!span || *span > kMaxWindowSpan)
      return "window of spatial dim " + std::to_string(i) + " (size " +
             std::to_string(in) + " -> " + std::to_string(out) + ", kernel " +
             std::to_string(kernel[i]) + ", stride " +
             std::to_string(stride[i]) + ", dilation " +
             std::to_string(dilation[i]) + ") overflows";
  }
  if (!taps || *taps > kMaxTensorBytes)
    return "kernel_shape has too many taps";
  if (const Attr *group = op.getAttr("group"))
    if (group->i < 1 || group->i > x.dims[1])
      return "group " + std::to_string(group->i) + " is out of range";
  return "";
}

/// Operand 1 of the gathers and scatters: the kernels load it as integers.
std::string checkIndexType(const PlanOp &op) {
  const Location &indices = op.operands[1];
  if (indices.dtype != DTypeI32 && indices.dtype != DTypeI64)
    return std::string("indices must be i32 or i64, not ") +
           dtypeName(indices.dtype);
  return "";
}

std::string checkGather(const PlanOp &op) {
  const Location &x = op.operands[0], &indices = op.operands[1],
                 &y = op.results[0];
  if (std::string reason = checkIndexType(op); !reason.empty())
    return reason;
  int64_t rank = int64_t(x.dims.size());
  if (rank < 1)
    return "operand 0 must have rank >= 1";
  if (std::string reason = checkAxis(op, rank, false); !reason.empty())
    return reason;
  // The result holds outer x count x inner elements of operand 0.
  int64_t axis = op.getAttr("axis") ? op.getAttr("axis")->i : 0;
  if (axis < 0)
    axis += rank;
  if (!x.dims[axis])
    return indices.numElements ? "indices into an empty axis" : "";
  std::optional<uint64_t> bytes = checkedMul(x.bytes / uint64_t(x.dims[axis]),
                                             uint64_t(indices.numElements));
  if (!bytes || *bytes != y.bytes)
    return "result of " + std::to_string(y.bytes) +
           " bytes does not match the gather";
  return "";
}

/// CumSum, GatherElements, GatherND, ScatterElements, ScatterND
/// (runtime/host/kernels/IndexingKernels.cpp): the axis within the rank,
/// and indices that address only inside the data (the kernels check each
/// index value as they run), so that every offset they compute is in
/// bounds.
std::string checkIndexing(const PlanOp &op, OpCode code) {
  const Location &x = op.operands[0], &y = op.results[0];
  int64_t rank = int64_t(x.dims.size());
  if (rank < 1)
    return "operand 0 must have rank >= 1";
  bool scatter =
      code == OpCode::ScatterElements || code == OpCode::ScatterND;
  if (scatter && (y.bytes != x.bytes || op.operands[2].dtype != x.dtype))
    return "data, updates and result differ";
  if (code == OpCode::CumSum) {
    if (y.bytes != x.bytes)
      return "result differs from the operand in size";
    if (op.operands.size() > 1 && op.operands[1].isPresent() &&
        (op.operands[1].numElements != 1 ||
         (op.operands[1].dtype != DTypeI32 && op.operands[1].dtype != DTypeI64)))
      return "axis must be one i32 or i64";
    return checkAxis(op, rank, false);
  }
  if (std::string reason = checkIndexType(op); !reason.empty())
    return reason;
  const Location &indices = op.operands[1];
  int64_t q = int64_t(indices.dims.size());
  if (code == OpCode::GatherElements || code == OpCode::ScatterElements) {
    if (std::string reason = checkAxis(op, rank, false); !reason.empty())
      return reason;
    int64_t axis = op.getAttr("axis") ? op.getAttr("axis")->i : 0;
    axis = axis < 0 ? axis + rank : axis;
    if (q != rank)
      return "indices and data differ in rank";
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && indices.dims[d] > x.dims[d])
        return "indices exceed the data in dim " + std::to_string(d);
    const Location &other = scatter ? op.operands[2] : y;
    if (other.dims != indices.dims)
      return std::string(scatter ? "updates" : "result") +
             " and indices differ in dims";
    return "";
  }
  int64_t batchDims = op.getAttr("batch_dims") ? op.getAttr("batch_dims")->i : 0;
  if (q < 1 || batchDims < 0 || batchDims >= std::min(rank, q))
    return "batch_dims " + std::to_string(batchDims) +
           " is out of range for the ranks";
  int64_t depth = indices.dims[q - 1];
  if (depth < 1 || depth > rank - batchDims)
    return "index tuples of " + std::to_string(depth) +
           " do not fit the data's rank";
  for (int64_t d = 0; d < batchDims; ++d)
    if (indices.dims[d] != x.dims[d])
      return "batch dims of the indices and data differ";
  // What the tuples select: indices.dims[:-1] + data.dims[batch + depth:].
  std::vector<int64_t> selected(indices.dims.begin(), indices.dims.end() - 1);
  selected.insert(selected.end(), x.dims.begin() + batchDims + depth,
                  x.dims.end());
  if ((scatter ? op.operands[2] : y).dims != selected)
    return std::string(scatter ? "updates" : "result") +
           " do not match the index tuples";
  return "";
}

/// TopK (runtime/host/kernels/TopKKernel.cpp): k within the axis, both
/// results the operand's dims with the axis cut to k (values of its dtype,
/// i64 indices), so that every line the kernels read and write is inside.
std::string checkTopK(const PlanOp &op) {
  const Location &x = op.operands[0];
  int64_t rank = int64_t(x.dims.size());
  if (rank < 1)
    return "operand 0 must have rank >= 1";
  if (op.results.size() != 2)
    return "expects 2 results";
  if (std::string reason = checkAxis(op, rank, false); !reason.empty())
    return reason;
  int64_t axis = op.getAttr("axis") ? op.getAttr("axis")->i : -1;
  axis = axis < 0 ? axis + rank : axis;
  const Attr *k = op.getAttr("k");
  if (!k || k->i < 1 || k->i > x.dims[axis])
    return "k must lie in [1, " + std::to_string(x.dims[axis]) + "]";
  std::vector<int64_t> dims = x.dims;
  dims[axis] = k->i;
  if (op.results[0].dims != dims || op.results[1].dims != dims)
    return "results must be the operand's dims with axis " +
           std::to_string(axis) + " of k";
  if (op.results[0].dtype != x.dtype || op.results[1].dtype != DTypeI64)
    return "results must be the operand's dtype and i64";
  return "";
}

/// GridSample (runtime/host/kernels/GridSampleKernel.cpp): 1 to 3 spatial
/// dims, a float grid [N, out spatial..., k] and the result [N, C, out
/// spatial...], a non-empty input where the result is not empty (the taps
/// clamp into [0, size)), so that every element the kernels address exists.
std::string checkGridSample(const PlanOp &op) {
  const Location &x = op.operands[0], &grid = op.operands[1],
                 &y = op.results[0];
  size_t rank = x.dims.size();
  if (rank < 3 || rank > 5)
    return "operand 0 must have 1 to 3 spatial dims";
  if (grid.dtype != DTypeF32 && grid.dtype != DTypeF64 &&
      grid.dtype != DTypeF16 && grid.dtype != DTypeBF16)
    return std::string("grid must be a float tensor, not ") +
           dtypeName(grid.dtype);
  if (grid.dims.size() != rank || grid.dims[0] != x.dims[0] ||
      grid.dims[rank - 1] != int64_t(rank - 2))
    return "grid does not match the operand";
  std::vector<int64_t> expected{x.dims[0], x.dims[1]};
  expected.insert(expected.end(), grid.dims.begin() + 1, grid.dims.end() - 1);
  if (y.dims != expected || y.dtype != x.dtype)
    return "result does not match the operand and grid";
  if (y.numElements && !x.numElements)
    return "cannot sample an empty tensor";
  return "";
}

const std::vector<int64_t> *intsAttr(const PlanOp &op, const char *name) {
  const Attr *attr = op.getAttr(name);
  return attr && attr->kind == AttrInts ? &attr->ints : nullptr;
}

/// An Int attribute `name`, when present, within [low, high].
std::string checkIntRange(const PlanOp &op, const char *name, int64_t low,
                          int64_t high) {
  const Attr *attr = op.getAttr(name);
  if (!attr || attr->kind != AttrInt || (attr->i >= low && attr->i <= high))
    return "";
  return std::string(name) + " " + std::to_string(attr->i) +
         " is out of range [" + std::to_string(low) + ", " +
         std::to_string(high) + "]";
}

/// Slice's canonical starts/axes/steps: every element the result reads
/// lies inside the operand (the kernel's start + (dim - 1) * step).
std::string checkSlice(const PlanOp &op) {
  const Location &x = op.operands[0], &y = op.results[0];
  int64_t rank = int64_t(x.dims.size());
  if (int64_t(y.dims.size()) != rank)
    return "result rank differs from the operand's";
  const std::vector<int64_t> *starts = intsAttr(op, "starts");
  const std::vector<int64_t> *axes = intsAttr(op, "axes");
  const std::vector<int64_t> *steps = intsAttr(op, "steps");
  std::vector<int64_t> start(rank, 0), step(rank, 1);
  if (starts)
    for (size_t i = 0; i < starts->size(); ++i) {
      int64_t axis = axes && i < axes->size() ? (*axes)[i] : int64_t(i);
      if (axis < -rank || axis >= rank)
        return "slice axis " + std::to_string(axis) + " is out of range";
      if (axis < 0)
        axis += rank;
      start[axis] = (*starts)[i];
      step[axis] = steps && i < steps->size() ? (*steps)[i] : 1;
    }
  for (int64_t d = 0; d < rank; ++d)
    if (!isStridedRangeInside(start[d], step[d], y.dims[d], x.dims[d]))
      return "slice of dim " + std::to_string(d) + " reads outside the operand";
  return "";
}

/// Pad's `pads` attribute: 2 x rank values that give the result's dims.
std::string checkPad(const PlanOp &op) {
  const std::vector<int64_t> *pads = intsAttr(op, "pads");
  if (!pads)
    return "";
  const Location &x = op.operands[0], &y = op.results[0];
  size_t rank = x.dims.size();
  if (pads->size() != 2 * rank || y.dims.size() != rank)
    return "pads must hold 2 x rank values";
  for (size_t d = 0; d < rank; ++d) {
    std::optional<int64_t> dim = checkedAddSigned(x.dims[d], (*pads)[d]);
    if (dim)
      dim = checkedAddSigned(*dim, (*pads)[rank + d]);
    if (!dim || *dim != y.dims[d] || (*pads)[d] < -x.dims[d] ||
        (*pads)[d] > y.dims[d])
      return "pads of dim " + std::to_string(d) + " do not match the result";
  }
  return "";
}

std::string checkResize(const PlanOp &op) {
  const Location &x = op.operands[0], &y = op.results[0];
  if (y.dims.size() != x.dims.size())
    return "result rank differs from the operand's";
  // The kernel maps output coordinate o to about o / scale and converts
  // that to int64_t: it must fit.
  if (const Attr *scales = op.getAttr("scales"))
    for (size_t d = 0; d < scales->floats.size(); ++d) {
      double scale = scales->floats[d];
      double extent = d < y.dims.size() ? double(y.dims[d]) + 1 : 1;
      if (!(scale > 0 && scale < 1e30 && extent / scale < 0x1p60))
        return "scale " + std::to_string(scale) + " of dim " +
               std::to_string(d) + " is out of range";
    }
  if (!x.numElements && y.numElements)
    return "cannot resize an empty tensor";
  return "";
}

/// DepthToSpace and SpaceToDepth: 4-d, a blocksize whose square times the
/// channels cannot overflow.
std::string checkBlocks(const PlanOp &op) {
  const Location &x = op.operands[0], &y = op.results[0];
  if (x.dims.size() != 4 || y.dims.size() != 4)
    return "expects 4-d tensors";
  const Attr *block = op.getAttr("blocksize");
  if (!block)
    return "blocksize is required";
  return checkIntRange(op, "blocksize", 1, kMaxWindowValue);
}

/// Whether operand 0 of `spec` may hold bundle dtype `code`.
bool acceptsCode(const OpSpec &spec, uint8_t code) {
  std::optional<DType> type = fromBundleCode(code);
  return type && spec.acceptsDType(*type);
}

/// Ops.def's DTYPES column and the family's type rule (Ops.def's header):
/// what the compiler's verifier checks, so a compiled plan always passes.
std::string checkTypes(const PlanOp &op, const OpSpec &spec) {
  const Location &result = op.results[0];
  if (!op.operands.empty() && op.operands[0].isPresent() &&
      !acceptsCode(spec, op.operands[0].dtype))
    return std::string("operand 0 has dtype ") +
           dtypeName(op.operands[0].dtype) + ", which the op does not take";
  switch (spec.family) {
  case OpFamily::Unary:
    if (result.dtype != op.operands[0].dtype ||
        result.dims != op.operands[0].dims)
      return std::string("result 0 (") + dtypeName(result.dtype) +
             dimsText(result.dims) + ") differs from operand 0 (" +
             dtypeName(op.operands[0].dtype) + dimsText(op.operands[0].dims) +
             ")";
    return "";
  case OpFamily::Broadcast:
  case OpFamily::Compare:
    for (size_t k = 0; k < op.operands.size(); ++k)
      if (op.operands[k].isPresent() &&
          op.operands[k].dtype != op.operands[0].dtype)
        return "operand " + std::to_string(k) + " has dtype " +
               dtypeName(op.operands[k].dtype) + ", operand 0 " +
               dtypeName(op.operands[0].dtype);
    if (spec.family == OpFamily::Compare ? result.dtype != DTypeBool
                                     : result.dtype != op.operands[0].dtype)
      return std::string("result 0 has dtype ") + dtypeName(result.dtype) +
             ", expects " +
             (spec.family == OpFamily::Compare ? "bool"
                                           : dtypeName(op.operands[0].dtype));
    return "";
  case OpFamily::Other:
    return "";
  }
  return "";
}

/// MatMul (numpy): the kernel's batch x m x n, computed without overflow,
/// is the result's element count.
std::string checkMatMul(const PlanOp &op) {
  std::vector<int64_t> a = op.operands[0].dims, b = op.operands[1].dims;
  if (a.empty() || b.empty())
    return "operands must have rank >= 1";
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  if (b[b.size() - 2] != a.back())
    return "inner dims differ (" + std::to_string(a.back()) + " and " +
           std::to_string(b[b.size() - 2]) + ")";
  std::optional<uint64_t> count =
      checkedMul(uint64_t(a[a.size() - 2]), uint64_t(b.back()));
  size_t batchA = a.size() - 2, batchB = b.size() - 2;
  for (size_t i = 0; i < std::max(batchA, batchB) && count; ++i) {
    int64_t x = i < batchA ? a[batchA - 1 - i] : 1;
    int64_t y = i < batchB ? b[batchB - 1 - i] : 1;
    if (x != y && x != 1 && y != 1)
      return "batch dims do not broadcast";
    count = checkedMul(*count, uint64_t(std::max(x, y)));
  }
  if (!count || *count != uint64_t(op.results[0].numElements))
    return "result does not hold the product";
  return "";
}

/// Whether `code`'s host kernel copies elements of operand 0 (and of the
/// other data operands, for Concat) into its results by the results'
/// element size (DataMovementKernels.cpp, IndexingKernels.cpp): ONNX gives
/// these ops one type for the data in and out, and a result of a wider
/// dtype would read past the operand (a mutated Resize did).
bool movesOperandElements(OpCode code) {
  switch (code) {
  case OpCode::Concat:
  case OpCode::DepthToSpace:
  case OpCode::SpaceToDepth:
  case OpCode::Expand:
  case OpCode::Gather:
  case OpCode::Pad:
  case OpCode::Resize:
  case OpCode::Slice:
  case OpCode::Split:
  case OpCode::Tile:
  case OpCode::Transpose:
  case OpCode::GatherElements:
  case OpCode::GatherND:
  case OpCode::ScatterElements:
  case OpCode::ScatterND:
    return true;
  default:
    return false;
  }
}

/// The data-movement ops' results (and Concat's operands) have operand 0's
/// dtype.
std::string checkMovedDTypes(const PlanOp &op, OpCode code) {
  uint8_t dtype = op.operands[0].dtype;
  for (size_t k = 0; k < op.results.size(); ++k)
    if (op.results[k].isPresent() && op.results[k].dtype != dtype)
      return "result " + std::to_string(k) + " has dtype " +
             dtypeName(op.results[k].dtype) + ", operand 0 " +
             dtypeName(dtype) + " (the op moves its elements)";
  if (code == OpCode::Concat)
    for (size_t k = 1; k < op.operands.size(); ++k)
      if (op.operands[k].isPresent() && op.operands[k].dtype != dtype)
        return "operand " + std::to_string(k) + " has dtype " +
               dtypeName(op.operands[k].dtype) + ", operand 0 " +
               dtypeName(dtype);
  return "";
}

/// The op-specific rules; "" when `op` passes.
std::string checkOp(const PlanOp &op, const OpSpec &spec) {
  const Location &result = op.results[0];
  if (std::string why = checkTypes(op, spec); !why.empty())
    return why;
  if (movesOperandElements(spec.code) && !op.operands.empty() &&
      op.operands[0].isPresent())
    if (std::string why = checkMovedDTypes(op, spec.code); !why.empty())
      return why;
  if ((spec.traits & op_traits::Elementwise) != 0)
    for (size_t k = 0; k < op.operands.size(); ++k)
      if (op.operands[k].isPresent() &&
          !broadcastsTo(op.operands[k].dims, result.dims))
        return "operand " + std::to_string(k) + " " +
               dimsText(op.operands[k].dims) +
               " does not broadcast to the result " + dimsText(result.dims);
  if ((spec.traits & op_traits::View) != 0 &&
      op.operands[0].bytes != result.bytes)
    return "view of " + std::to_string(op.operands[0].bytes) +
           " bytes has a result of " + std::to_string(result.bytes);
  int64_t rank = int64_t(op.operands.empty() ? 0 : op.operands[0].dims.size());
  switch (spec.code) {
  case OpCode::Conv:
  case OpCode::ConvTranspose:
    return checkWindow(op, spec.code, &op.operands[1]);
  case OpCode::MaxPool:
  case OpCode::AveragePool:
    return checkWindow(op, spec.code, nullptr);
  case OpCode::Gather:
    return checkGather(op);
  case OpCode::CumSum:
  case OpCode::GatherElements:
  case OpCode::GatherND:
  case OpCode::ScatterElements:
  case OpCode::ScatterND:
    return checkIndexing(op, spec.code);
  case OpCode::TopK:
    return checkTopK(op);
  case OpCode::GridSample:
    return checkGridSample(op);
  case OpCode::Slice:
    return checkSlice(op);
  case OpCode::MatMul:
    return checkMatMul(op);
  case OpCode::Pad:
    return checkPad(op);
  case OpCode::Resize:
    return checkResize(op);
  case OpCode::DepthToSpace:
  case OpCode::SpaceToDepth:
    return checkBlocks(op);
  case OpCode::LRN:
    return checkIntRange(op, "size", 1, kMaxWindowValue);
  case OpCode::SnugCheckLabels: // a check without classes would pass nothing
    if (!op.getAttr("classes") || op.getAttr("classes")->kind != AttrInt)
      return "classes is required";
    return checkIntRange(op, "classes", 1, INT64_MAX);
  case OpCode::Flatten:
    return checkAxis(op, rank, true);
  case OpCode::Concat:
  case OpCode::Split:
  case OpCode::Softmax:
  case OpCode::LogSoftmax:
  case OpCode::Hardmax:
  case OpCode::LayerNormalization:
  case OpCode::ArgMax:
  case OpCode::ArgMin:
    return checkAxis(op, rank, false);
  default:
    return "";
  }
}

bool overlaps(const Location &a, const Location &b) {
  return a.kind == Arena && b.kind == Arena && a.bytes && b.bytes &&
         a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
}

/// The kernels' aliasing contract (runtime/host/Kernels.h): a result lies
/// exactly on an operand only for ops written for it (the InPlace and View
/// traits, Cast, snug.fused), anywhere over its operands for Concat (which
/// moves each operand into its slice with memmove), and apart from every
/// operand otherwise; results lie apart from each other. Many kernels copy
/// elements with memcpy, for which overlapping ranges are undefined.
std::string checkAliasing(const PlanOp &op, const OpSpec &spec) {
  bool exactAllowed = (spec.traits & (op_traits::InPlace | op_traits::View)) ||
                      spec.code == OpCode::Cast ||
                      spec.code == OpCode::SnugCast ||
                      spec.code == OpCode::SnugFused;
  bool anyAllowed = spec.code == OpCode::Concat;
  for (size_t r = 0; r < op.results.size(); ++r) {
    const Location &result = op.results[r];
    for (size_t k = 0; k < op.operands.size() && !anyAllowed; ++k) {
      const Location &operand = op.operands[k];
      if (!overlaps(result, operand))
        continue;
      if (exactAllowed && operand.offset == result.offset &&
          operand.bytes == result.bytes)
        continue;
      return "result " + std::to_string(r) + " (" +
             std::to_string(result.bytes) + " bytes at arena offset " +
             std::to_string(result.offset) + ") overlaps operand " +
             std::to_string(k) + " (" + std::to_string(operand.bytes) +
             " bytes at offset " + std::to_string(operand.offset) + ")";
    }
    for (size_t other = 0; other < r; ++other)
      if (overlaps(result, op.results[other]))
        return "results " + std::to_string(other) + " and " +
               std::to_string(r) + " overlap in the arena";
  }
  return "";
}

std::string checkHostOp(const PlanOp &op) {
  const OpSpec *spec = nullptr;
  std::string reason = checkSignature(op.opName, op.getNumOwnOperands(),
                                      op.results.size(), op.attributes, spec);
  if (!reason.empty())
    return reason;
  for (int k = 0; k < spec->minOperands; ++k)
    if (!op.operands[k].isPresent())
      return "operand " + std::to_string(k) + " is required but absent";
  // The pinned host region holds snug.offload's results, read by
  // snug.reload alone (every kernel reads and writes the arena).
  bool hostResult = spec->traits & op_traits::HostResult;
  for (size_t k = 0; k < op.results.size(); ++k)
    if (op.results[k].kind != (hostResult ? Host : Arena))
      return "result " + std::to_string(k) +
             (hostResult ? " is not in the pinned host region"
                         : " has no arena location");
  bool readsHost = spec->code == OpCode::SnugReload;
  for (size_t k = 0; k < op.operands.size(); ++k)
    if (op.operands[k].isPresent() && (op.operands[k].kind == Host) != readsHost)
      return "operand " + std::to_string(k) +
             (readsHost ? " is not in the pinned host region"
                        : " is in the pinned host region, which only "
                          "snug.reload reads");
  if (op.hasBody)
    for (size_t i = 0; i < op.body.ops.size(); ++i) {
      const BodyOp &inner = op.body.ops[i];
      const OpSpec *innerSpec = nullptr;
      std::string why =
          checkSignature(inner.opName, inner.operands.size(),
                         inner.results.size(), inner.attributes, innerSpec);
      if (why.empty() &&
          !(innerSpec->traits & (op_traits::Elementwise | op_traits::Conversion)))
        why = "op '" + inner.opName + "' is not elementwise or a conversion";
      for (int k = 0; why.empty() && k < innerSpec->minOperands; ++k)
        if (inner.operands[k] == kNoValue)
          why = "operand " + std::to_string(k) + " is required but absent";
      if (!why.empty())
        return "body op " + std::to_string(i) +
               (inner.nodeName.empty() ? "" : " '" + inner.nodeName + "'") +
               " (" + inner.opName + "): " + why;
    }
  if (std::string why = checkAliasing(op, *spec); !why.empty())
    return why;
  return checkOp(op, *spec);
}

/// A snug.skip_if skips steps of its plan only: `count` of the `following`
/// ops, on a bool condition.
std::string checkSkip(const PlanOp &op, size_t following) {
  if (op.operands[0].dtype != DTypeBool || op.operands[0].numElements != 1)
    return "its condition is not one bool";
  std::string why = checkIntRange(op, "when", 0, 1);
  if (why.empty())
    why = checkIntRange(op, "count", 0, int64_t(following));
  return why.empty() ? "" : why + " (" + std::to_string(following) +
                                " ops follow it)";
}

} // namespace

bool isKnownOp(const std::string &opName) { return findOp(opName) != nullptr; }

int getEpilogueArity(const std::string &opName) {
  const OpSpec *spec = findOp(opName);
  return spec && (spec->traits & op_traits::Epilogue) ? spec->maxOperands : -1;
}

Status verifyPlan(const Bundle &bundle) {
  for (size_t i = 0; i < bundle.ops.size(); ++i) {
    const PlanOp &op = bundle.ops[i];
    std::string reason = checkHostOp(op);
    if (reason.empty() && op.opName == "snug.skip_if")
      reason = checkSkip(op, bundle.ops.size() - 1 - i);
    if (!reason.empty())
      return invalidBundle("bundle '" + bundle.path + "': " + op.describe(i) +
                           ": " + reason);
  }
  return Status::ok();
}

bool broadcastsTo(const std::vector<int64_t> &dims,
                  const std::vector<int64_t> &shape) {
  if (dims.size() > shape.size())
    return false;
  size_t lead = shape.size() - dims.size();
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] != 1 && dims[i] != shape[lead + i])
      return false;
  return true;
}

} // namespace rt
} // namespace snug
