//===- IndexingKernels.cpp - Running sums, element gathers and scatters ---===//
//
// Ops whose element choice is data: CumSum (a running sum along one axis,
// optionally exclusive and reversed), GatherElements and GatherND (reads at
// indices), ScatterElements and ScatterND (the data with updates written,
// or combined by `reduction` add/mul/max/min, at indices), and
// snug.check_labels (class indices checked before a loss compares them).
//
// Semantics are ONNX's, with two choices where it leaves them open: updates
// that hit one element apply in the order of the updates' elements (row
// major), which the CUDA kernels keep (compiler/cuda/IndexingEmitters.cpp),
// and an index outside [-dim, dim) fails the run naming the node, through
// KernelContext::dataError (so that a bad graph input is blamed on it).
// Arithmetic happens in the compute type the CUDA kernels use: float for
// f16/bf16/f32, double for f64, int64 (wrapping) for integers.
//
//===----------------------------------------------------------------------===//
#include "runtime/LabelCheck.h"
#include "runtime/host/Kernels.h"

#include <string>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

/// Index `value` read from operand `operand`, for a dim of `size`, made
/// non-negative; a data error when it lies outside [-size, size).
Status normalizeIndex(const KernelContext &ctx, size_t operand, int64_t value,
                      int64_t size, int64_t &index) {
  index = value < 0 ? value + size : value;
  if (index >= 0 && index < size)
    return Status::ok();
  return ctx.dataError(operand, "index " + std::to_string(value) +
                                    " out of range for dim " +
                                    std::to_string(size) +
                                    " (indices must lie in [" +
                                    std::to_string(-size) + ", " +
                                    std::to_string(size) + "))");
}

/// Runs `f` with a value of the compute type of `dtype` (the type tag
/// only: float, double, uint64_t for u64 or int64_t).
template <typename F> Status withComputeType(uint8_t dtype, F f) {
  if (dtype == DTypeF64)
    return f(double());
  if (dtype == DTypeU64)
    return f(uint64_t());
  if (isFloatCode(dtype))
    return f(float());
  return f(int64_t());
}

/// a + b and a * b, wrapping for integers (never signed overflow).
template <class C> C addValues(C a, C b) { return a + b; }
template <> int64_t addValues(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) + uint64_t(b));
}
template <class C> C mulValues(C a, C b) { return a * b; }
template <> int64_t mulValues(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) * uint64_t(b));
}

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

Status cumSumKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  int64_t rank = x.getRank();
  if (y.numElements != x.numElements || y.dtype != x.dtype)
    return ctx.error("result does not match the operand");
  int64_t axis = 0;
  bool fromOperand = ctx.hasInput(1);
  if (fromOperand) {
    if (ctx.in(1).numElements != 1)
      return ctx.error("axis must hold one element");
    axis = loadInt(ctx.in(1).data, ctx.in(1).dtype, 0);
  } else if (const Attr *given = ctx.getAttr("axis")) {
    axis = given->i;
  } else {
    return ctx.error("axis is neither an attribute nor an operand");
  }
  if (axis < -rank || axis >= rank) {
    std::string why = "axis " + std::to_string(axis) +
                      " is out of range for rank " + std::to_string(rank);
    return fromOperand ? ctx.dataError(1, why) : ctx.error(why);
  }
  if (axis < 0)
    axis += rank;
  int64_t outer = 1, n = x.dim(unsigned(axis)), inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d < axis)
      outer *= x.dim(unsigned(d));
    else if (d > axis)
      inner *= x.dim(unsigned(d));
  bool exclusive = ctx.getInt("exclusive", 0) != 0;
  bool reverse = ctx.getInt("reverse", 0) != 0;
  return withComputeType(x.dtype, [&](auto zero) {
    using C = decltype(zero);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < inner; ++j) {
        C sum = C();
        for (int64_t t = 0; t < n; ++t) {
          int64_t at = (o * n + (reverse ? n - 1 - t : t)) * inner + j;
          C value = loadAs<C>(x.data, x.dtype, at);
          if (!exclusive)
            sum = addValues(sum, value);
          storeAs<C>(y.data, y.dtype, at, sum);
          if (exclusive)
            sum = addValues(sum, value);
        }
      }
    return Status::ok();
  });
}

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

/// Visits every element i of `indices` (GatherElements, ScatterElements)
/// with the element of `target` it addresses: its own coordinates, the
/// axis's replaced by the index there (made non-negative; a data error when
/// out of range).
template <typename F>
Status forEachElementIndex(const KernelContext &ctx, const TensorView &indices,
                           int64_t axis, const TensorView &target, F f) {
  unsigned rank = target.getRank();
  std::vector<int64_t> strides = stridesOf(*target.dims);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < indices.numElements; ++i) {
    int64_t at;
    if (Status s = normalizeIndex(ctx, 1, loadInt(indices.data, indices.dtype, i),
                                  target.dim(unsigned(axis)), at))
      return s;
    int64_t offset = 0;
    for (unsigned d = 0; d < rank; ++d)
      offset += (d == axis ? at : index[d]) * strides[d];
    f(i, offset);
    for (unsigned d = rank; d-- > 0;) {
      if (++index[d] < indices.dim(d))
        break;
      index[d] = 0;
    }
  }
  return Status::ok();
}

