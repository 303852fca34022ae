//===- ReductionEmitters.cpp - CUDA emitters: reductions, normalizations --===//
//
// Softmax, LogSoftmax, Hardmax, LayerNormalization, InstanceNormalization, the
// Reduce* family, ArgMax/ArgMin and the global pools all reduce rows: row r
// of the input starts at some offset and its elements lie at offsets a
// fixed index walk gives. A RowWalk says how threads share that work:
//   - rows of contiguous elements (the innermost input axis reduced) go to
//     a warp each when short and to a whole block when long; lanes stride
//     through the row (coalesced) and combine with the prelude's
//     snug_warp_reduce / snug_block_reduce, in a fixed order;
//   - rows over outer axes (layout [outer, reduce, inner]) go to one thread
//     each, which loops over the row: neighbouring threads then handle
//     neighbouring inner positions, so their loads coalesce.
// Nothing else is needed: no arena scratch, no atomics.
//
// Arithmetic happens in float for f32, f16 and bf16 and in double for f64,
// the integers and bool; the host reference accumulates in double, so for
// integers double keeps its truncations and comparisons exactly. NaN
// behaviour follows the host kernels (runtime/host/kernels/
// NormalizeKernels.cpp, ConvKernels.cpp for the global pools).
//
// BatchNormalization (inference) and LRN are elementwise (LRN over a window
// of channels): one thread per element.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/KernelEmitter.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstring>

namespace snug {
namespace cuda {

namespace {

using ir::DType;

std::string lit(int64_t value) { return cudaIntLiteral(value); }

bool isFloat(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 ||
         type == DType::F64;
}

/// The accumulator type: float for the 32-bit and 16-bit floats, double for
/// f64 and for integers and bool (the host's double: integer results then
/// truncate and compare exactly as there).
std::string accType(DType type) {
  return isFloat(type) ? cudaComputeTypeName(type) : "double";
}

/// The math function `name` for `acc`: expf for float, exp for double.
std::string math(llvm::StringRef name, llvm::StringRef acc) {
  return (name + (acc == "float" ? "f" : "")).str();
}

/// One axis of an index walk: `extent` positions, `stride` elements apart.
struct Axis {
  int64_t extent, stride;
};

/// Drops unit axes and merges neighbours that are one contiguous run, so
/// the emitted offset arithmetic is as short as the layout allows.
std::vector<Axis> simplify(llvm::ArrayRef<Axis> axes) {
  std::vector<Axis> result;
  for (const Axis &axis : axes) {
    if (axis.extent == 1)
      continue;
    if (!result.empty() && result.back().stride == axis.stride * axis.extent) {
      result.back() = {result.back().extent * axis.extent, axis.stride};
      continue;
    }
    result.push_back(axis);
  }
  return result;
}

/// The element offset of linear index `var` walking `axes` (outermost
/// first). Divisors and strides are constants, so the division compiles to
/// multiplies and shifts.
std::string offsetOf(llvm::StringRef var, llvm::ArrayRef<Axis> axes) {
  std::string expr;
  int64_t below = 1;
  for (size_t d = axes.size(); d-- > 0;) {
    std::string term = var.str();
    if (below != 1)
      term = "(" + term + " / " + lit(below) + ")";
    if (d != 0) // the outermost axis needs no modulo
      term = "(" + term + " % " + lit(axes[d].extent) + ")";
    if (axes[d].stride != 1)
      term += " * " + lit(axes[d].stride);
    expr = expr.empty() ? term : term + " + " + expr;
    below *= axes[d].extent;
  }
  return expr.empty() ? "0" : "(" + expr + ")";
}

enum class Walk { Thread, Warp, Block };

/// How the threads of a kernel walk `rows` rows of `count` elements: row
/// `row` starts at offsetOf(row, rowAxes) and its element k lies
/// offsetOf(k, elementAxes) further.
struct RowWalk {
  Walk walk = Walk::Thread;
  int64_t rows = 0, count = 0;
  std::vector<Axis> rowAxes, elementAxes;
  std::string index; // the index type
  uint32_t threads = 256;

