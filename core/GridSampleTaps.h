//===- GridSampleTaps.h - GridSample's sampling rule, shared ----*- C++ -*-===//
//
// Where GridSample reads its input and with what weights, written once: the
// host reference kernel (runtime/host/kernels/GridSampleKernel.cpp) calls
// sample() per result element, and the CUDA prelude embeds this file
// verbatim after core/ScalarOps.h (compiler/cuda/CudaPrelude.cpp,
// generated at build time), so the emitted kernel
// (compiler/cuda/SamplingEmitters.cpp) calls the same sample(). Std-only;
// it compiles the three ways ScalarOps.h does and uses its math shim.
//
// The rule is the ONNX spec's (GridSample, opsets 16-22) as its reference
// implementation computes it, per spatial dim d of size n and normalized
// coordinate g (grid's last dim lists them innermost dim first: x, y, z):
//   - unnormalize: align_corners ? (g + 1) / 2 * (n - 1)
//                                : ((g + 1) * n - 1) / 2;
//   - nearest rounds that half to even first;
//   - outside the border [lo, hi] (align_corners: [0, n - 1], else
//     [-0.5, n - 0.5]) "border" clamps to [0, n - 1] and "reflection"
//     reflects by the near border, as often as it takes;
//   - the taps: nearest one (the coordinate truncated), linear two (floor
//     and floor + 1, weights 1 - t, t), cubic four (floor - 1 .. floor + 2,
//     Keys' weights with A = -0.75), t the coordinate's fraction;
//   - a tap outside [0, n) reads 0 ("zeros"), the clamped index ("border")
//     or the reflected one truncated ("reflection");
//   - the taps combine dim by dim, innermost first (the reference's nested
//     1-d interpolations), absent taps as 0 times their weight.
// Every multiply-add is an explicit m::fma, which the device cannot contract
// differently from the host (ScalarOps.h's device-math note). Defined
// where the reference fails: a reflection range of 0 (n = 1 with
// align_corners) gives lo; a NaN coordinate reads tap 0 under border and
// reflection and 0 under zeros, and its NaN weight makes the result NaN.
// Spatial rank 1 to 3; fewer dims are padded in front with size 1.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_GRIDSAMPLETAPS_H
#define SNUG_CORE_GRIDSAMPLETAPS_H

#ifndef SNUG_CORE_SCALAROPS_H
#include "core/ScalarOps.h"
#endif

