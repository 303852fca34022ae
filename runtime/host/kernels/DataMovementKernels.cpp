//===- DataMovementKernels.cpp - Views, copies, gathers, resizes, casts ---===//
//
// Byte-level kernels: they move elements of any dtype without looking at
// them (except Cast, Pad's constant and Resize's interpolation), and the
// fills: Constant, ConstantOfShape, Range and training Dropout's mask
// (snug.dropout_mask, its hash in core/ScalarOps.h). View ops
// (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) copy bytes and
// skip the copy when the planner put the result on the operand; the host
// offload copies (snug.offload, snug.reload) are the same byte copy between
// the arena and the pinned host region. Concat skips
// an operand that already sits at its slice of the result. Parameters are
// canonical attributes: Slice starts/ends/axes/steps resolved (in range, no
// negative axes), Pad `pads` (+ `mode`, constant from `value` or operand 2),
// Resize `sizes` (+ optional `scales`), Expand/Reshape `shape`, Tile
// `repeats`, Split `split`, Cast `to` (a dtype name such as "f32").
//
//===----------------------------------------------------------------------===//
#include "runtime/host/Kernels.h"
#include "core/CheckedArithmetic.h"
#include "core/ResizeCoordinates.h"
#include "core/ScalarOps.h"

#include <algorithm>
#include <cmath>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

Status viewKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  if (x.bytes != y.bytes)
    return ctx.error("operand and result differ in size");
  copyBytes(y.data, x.data, y.bytes);
  return Status::ok();
}

/// Inference-mode Dropout: the identity, and an all-true mask if asked.
Status dropoutKernel(KernelContext &ctx) {
  if (ctx.hasInput(2) && ctx.in(2).numElements &&
      loadInt(ctx.in(2).data, ctx.in(2).dtype, 0))
    return ctx.error("training_mode is not supported");
  if (Status s = viewKernel(ctx))
    return s;
  if (ctx.outputs.size() > 1 && ctx.out(1).present)
    for (int64_t i = 0; i < ctx.out(1).numElements; ++i)
      storeInt(ctx.out(1).data, ctx.out(1).dtype, i, 1);
  return Status::ok();
}

Status transposeKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  size_t rank = x.getRank();
  std::vector<int64_t> perm;
  if (const std::vector<int64_t> *given = ctx.getInts("perm"))
    perm = *given;
  else
    for (size_t i = rank; i-- > 0;)
      perm.push_back(int64_t(i));
  if (perm.size() != rank || y.getRank() != rank)
    return ctx.error("perm does not match the rank");
  std::vector<int64_t> inStrides = stridesOf(*x.dims);
  std::vector<int64_t> permuted(rank);
  std::vector<bool> seen(rank, false);
  for (size_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= int64_t(rank) || seen[perm[d]] ||
        y.dim(d) != x.dim(perm[d]))
      return ctx.error("perm is not a permutation matching the result");
    seen[perm[d]] = true;
    permuted[d] = inStrides[perm[d]];
  }
  // Walk the result in order; `permuted` gives the input stride of each dim.
  std::vector<int64_t> counter(rank, 0);
  unsigned size = y.elementSize();
  int64_t src = 0;
  for (int64_t i = 0; i < y.numElements; ++i) {
    std::memcpy(y.data + i * size, x.data + src * size, size);
    for (size_t d = rank; d-- > 0;) {
      if (++counter[d] < y.dim(d)) {
        src += permuted[d];
        break;
      }
      src -= permuted[d] * (y.dim(d) - 1);
      counter[d] = 0;
    }
  }
  return Status::ok();
}

int64_t axisAttr(const KernelContext &ctx, int64_t rank, int64_t fallback) {
  int64_t axis = ctx.getInt("axis", fallback);
  return axis < 0 ? axis + rank : axis;
}

/// A tensor seen around its `axis` attribute (default 0): `outer` blocks,
/// each `dim(axis)` steps of `inner` bytes. Concat, Split and Gather move
/// whole inner runs.
struct AxisSplit {
  int64_t axis = 0;
  int64_t outer = 1;
  int64_t inner = 0;
};

