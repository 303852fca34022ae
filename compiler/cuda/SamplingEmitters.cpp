//===- SamplingEmitters.cpp - CUDA emitter: GridSample --------------------===//
//
// GridSample, one thread per result element: it reads its grid point's k
// coordinates and calls the prelude's snug::gridsample::sample(), which is
// core/GridSampleTaps.h embedded verbatim (CudaPrelude.cpp), the same
// function the host reference kernel calls, so the two compute alike. The
// node's sizes and attributes are baked into a constant Setup; compute type
// double when the input or the grid is f64, float otherwise (the host's).
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/KernelEmitter.h"
#include "core/GridSampleTaps.h"

#include <string>

namespace snug {
namespace cuda {

using namespace codegen;

namespace {

llvm::Error emitGridSample(EmitContext &context) {
  const TensorRef &x = context.in(0), &grid = context.in(1), &y = context.out();
  unsigned rank = x.rank();
  if (rank < 3 || rank > 2 + gridsample::kMaxDims || grid.rank() != rank ||
      y.rank() != rank || grid.dims[0] != x.dims[0] ||
      grid.dims[rank - 1] != int64_t(rank - 2))
    return context.unsupported("operand and grid shapes do not match");
  std::string mode = context.stringAttr("mode", "linear");
  std::string padding = context.stringAttr("padding_mode", "zeros");
  int modeCode = mode == "nearest"  ? gridsample::kNearest
                 : mode == "linear" ? gridsample::kLinear
                 : mode == "cubic"  ? gridsample::kCubic
                                    : -1;
  int paddingCode = padding == "zeros"        ? gridsample::kZeros
                    : padding == "border"     ? gridsample::kBorder
                    : padding == "reflection" ? gridsample::kReflection
                                              : -1;
  if (modeCode < 0 || paddingCode < 0)
    return context.unsupported("mode '" + mode + "' or padding_mode '" +
                               padding + "' is not supported");
  if (y.numElements == 0)
    return llvm::Error::success();
  int spatial = int(rank - 2);
  int64_t dims[gridsample::kMaxDims];
  for (int d = 0; d < gridsample::kMaxDims; ++d) {
    int real = d - (gridsample::kMaxDims - spatial);
    dims[d] = real < 0 ? 1 : x.dims[size_t(2 + real)];
    if (dims[d] < 1)
      return context.unsupported("cannot sample an empty input");
  }
  int64_t channels = x.dims[1];
  int64_t points = y.numElements / (x.dims[0] * channels);
  const char *type =
      x.dtype == ir::DType::F64 || grid.dtype == ir::DType::F64 ? "double"
                                                                 : "float";
  std::string c = type;
  auto lit = [](int64_t v) { return cudaIntLiteral(v); };

  Kernel kernel;
  kernel.tag = "gridsample";
  kernel.addTensor("in", x, true);
  kernel.addTensor("grid", grid, true);
  kernel.addTensor("out", y, false);
  kernel.body =
      "  const snug::gridsample::Setup setup = {" + std::to_string(modeCode) +
      ", " + std::to_string(paddingCode) + ", " +
      (context.intAttr("align_corners", 0) ? "true" : "false") + ", " +
      std::to_string(spatial) + ", {" + lit(dims[0]) + ", " + lit(dims[1]) +
      ", " + lit(dims[2]) + "}};\n" + gridStrideLoop("int64_t", y.numElements) +
      "    const int64_t p = i % " + lit(points) + ", nc = i / " +
      lit(points) + ", n = nc / " + lit(channels) + ";\n" +
      "    const int64_t at = (n * " + lit(points) + " + p) * " +
      lit(spatial) + ";\n" +
      "    const auto *plane = in + nc * " +
      lit(dims[0] * dims[1] * dims[2]) + ";\n" +
      "    auto coordinate = [&](int j) { return snug_load_as<" + c +
      ">(grid + at + j); };\n" +
      "    auto load = [&](int64_t a, int64_t b, int64_t e) {\n"
      "      return snug_load_as<" + c + ">(plane + (a * " + lit(dims[1]) +
      " + b) * " + lit(dims[2]) + " + e);\n    };\n" +
      "    " + storeConverted(y.dtype, c, "out + i",
                              "snug::gridsample::sample<" + c +
                                  ">(setup, coordinate, load)") +
      "  }\n";
  launchGridStride(context, std::move(kernel), y.numElements);
  return llvm::Error::success();
}

const EmitterEntry kSamplingEmitters[] = {
    {ir::OpCode::GridSample, emitGridSample},
};

} // namespace

llvm::ArrayRef<EmitterEntry> getSamplingEmitters() { return kSamplingEmitters; }

} // namespace cuda
} // namespace snug
