//===- IndexingEmitters.cpp - CUDA emitters: sums, gathers, scatters ------===//
//
// CumSum, GatherElements, GatherND, ScatterElements, ScatterND and
// snug.check_labels, with the host reference kernels' semantics
// (runtime/host/kernels/IndexingKernels.cpp) and compute types (float for
// f16/bf16/f32, double for f64, wrapping int64 for integers).
//
// Deterministic without atomics: each thread owns a disjoint set of result
// elements and visits what lands there in the host's order.
//   - CumSum: one thread per line along the axis, summing it in order (the
//     axis may be runtime data: the kernel reads it and derives the lines).
//   - The gathers: one thread per result element.
//   - ScatterElements: the data is copied, then one thread per line of the
//     updates along the axis applies it in order (updates off one line
//     never meet: their other coordinates differ).
//   - ScatterND: the data is copied, then one thread per element of a slice
//     applies every tuple's update to that element in order (tuples select
//     whole slices, so elements at different slice positions never meet).
// An index out of range is an error on the host; the device cannot report
// it, so a gather writes zeros there and a scatter skips it, never reading
// or writing outside a tensor. snug.check_labels, whose whole purpose is
// the error, reports it through the device plan's check record.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/KernelEmitter.h"

#include <algorithm>
#include <string>