static Status splitAroundAxis(KernelContext &ctx, const TensorView &view,
                              AxisSplit &split) {
  int64_t rank = view.getRank();
  split.axis = axisAttr(ctx, rank, 0);
  if (split.axis < 0 || split.axis >= rank)
    return ctx.error("axis out of range");
  split.outer = 1;
  split.inner = view.elementSize();
  for (int64_t d = 0; d < rank; ++d)
    if (d < split.axis)
      split.outer *= view.dim(d);
    else if (d > split.axis)
      split.inner *= view.dim(d);
  return Status::ok();
}

Status concatKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &y = ctx.out(0);
  AxisSplit split;
  if (Status s = splitAroundAxis(ctx, y, split))
    return s;
  int64_t rank = y.getRank(), axis = split.axis;
  int64_t outer = split.outer, inner = split.inner;
  int64_t total = 0;
  for (const TensorView &x : ctx.inputs)
    if (!x.present || x.getRank() != uint64_t(rank))
      return ctx.error("operands must be present and of the result's rank");
    else
      total += x.dim(axis);
  if (total != y.dim(axis))
    return ctx.error("operands do not add up to the result along the axis");
  int64_t rowBytes = y.dim(axis) * inner, at = 0;
  for (const TensorView &x : ctx.inputs)
    if (x.bytes != uint64_t(outer * x.dim(axis) * inner))
      return ctx.error("operands differ from the result off the axis");
  for (const TensorView &x : ctx.inputs) {
    int64_t chunk = x.dim(axis) * inner;
    for (int64_t o = 0; o < outer; ++o)
      copyBytes(y.data + o * rowBytes + at, x.data + o * chunk, chunk);
    at += chunk;
  }
  return Status::ok();
}

Status splitKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0);
  AxisSplit split;
  if (Status s = splitAroundAxis(ctx, x, split))
    return s;
  int64_t rank = x.getRank(), axis = split.axis;
  int64_t outer = split.outer, inner = split.inner;
  int64_t rowBytes = x.dim(axis) * inner, at = 0;
  for (const TensorView &y : ctx.outputs) {
    if (y.getRank() != uint64_t(rank))
      return ctx.error("results must have the operand's rank");
    int64_t chunk = y.dim(axis) * inner;
    if (y.bytes != uint64_t(outer * chunk))
      return ctx.error("results differ from the operand off the axis");
    if (at + chunk > rowBytes)
      return ctx.error("results exceed the operand along the axis");
    for (int64_t o = 0; o < outer; ++o)
      copyBytes(y.data + o * chunk, x.data + o * rowBytes + at, chunk);
    at += chunk;
  }
  return Status::ok();
}

/// Visits every element of `dims` with its multi-index.
template <typename F> void forEachIndex(const std::vector<int64_t> &dims, F f) {
  int64_t total = 1;
  for (int64_t d : dims)
    total *= d;
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, index);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d])
        break;
      index[d] = 0;
    }
  }
}

Status sliceKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  size_t rank = x.getRank();
  if (y.getRank() != rank)
    return ctx.error("result rank differs from the operand's");
  const std::vector<int64_t> *starts = ctx.getInts("starts");
  const std::vector<int64_t> *axes = ctx.getInts("axes");
  const std::vector<int64_t> *steps = ctx.getInts("steps");
  std::vector<int64_t> start(rank, 0), step(rank, 1);
  if (starts) {
    for (size_t i = 0; i < starts->size(); ++i) {
      int64_t axis = axes && i < axes->size() ? (*axes)[i] : int64_t(i);
      if (axis < 0)
        axis += rank;
      if (axis < 0 || axis >= int64_t(rank))
        return ctx.error("slice axis out of range");
      start[axis] = (*starts)[i];
      step[axis] = steps && i < steps->size() ? (*steps)[i] : 1;
    }
  }
  for (size_t d = 0; d < rank; ++d)
    if (!isStridedRangeInside(start[d], step[d], y.dim(d), x.dim(d)))
      return ctx.error("slice of dim " + std::to_string(d) +
                       " reads outside the operand");
  std::vector<int64_t> strides = stridesOf(*x.dims);
  unsigned size = y.elementSize();
  forEachIndex(*y.dims, [&](int64_t i, const std::vector<int64_t> &index) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d)
      src += (start[d] + index[d] * step[d]) * strides[d];
    std::memcpy(y.data + i * size, x.data + src * size, size);
  });
  return Status::ok();
}

