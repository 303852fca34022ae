//===- ConvKernels.cpp - Conv, ConvTranspose and pooling ------------------===//
//
// Convolutions and pools over 1, 2 or 3 spatial dims, all run as 3-d by
// padding the leading spatial dims with 1. Attributes are canonical:
// kernel_shape, strides, dilations, pads (begin..., end...) resolved by the
// importer (auto_pad already turned into pads); output sizes come from the
// result's type. Conv accumulates in float (reference, not fast); pools in
// double. Under --precision=tf32 (math = "tf32") Conv rounds x and w to
// TF32 first (core/ScalarOps.h's roundToTf32, as the device's MMA
// kernel does).
//
//===----------------------------------------------------------------------===//
#include "runtime/host/Kernels.h"

#include <cmath>
#include <limits>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

struct Window {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int64_t padBegin[3] = {0, 0, 0}, padEnd[3] = {0, 0, 0};
  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
};

/// Reads the window of an N-C-spatial op; `kernelDims` (from the weight)
/// supplies kernel_shape when the attribute is absent.
Status readWindow(const KernelContext &ctx, const TensorView &x,
                  const TensorView &y, const std::vector<int64_t> *kernelDims,
                  Window &w) {
  int64_t spatial = int64_t(x.getRank()) - 2;
  if (spatial < 1 || spatial > 3 || y.getRank() != x.getRank())
    return ctx.error("supports 1 to 3 spatial dims");
  int64_t shift = 3 - spatial;
  auto read = [&](const char *name, int64_t *into, int64_t count,
                  int64_t fallback) -> bool {
    const std::vector<int64_t> *values = ctx.getInts(name);
    for (int64_t i = 0; i < count; ++i)
      into[i] = fallback;
    if (!values)
      return true;
    if (int64_t(values->size()) != count)
      return false;
    for (int64_t i = 0; i < count; ++i)
      into[i] = (*values)[i];
    return true;
  };
  int64_t kernel[3], stride[3], dilation[3], pads[6];
  if (!read("kernel_shape", kernel, spatial, 1) ||
      !read("strides", stride, spatial, 1) ||
      !read("dilations", dilation, spatial, 1) ||
      !read("pads", pads, 2 * spatial, 0))
    return ctx.error("kernel_shape, strides, dilations or pads do not fit " +
                     std::to_string(spatial) + " spatial dims");
  if (!ctx.getInts("kernel_shape")) {
    if (!kernelDims)
      return ctx.error("kernel_shape is required");
    for (int64_t i = 0; i < spatial; ++i)
      kernel[i] = (*kernelDims)[2 + i];
  }
  if (kernelDims)
    for (int64_t i = 0; i < spatial; ++i)
      if (kernel[i] != (*kernelDims)[2 + i])
        return ctx.error("kernel_shape does not match the weight");
  for (int64_t i = 0; i < spatial; ++i) {
    w.in[shift + i] = x.dim(2 + i);
    w.out[shift + i] = y.dim(2 + i);
    w.kernel[shift + i] = kernel[i];
    w.stride[shift + i] = stride[i];
    w.dilation[shift + i] = dilation[i];
    w.padBegin[shift + i] = pads[i];
    w.padEnd[shift + i] = pads[spatial + i];
    if (kernel[i] <= 0 || stride[i] <= 0 || dilation[i] <= 0)
      return ctx.error("kernel_shape, strides and dilations must be positive");
  }
  return Status::ok();
}

Status convKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(2, 1))
    return s;
  const TensorView &xv = ctx.in(0), &wv = ctx.in(1), &yv = ctx.out(0);
  if (wv.getRank() != xv.getRank())
    return ctx.error("weight rank differs from the input's");
  Window w;
  if (Status s = readWindow(ctx, xv, yv, wv.dims, w))
    return s;
  int64_t n = xv.dim(0), c = xv.dim(1), m = yv.dim(1);
  int64_t group = ctx.getInt("group", 1);
  if (group <= 0 || c % group || m % group || wv.dim(0) != m ||
      wv.dim(1) != c / group || yv.dim(0) != n)
    return ctx.error("channels, group and weight shape do not agree");
  int64_t cg = c / group, mg = m / group;
  int64_t kSize = w.kernel[0] * w.kernel[1] * w.kernel[2];
  // Under tf32 both multiplied operands are rounded as the device's are
  // (the bias is added in f32).
  FloatInput x(xv, ctx.isTf32()), weight(wv, ctx.isTf32());
  std::vector<float> biasCopy(m, 0.0f);
  if (ctx.hasInput(2)) {
    if (ctx.in(2).numElements != m)
      return ctx.error("bias needs " + std::to_string(m) + " elements");
    FloatInput bias(ctx.in(2));
    for (int64_t k = 0; k < m; ++k)
      biasCopy[k] = bias[k];
  }
  FloatOutput y(yv);
  int64_t inSize = w.inSize(), outSize = w.outSize();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < m; ++oc) {
      float *out = y.data() + (b * m + oc) * outSize;
      for (int64_t i = 0; i < outSize; ++i)
        out[i] = biasCopy[oc];
      int64_t g = oc / mg;
      for (int64_t ic = 0; ic < cg; ++ic) {
        const float *in = x.data() + (b * c + g * cg + ic) * inSize;
        const float *kernel = weight.data() + (oc * cg + ic) * kSize;
        for (int64_t kd = 0; kd < w.kernel[0]; ++kd)
          for (int64_t kh = 0; kh < w.kernel[1]; ++kh)
            for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
              float wk = kernel[(kd * w.kernel[1] + kh) * w.kernel[2] + kw];
              for (int64_t od = 0; od < w.out[0]; ++od) {
                int64_t id = od * w.stride[0] - w.padBegin[0] + kd * w.dilation[0];
                if (id < 0 || id >= w.in[0])
                  continue;
                for (int64_t oh = 0; oh < w.out[1]; ++oh) {
                  int64_t ih = oh * w.stride[1] - w.padBegin[1] + kh * w.dilation[1];
                  if (ih < 0 || ih >= w.in[1])
                    continue;
                  const float *row = in + (id * w.in[1] + ih) * w.in[2];
                  float *outRow = out + (od * w.out[1] + oh) * w.out[2];
                  for (int64_t ow = 0; ow < w.out[2]; ++ow) {
                    int64_t iw = ow * w.stride[2] - w.padBegin[2] + kw * w.dilation[2];
                    if (iw >= 0 && iw < w.in[2])
                      outRow[ow] += wk * row[iw];
                  }
                }
              }
            }
      }
    }
  y.finish();
  return Status::ok();
}