  RowWalk(const EmitContext &context, int64_t rows, int64_t count,
          llvm::ArrayRef<Axis> rowAxes, llvm::ArrayRef<Axis> elementAxes,
          int64_t elements)
      : rows(rows), count(count), rowAxes(simplify(rowAxes)),
        elementAxes(simplify(elementAxes)) {
    // Cooperative walks need contiguous elements to coalesce; a row whose
    // innermost element axis is strided is a reduction over outer axes.
    bool contiguous =
        this->elementAxes.empty() || this->elementAxes.back().stride == 1;
    if (!contiguous || count <= 1)
      walk = Walk::Thread;
    else if (count <= 1024)
      walk = Walk::Warp;
    else
      walk = Walk::Block;
    // A few very long rows (a reduction of everything) get the largest
    // block, since nothing else runs in parallel with them.
    if (walk == Walk::Block && rows < 256 && count >= 16384)
      threads = 1024;
    // The row loop steps over the grid's rows (rowsPerBlock a block); a
    // lane's element loop ends one step past the row; offsets stay below
    // `elements`.
    index = codegen::indexTypeFor(context, rows,
                                  std::max(elements, count + elementStep()),
                                  rowsPerBlock());
  }

  /// How far apart a lane's elements of a row are.
  int64_t elementStep() const {
    return walk == Walk::Thread ? 1 : walk == Walk::Warp ? 32 : threads;
  }

  bool cooperative() const { return walk != Walk::Thread; }
  uint32_t rowsPerBlock() const {
    return walk == Walk::Thread ? threads
           : walk == Walk::Warp ? threads / 32
                                : 1;
  }
  Dim3 grid() const { return gridFor(rows, rowsPerBlock()); }
  Dim3 block() const { return {threads, 1, 1}; }

  /// The kernel's start: a __shared__ scratch array per type in
  /// `scratchTypes` (named scratch0, scratch1, ...; block walks only), then
  /// the row loop, defining `row`, `base` (the row's first offset), `lane`
  /// (this thread's first element of the row). The loop bounds depend only
  /// on the block, so every reduction inside is reached by all the threads
  /// of the block: in a warp walk, warps past the last row re-read the last
  /// row (`active` false: they write nothing) to keep their shuffles in
  /// step.
  std::string open(llvm::ArrayRef<std::string> scratchTypes = {}) const {
    std::string text;
    llvm::raw_string_ostream os(text);
    if (walk == Walk::Block)
      for (size_t i = 0; i < scratchTypes.size(); ++i)
        os << "  __shared__ " << scratchTypes[i] << " scratch" << i
           << "[32];\n";
    std::string perBlock = lit(rowsPerBlock());
    switch (walk) {
    case Walk::Thread:
      os << "  const " << index << " lane = 0;\n"
         << codegen::gridStrideLoop(index.c_str(), rows, "row");
      break;
    case Walk::Warp:
      os << "  const " << index << " lane = threadIdx.x & 31;\n"
         << "  for (" << index << " rows0 = (" << index << ")blockIdx.x * "
         << perBlock << "; rows0 < " << lit(rows) << "; rows0 += (" << index
         << ")gridDim.x * " << perBlock << ") {\n"
         << "    const bool active = rows0 + (threadIdx.x >> 5) < " << lit(rows)
         << ";\n"
         << "    const " << index
         << " row = active ? rows0 + (threadIdx.x >> 5) : " << lit(rows - 1)
         << ";\n";
      break;
    case Walk::Block:
      os << "  const " << index << " lane = threadIdx.x;\n"
         << "  for (" << index << " row = blockIdx.x; row < " << lit(rows)
         << "; row += gridDim.x) {\n";
      break;
    }
    os << "    const " << index << " base = " << offsetOf("row", rowAxes)
       << ";\n";
    return os.str();
  }

  /// `statement` (a store) guarded so that only threads of existing rows
  /// write.
  std::string write(llvm::StringRef statement) const {
    return walk == Walk::Warp ? ("if (active) " + statement).str()
                              : statement.str();
  }

  /// A loop running `body` with `at` the offset of each of this thread's
  /// elements of the row, in increasing element order.
  std::string forEach(llvm::StringRef body) const {
    return "    for (" + index + " k = lane; k < " + lit(count) +
           "; k += " + lit(elementStep()) + ") {\n      const " + index +
           " at = base + " + offsetOf("k", elementAxes) + ";\n" + body.str() +
           "    }\n";
  }

  /// Combines every thread's `var` of the row with `op` (a prelude
  /// operator), using scratch array `scratch` in block walks.
  std::string combine(llvm::StringRef var, llvm::StringRef op,
                      unsigned scratch = 0) const {
    switch (walk) {
    case Walk::Thread:
      return "";
    case Walk::Warp:
      return ("    " + var + " = snug_warp_reduce(" + var + ", " + op +
              "());\n")
          .str();
    case Walk::Block:
      return ("    " + var + " = snug_block_reduce(" + var + ", " + op +
              "(), scratch" + llvm::Twine(scratch) + ");\n")
          .str();
    }
    return "";
  }

