//===- ResizeCoordinates.h - Resize's sampling rules, shared ---------*- C++ -*-===//
//
// Where Resize samples its input and with which weights: the host kernel
// computes these per output coordinate into per-axis tap tables; the CUDA
// emitter computes the same tables at compile time, either to check the
// closed forms it bakes into device code (nearest, linear) or to bake the
// tables themselves (cubic, antialias, tf_crop_and_resize). One definition,
// so the two cannot drift apart. The rules are those of the ONNX Resize
// spec and its reference implementation (onnx/reference/ops/op_resize.py):
// the resized length is scale * input length (not the rounded size), the
// left neighbour of an integer coordinate is the one below it, and taps
// past the edge read the edge. Header-only, std only.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_RESIZECOORDINATES_H
#define SNUG_CORE_RESIZECOORDINATES_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

namespace snug {
namespace resize {

/// Everything that fixes how one axis is sampled (the node's attributes,
/// resolved to this axis).
struct Axis {
  std::string_view mode = "nearest"; // nearest, linear, cubic
  std::string_view transform = "half_pixel";
  std::string_view nearest = "round_prefer_floor";
  int64_t in = 1, out = 1;
  double scale = 1;
  double cubicA = -0.75;
  bool antialias = false, excludeOutside = false;
  double roiStart = 0, roiEnd = 1; // tf_crop_and_resize's region, normalized