namespace snug {
namespace gridsample {

enum Mode : int { kNearest = 0, kLinear = 1, kCubic = 2 };
enum Padding : int { kZeros = 0, kBorder = 1, kReflection = 2 };

/// The most spatial dims sample() handles, and the most taps per dim.
constexpr int kMaxDims = 3;
constexpr int kMaxTaps = 4;

/// One node's sampling parameters; dims are the input's spatial dims padded
/// in front with 1 to kMaxDims, `spatial` how many of them are real.
struct Setup {
  int mode;
  int padding;
  bool alignCorners;
  int spatial;
  int64_t dims[kMaxDims];
};

/// The reads along one dim: `count` input indices (-1: a zero read) and
/// their weights.
template <class C> struct Taps {
  int count;
  int64_t index[kMaxTaps];
  C weight[kMaxTaps];
};

/// A coordinate as an index, truncated toward zero (the reference's int()),
/// clamped far outside any dim so that neighbours cannot overflow; NaN
/// gives the low end.
template <class C> SNUG_HD int64_t truncIndex(C x) {
  const C limit = C(int64_t(1) << 40);
  if (!(x > -limit))
    return -(int64_t(1) << 40);
  if (x > limit)
    return int64_t(1) << 40;
  return int64_t(x);
}

template <class C> SNUG_HD C unnormalize(C g, int64_t size, bool alignCorners) {
  const C n = C(size);
  return alignCorners ? (g + C(1)) / C(2) * (n - C(1))
                      : scalar::m::fma(g + C(1), n, C(-1)) / C(2);
}

/// `x` reflected by the near border of [lo, hi] until it lies inside.
template <class C> SNUG_HD C reflect(C x, C lo, C hi) {
  const C range = hi - lo;
  if (!(range > C(0)))
    return lo;
  if (x < lo) {
    const C dx = lo - x, k = scalar::m::floor(dx / range);
    const C r = scalar::m::fma(-k, range, dx);
    return scalar::m::fmod(k, C(2)) == C(0) ? lo + r : hi - r;
  }
  if (x > hi) {
    const C dx = x - hi, k = scalar::m::floor(dx / range);
    const C r = scalar::m::fma(-k, range, dx);
    return scalar::m::fmod(k, C(2)) == C(0) ? hi - r : lo + r;
  }
  return x;
}

/// The input index tap `i` reads along a dim of `size`; -1 reads zero.
template <class C>
SNUG_HD int64_t tapIndex(int64_t i, int padding, int64_t size, C lo, C hi) {
  if (padding == kZeros)
    return i >= 0 && i < size ? i : -1;
  if (padding == kReflection)
    i = truncIndex(reflect(C(i), lo, hi));
  return i < 0 ? 0 : i >= size ? size - 1 : i;
}

/// Keys' cubic convolution weights (A = -0.75) of the four taps around a
/// coordinate with fraction t in [0, 1).
template <class C> SNUG_HD void cubicWeights(C t, C (&w)[kMaxTaps]) {
  using scalar::m::fma;
  const C a = C(-0.75), u = t + C(1), s = C(1) - t, v = C(2) - t;
  w[0] = fma(fma(fma(a, u, C(-5) * a), u, C(8) * a), u, C(-4) * a);
  w[1] = fma(fma(a + C(2), t, -(a + C(3))) * t, t, C(1));
  w[2] = fma(fma(a + C(2), s, -(a + C(3))) * s, s, C(1));
  w[3] = fma(fma(fma(a, v, C(-5) * a), v, C(8) * a), v, C(-4) * a);
}

/// The taps along one dim of `size` for normalized coordinate `g`.
template <class C>
SNUG_HD Taps<C> dimTaps(const Setup &setup, C g, int64_t size) {
  const C lo = setup.alignCorners ? C(0) : C(-0.5);
  const C hi = setup.alignCorners ? C(size - 1) : C(size) - C(0.5);
  C x = unnormalize(g, size, setup.alignCorners);
  if (setup.mode == kNearest)
    x = scalar::m::rint(x);
  if (x < lo || x > hi) {
    if (setup.padding == kBorder)
      x = x < C(0) ? C(0) : x > C(size - 1) ? C(size - 1) : x;
    else if (setup.padding == kReflection)
      x = reflect(x, lo, hi);
  }
  Taps<C> taps;
  if (setup.mode == kNearest) {
    taps.count = 1;
    taps.index[0] = tapIndex(truncIndex(x), setup.padding, size, lo, hi);
    taps.weight[0] = C(1);
    return taps;
  }
  const C base = scalar::m::floor(x), t = x - base;
  const int64_t first = truncIndex(base);
  if (setup.mode == kLinear) {
    taps.count = 2;
    taps.weight[0] = C(1) - t;
    taps.weight[1] = t;
  } else {
    taps.count = 4;
    cubicWeights(t, taps.weight);
  }
  const int64_t start = setup.mode == kLinear ? first : first - 1;
  for (int k = 0; k < taps.count; ++k)
    taps.index[k] = tapIndex(start + k, setup.padding, size, lo, hi);
  return taps;
}

/// One result element: `grid` points at its `setup.spatial` normalized
/// coordinates (x first); `load(i0, i1, i2)` gives the input element at
/// those padded spatial indices (all non-negative) as C.
template <class C, class G, class Load>
SNUG_HD C sample(const Setup &setup, G grid, Load load) {
  Taps<C> taps[kMaxDims];
  for (int d = 0; d < kMaxDims; ++d) {
    const int real = d - (kMaxDims - setup.spatial);
    if (real < 0) {
      taps[d].count = 1;
      taps[d].index[0] = 0;
      taps[d].weight[0] = C(1);
    } else {
      taps[d] = dimTaps(setup, C(grid(setup.spatial - 1 - real)),
                        setup.dims[d]);
    }
  }
  C total = C(0);
  for (int a = 0; a < taps[0].count; ++a) {
    C plane = C(0);
    for (int b = 0; b < taps[1].count; ++b) {
      C row = C(0);
      for (int c = 0; c < taps[2].count; ++c) {
        const bool zero = taps[0].index[a] < 0 || taps[1].index[b] < 0 ||
                          taps[2].index[c] < 0;
        const C value =
            zero ? C(0)
                 : C(load(taps[0].index[a], taps[1].index[b], taps[2].index[c]));
        row = scalar::m::fma(taps[2].weight[c], value, row);
      }
      plane = scalar::m::fma(taps[1].weight[b], row, plane);
    }
    total = scalar::m::fma(taps[0].weight[a], plane, total);
  }
  return total;
}

} // namespace gridsample
} // namespace snug

#endif // SNUG_CORE_GRIDSAMPLETAPS_H