  /// Guards a statement that writes the row's single result: one lane.
  std::string once(llvm::StringRef statement) const {
    if (!cooperative())
      return ("    " + statement + "\n").str();
    return ("    if (" + llvm::Twine(walk == Walk::Warp ? "active && " : "") +
            "lane == 0) " + statement + "\n")
        .str();
  }

  std::string close() const { return "  }\n"; }

  Kernel kernel(llvm::StringRef tag) const {
    Kernel kernel;
    kernel.tag = tag.str();
    kernel.grid = grid();
    kernel.block = block();
    return kernel;
  }
};

/// The walk over [outer, n, inner] along the middle axis.
RowWalk walkAlong(const EmitContext &context, const TensorRef &x,
                  int64_t axis) {
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < int64_t(x.rank()); ++d)
    (d < axis ? outer : d == axis ? n : inner) *= x.dims[d];
  return RowWalk(context, outer * inner, n, {{outer, n * inner}, {inner, 1}},
                 {{n, inner}}, x.numElements);
}

/// The operand's axis attribute `name`, normalized; an error when out of
/// range.
llvm::Expected<int64_t> axisAttr(const EmitContext &context,
                                 llvm::StringRef name, int64_t fallback) {
  int64_t rank = context.in(0).rank();
  int64_t axis = context.intAttr(name, fallback);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= std::max<int64_t>(rank, 1))
    return context.unsupported(name + " out of range");
  return axis;
}

bool hasOut(const EmitContext &context, unsigned i) {
  return i < context.results.size() && context.results[i].present;
}

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax
//===----------------------------------------------------------------------===//

enum class SoftmaxKind { Soft, Log, Hard };

/// Along one axis, as the host's softmaxLike: exp(x - max) / sum, or
/// x - max - log(sum), in three passes over the row (max, sum, write); or
/// Hardmax, 1 at the first maximum and 0 elsewhere. The host takes the first
/// element greater than every one before it, starting below -inf, so NaN
/// never wins and a row of NaN and -inf marks element 0; in parallel that is
/// the maximum of the non-NaN values, then the first index holding it
/// (element 0 when that maximum is -inf).
llvm::Error emitSoftmax(EmitContext &context, SoftmaxKind kind) {
  const TensorRef &x = context.in(0), &y = context.out();
  auto axis = axisAttr(context, "axis", -1);
  if (!axis)
    return axis.takeError();
  if (!y.numElements)
    return llvm::Error::success();
  RowWalk walk = walkAlong(context, x, *axis);
  std::string acc = accType(x.dtype), exp = math("exp", acc);
  std::string load = "(" + acc + ")snug_load(x + at)";
  std::string body;
  llvm::raw_string_ostream os(body);
  if (kind == SoftmaxKind::Hard) {
    os << walk.open({acc, "int64_t"}) << "    " << acc
       << " best = -snug_inf();\n"
       << walk.forEach("      const " + acc + " v = " + load +
                       ";\n      if (v > best) best = v;\n")
       << walk.combine("best", "snug_op_max", 0) << "    int64_t found = "
       << lit(walk.count) << ";\n"
       << walk.forEach("      if (" + load +
                       " == best) found = found < k ? found : k;\n")
       << walk.combine("found", "snug_op_min", 1)
       << "    const int64_t arg = best == -snug_inf() ? 0 : found;\n"
       << walk.forEach("      " +
                       walk.write("snug_store(y + at, (" + acc +
                                  ")(k == arg ? 1 : 0));") +
                       "\n");
  } else {
    os << walk.open({acc}) << "    " << acc << " top = -snug_inf();\n"
       << walk.forEach("      top = snug_op_max()(top, " + load + ");\n")
       << walk.combine("top", "snug_op_max") << "    " << acc
       << " sum = 0;\n"
       << walk.forEach("      sum += " + exp + "(" + load + " - top);\n")
       << walk.combine("sum", "snug_op_sum");
    std::string value = exp + "(" + load + " - top) / sum";
    if (kind == SoftmaxKind::Log) {
      os << "    const " << acc << " logSum = " << math("log", acc)
         << "(sum);\n";
      value = load + " - top - logSum";
    }
    os << walk.forEach("      " +
                       walk.write("snug_store(y + at, " + value + ");") +
                       "\n");
  }
  os << walk.close();
  Kernel kernel = walk.kernel(kind == SoftmaxKind::Soft  ? "softmax"
                              : kind == SoftmaxKind::Log ? "logsoftmax"
                                                         : "hardmax");
  kernel.addTensor("x", x, true);
  kernel.addTensor("y", y, false);
  kernel.body = os.str();
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

llvm::Error emitSoftmaxOp(EmitContext &context) {
  return emitSoftmax(context, SoftmaxKind::Soft);
}
llvm::Error emitLogSoftmaxOp(EmitContext &context) {
  return emitSoftmax(context, SoftmaxKind::Log);
}
llvm::Error emitHardmaxOp(EmitContext &context) {
  return emitSoftmax(context, SoftmaxKind::Hard);
}

//===----------------------------------------------------------------------===//
// LayerNormalization, InstanceNormalization
//===----------------------------------------------------------------------===//

/// Normalizes each row of `walk` to zero mean and unit variance (two-pass,
/// as the host), then scales and shifts by scale[affineIndex] and
/// bias[affineIndex] (bias optional). Optional results 1 and 2 get each
/// row's mean and inverse deviation.
llvm::Error emitNormalizeRows(EmitContext &context, const RowWalk &walk,
                              llvm::StringRef tag, llvm::StringRef affineIndex,
                              bool hasBias, bool withStatistics) {
  const TensorRef &x = context.in(0), &y = context.out();
  std::string acc = accType(x.dtype), count = "(" + acc + ")" + lit(walk.count);
  std::string load = "(" + acc + ")snug_load(x + at)";
  std::string value = "(" + load + " - mu) * inv * snug_load(scale + " +
                      affineIndex.str() + ")";
  if (hasBias)
    value += " + snug_load(bias + " + affineIndex.str() + ")";
  std::string body;
  llvm::raw_string_ostream os(body);
  os << walk.open({acc}) << "    const " << acc << " epsilon = "
     << cudaFloatLiteral(double(context.floatAttr("epsilon", 1e-5f))) << ";\n"
     << "    " << acc << " sum = 0;\n"
     << walk.forEach("      sum += " + load + ";\n")
     << walk.combine("sum", "snug_op_sum") << "    const " << acc
     << " mu = sum / " << count << ";\n"
     << "    " << acc << " squares = 0;\n"
     << walk.forEach("      const " + acc + " d = " + load +
                     " - mu;\n      squares += d * d;\n")
     << walk.combine("squares", "snug_op_sum") << "    const " << acc
     << " inv = (" << acc << ")1 / " << math("sqrt", acc) << "(squares / "
     << count << " + epsilon);\n"
     << walk.forEach("      " +
                     walk.write("snug_store(y + at, " + value + ");") + "\n");
  Kernel kernel = walk.kernel(tag);
  kernel.addTensor("x", x, true);
  kernel.addTensor("scale", context.in(1), true);
  if (hasBias)
    kernel.addTensor("bias", context.in(2), true);
  kernel.addTensor("y", y, false);
  if (withStatistics) {
    if (hasOut(context, 1)) {
      os << walk.once("snug_store(mean + row, mu);");
      kernel.addTensor("mean", context.out(1), false);
    }
    if (hasOut(context, 2)) {
      os << walk.once("snug_store(inv_std_dev + row, inv);");
      kernel.addTensor("inv_std_dev", context.out(2), false);
    }
  }
  os << walk.close();
  kernel.body = os.str();
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

llvm::Error emitLayerNormalization(EmitContext &context) {
  const TensorRef &x = context.in(0);
  auto axis = axisAttr(context, "axis", -1);
  if (!axis)
    return axis.takeError();
  int64_t outer = 1, n = 1;
  for (int64_t d = 0; d < int64_t(x.rank()); ++d)
    (d < *axis ? outer : n) *= x.dims[d];
  bool hasBias = context.hasIn(2);
  if (context.in(1).numElements != n ||
      (hasBias && context.in(2).numElements != n))
    return context.unsupported("scale and bias must have the normalized "
                               "shape's size");
  if (!x.numElements)
    return llvm::Error::success();
  RowWalk walk(context, outer, n, {{outer, n}}, {{n, 1}}, x.numElements);
  return emitNormalizeRows(context, walk, "layernorm", "k", hasBias, true);
}

/// snug.rms_norm: per row the mean square, then x * inv * scale with inv =
/// 1 / sqrt(mean square + epsilon); one pass for the sum, one to store.
llvm::Error emitRmsNorm(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  auto axis = axisAttr(context, "axis", -1);
  if (!axis)
    return axis.takeError();
  int64_t outer = 1, n = 1;
  for (int64_t d = 0; d < int64_t(x.rank()); ++d)
    (d < *axis ? outer : n) *= x.dims[d];
  bool hasScale = context.hasIn(1);
  if (hasScale && context.in(1).numElements != n)
    return context.unsupported("scale must have the normalized shape's size");
  if (!x.numElements)
    return llvm::Error::success();
  RowWalk walk(context, outer, n, {{outer, n}}, {{n, 1}}, x.numElements);
  std::string acc = accType(x.dtype), count = "(" + acc + ")" + lit(n);
  std::string load = "(" + acc + ")snug_load(x + at)";
  std::string value = load + " * inv";
  if (hasScale)
    value += " * snug_load(scale + k)";
  std::string body;
  llvm::raw_string_ostream os(body);
  os << walk.open({acc}) << "    const " << acc << " epsilon = "
     << cudaFloatLiteral(double(context.floatAttr("epsilon", 1e-6f))) << ";\n"
     << "    " << acc << " squares = 0;\n"
     << walk.forEach("      const " + acc + " v = " + load +
                     ";\n      squares += v * v;\n")
     << walk.combine("squares", "snug_op_sum") << "    const " << acc
     << " inv = (" << acc << ")1 / " << math("sqrt", acc) << "(squares / "
     << count << " + epsilon);\n"
     << walk.forEach("      " +
                     walk.write("snug_store(y + at, " + value + ");") + "\n")
     << walk.close();
  Kernel kernel = walk.kernel("rms_norm");
  kernel.addTensor("x", x, true);
  if (hasScale)
    kernel.addTensor("scale", context.in(1), true);
  kernel.addTensor("y", y, false);
  kernel.body = os.str();
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

llvm::Error emitInstanceNormalization(EmitContext &context) {
  const TensorRef &x = context.in(0);
  if (x.rank() < 2)
    return context.unsupported("needs an operand of rank >= 2");
  int64_t planes = x.dims[0] * x.dims[1];
  int64_t inner = planes ? x.numElements / planes : 0;
  if (context.in(1).numElements != x.dims[1] ||
      context.in(2).numElements != x.dims[1])
    return context.unsupported("scale and bias need one value per channel");
  if (!x.numElements)
    return llvm::Error::success();
  RowWalk walk(context, planes, inner, {{planes, inner}}, {{inner, 1}},
               x.numElements);
  return emitNormalizeRows(context, walk, "instancenorm",
                           "row % " + lit(x.dims[1]), true, false);
}

//===----------------------------------------------------------------------===//
// BatchNormalization, LRN: one thread per element
//===----------------------------------------------------------------------===//

/// A grid-stride loop over the `elements` elements of the result with `i`
/// the element index, around `body`.
/// `index` is the loop's type, codegen::indexTypeFor(context, elements,
/// ...).
Kernel elementwiseKernel(llvm::StringRef tag, int64_t elements,
                         const char *index, llvm::StringRef body) {
  Kernel kernel;
  kernel.tag = tag.str();
  kernel.block = {256, 1, 1};
  kernel.grid = gridFor(elements, 256);
  kernel.body = codegen::gridStrideLoop(index, elements) + body.str() + "  }\n";
  return kernel;
}

/// Per channel c: y = x * scale / sqrt(var + epsilon) + (bias - mean *
/// that factor), the host's folding.
llvm::Error emitBatchNormalization(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  if (context.intAttr("training_mode", 0))
    return context.unsupported("training_mode is not supported");
  int64_t n = x.rank() > 0 ? x.dims[0] : 1, c = x.rank() > 1 ? x.dims[1] : 1;
  int64_t inner = n * c != 0 ? x.numElements / (n * c) : 0;
  for (unsigned i = 1; i < 5; ++i)
    if (context.in(i).numElements != c)
      return context.unsupported("parameter " + llvm::Twine(i) + " needs " +
                                 llvm::Twine(c) + " elements");
  std::string acc = accType(x.dtype);
  if (x.numElements) {
    Kernel kernel = elementwiseKernel(
        "batchnorm", x.numElements,
        codegen::indexTypeFor(context, x.numElements, x.numElements),
        "    const int64_t c = (i / " + lit(inner) + ") % " + lit(c) +
            ";\n    const " + acc + " mul = snug_load(scale + c) / " +
            math("sqrt", acc) + "(snug_load(var + c) + (" + acc + ")" +
            cudaFloatLiteral(double(context.floatAttr("epsilon", 1e-5f))) +
            ");\n    const " + acc +
            " add = snug_load(bias + c) - snug_load(mean + c) * mul;\n"
            "    snug_store(y + i, snug_load(x + i) * mul + add);\n");
    kernel.addTensor("x", x, true);
    for (auto [i, name] : {std::pair<unsigned, const char *>{1, "scale"},
                           {2, "bias"},
                           {3, "mean"},
                           {4, "var"}})
      kernel.addTensor(name, context.in(i), true);
    kernel.addTensor("y", y, false);
    context.launch(std::move(kernel));
  }
  // The running mean and variance results of old opsets: the inputs as
  // they are.
  for (unsigned r = 1; r < 3; ++r)
    if (hasOut(context, r))
      context.copy(context.out(r).place, context.in(r + 2).place,
                   std::min(context.out(r).bytes, context.in(r + 2).bytes));
  return llvm::Error::success();
}

/// x / (bias + alpha / size * sum of squares over a window of channels) ^
/// beta.
llvm::Error emitLRN(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  if (x.rank() < 2)
    return context.unsupported("needs an operand of rank >= 2");
  int64_t size = context.intAttr("size", 0);
  if (size <= 0)
    return context.unsupported("size must be positive");
  if (!x.numElements)
    return llvm::Error::success();
  double alpha = context.floatAttr("alpha", 1e-4f);
  double beta = context.floatAttr("beta", 0.75f);
  double bias = context.floatAttr("bias", 1.0f);
  int64_t c = x.dims[1], inner = x.numElements / (x.dims[0] * c);
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  std::string acc = accType(x.dtype),
              index =
                  codegen::indexTypeFor(context, x.numElements, x.numElements);
  Kernel kernel = elementwiseKernel(
      "lrn", x.numElements, index.c_str(),
      "    const " + index + " c = (i / " + lit(inner) + ") % " + lit(c) +
          ";\n    const " + index + " plane = i - c * " + lit(inner) +
          ";\n    const " + index + " first = c > " + lit(before) + " ? c - " +
          lit(before) + " : 0;\n    const " + index + " last = c + " +
          lit(after) + " < " + lit(c - 1) + " ? c + " + lit(after) + " : " +
          lit(c - 1) + ";\n    " + acc + " squares = 0;\n    for (" + index +
          " j = first; j <= last; ++j) {\n      const " + acc +
          " v = snug_load(x + plane + j * " + lit(inner) +
          ");\n      squares += v * v;\n    }\n    snug_store(y + i, "
          "snug_load(x + i) / " +
          math("pow", acc) + "((" + acc + ")" + cudaFloatLiteral(bias) +
          " + (" + acc + ")" + cudaFloatLiteral(alpha / double(size)) +
          " * squares, (" + acc + ")" + cudaFloatLiteral(beta) + "));\n");
  kernel.addTensor("x", x, true);
  kernel.addTensor("y", y, false);
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Reduce*, global pools
//===----------------------------------------------------------------------===//

enum class Reduce {
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  L1,
  L2,
  SumSquare,
  LogSumExp,
  MaxIgnoringNaN, // GlobalMaxPool: the host's std::max skips NaN
};

/// Reduces the axes flagged in `reduced` with `kind`; the result holds the
/// kept axes in order (keepdims only adds unit axes).
llvm::Error emitReduction(EmitContext &context, Reduce kind,
                          const std::vector<bool> &reduced,
                          llvm::StringRef tag) {
  const TensorRef &x = context.in(0), &y = context.out();
  std::vector<int64_t> strides = x.strides();
  std::vector<Axis> kept, across;
  int64_t rows = 1, count = 1;
  for (unsigned d = 0; d < x.rank(); ++d) {
    (reduced[d] ? across : kept).push_back({x.dims[d], strides[d]});
    (reduced[d] ? count : rows) *= x.dims[d];
  }
  if (rows != y.numElements)
    return context.unsupported("result size does not match the reduction");
  if (!y.numElements)
    return llvm::Error::success();
  RowWalk walk(context, rows, count, kept, across, x.numElements);
  std::string acc = accType(x.dtype);
  std::string load = "(" + acc + ")snug_load(x + at)";
  std::string init = "0", op = "snug_op_sum", step, result = "a";
  switch (kind) {
  case Reduce::Sum:
    step = "a += " + load + ";";
    break;
  case Reduce::Mean:
    step = "a += " + load + ";";
    result = count ? "a / (" + acc + ")" + lit(count) : "snug_nan()";
    break;
  case Reduce::Max:
  case Reduce::Min:
    init = kind == Reduce::Max ? "-snug_inf()" : "snug_inf()";
    op = kind == Reduce::Max ? "snug_op_max" : "snug_op_min";
    step = "a = " + op + "()(a, " + load + ");";
    break;
  case Reduce::MaxIgnoringNaN:
    init = "-snug_inf()", op = "snug_op_max";
    step = "const " + acc + " v = " + load + ";\n      if (v > a) a = v;";
    break;
  case Reduce::Prod:
    init = "1", op = "snug_op_prod";
    step = "a *= " + load + ";";
    break;
  case Reduce::L1:
    step = "a += " + math("fabs", acc) + "(" + load + ");";
    break;
  case Reduce::L2:
  case Reduce::SumSquare:
    step = "const " + acc + " v = " + load + ";\n      a += v * v;";
    if (kind == Reduce::L2)
      result = math("sqrt", acc) + "(a)";
    break;
  case Reduce::LogSumExp:
    step = "a += " + math("exp", acc) + "(" + load + " - top);";
    result = math("log", acc) + "(a) + top";
    break;
  }
  std::string body = walk.open({acc});
  if (kind == Reduce::LogSumExp) // the row's maximum first, for stability
    body += "    " + acc + " top = -snug_inf();\n" +
            walk.forEach("      top = snug_op_max()(top, " + load + ");\n") +
            walk.combine("top", "snug_op_max");
  body += "    " + acc + " a = " + init + ";\n" +
          walk.forEach("      " + step + "\n") + walk.combine("a", op) +
          walk.once("snug_store(y + row, (" + acc + ")(" + result + "));") +
          walk.close();
  Kernel kernel = walk.kernel(tag);
  kernel.addTensor("x", x, true);
  kernel.addTensor("y", y, false);
  kernel.body = std::move(body);
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

/// The axes a Reduce* reduces: the `axes` attribute (canonical form), else
/// an i64/i32 weight operand (opset 18 style), as the host reads them.
llvm::Expected<std::vector<int64_t>> reduceAxes(const EmitContext &context) {
  if (context.hasAttr("axes") || !context.hasIn(1))
    return context.intsAttr("axes");
  const ir::Value *operand = context.node.getOperand(1);
  llvm::ArrayRef<uint8_t> data =
      operand->isWeight() ? context.node.getModule()->getWeightData(operand)
                          : llvm::ArrayRef<uint8_t>();
  DType type = operand->getType().getDType();
  size_t size = type == DType::I64 ? 8 : type == DType::I32 ? 4 : 0;
  if (!size || data.size() != size * context.in(1).numElements)
    return context.unsupported("axes must be an attribute or a constant "
                               "integer operand");
  std::vector<int64_t> axes;
  for (size_t at = 0; at < data.size(); at += size) {
    int64_t axis64;
    int32_t axis32;
    std::memcpy(size == 8 ? (void *)&axis64 : (void *)&axis32, &data[at], size);
    axes.push_back(size == 8 ? axis64 : axis32);
  }
  return axes;
}

/// Reduce*: all axes when none are given, unless noop_with_empty_axes.
template <Reduce Kind> llvm::Error emitReduceOp(EmitContext &context) {
  const TensorRef &x = context.in(0);
  auto axes = reduceAxes(context);
  if (!axes)
    return axes.takeError();
  std::vector<bool> reduced(
      x.rank(), axes->empty() && !context.intAttr("noop_with_empty_axes", 0));
  for (int64_t axis : *axes) {
    if (axis < 0)
      axis += x.rank();
    if (axis < 0 || axis >= int64_t(x.rank()))
      return context.unsupported("axis out of range");
    reduced[axis] = true;
  }
  llvm::StringRef op = context.node.getOpName();
  return emitReduction(context, Kind, reduced,
                       "reduce_" + op.drop_front(6).lower());
}

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin
//===----------------------------------------------------------------------===//

/// The host scans each row in order keeping the first (or, with
/// select_last_index, the last) extreme value, skipping NaN unless element 0
/// is NaN, which then wins. In parallel: the extreme of the non-NaN values,
/// then the first (last) index holding it, then element 0's NaN check.
llvm::Error emitArgReduce(EmitContext &context, bool isMax) {
  const TensorRef &x = context.in(0), &y = context.out();
  if (x.rank() == 0)
    return context.unsupported("needs an operand of rank >= 1");
  auto axis = axisAttr(context, "axis", 0);
  if (!axis)
    return axis.takeError();
  if (!x.dims[*axis])
    return context.unsupported("the reduced axis is empty");
  if (!y.numElements)
    return llvm::Error::success();
  bool last = context.intAttr("select_last_index", 0);
  RowWalk walk = walkAlong(context, x, *axis);
  std::string acc = accType(x.dtype);
  std::string none = last ? "-1" : lit(walk.count);
  std::string body = walk.open({acc, "int64_t"});
  body += "    " + acc + " best = " + (isMax ? "-" : "") + "snug_inf();\n" +
          walk.forEach("      const " + acc + " v = snug_load(x + at);\n" +
                       "      if (v " + (isMax ? ">" : "<") +
                       " best) best = v;\n") +
          walk.combine("best", isMax ? "snug_op_max" : "snug_op_min", 0) +
          "    int64_t found = " + none + ";\n" +
          walk.forEach(std::string("      if ((") + acc +
                       ")snug_load(x + at) == best) found = " +
                       (last ? "k" : "found < k ? found : k") + ";\n") +
          walk.combine("found", last ? "snug_op_max" : "snug_op_min", 1) +
          "    const " + acc + " head = snug_load(x + base);\n" +
          walk.once("snug_store(y + row, (int64_t)(found == " + none +
                    " || head != head ? 0 : found));") +
          walk.close();
  Kernel kernel = walk.kernel(isMax ? "argmax" : "argmin");
  kernel.addTensor("x", x, true);
  kernel.addTensor("y", y, false);
  kernel.body = std::move(body);
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

llvm::Error emitArgMax(EmitContext &context) {
  return emitArgReduce(context, true);
}
llvm::Error emitArgMin(EmitContext &context) {
  return emitArgReduce(context, false);
}

const EmitterEntry reductionEmitters[] = {
    {ir::OpCode::Softmax, emitSoftmaxOp},
    {ir::OpCode::LogSoftmax, emitLogSoftmaxOp},
    {ir::OpCode::Hardmax, emitHardmaxOp},
    {ir::OpCode::LayerNormalization, emitLayerNormalization},
    {ir::OpCode::SnugRmsNorm, emitRmsNorm},
    {ir::OpCode::BatchNormalization, emitBatchNormalization},
    {ir::OpCode::InstanceNormalization, emitInstanceNormalization},
    {ir::OpCode::LRN, emitLRN},
    {ir::OpCode::ReduceL1, emitReduceOp<Reduce::L1>},
    {ir::OpCode::ReduceL2, emitReduceOp<Reduce::L2>},
    {ir::OpCode::ReduceLogSumExp, emitReduceOp<Reduce::LogSumExp>},
    {ir::OpCode::ReduceMax, emitReduceOp<Reduce::Max>},
    {ir::OpCode::ReduceMean, emitReduceOp<Reduce::Mean>},
    {ir::OpCode::ReduceMin, emitReduceOp<Reduce::Min>},
    {ir::OpCode::ReduceProd, emitReduceOp<Reduce::Prod>},
    {ir::OpCode::ReduceSum, emitReduceOp<Reduce::Sum>},
    {ir::OpCode::ReduceSumSquare, emitReduceOp<Reduce::SumSquare>},
    {ir::OpCode::ArgMax, emitArgMax},
    {ir::OpCode::ArgMin, emitArgMin},
};

} // namespace

llvm::Error emitGlobalPool(EmitContext &context, bool isMax) {
  const TensorRef &x = context.in(0);
  if (x.rank() < 3)
    return context.unsupported("needs spatial dims");
  std::vector<bool> reduced(x.rank(), true);
  reduced[0] = reduced[1] = false;
  return emitReduction(context, isMax ? Reduce::MaxIgnoringNaN : Reduce::Mean,
                       reduced, isMax ? "globalmaxpool" : "globalavgpool");
}

llvm::ArrayRef<EmitterEntry> getReductionEmitters() {
  return reductionEmitters;
}

} // namespace cuda
} // namespace snug