  /// Output coordinate o samples input coordinate o exactly: no resize and,
  /// under tf_crop_and_resize, the whole axis as the region.
  bool identity() const {
    return in == out && scale == 1.0 &&
           (transform != "tf_crop_and_resize" ||
            (roiStart == 0.0 && roiEnd == 1.0));
  }
  /// Antialias widens the filter only when it downscales.
  bool filters() const {
    return antialias && mode != "nearest" && scale < 1.0;
  }
};

/// The input coordinate of output coordinate `o` along `axis`.
inline double sourceCoordinate(const Axis &axis, double o) {
  std::string_view mode = axis.transform;
  double scale = axis.scale, length = scale * double(axis.in);
  if (axis.identity())
    return o;
  if (mode == "asymmetric")
    return o / scale;
  if (mode == "align_corners")
    return length == 1 ? 0.0 : o * double(axis.in - 1) / (length - 1);
  if (mode == "pytorch_half_pixel")
    return axis.out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (mode == "tf_half_pixel_for_nn")
    return (o + 0.5) / scale;
  if (mode == "tf_crop_and_resize") {
    double span = axis.roiEnd - axis.roiStart, last = double(axis.in - 1);
    double x = length == 1 ? span * last / 2 : o * span * last / (length - 1);
    return x + axis.roiStart * last;
  }
  if (mode == "half_pixel_symmetric") {
    // Centres the rounded output on the input: differs from half_pixel
    // only when out != scale * in.
    double adjustment = double(axis.out) / length;
    double offset = double(axis.in) / 2 * (1 - adjustment);
    return offset + (o + 0.5) / scale - 0.5;
  }
  return (o + 0.5) / scale - 0.5; // half_pixel
}

/// tf_crop_and_resize writes extrapolation_value where the region leaves
/// the input.
inline bool outsideInput(const Axis &axis, double x) {
  return axis.transform == "tf_crop_and_resize" && !axis.identity() &&
         (x < 0 || x > double(axis.in - 1));
}

/// The input index nearest-mode Resize reads for coordinate `x`.
inline int64_t nearestIndex(std::string_view mode, double x) {
  if (mode == "floor")
    return int64_t(std::floor(x));
  if (mode == "ceil")
    return int64_t(std::ceil(x));
  double f = std::floor(x);
  if (x - f == 0.5)
    return int64_t(mode == "round_prefer_ceil" ? f + 1 : f);
  return int64_t(std::round(x));
}

/// The cubic convolution kernel with coefficient `a` at distance `t`.
inline double cubicKernel(double a, double t) {
  t = std::fabs(t);
  double t2 = t * t, t3 = t2 * t;
  if (t <= 1)
    return (a + 2) * t3 - (a + 3) * t2 + 1;
  if (t < 2)
    return a * t3 - 5 * a * t2 + 8 * a * t - 4 * a;
  return 0.0;
}

/// How many taps each output coordinate of `axis` reads: 1 (nearest), 2
/// (linear), 4 (cubic), or the filter's support over the downscale when
/// antialiased (the kernel stretched by 1 / scale).
inline int64_t tapCount(const Axis &axis) {
  if (axis.mode == "nearest")
    return 1;
  int64_t radius = axis.mode == "cubic" ? 2 : 1;
  if (!axis.filters())
    return 2 * radius;
  int64_t start = int64_t(std::floor(-double(radius) / axis.scale)) + 1;
  return 2 - 2 * start;
}

/// The taps of one output coordinate: tapCount(axis) input indices (already
/// clamped to the axis: past the edge reads the edge) and their weights;
/// `outside` (then no taps) when the coordinate takes extrapolation_value.
struct Taps {
  bool outside = false;
  std::vector<int64_t> index;
  std::vector<double> weight;
};

inline Taps axisTaps(const Axis &axis, int64_t o) {
  Taps taps;
  double x = sourceCoordinate(axis, double(o));
  if (outsideInput(axis, x)) {
    taps.outside = true;
    return taps;
  }
  int64_t last = axis.in - 1;
  auto clamp = [&](int64_t i) { return std::min(std::max<int64_t>(i, 0), last); };
  if (axis.mode == "nearest") {
    taps.index.push_back(clamp(nearestIndex(axis.nearest, x)));
    taps.weight.push_back(1.0);
    return taps;
  }
  if (axis.mode == "linear" && !axis.filters()) {
    // Clamping the coordinate reads the edge as the reference's padding
    // does; the second tap's weight is the fraction.
    x = std::min(std::max(x, 0.0), double(last));
    int64_t low = int64_t(std::floor(x));
    double fraction = x - double(low);
    taps.index = {low, clamp(low + 1)};
    taps.weight = {1.0 - fraction, fraction};
    return taps;
  }
  // Cubic, or a filtered (antialiased) linear downscale: the kernel at each
  // tap's distance from x, measured in output pixels when filtering. The
  // left neighbour of an integer x is x - 1 (fraction 1), as the reference.
  double floorX = std::floor(x);
  bool whole = x == floorX;
  double fraction = whole ? 1.0 : x - floorX;
  int64_t left = int64_t(floorX) - (whole ? 1 : 0);
  int64_t count = tapCount(axis), start = 1 - count / 2;
  double stretch = axis.filters() ? axis.scale : 1.0;
  double sum = 0;
  for (int64_t k = start; k < start + count; ++k) {
    double t = stretch * (double(k) - fraction);
    double w = axis.mode == "cubic" ? cubicKernel(axis.cubicA, t)
                                    : std::min(std::max(1 - std::fabs(t), 0.0), 1.0);
    taps.index.push_back(left + k);
    taps.weight.push_back(w);
    sum += w;
  }
  if (axis.filters())
    for (double &w : taps.weight)
      w /= sum;
  if (axis.excludeOutside) {
    // Taps past the edge weigh nothing; the rest are renormalized.
    sum = 0;
    for (size_t k = 0; k < taps.index.size(); ++k) {
      if (taps.index[k] < 0 || taps.index[k] > last)
        taps.weight[k] = 0;
      sum += taps.weight[k];
    }
    for (double &w : taps.weight)
      w /= sum;
  }
  for (int64_t &i : taps.index)
    i = clamp(i);
  return taps;
}

/// One axis's taps for every output coordinate, flattened: coordinate o
/// reads index[o * count + k] with weight[o * count + k]; outside[o] when it
/// takes extrapolation_value instead (its taps are then index 0, weight 0).
struct AxisTable {
  int64_t count = 1;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> outside;
};

inline AxisTable axisTable(const Axis &axis) {
  AxisTable table;
  table.count = tapCount(axis);
  for (int64_t o = 0; o < axis.out; ++o) {
    Taps taps = axisTaps(axis, o);
    table.outside.push_back(taps.outside);
    if (taps.outside) {
      taps.index.assign(size_t(table.count), 0);
      taps.weight.assign(size_t(table.count), 0.0);
    }
    table.index.insert(table.index.end(), taps.index.begin(), taps.index.end());
    table.weight.insert(table.weight.end(), taps.weight.begin(), taps.weight.end());
  }
  return table;
}

} // namespace resize
} // namespace snug

#endif // SNUG_CORE_RESIZECOORDINATES_H