Status gatherKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(2, 1))
    return s;
  const TensorView &x = ctx.in(0), &indices = ctx.in(1), &y = ctx.out(0);
  AxisSplit split;
  if (Status s = splitAroundAxis(ctx, x, split))
    return s;
  int64_t axis = split.axis, outer = split.outer, inner = split.inner;
  int64_t n = x.dim(axis), count = indices.numElements;
  if (y.bytes != uint64_t(outer * count * inner))
    return ctx.error("result size does not match the gather");
  for (int64_t k = 0; k < count; ++k) {
    int64_t index = loadInt(indices.data, indices.dtype, k);
    if (index < 0)
      index += n;
    if (index < 0 || index >= n)
      return ctx.dataError(
          1, "index " + std::to_string(loadInt(indices.data, indices.dtype, k)) +
                 " out of range for dim " + std::to_string(n) +
                 " (indices must lie in [" + std::to_string(-n) + ", " +
                 std::to_string(n) + "))");
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y.data + (o * count + k) * inner,
                  x.data + (o * n + index) * inner, inner);
  }
  return Status::ok();
}

Status padKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  int64_t rank = x.getRank();
  const std::vector<int64_t> *pads = ctx.getInts("pads");
  std::vector<int64_t> padsFromOperand;
  if (!pads && ctx.hasInput(1)) {
    for (int64_t i = 0; i < ctx.in(1).numElements; ++i)
      padsFromOperand.push_back(loadInt(ctx.in(1).data, ctx.in(1).dtype, i));
    pads = &padsFromOperand;
  }
  if (!pads || int64_t(pads->size()) != 2 * rank || y.getRank() != x.getRank())
    return ctx.error("pads must hold 2 x rank values");
  for (int64_t d = 0; d < rank; ++d)
    if (y.dim(d) != x.dim(d) + (*pads)[d] + (*pads)[rank + d])
      return ctx.error("result dims do not match the pads");
  std::string mode = ctx.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return ctx.error("unsupported mode '" + mode + "'");
  double value = ctx.getFloat("value", 0.0f);
  if (ctx.hasInput(2) && ctx.in(2).numElements)
    value = loadDouble(ctx.in(2).data, ctx.in(2).dtype, 0);
  std::vector<uint8_t> constant(y.elementSize());
  storeDouble(constant.data(), y.dtype, 0, value);
  std::vector<int64_t> strides = stridesOf(*x.dims);
  unsigned size = y.elementSize();
  bool empty = x.numElements == 0;
  if (empty && mode != "constant")
    return ctx.error("cannot " + mode + "-pad an empty tensor");
  forEachIndex(*y.dims, [&](int64_t i, const std::vector<int64_t> &index) {
    int64_t src = 0;
    bool outside = false;
    for (int64_t d = 0; d < rank && !outside; ++d) {
      int64_t n = x.dim(d), at = index[d] - (*pads)[d];
      if (at < 0 || at >= n) {
        if (mode == "constant") {
          outside = true;
        } else if (mode == "edge") {
          at = at < 0 ? 0 : n - 1;
        } else if (mode == "wrap") {
          at = ((at % n) + n) % n;
        } else { // reflect (no edge repeat)
          int64_t period = n > 1 ? 2 * (n - 1) : 1;
          at = ((at % period) + period) % period;
          if (at >= n)
            at = period - at;
        }
      }
      src += at * strides[d];
    }
    const uint8_t *from = outside ? constant.data() : x.data + src * size;
    std::memcpy(y.data + i * size, from, size);
  });
  return Status::ok();
}