/// The axis of GatherElements/ScatterElements, non-negative, after checking
/// that `indices` has `data`'s rank and fits inside it off the axis.
Status elementAxis(const KernelContext &ctx, const TensorView &data,
                   const TensorView &indices, int64_t &axis) {
  unsigned rank = data.getRank();
  axis = ctx.getInt("axis", 0);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= int64_t(rank) || indices.getRank() != rank)
    return ctx.error("axis and indices do not match the data");
  for (unsigned d = 0; d < rank; ++d)
    if (d != axis && indices.dim(d) > data.dim(d))
      return ctx.error("indices exceed the data off the axis");
  return Status::ok();
}

Status gatherElementsKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(2, 1))
    return s;
  const TensorView &x = ctx.in(0), &indices = ctx.in(1), &y = ctx.out(0);
  int64_t axis;
  if (Status s = elementAxis(ctx, x, indices, axis))
    return s;
  if (y.numElements != indices.numElements)
    return ctx.error("result does not match the indices");
  unsigned size = y.elementSize();
  return forEachElementIndex(ctx, indices, axis, x, [&](int64_t i, int64_t src) {
    std::memcpy(y.data + i * size, x.data + src * size, size);
  });
}

/// GatherND and ScatterND see their operands as: `batches` batches (the
/// first batch_dims dims), each `tuples` index tuples of `depth` indices
/// into dims [batch_dims, batch_dims + depth) of the data, each tuple
/// naming a slice of `slice` elements.
struct TupleSplit {
  int64_t batchDims = 0, depth = 0;
  int64_t batches = 1, tuples = 1, slice = 1;
  std::vector<int64_t> strides; // the data's
};

Status splitTuples(const KernelContext &ctx, const TensorView &data,
                   const TensorView &indices, int64_t batchDims,
                   TupleSplit &split) {
  int64_t rank = data.getRank(), q = indices.getRank();
  if (q < 1 || batchDims < 0 || batchDims >= q)
    return ctx.error("indices do not match batch_dims");
  split.batchDims = batchDims;
  split.depth = indices.dim(unsigned(q - 1));
  if (split.depth < 1 || batchDims + split.depth > rank)
    return ctx.error("index tuples are longer than the data's rank");
  for (int64_t d = 0; d < batchDims; ++d) {
    if (indices.dim(unsigned(d)) != data.dim(unsigned(d)))
      return ctx.error("batch dims of the indices and data differ");
    split.batches *= data.dim(unsigned(d));
  }
  for (int64_t d = batchDims; d < q - 1; ++d)
    split.tuples *= indices.dim(unsigned(d));
  for (int64_t d = batchDims + split.depth; d < rank; ++d)
    split.slice *= data.dim(unsigned(d));
  split.strides = stridesOf(*data.dims);
  return Status::ok();
}

/// The data element offset of the slice tuple `tuple` of batch `batch`
/// names (indices made non-negative), or a data error.
Status tupleOffset(const KernelContext &ctx, const TensorView &data,
                   const TensorView &indices, const TupleSplit &split,
                   int64_t batch, int64_t tuple, int64_t &offset) {
  int64_t batchSize = split.batchDims ? split.strides[split.batchDims - 1] : 0;
  offset = batch * batchSize;
  int64_t first = (batch * split.tuples + tuple) * split.depth;
  for (int64_t j = 0; j < split.depth; ++j) {
    int64_t at;
    unsigned dim = unsigned(split.batchDims + j);
    if (Status s = normalizeIndex(
            ctx, 1, loadInt(indices.data, indices.dtype, first + j),
            data.dim(dim), at))
      return s;
    offset += at * split.strides[dim];
  }
  return Status::ok();
}

Status gatherNDKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(2, 1))
    return s;
  const TensorView &x = ctx.in(0), &indices = ctx.in(1), &y = ctx.out(0);
  TupleSplit split;
  if (Status s = splitTuples(ctx, x, indices, ctx.getInt("batch_dims", 0),
                             split))
    return s;
  if (y.numElements != split.batches * split.tuples * split.slice)
    return ctx.error("result size does not match the gather");
  unsigned size = y.elementSize();
  for (int64_t b = 0; b < split.batches; ++b)
    for (int64_t t = 0; t < split.tuples; ++t) {
      int64_t offset;
      if (Status s = tupleOffset(ctx, x, indices, split, b, t, offset))
        return s;
      std::memcpy(y.data + (b * split.tuples + t) * split.slice * size,
                  x.data + offset * size, split.slice * size);
    }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Scatters
//===----------------------------------------------------------------------===//

