//===- GridSampleKernel.cpp - GridSample's host reference kernel ----------===//
//
// GridSample (ONNX opsets 16-22): X [N, C, spatial...] sampled at the
// normalized coordinates of grid [N, out spatial..., k], k = X's spatial
// rank (1 to 3), into Y [N, C, out spatial...]. Where it reads and with
// what weights is core/GridSampleTaps.h, which the CUDA kernel runs too;
// this file only walks the elements. Compute type: double when X or grid is
// f64, float otherwise (integer X converts back by the float -> integer
// rule), as the CUDA kernel.
//
//===----------------------------------------------------------------------===//
#include "core/GridSampleTaps.h"
#include "runtime/host/Kernels.h"

#include <string>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

/// The attributes as GridSampleTaps.h's enums; false for a value the shape
/// function would have refused.
bool readSetup(const KernelContext &ctx, gridsample::Setup &setup) {
  std::string mode = ctx.getString("mode", "linear");
  std::string padding = ctx.getString("padding_mode", "zeros");
  setup.mode = mode == "nearest"  ? gridsample::kNearest
               : mode == "linear" ? gridsample::kLinear
               : mode == "cubic"  ? gridsample::kCubic
                                  : -1;
  setup.padding = padding == "zeros"        ? gridsample::kZeros
                  : padding == "border"     ? gridsample::kBorder
                  : padding == "reflection" ? gridsample::kReflection
                                            : -1;
  setup.alignCorners = ctx.getInt("align_corners", 0) != 0;
  return setup.mode >= 0 && setup.padding >= 0;
}

template <class C>
void run(const TensorView &x, const TensorView &grid, const TensorView &y,
         const gridsample::Setup &setup) {
  int64_t batch = x.dim(0), channels = x.dim(1);
  int64_t planeSize = setup.dims[0] * setup.dims[1] * setup.dims[2];
  int64_t points = channels ? y.numElements / (batch * channels) : 0;
  int k = setup.spatial;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t p = 0; p < points; ++p) {
      int64_t at = (n * points + p) * k;
      auto coordinate = [&](int j) {
        return loadAs<C>(grid.data, grid.dtype, at + j);
      };
      for (int64_t c = 0; c < channels; ++c) {
        int64_t plane = (n * channels + c) * planeSize;
        auto load = [&](int64_t a, int64_t b, int64_t e) {
          return loadAs<C>(x.data, x.dtype,
                           plane + (a * setup.dims[1] + b) * setup.dims[2] + e);
        };
        C value = gridsample::sample<C>(setup, coordinate, load);
        storeAs<C>(y.data, y.dtype, (n * channels + c) * points + p, value);
      }
    }
}

Status gridSampleKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(2, 1))
    return s;
  const TensorView &x = ctx.in(0), &grid = ctx.in(1), &y = ctx.out(0);
  unsigned rank = x.getRank();
  if (rank < 3 || rank > 2 + gridsample::kMaxDims || grid.getRank() != rank ||
      y.getRank() != rank || grid.dim(0) != x.dim(0) ||
      grid.dim(rank - 1) != int64_t(rank - 2) || y.dim(0) != x.dim(0) ||
      y.dim(1) != x.dim(1))
    return ctx.error("operand and grid shapes do not match");
  for (unsigned d = 2; d < rank; ++d)
    if (y.dim(d) != grid.dim(d - 1))
      return ctx.error("result does not match the grid");
  gridsample::Setup setup;
  if (!readSetup(ctx, setup))
    return ctx.error("mode or padding_mode is not supported");
  setup.spatial = int(rank - 2);
  for (int d = 0; d < gridsample::kMaxDims; ++d) {
    int real = d - (gridsample::kMaxDims - setup.spatial);
    setup.dims[d] = real < 0 ? 1 : x.dim(unsigned(2 + real));
  }
  if (y.numElements == 0)
    return Status::ok();
  for (int64_t size : setup.dims)
    if (size < 1)
      return ctx.error("cannot sample an empty input");
  if (x.dtype == DTypeF64 || grid.dtype == DTypeF64)
    run<double>(x, grid, y, setup);
  else
    run<float>(x, grid, y, setup);
  return Status::ok();
}

} // namespace

void registerSamplingKernels(KernelTable &table) {
  table.set(OpCode::GridSample, gridSampleKernel);
}

} // namespace rt
} // namespace snug