Status resizeKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  size_t rank = x.getRank();
  if (y.getRank() != rank)
    return ctx.error("result rank differs from the operand's");
  std::string mode = ctx.getString("mode", "nearest");
  std::string transform =
      ctx.getString("coordinate_transformation_mode", "half_pixel");
  std::string nearest = ctx.getString("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return ctx.error("mode '" + mode + "' is not supported");
  const std::vector<float> *given = ctx.getFloats("scales");
  const std::vector<float> *roi = ctx.getFloats("roi");
  if (transform == "tf_crop_and_resize" && (!roi || roi->size() != 2 * rank))
    return ctx.error("tf_crop_and_resize needs a roi of 2 x rank values");
  if (x.numElements == 0 && y.numElements)
    return ctx.error("cannot resize an empty tensor");
  // Per axis, every output coordinate's taps (core/ResizeCoordinates.h).
  std::vector<resize::AxisTable> tables;
  for (size_t d = 0; d < rank; ++d) {
    resize::Axis axis;
    axis.mode = mode, axis.transform = transform, axis.nearest = nearest;
    axis.in = x.dim(d), axis.out = y.dim(d);
    // Without scales (sizes given), the scale is out / in in double, as
    // the reference computes it.
    axis.scale = given && given->size() == rank
                     ? double((*given)[d])
                     : (x.dim(d) ? double(y.dim(d)) / double(x.dim(d)) : 1.0);
    axis.cubicA = ctx.getFloat("cubic_coeff_a", -0.75f);
    axis.antialias = ctx.getInt("antialias", 0) != 0;
    axis.excludeOutside = ctx.getInt("exclude_outside", 0) != 0;
    if (roi && roi->size() == 2 * rank)
      axis.roiStart = (*roi)[d], axis.roiEnd = (*roi)[d + rank];
    tables.push_back(resize::axisTable(axis));
  }
  std::vector<uint8_t> extrapolation(y.elementSize());
  storeDouble(extrapolation.data(), y.dtype, 0,
              ctx.getFloat("extrapolation_value", 0.0f));
  std::vector<int64_t> strides = stridesOf(*x.dims);
  unsigned size = y.elementSize();
  bool copies = mode == "nearest";
  forEachIndex(*y.dims, [&](int64_t i, const std::vector<int64_t> &index) {
    for (size_t d = 0; d < rank; ++d)
      if (tables[d].outside[index[d]]) {
        std::memcpy(y.data + i * size, extrapolation.data(), size);
        return;
      }
    if (copies) { // one tap per axis: the element itself, any dtype
      int64_t src = 0;
      for (size_t d = 0; d < rank; ++d)
        src += tables[d].index[index[d]] * strides[d];
      std::memcpy(y.data + i * size, x.data + src * size, size);
      return;
    }
    // Every combination of the axes' taps, axis 0's varying fastest, the
    // weights multiplied in axis order and zero-weight ones skipped (a NaN
    // there would otherwise spread).
    std::vector<int64_t> tap(rank, 0);
    double acc = 0;
    while (true) {
      double w = 1;
      int64_t src = 0;
      for (size_t d = 0; d < rank && w != 0; ++d) {
        const resize::AxisTable &table = tables[d];
        int64_t at = index[d] * table.count + tap[d];
        w *= table.weight[at];
        src += table.index[at] * strides[d];
      }
      if (w != 0)
        acc += w * loadDouble(x.data, x.dtype, src);
      size_t d = 0;
      while (d < rank && ++tap[d] == tables[d].count)
        tap[d++] = 0;
      if (d == rank)
        break;
    }
    storeDouble(y.data, y.dtype, i, acc);
  });
  return Status::ok();
}

Status expandKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  Broadcast walk(*y.dims, {x.dims});
  if (!walk.isValid())
    return ctx.error("operand does not broadcast to the result");
  unsigned size = y.elementSize();
  walk.forEach([&](int64_t i, const int64_t *offsets) {
    std::memmove(y.data + i * size, x.data + offsets[0] * size, size);
  });
  return Status::ok();
}

Status tileKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  size_t rank = x.getRank();
  if (y.getRank() != rank)
    return ctx.error("result rank differs from the operand's");
  for (size_t d = 0; d < rank; ++d)
    if (x.dim(d) == 0 ? y.dim(d) != 0 : y.dim(d) % x.dim(d))
      return ctx.error("result dims are not multiples of the operand's");
  std::vector<int64_t> strides = stridesOf(*x.dims);
  unsigned size = y.elementSize();
  forEachIndex(*y.dims, [&](int64_t i, const std::vector<int64_t> &index) {
    int64_t src = 0;
    for (size_t d = 0; d < rank; ++d)
      src += (index[d] % x.dim(d)) * strides[d];
    std::memcpy(y.data + i * size, x.data + src * size, size);
  });
  return Status::ok();
}