/// ConvTranspose: weight (C, M/group, k...); output size from the result
/// type (output_shape / output_padding were resolved into it).
Status convTransposeKernel(KernelContext &ctx) {
  if (Status s = ctx.expect(2, 1))
    return s;
  const TensorView &xv = ctx.in(0), &wv = ctx.in(1), &yv = ctx.out(0);
  if (wv.getRank() != xv.getRank())
    return ctx.error("weight rank differs from the input's");
  Window w;
  if (Status s = readWindow(ctx, xv, yv, wv.dims, w))
    return s;
  int64_t n = xv.dim(0), c = xv.dim(1), m = yv.dim(1);
  int64_t group = ctx.getInt("group", 1);
  if (group <= 0 || c % group || m % group || wv.dim(0) != c ||
      wv.dim(1) != m / group || yv.dim(0) != n ||
      (ctx.hasInput(2) && ctx.in(2).numElements != m))
    return ctx.error("channels, group and weight shape do not agree");
  int64_t cg = c / group, mg = m / group;
  int64_t kSize = w.kernel[0] * w.kernel[1] * w.kernel[2];
  FloatInput x(xv), weight(wv);
  FloatOutput y(yv);
  int64_t inSize = w.inSize(), outSize = w.outSize();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < m; ++oc) {
      float bias = 0;
      if (ctx.hasInput(2))
        bias = float(loadDouble(ctx.in(2).data, ctx.in(2).dtype, oc));
      float *out = y.data() + (b * m + oc) * outSize;
      for (int64_t i = 0; i < outSize; ++i)
        out[i] = bias;
    }
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ic = 0; ic < c; ++ic) {
      int64_t g = ic / cg;
      const float *in = x.data() + (b * c + ic) * inSize;
      for (int64_t j = 0; j < mg; ++j) {
        int64_t oc = g * mg + j;
        float *out = y.data() + (b * m + oc) * outSize;
        const float *kernel = weight.data() + (ic * mg + j) * kSize;
        for (int64_t id = 0; id < w.in[0]; ++id)
          for (int64_t ih = 0; ih < w.in[1]; ++ih)
            for (int64_t iw = 0; iw < w.in[2]; ++iw) {
              float v = in[(id * w.in[1] + ih) * w.in[2] + iw];
              for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
                int64_t od = id * w.stride[0] - w.padBegin[0] + kd * w.dilation[0];
                if (od < 0 || od >= w.out[0])
                  continue;
                for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
                  int64_t oh = ih * w.stride[1] - w.padBegin[1] + kh * w.dilation[1];
                  if (oh < 0 || oh >= w.out[1])
                    continue;
                  for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
                    int64_t ow = iw * w.stride[2] - w.padBegin[2] + kw * w.dilation[2];
                    if (ow < 0 || ow >= w.out[2])
                      continue;
                    out[(od * w.out[1] + oh) * w.out[2] + ow] +=
                        v * kernel[(kd * w.kernel[1] + kh) * w.kernel[2] + kw];
                  }
                }
              }
            }
      }
    }
  y.finish();
  return Status::ok();
}

enum class Pool { Max, Average };

