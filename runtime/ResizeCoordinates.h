//===- ResizeCoordinates.h - Resize's coordinate rules, shared -------*- C++ -*-===//
//
// Where Resize samples its input: the host kernel computes these per output
// coordinate, and the CUDA emitter computes them at compile time to check
// the closed forms it bakes into device code against the host's values.
// One definition, so the two cannot drift apart. Header-only, std only.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_RESIZECOORDINATES_H
#define SNUG_RUNTIME_RESIZECOORDINATES_H

#include <cmath>
#include <cstdint>
#include <string_view>

namespace snug {
namespace resize {

/// The input coordinate of output coordinate `o` along one axis, under the
/// coordinate transformation `mode`.
inline double sourceCoordinate(std::string_view mode, double o, double scale,
                               int64_t inSize, int64_t outSize) {
  if (mode == "asymmetric")
    return o / scale;
  if (mode == "align_corners")
    return outSize == 1 ? 0.0 : o * double(inSize - 1) / double(outSize - 1);
  if (mode == "pytorch_half_pixel")
    return outSize > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (mode == "tf_half_pixel_for_nearest")
    return (o + 0.5) / scale;
  return (o + 0.5) / scale - 0.5; // half_pixel
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

} // namespace resize
} // namespace snug

#endif // SNUG_RUNTIME_RESIZECOORDINATES_H