Status castKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  if (x.numElements != y.numElements)
    return ctx.error("operand and result differ in size");
  if (x.dtype == y.dtype) {
    copyBytes(y.data, x.data, y.bytes);
    return Status::ok();
  }
  // Element i is read before it is written, so an in-place cast is safe
  // forwards when the result's elements are not wider.
  // The compute type and the conversion are scalar::Cast's (ScalarOps.h),
  // as in fused bodies and on the device.
  bool viaDouble = scalar::Cast::kind(elementClassOf(x.dtype),
                                      elementClassOf(y.dtype)) ==
                   scalar::ComputeKind::Double;
  // A widening cast in place must run backwards.
  bool backwards = y.data == x.data && y.elementSize() > x.elementSize();
  for (int64_t k = 0; k < y.numElements; ++k) {
    int64_t i = backwards ? y.numElements - 1 - k : k;
    if (viaDouble)
      storeAs<double>(y.data, y.dtype, i,
                      scalar::Cast::apply(loadAs<double>(x.data, x.dtype, i)));
    else
      storeAs<int64_t>(y.data, y.dtype, i,
                       scalar::Cast::apply(loadAs<int64_t>(x.data, x.dtype, i)));
  }
  return Status::ok();
}

Status depthToSpace(KernelContext &ctx, bool toSpace) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  int64_t b = ctx.getInt("blocksize", 0);
  if (x.getRank() != 4 || y.getRank() != 4 || b <= 0)
    return ctx.error("expects 4-d tensors and a positive blocksize");
  bool crd = ctx.getString("mode", "DCR") == "CRD";
  // Work in terms of the space-side tensor (N, C, H*b, W*b) and the
  // depth-side tensor (N, C*b*b, H, W).
  const TensorView &depth = toSpace ? x : y, &space = toSpace ? y : x;
  int64_t n = space.dim(0), c = space.dim(1), h = depth.dim(2), w = depth.dim(3);
  if (depth.dim(0) != n || depth.dim(1) != c * b * b ||
      space.dim(2) != h * b || space.dim(3) != w * b)
    return ctx.error("shapes do not match the blocksize");
  unsigned size = y.elementSize();
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ic = 0; ic < c; ++ic)
      for (int64_t i = 0; i < b; ++i)
        for (int64_t j = 0; j < b; ++j) {
          int64_t dc = crd ? (ic * b + i) * b + j : (i * b + j) * c + ic;
          for (int64_t ih = 0; ih < h; ++ih)
            for (int64_t iw = 0; iw < w; ++iw) {
              int64_t d = ((in * depth.dim(1) + dc) * h + ih) * w + iw;
              int64_t s = ((in * c + ic) * h * b + ih * b + i) * w * b + iw * b + j;
              int64_t from = toSpace ? d : s, to = toSpace ? s : d;
              std::memcpy(y.data + to * size, x.data + from * size, size);
            }
        }
  return Status::ok();
}

Status depthToSpaceKernel(KernelContext &ctx) { return depthToSpace(ctx, true); }
Status spaceToDepthKernel(KernelContext &ctx) { return depthToSpace(ctx, false); }

Status shapeKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  int64_t rank = x.getRank();
  int64_t start = ctx.getInt("start", 0), end = ctx.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::min(std::max<int64_t>(start, 0), rank);
  end = std::min(std::max<int64_t>(end, 0), rank);
  if (y.numElements != std::max<int64_t>(end - start, 0))
    return ctx.error("result size does not match start and end");
  for (int64_t d = start; d < end; ++d)
    storeInt(y.data, y.dtype, d - start, x.dim(d));
  return Status::ok();
}

Status sizeKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  if (ctx.out(0).numElements != 1)
    return ctx.error("the result must hold one element");
  storeInt(ctx.out(0).data, ctx.out(0).dtype, 0, ctx.in(0).numElements);
  return Status::ok();
}

/// Constant: copies tensor attribute `value` whole.
Status constantKernel(KernelContext &ctx) {
  const TensorView &y = ctx.out(0);
  const Attr *value = ctx.getAttr("value");
  if (!value || value->kind != AttrTensor || value->tensorDType != y.dtype ||
      value->tensorBytes.size() != y.bytes)
    return ctx.error("tensor attribute 'value' must match the result");
  copyBytes(y.data, value->tensorBytes.data(), y.bytes);
  return Status::ok();
}