Status pool(KernelContext &ctx, Pool kind) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  Window w;
  if (Status s = readWindow(ctx, x, y, nullptr, w))
    return s;
  if (y.dim(0) != x.dim(0) || y.dim(1) != x.dim(1))
    return ctx.error("result batch and channels differ from the operand's");
  bool includePad = ctx.getInt("count_include_pad", 0);
  const TensorView *indices =
      ctx.outputs.size() > 1 && ctx.out(1).present ? &ctx.out(1) : nullptr;
  // Indices are flat over N, C and the spatial dims, row-major
  // (storage_order 0) or with the spatial dims column-major (1).
  bool columnMajor = ctx.getInt("storage_order", 0) != 0;
  if (indices && indices->numElements != y.numElements)
    return ctx.error("indices must have the result's size");
  int64_t planes = x.dim(0) * x.dim(1);
  int64_t inSize = w.inSize(), outSize = w.outSize();
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t od = 0; od < w.out[0]; ++od)
      for (int64_t oh = 0; oh < w.out[1]; ++oh)
        for (int64_t ow = 0; ow < w.out[2]; ++ow) {
          int64_t start[3] = {od * w.stride[0] - w.padBegin[0],
                              oh * w.stride[1] - w.padBegin[1],
                              ow * w.stride[2] - w.padBegin[2]};
          double acc = kind == Pool::Max
                           ? -std::numeric_limits<double>::infinity()
                           : 0.0;
          int64_t count = 0, padded = 1, best = -1;
          for (int a = 0; a < 3; ++a) {
            // Window cells inside the padded input count with count_include_pad.
            int64_t first = start[a];
            int64_t last = std::min(start[a] + (w.kernel[a] - 1) * w.dilation[a],
                                    w.in[a] + w.padEnd[a] - 1);
            padded *= last < first ? 0 : (last - first) / w.dilation[a] + 1;
          }
          // Only the taps that land inside the input (so a huge window
          // costs no more than the input it covers).
          int64_t first[3], last[3];
          for (int a = 0; a < 3; ++a) {
            int64_t d = w.dilation[a];
            first[a] = start[a] >= 0 ? 0 : (-start[a] + d - 1) / d;
            last[a] = std::min(w.kernel[a],
                               start[a] >= w.in[a]
                                   ? 0
                                   : (w.in[a] - 1 - start[a]) / d + 1);
          }
          for (int64_t kd = first[0]; kd < last[0]; ++kd) {
            int64_t id = start[0] + kd * w.dilation[0];
            for (int64_t kh = first[1]; kh < last[1]; ++kh) {
              int64_t ih = start[1] + kh * w.dilation[1];
              for (int64_t kw = first[2]; kw < last[2]; ++kw) {
                int64_t iw = start[2] + kw * w.dilation[2];
                int64_t at = plane * inSize + (id * w.in[1] + ih) * w.in[2] + iw;
                double v = loadDouble(x.data, x.dtype, at);
                ++count;
                if (kind == Pool::Max) {
                  if (v > acc || best < 0)
                    acc = v, best = columnMajor
                                       ? plane * inSize +
                                             (iw * w.in[1] + ih) * w.in[0] + id
                                       : at;
                } else {
                  acc += v;
                }
              }
            }
          }
          int64_t out = plane * outSize + (od * w.out[1] + oh) * w.out[2] + ow;
          if (kind == Pool::Average)
            acc /= double(includePad ? padded : count);
          storeDouble(y.data, y.dtype, out, acc);
          if (indices)
            storeInt(indices->data, indices->dtype, out, best);
        }
  return Status::ok();
}

Status maxPoolKernel(KernelContext &ctx) { return pool(ctx, Pool::Max); }
Status averagePoolKernel(KernelContext &ctx) { return pool(ctx, Pool::Average); }

Status globalPool(KernelContext &ctx, bool isMax) {
  if (Status s = ctx.expect(1, 1))
    return s;
  const TensorView &x = ctx.in(0), &y = ctx.out(0);
  if (x.getRank() < 2)
    return ctx.error("needs rank >= 2");
  int64_t planes = x.dim(0) * x.dim(1);
  if (y.numElements != planes)
    return ctx.error("result must hold one value per channel");
  int64_t inner = planes ? x.numElements / planes : 0;
  for (int64_t plane = 0; plane < planes; ++plane) {
    double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t i = 0; i < inner; ++i) {
      double v = loadDouble(x.data, x.dtype, plane * inner + i);
      acc = isMax ? std::max(acc, v) : acc + v;
    }
    storeDouble(y.data, y.dtype, plane, isMax ? acc : acc / double(inner));
  }
  return Status::ok();
}

Status globalAveragePoolKernel(KernelContext &ctx) { return globalPool(ctx, false); }
Status globalMaxPoolKernel(KernelContext &ctx) { return globalPool(ctx, true); }

} // namespace

void registerConvKernels(KernelTable &t) {
  t.set(OpCode::Conv, convKernel);
  t.set(OpCode::ConvTranspose, convTransposeKernel);
  t.set(OpCode::MaxPool, maxPoolKernel);
  t.set(OpCode::AveragePool, averagePoolKernel);
  t.set(OpCode::GlobalAveragePool, globalAveragePoolKernel);
  t.set(OpCode::GlobalMaxPool, globalMaxPoolKernel);
}

} // namespace rt
} // namespace snug