namespace snug {
namespace cuda {

using namespace codegen;

namespace {

std::string literal(int64_t value) { return cudaIntLiteral(value); }

/// `{a, b, ...}` as an emitted initializer list.
std::string listOf(llvm::ArrayRef<int64_t> values) {
  std::string text = "{";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + literal(values[i]);
  return text + "}";
}

/// The compute type of `dtype` for sums and reductions (as the host's).
std::string computeType(ir::DType dtype) {
  if (dtype == ir::DType::F64)
    return "double";
  if (dtype == ir::DType::U64)
    return "uint64_t";
  return ir::isFloatDType(dtype) ? "float" : "int64_t";
}

/// `a op b` in `type`, wrapping for integers.
std::string combineValues(llvm::StringRef reduction, llvm::StringRef type,
                          llvm::StringRef a, llvm::StringRef b) {
  bool wraps = type == "int64_t";
  auto arith = [&](const char *op) {
    if (wraps)
      return "(int64_t)((uint64_t)(" + a.str() + ") " + op + " (uint64_t)(" +
             b.str() + "))";
    return "(" + a.str() + " " + op + " " + b.str() + ")";
  };
  if (reduction == "add")
    return arith("+");
  if (reduction == "mul")
    return arith("*");
  const char *compare = reduction == "max" ? ">" : "<";
  // NaN propagates, as in the prelude's snug_op_max/snug_op_min.
  return "((" + a.str() + " " + compare + " " + b.str() + " || " + a.str() +
         " != " + a.str() + ") ? " + a.str() + " : " + b.str() + ")";
}

/// Statements making `at` (an index loaded from `indices + position`)
/// non-negative for a dim of `size`, and `ok` false when out of range.
std::string loadIndex(llvm::StringRef position, int64_t size,
                      llvm::StringRef indent = "    ") {
  std::string n = literal(size), i = indent.str();
  return i + "int64_t at = snug_load_as<int64_t>(indices + " + position.str() +
         ");\n" + i + "if (at < 0)\n" + i + "  at += " + n + ";\n" + i +
         "ok = ok && at >= 0 && at < " + n + ";\n";
}

/// Writes `updates[from]` into `out[to]` by `reduction`.
std::string applyUpdate(llvm::StringRef reduction, ir::DType dtype,
                        llvm::StringRef from, llvm::StringRef to,
                        llvm::StringRef indent) {
  std::string i = indent.str();
  if (reduction == "none")
    return i + "out[" + to.str() + "] = updates[" + from.str() + "];\n";
  std::string type = computeType(dtype);
  std::string old = "snug_load_as<" + type + ">(out + " + to.str() + ")";
  std::string update =
      "snug_load_as<" + type + ">(updates + " + from.str() + ")";
  return i + "{\n" + i + "  const " + type + " a = " + old + ", b = " +
         update + ";\n" + i + "  " +
         storeConverted(dtype, type, "out + " + to.str(),
                        combineValues(reduction, type, "a", "b")) +
         i + "}\n";
}

/// Launches `kernel` over `work` items with a grid-stride loop variable `i`
/// (int64_t) around `body`.
void launchLoop(EmitContext &context, Kernel kernel, int64_t work,
                const std::string &body) {
  kernel.body += gridStrideLoop("int64_t", work) + body + "  }\n";
  launchGridStride(context, std::move(kernel), work);
}

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

llvm::Error emitCumSum(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  int64_t rank = x.rank();
  if (rank < 1 || x.dtype != y.dtype || x.numElements != y.numElements)
    return context.unsupported("result does not match the operand");
  bool runtimeAxis = context.hasIn(1);
  if (!runtimeAxis && !context.hasAttr("axis"))
    return context.unsupported("axis is neither an attribute nor an operand");
  if (y.numElements == 0)
    return llvm::Error::success();
  std::string type = computeType(x.dtype);
  Kernel kernel;
  kernel.tag = "cumsum";
  kernel.addTensor("in", x, true);
  kernel.addTensor("out", y, false);
  if (runtimeAxis)
    kernel.addTensor("axis_in", context.in(1), true);
  // The lines along the axis: outer x inner of them, n elements each. A
  // runtime axis outside the rank (an error on the host) writes nothing.
  kernel.body =
      "  int64_t axis = " +
      (runtimeAxis ? std::string("snug_load_as<int64_t>(axis_in)")
                   : literal(context.intAttr("axis", 0))) +
      ";\n  if (axis < 0)\n    axis += " + literal(rank) +
      ";\n  if (axis < 0 || axis >= " + literal(rank) +
      ")\n    return;\n  const int64_t dims[" + literal(rank) +
      "] = " + listOf(x.dims) +
      ";\n  int64_t outer = 1, inner = 1;\n"
      "  for (int64_t d = 0; d < " + literal(rank) + "; ++d) {\n"
      "    if (d < axis)\n      outer *= dims[d];\n"
      "    else if (d > axis)\n      inner *= dims[d];\n  }\n"
      "  const int64_t n = dims[axis], lines = outer * inner;\n";
  bool exclusive = context.intAttr("exclusive", 0) != 0;
  bool reverse = context.intAttr("reverse", 0) != 0;
  std::string add = combineValues("add", type, "sum", "value");
  std::string store = storeConverted(y.dtype, type, "out + at", "sum");
  std::string body =
      "    if (i >= lines)\n      break;\n"
      "    const int64_t o = i / inner, j = i % inner;\n"
      "    " + type + " sum = 0;\n"
      "    for (int64_t t = 0; t < n; ++t) {\n"
      "      const int64_t at = (o * n + " +
      (reverse ? "n - 1 - t" : "t") + ") * inner + j;\n"
      "      const " + type + " value = snug_load_as<" + type + ">(in + at);\n";
  if (exclusive)
    body += "      " + store + "      sum = " + add + ";\n";
  else
    body += "      sum = " + add + ";\n      " + store;
  body += "    }\n";
  // A constant axis gives the exact line count; a runtime one at most the
  // element count.
  int64_t work = y.numElements;
  if (!runtimeAxis) {
    int64_t axis = context.intAttr("axis", 0);
    axis = axis < 0 ? axis + rank : axis;
    if (axis >= 0 && axis < rank)
      work /= x.dims[axis];
  }
  launchLoop(context, std::move(kernel), work, body);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Gathers
//===----------------------------------------------------------------------===//

/// The node's axis attribute, non-negative for `rank`; -1 when outside.
int64_t axisOf(const EmitContext &context, int64_t rank) {
  int64_t axis = context.intAttr("axis", 0);
  axis = axis < 0 ? axis + rank : axis;
  return axis >= 0 && axis < rank ? axis : -1;
}

/// `sum_d coordinate[d] * strides[d]` over coordinates `d0, d1, ...`, with
/// dim `axis`'s taken from `axisName`.
std::string offsetOf(llvm::ArrayRef<int64_t> strides, int64_t axis,
                     llvm::StringRef axisName = "at") {
  std::string text;
  for (size_t d = 0; d < strides.size(); ++d)
    text += (d ? " + " : "") +
            (int64_t(d) == axis ? axisName.str() : "d" + std::to_string(d)) +
            " * " + literal(strides[d]);
  return text;
}

/// A gather's kernel reading `in` at `indices` into `out`.
Kernel gatherKernel(const char *tag, const TensorRef &x,
                    const TensorRef &indices, const TensorRef &y) {
  Kernel kernel;
  kernel.tag = tag;
  kernel.addTensor("in", x, true);
  kernel.addTensor("indices", indices, true);
  kernel.addTensor("out", y, false);
  return kernel;
}

llvm::Error emitGatherElements(EmitContext &context) {
  const TensorRef &x = context.in(0), &indices = context.in(1),
                  &y = context.out();
  int64_t rank = x.rank(), axis = axisOf(context, rank);
  if (axis < 0 || indices.rank() != rank || y.dims != indices.dims ||
      x.dtype != y.dtype)
    return context.unsupported("axis, indices and result do not match");
  if (y.numElements == 0)
    return llvm::Error::success();
  Kernel kernel = gatherKernel("gather_elements", x, indices, y);
  std::string body = emitCoordinates(indices.dims, "int64_t", "i", "d") +
                     "    bool ok = true;\n" + loadIndex("i", x.dims[axis]) +
                     "    out[i] = ok ? in[" + offsetOf(x.strides(), axis) +
                     "] : " + cudaTypeName(y.dtype) + "();\n";
  launchLoop(context, std::move(kernel), y.numElements, body);
  return llvm::Error::success();
}

/// GatherND's and ScatterND's view of their operands (as the host's
/// TupleSplit): batches x tuples index tuples of `depth` indices, each
/// selecting a slice of `slice` elements of `data`.
struct Tuples {
  int64_t batchDims = 0, depth = 0, batches = 1, tuples = 1, slice = 1;
};

bool splitTuples(const TensorRef &data, const TensorRef &indices,
                 int64_t batchDims, Tuples &split) {
  int64_t rank = data.rank(), q = indices.rank();
  if (q < 1 || batchDims < 0 || batchDims >= q)
    return false;
  split.batchDims = batchDims;
  split.depth = indices.dims[q - 1];
  if (split.depth < 1 || batchDims + split.depth > rank)
    return false;
  for (int64_t d = 0; d < batchDims; ++d)
    split.batches *= data.dims[d];
  for (int64_t d = batchDims; d < q - 1; ++d)
    split.tuples *= indices.dims[d];
  for (int64_t d = batchDims + split.depth; d < rank; ++d)
    split.slice *= data.dims[d];
  return true;
}

/// Statements setting `offset` to the data element tuple `tuple` (of
/// `batch`) selects, and `ok` false when an index is out of range.
std::string tupleOffset(const TensorRef &data, const Tuples &split,
                        llvm::StringRef batch, llvm::StringRef tuple,
                        llvm::StringRef indent) {
  std::vector<int64_t> strides = data.strides();
  std::string i = indent.str();
  int64_t batchStride = split.batchDims ? strides[split.batchDims - 1] : 0;
  std::string text = i + "bool ok = true;\n" + i + "int64_t offset = " +
                     batch.str() + " * " + literal(batchStride) + ";\n" + i +
                     "const int64_t first = (" + batch.str() + " * " +
                     literal(split.tuples) + " + " + tuple.str() + ") * " +
                     literal(split.depth) + ";\n";
  for (int64_t j = 0; j < split.depth; ++j) {
    int64_t dim = split.batchDims + j;
    text += i + "{\n" +
            loadIndex("first + " + literal(j), data.dims[dim], i + "  ") + i +
            "  offset += at * " + literal(strides[dim]) + ";\n" + i + "}\n";
  }
  return text;
}

llvm::Error emitGatherND(EmitContext &context) {
  const TensorRef &x = context.in(0), &indices = context.in(1),
                  &y = context.out();
  Tuples split;
  if (!splitTuples(x, indices, context.intAttr("batch_dims", 0), split) ||
      y.numElements != split.batches * split.tuples * split.slice ||
      x.dtype != y.dtype)
    return context.unsupported("indices and result do not match the data");
  if (y.numElements == 0)
    return llvm::Error::success();
  Kernel kernel = gatherKernel("gather_nd", x, indices, y);
  std::string S = literal(split.slice), T = literal(split.tuples);
  std::string body = "    const int64_t e = i % " + S + ", t = (i / " + S +
                     ") % " + T + ", b = i / (" + S + " * " + T + ");\n" +
                     tupleOffset(x, split, "b", "t", "    ") +
                     "    out[i] = ok ? in[offset + e] : " +
                     cudaTypeName(y.dtype) + "();\n";
  launchLoop(context, std::move(kernel), y.numElements, body);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Scatters
//===----------------------------------------------------------------------===//

/// The data copied to the result, and a kernel writing through `out` and
/// reading `indices` and `updates`; false when the types do not match.
bool startScatter(EmitContext &context, Kernel &kernel,
                  std::string &reduction) {
  const TensorRef &x = context.in(0), &y = context.out();
  reduction = context.stringAttr("reduction", "none");
  if (x.dtype != y.dtype || x.bytes != y.bytes ||
      context.in(2).dtype != x.dtype ||
      (reduction != "none" && reduction != "add" && reduction != "mul" &&
       reduction != "max" && reduction != "min"))
    return false;
  context.copy(y.place, x.place, y.bytes);
  kernel.addTensor("indices", context.in(1), true);
  kernel.addTensor("updates", context.in(2), true);
  kernel.addTensor("out", y, false);
  return true;
}

llvm::Error emitScatterElements(EmitContext &context) {
  const TensorRef &indices = context.in(1), &updates = context.in(2),
                  &y = context.out();
  int64_t rank = y.rank(), axis = axisOf(context, rank);
  if (axis < 0 || indices.rank() != rank || updates.dims != indices.dims)
    return context.unsupported("axis, indices and updates do not match");
  Kernel kernel;
  kernel.tag = "scatter_elements";
  std::string reduction;
  if (!startScatter(context, kernel, reduction))
    return context.unsupported("data, updates and result do not match");
  if (updates.numElements == 0)
    return llvm::Error::success();
  // A line: every coordinate but the axis's (dims without the axis).
  std::vector<int64_t> lineDims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      lineDims.push_back(indices.dims[d]);
  int64_t lines = updates.numElements / indices.dims[axis];
  std::string body;
  if (!lineDims.empty())
    body += emitCoordinates(lineDims, "int64_t", "i", "c");
  // The line's coordinates by full dim (d<dim>); the axis's is `k`.
  for (int64_t d = 0, c = 0; d < rank; ++d)
    if (d != axis)
      body += "    const int64_t d" + std::to_string(d) + " = c" +
              std::to_string(c++) + ";\n";
  body += "    for (int64_t k = 0; k < " + literal(indices.dims[axis]) +
          "; ++k) {\n"
          "      const int64_t from = " + offsetOf(indices.strides(), axis, "k") +
          ";\n"
          "      bool ok = true;\n" +
          loadIndex("from", y.dims[axis], "      ") +
          "      if (!ok)\n        continue;\n"
          "      const int64_t to = " + offsetOf(y.strides(), axis) + ";\n" +
          applyUpdate(reduction, y.dtype, "from", "to", "      ") + "    }\n";
  launchLoop(context, std::move(kernel), lines, body);
  return llvm::Error::success();
}

llvm::Error emitScatterND(EmitContext &context) {
  const TensorRef &indices = context.in(1), &updates = context.in(2),
                  &y = context.out();
  Tuples split;
  if (!splitTuples(y, indices, 0, split) ||
      updates.numElements != split.tuples * split.slice)
    return context.unsupported("indices and updates do not match the data");
  Kernel kernel;
  kernel.tag = "scatter_nd";
  std::string reduction;
  if (!startScatter(context, kernel, reduction))
    return context.unsupported("data, updates and result do not match");
  if (updates.numElements == 0)
    return llvm::Error::success();
  std::string body = "    for (int64_t t = 0; t < " + literal(split.tuples) +
                     "; ++t) {\n" + tupleOffset(y, split, "0", "t", "      ") +
                     "      if (!ok)\n        continue;\n"
                     "      const int64_t from = t * " + literal(split.slice) +
                     " + i, to = offset + i;\n" +
                     applyUpdate(reduction, y.dtype, "from", "to", "      ") +
                     "    }\n";
  launchLoop(context, std::move(kernel), split.slice, body);
  return llvm::Error::success();
}

/// snug.check_labels: one block copies the labels and finds the first bad
/// one (each thread its first, then the block's smallest position, in a
/// fixed order), which thread 0 writes into the check record unless an
/// earlier check has (runtime/LabelCheck.h turns it into the host's error).
llvm::Error emitCheckLabels(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  int64_t classes = context.intAttr("classes", 0);
  if (classes < 1)
    return context.unsupported("classes must be a whole number >= 1");
  if (y.dtype != x.dtype || y.numElements != x.numElements)
    return context.unsupported("the result does not match the operand");
  int64_t n = x.numElements;
  if (n == 0)
    return llvm::Error::success();
  // Whole warps (the block reduction needs them), at most 256.
  uint32_t threads = uint32_t(std::min<int64_t>(256, (n + 31) / 32 * 32));
  Kernel kernel;
  kernel.tag = "check_labels";
  kernel.addTensor("labels", x, true);
  kernel.addTensor("out", y, false);
  kernel.params.push_back({"uint64_t *", "record", context.useCheckRecord()});
  kernel.block = {threads, 1, 1};
  std::string N = literal(n);
  std::string accepted = "(v >= 0 && v < " + literal(classes) + ")";
  if (context.hasAttr("ignore_index"))
    accepted += " || v == " + literal(context.intAttr("ignore_index", 0));
  kernel.body =
      "  __shared__ int64_t scratch[32];\n"
      "  int64_t first = " + N + "; // none\n"
      "  for (int64_t i = threadIdx.x; i < " + N + "; i += " +
      literal(threads) + ") {\n"
      "    const int64_t v = snug_load_as<int64_t>(labels + i);\n"
      "    out[i] = labels[i];\n"
      "    if (!(" + accepted + ") && i < first)\n"
      "      first = i;\n"
      "  }\n"
      "  const int64_t bad = snug_block_reduce(first, snug_op_min(), "
      "scratch);\n"
      "  if (threadIdx.x == 0 && bad < " + N + " && record[0] == 0) {\n"
      "    record[1] = (uint64_t)bad;\n"
      "    record[2] = (uint64_t)snug_load_as<int64_t>(labels + bad);\n"
      "    record[0] = " + literal(int64_t(context.opIndex) + 1) + ";\n"
      "  }\n";
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

/// snug.fail_if: one thread copies the condition and, when it holds,
/// names this op in the check record (the executor's error is its
/// message).
llvm::Error emitFailIf(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  if (x.numElements != 1 || y.numElements != 1)
    return context.unsupported("the condition is not one bool");
  Kernel kernel;
  kernel.tag = "fail_if";
  kernel.addTensor("condition", x, true);
  kernel.addTensor("out", y, false);
  kernel.params.push_back({"uint64_t *", "record", context.useCheckRecord()});
  kernel.block = {1, 1, 1};
  kernel.body = "  out[0] = condition[0];\n"
                "  if (condition[0] && record[0] == 0)\n"
                "    record[0] = " +
                literal(int64_t(context.opIndex) + 1) + ";\n";
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

const EmitterEntry kIndexingEmitters[] = {
    {ir::OpCode::SnugCheckLabels, emitCheckLabels},
    {ir::OpCode::SnugFailIf, emitFailIf},
    {ir::OpCode::CumSum, emitCumSum},
    {ir::OpCode::GatherElements, emitGatherElements},
    {ir::OpCode::GatherND, emitGatherND},
    {ir::OpCode::ScatterElements, emitScatterElements},
    {ir::OpCode::ScatterND, emitScatterND},
};

} // namespace

llvm::ArrayRef<EmitterEntry> getIndexingEmitters() { return kIndexingEmitters; }

} // namespace cuda
} // namespace snug