/// ConstantOfShape: fills the result with the one element of tensor
/// attribute `value` (default f32 zero).
Status constantOfShapeKernel(KernelContext &ctx) {
  const TensorView &y = ctx.out(0);
  const Attr *value = ctx.getAttr("value");
  double fill = 0;
  if (value && value->kind == AttrTensor && !value->tensorBytes.empty())
    fill = loadDouble(value->tensorBytes.data(), value->tensorDType, 0);
  for (int64_t i = 0; i < y.numElements; ++i)
    storeDouble(y.data, y.dtype, i, fill);
  return Status::ok();
}

Status rangeKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(3, 1))
    return s;
  const TensorView &y = ctx.out(0);
  if (ctx.in(0).numElements != 1 || ctx.in(2).numElements != 1)
    return ctx.error("start and delta must be scalars");
  double start = loadDouble(ctx.in(0).data, ctx.in(0).dtype, 0);
  double delta = loadDouble(ctx.in(2).data, ctx.in(2).dtype, 0);
  if (isFloatCode(y.dtype)) {
    for (int64_t i = 0; i < y.numElements; ++i)
      storeDouble(y.data, y.dtype, i, start + double(i) * delta);
  } else {
    int64_t s = loadInt(ctx.in(0).data, ctx.in(0).dtype, 0);
    int64_t d = loadInt(ctx.in(2).data, ctx.in(2).dtype, 0);
    // Wrapping (two's complement), as the CUDA emitter computes it: a range
    // past INT64_MAX is defined, never signed overflow.
    for (int64_t i = 0; i < y.numElements; ++i)
      storeInt(y.data, y.dtype, i,
               int64_t(uint64_t(s) + uint64_t(i) * uint64_t(d)));
  }
  return Status::ok();
}

/// snug.dropout_mask(seed): 1 / (1 - ratio) where ScalarOps.h's hash of
/// (seed, salt, i) keeps element i, 0 elsewhere.
Status dropoutMaskKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &seed = ctx.in(0), &y = ctx.out(0);
  if (seed.numElements != 1)
    return ctx.error("the seed must be a scalar");
  if (y.dtype != DTypeF32)
    return ctx.error("the mask must be f32");
  float ratio = ctx.getFloat("ratio", 0.5f);
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return ctx.error("ratio must be in [0, 1)");
  uint64_t key = uint64_t(loadInt(seed.data, seed.dtype, 0));
  uint32_t salt = uint32_t(ctx.getInt("salt", 0));
  float scale = scalar::dropoutScale(ratio);
  for (int64_t i = 0; i < y.numElements; ++i) {
    float value =
        scalar::dropoutKeeps(key, salt, uint64_t(i), ratio) ? scale : 0.0f;
    std::memcpy(y.data + 4 * i, &value, 4);
  }
  return Status::ok();
}

} // namespace

void registerDataMovementKernels(KernelTable &t) {
  for (OpCode view : {OpCode::Reshape, OpCode::Flatten, OpCode::Squeeze,
                      OpCode::Unsqueeze, OpCode::Identity})
    t.set(view, viewKernel);
  t.set(OpCode::SnugOffload, viewKernel);
  t.set(OpCode::SnugReload, viewKernel);
  // The condition's copy; the executor skips the steps (HostExecutor.cpp).
  t.set(OpCode::SnugSkipIf, viewKernel);
  t.set(OpCode::Dropout, dropoutKernel);
  t.set(OpCode::Transpose, transposeKernel);
  t.set(OpCode::Concat, concatKernel);
  t.set(OpCode::Split, splitKernel);
  t.set(OpCode::Slice, sliceKernel);
  t.set(OpCode::Gather, gatherKernel);
  t.set(OpCode::Pad, padKernel);
  t.set(OpCode::Resize, resizeKernel);
  t.set(OpCode::Expand, expandKernel);
  t.set(OpCode::Tile, tileKernel);
  t.set(OpCode::Cast, castKernel);
  t.set(OpCode::SnugCast, castKernel);
  t.set(OpCode::DepthToSpace, depthToSpaceKernel);
  t.set(OpCode::SpaceToDepth, spaceToDepthKernel);
  t.set(OpCode::Shape, shapeKernel);
  t.set(OpCode::Size, sizeKernel);
  t.set(OpCode::Constant, constantKernel);
  t.set(OpCode::ConstantOfShape, constantOfShapeKernel);
  t.set(OpCode::Range, rangeKernel);
  t.set(OpCode::SnugDropoutMask, dropoutMaskKernel);
}

} // namespace rt
} // namespace snug