/// Writes update element `from` of `updates` into result element `to`,
/// combined with what is there by `reduction` (already checked).
class Combine {
public:
  Combine(const std::string &reduction, const TensorView &updates,
          const TensorView &y)
      : reduction(reduction), updates(updates), y(y) {}

  void apply(int64_t from, int64_t to) const {
    if (reduction == "none") {
      unsigned size = y.elementSize();
      std::memcpy(y.data + to * size, updates.data + from * size, size);
      return;
    }
    (void)withComputeType(y.dtype, [&](auto zero) {
      using C = decltype(zero);
      C old = loadAs<C>(y.data, y.dtype, to);
      C update = loadAs<C>(updates.data, updates.dtype, from);
      C value = reduction == "add"   ? addValues(old, update)
                : reduction == "mul" ? mulValues(old, update)
                : reduction == "max" ? ((old > update || old != old) ? old : update)
                                     : ((old < update || old != old) ? old : update);
      storeAs<C>(y.data, y.dtype, to, value);
      return Status::ok();
    });
  }

private:
  std::string reduction;
  const TensorView &updates;
  const TensorView &y;
};

/// The checks and the copy of the data every scatter starts with.
Status startScatter(KernelContext &ctx, std::string &reduction) {
  if (Status s = ctx.expect(3, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  reduction = ctx.getString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" &&
      reduction != "max" && reduction != "min")
    return ctx.error("unsupported reduction '" + reduction + "'");
  if (x.bytes != y.bytes || x.dtype != y.dtype ||
      ctx.in(2).dtype != x.dtype)
    return ctx.error("data, updates and result differ in type");
  copyBytes(y.data, x.data, y.bytes);
  return Status::ok();
}

Status scatterElementsKernel(KernelContext &ctx) {
  std::string reduction;
  if (Status s = startScatter(ctx, reduction))
    return s;
  const TensorView &indices = ctx.in(1), &updates = ctx.in(2),
                   &y = ctx.out(0);
  int64_t axis;
  if (Status s = elementAxis(ctx, y, indices, axis))
    return s;
  if (*updates.dims != *indices.dims)
    return ctx.error("updates and indices differ in dims");
  Combine combine(reduction, updates, y);
  return forEachElementIndex(ctx, indices, axis, y, [&](int64_t i, int64_t to) {
    combine.apply(i, to);
  });
}

Status scatterNDKernel(KernelContext &ctx) {
  std::string reduction;
  if (Status s = startScatter(ctx, reduction))
    return s;
  const TensorView &indices = ctx.in(1), &updates = ctx.in(2),
                   &y = ctx.out(0);
  TupleSplit split;
  if (Status s = splitTuples(ctx, y, indices, 0, split))
    return s;
  if (updates.numElements != split.tuples * split.slice)
    return ctx.error("updates do not match the indices and data");
  Combine combine(reduction, updates, y);
  for (int64_t t = 0; t < split.tuples; ++t) {
    int64_t offset;
    if (Status s = tupleOffset(ctx, y, indices, split, 0, t, offset))
      return s;
    for (int64_t e = 0; e < split.slice; ++e)
      combine.apply(t * split.slice + e, offset + e);
  }
  return Status::ok();
}

} // namespace

//===----------------------------------------------------------------------===//
// snug.check_labels
//===----------------------------------------------------------------------===//

/// The labels unchanged, or the error naming the first bad one
/// (runtime/LabelCheck.h: the rule and the message the CUDA executor gives
/// too).
Status checkLabelsKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  if (y.numElements != x.numElements || y.dtype != x.dtype)
    return ctx.error("result does not match the operand");
  if (getLabelClasses(ctx.op) == 0)
    return ctx.error("classes must be a whole number >= 1");
  for (int64_t i = 0; i < x.numElements; ++i) {
    int64_t value = loadInt(x.data, x.dtype, i);
    if (!isLabelAccepted(ctx.op, value))
      return labelCheckError(ctx.op, ctx.index, i, value);
  }
  if (y.data != x.data)
    std::memmove(y.data, x.data, x.bytes);
  return Status::ok();
}

/// The condition unchanged, or the error its message says when it holds.
Status failIfKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  if (x.bytes != 1 || y.bytes != 1)
    return ctx.error("the condition is not one bool");
  if (x.data[0] != 0)
    return invalidArgument(ctx.getString("message", "a run-time check failed"));
  y.data[0] = x.data[0];
  return Status::ok();
}

void registerIndexingKernels(KernelTable &t) {
  t.set(OpCode::SnugCheckLabels, checkLabelsKernel);
  t.set(OpCode::SnugFailIf, failIfKernel);
  t.set(OpCode::CumSum, cumSumKernel);
  t.set(OpCode::GatherElements, gatherElementsKernel);
  t.set(OpCode::GatherND, gatherNDKernel);
  t.set(OpCode::ScatterElements, scatterElementsKernel);
  t.set(OpCode::ScatterND, scatterNDKernel);
}

} // namespace rt
} // namespace snug
