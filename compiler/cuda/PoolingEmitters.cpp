//===- PoolingEmitters.cpp - CUDA emitters: pooling -----------------------===//
//
// MaxPool (with its optional Indices result) and AveragePool over 1 to 3
// spatial dims: one thread per output element, the window loops baked with
// the canonical kernel_shape, strides, dilations and pads. Each axis loops
// only over the taps that land inside the input, as the host kernel
// (runtime/host/kernels/ConvKernels.cpp) does; AveragePool divides by the
// taps inside the padded input (count_include_pad) or inside the input.
// Output sizes (ceil_mode included) come from the result's type.
//
// GlobalAveragePool and GlobalMaxPool are row reductions over each
// (batch, channel) plane, emitted with the reductions
// (ReductionEmitters.cpp).
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/KernelEmitter.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace snug {
namespace cuda {

namespace {

using ir::DType;

std::string lit(int64_t value) { return cudaIntLiteral(value); }

/// Pools compare and sum in float for f32, f16 and bf16, and in double for
/// f64 and integers (the host's double, so integer results truncate alike).
std::string accType(DType type) {
  bool isFloat = type == DType::F32 || type == DType::F16 ||
                 type == DType::BF16 || type == DType::F64;
  return isFloat ? cudaComputeTypeName(type) : "double";
}

/// The window of a pool along one spatial axis.
struct PoolAxis {
  int64_t in, out, kernel, stride, dilation, padBegin, padEnd;
};

llvm::Expected<std::vector<PoolAxis>> readWindow(const EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  size_t spatial = x.rank() - 2;
  if (x.rank() < 3 || x.rank() > 5 || y.rank() != x.rank() ||
      y.dims[0] != x.dims[0] || y.dims[1] != x.dims[1])
    return context.unsupported("supports 1 to 3 spatial dims");
  std::vector<int64_t> kernel = context.windowAttr("kernel_shape", spatial, 0),
                       strides = context.windowAttr("strides", spatial, 1),
                       dilations = context.windowAttr("dilations", spatial, 1),
                       pads = context.windowAttr("pads", 2 * spatial, 0);
  if (kernel.empty() || strides.empty() || dilations.empty() || pads.empty())
    return context.unsupported("kernel_shape, strides, dilations or pads do "
                               "not fit the spatial dims");
  std::vector<PoolAxis> axes;
  for (size_t a = 0; a < spatial; ++a) {
    if (kernel[a] <= 0 || strides[a] <= 0 || dilations[a] <= 0)
      return context.unsupported(
          "kernel_shape, strides and dilations must be positive");
    axes.push_back({x.dims[2 + a], y.dims[2 + a], kernel[a], strides[a],
                    dilations[a], pads[a], pads[spatial + a]});
  }
  return axes;
}

/// Statements defining, per spatial axis a, the window's start sa (in input
/// coordinates, padding negative) for output element `o`, and the taps
/// [fa, la) that land inside the input, as the host clips them.
std::string windowBounds(llvm::ArrayRef<PoolAxis> axes,
                         const std::string &index) {
  std::string text;
  llvm::raw_string_ostream os(text);
  int64_t below = 1;
  for (size_t a = axes.size(); a-- > 0;) {
    const PoolAxis &w = axes[a];
    std::string n = std::to_string(a);
    os << "    const " << index << " s" << n << " = (o / " << lit(below)
       << ") % " << lit(w.out) << " * " << lit(w.stride) << " - "
       << lit(w.padBegin) << ";\n"
       << "    const " << index << " f" << n << " = s" << n << " >= 0 ? 0 : ("
       << lit(w.dilation - 1) << " - s" << n << ") / " << lit(w.dilation)
       << ";\n"
       << "    " << index << " l" << n << " = s" << n << " >= " << lit(w.in)
       << " ? 0 : (" << lit(w.in - 1) << " - s" << n << ") / "
       << lit(w.dilation) << " + 1;\n"
       << "    if (l" << n << " > " << lit(w.kernel) << ") l" << n << " = "
       << lit(w.kernel) << ";\n";
    below *= w.out;
  }
  return os.str();
}

/// AveragePool's divisor: the taps inside the padded input (the window
/// clipped to the end padding, defined as ea by `statements`) with
/// count_include_pad, else those inside the input.
std::string averageDivisor(llvm::ArrayRef<PoolAxis> axes, bool includePad,
                           const std::string &index, std::string &statements) {
  std::string divisor;
  for (size_t a = 0; a < axes.size(); ++a) {
    const PoolAxis &w = axes[a];
    std::string n = std::to_string(a), s = "s" + n, e = "e" + n;
    divisor += a ? " * " : "";
    if (!includePad) {
      divisor += "(l" + n + " - f" + n + ")";
      continue;
    }
    int64_t last = w.in + w.padEnd - 1;
    statements += "    " + index + " " + e + " = " + s + " + " +
                  lit((w.kernel - 1) * w.dilation) + ";\n    if (" + e + " > " +
                  lit(last) + ") " + e + " = " + lit(last) + ";\n";
    divisor += "(" + e + " < " + s + " ? 0 : (" + e + " - " + s + ") / " +
               lit(w.dilation) + " + 1)";
  }
  return divisor;
}

/// Emits MaxPool (isMax) or AveragePool: one thread per output element,
/// visiting the window's taps inside the input in the host's order (so
/// MaxPool's first tap is always taken and a leading NaN wins as there).
llvm::Error emitPool(EmitContext &context, bool isMax) {
  auto window = readWindow(context);
  if (!window)
    return window.takeError();
  const std::vector<PoolAxis> &axes = *window;
  const TensorRef &x = context.in(0), &y = context.out();
  bool withIndices =
      isMax && context.results.size() > 1 && context.out(1).present;
  if (withIndices && context.out(1).numElements != y.numElements)
    return context.unsupported("indices must have the result's size");
  if (!y.numElements)
    return llvm::Error::success();
  int64_t inSize = 1, outSize = 1;
  for (const PoolAxis &axis : axes)
    inSize *= axis.in, outSize *= axis.out;
  std::string acc = accType(x.dtype);
  // Offsets reach into x (plane * inSize + tap); the loop runs over y.
  std::string index = codegen::indexTypeFor(
      context, y.numElements, std::max(x.numElements, y.numElements));

  std::string body;
  llvm::raw_string_ostream os(body);
  os << codegen::gridStrideLoop(index.c_str(), y.numElements, "o")
     << "    const " << index << " plane = o / " << lit(outSize) << ";\n"
     << windowBounds(axes, index);
  std::string divisor;
  if (!isMax) {
    std::string statements;
    divisor = averageDivisor(axes, context.intAttr("count_include_pad", 0),
                             index, statements);
    os << statements;
  }
  os << "    const " << cudaTypeName(x.dtype) << " *xp = x + plane * "
     << lit(inSize) << ";\n"
     << "    " << acc << " acc = " << (isMax ? "-snug_inf()" : "0") << ";\n";
  if (isMax)
    os << "    int64_t best = -1;\n";
  // The tap loops, outermost axis first; the flat input index of a tap,
  // row-major and (for storage_order 1) with the spatial dims column-major.
  std::string indent = "    ", rowMajor, colMajor;
  int64_t colStride = 1;
  for (size_t a = 0; a < axes.size(); ++a) {
    std::string n = std::to_string(a);
    os << indent << "for (" << index << " k" << n << " = f" << n << "; k" << n
       << " < l" << n << "; ++k" << n << ") {\n"
       << indent << "  const " << index << " i" << n << " = s" << n << " + k"
       << n << " * " << lit(axes[a].dilation) << ";\n";
    indent += "  ";
    rowMajor =
        a ? "(" + rowMajor + ") * " + lit(axes[a].in) + " + i" + n : "i" + n;
    colMajor += std::string(a ? " + " : "") + "i" + n + " * " + lit(colStride);
    colStride *= axes[a].in;
  }
  os << indent << "const " << acc << " v = snug_load(xp + " << rowMajor
     << ");\n";
  if (isMax)
    os << indent << "if (v > acc || best < 0) {\n"
       << indent << "  acc = v;\n"
       << indent << "  best = (int64_t)plane * " << lit(inSize) << " + "
       << (context.intAttr("storage_order", 0) ? colMajor : rowMajor) << ";\n"
       << indent << "}\n";
  else
    os << indent << "acc += v;\n";
  for (size_t a = axes.size(); a-- > 0;) {
    indent.resize(indent.size() - 2);
    os << indent << "}\n";
  }
  if (!isMax)
    os << "    acc /= (" << acc << ")(" << divisor << ");\n";
  os << "    snug_store(y + o, acc);\n";
  if (withIndices)
    os << "    snug_store(indices + o, best);\n";
  os << "  }\n";

  Kernel kernel;
  kernel.tag = isMax ? "maxpool" : "avgpool";
  kernel.block = {256, 1, 1};
  kernel.grid = gridFor(y.numElements, 256);
  kernel.addTensor("x", x, true);
  kernel.addTensor("y", y, false);
  if (withIndices)
    kernel.addTensor("indices", context.out(1), false);
  kernel.body = os.str();
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

llvm::Error emitMaxPool(EmitContext &context) {
  return emitPool(context, true);
}
llvm::Error emitAveragePool(EmitContext &context) {
  return emitPool(context, false);
}
llvm::Error emitGlobalAveragePool(EmitContext &context) {
  return emitGlobalPool(context, false);
}
llvm::Error emitGlobalMaxPool(EmitContext &context) {
  return emitGlobalPool(context, true);
}

const EmitterEntry poolingEmitters[] = {
    {ir::OpCode::MaxPool, emitMaxPool},
    {ir::OpCode::AveragePool, emitAveragePool},
    {ir::OpCode::GlobalAveragePool, emitGlobalAveragePool},
    {ir::OpCode::GlobalMaxPool, emitGlobalMaxPool},
};

} // namespace

llvm::ArrayRef<EmitterEntry> getPoolingEmitters() { return poolingEmitters; }

} // namespace cuda
} // namespace snug
