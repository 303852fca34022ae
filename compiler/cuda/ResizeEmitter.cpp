//===- ResizeEmitter.cpp - CUDA emitter: Resize ---------------------------===//
//
// Resize (nearest, linear and cubic, every coordinate transformation mode
// and antialiasing) with the host reference kernel's semantics
// (core/ResizeCoordinates.h gives both the same coordinates, taps and
// weights). Nearest and plain linear axes get closed forms: the source
// coordinate as the same double operations in the same order as the host,
// so the same bits. Cubic, antialiased and tf_crop_and_resize axes read the
// host's tap tables, baked into the kernel as static arrays. Registered in
// DataMovementEmitters.cpp's table.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/DataMovementInternal.h"
#include "compiler/cuda/KernelEmitter.h"
#include "core/ResizeCoordinates.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <numeric>

namespace snug {
namespace cuda {

using namespace codegen;

namespace {

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

/// resize::sourceCoordinate as device code over `o` (an integer coordinate)
/// for the transforms the closed forms use: the same double operations in
/// the same order, with the compile-time constants folded as the host's
/// would be, so the same bits.
std::string resizeSourceCode(const resize::Axis &axis, llvm::StringRef o) {
  std::string x = "(double)" + o.str(), s = cudaFloatLiteral(axis.scale);
  llvm::StringRef mode = axis.transform;
  double length = axis.scale * double(axis.in);
  if (mode == "asymmetric")
    return x + " / " + s;
  if (mode == "align_corners")
    return length == 1 ? "0.0"
                       : x + " * " + cudaFloatLiteral(double(axis.in - 1)) +
                             " / " + cudaFloatLiteral(length - 1);
  if (mode == "pytorch_half_pixel" && axis.out <= 1)
    return "0.0";
  if (mode == "tf_half_pixel_for_nn")
    return "(" + x + " + 0.5) / " + s;
  if (mode == "half_pixel_symmetric") {
    double adjustment = double(axis.out) / length;
    double offset = double(axis.in) / 2 * (1 - adjustment);
    return cudaFloatLiteral(offset) + " + (" + x + " + 0.5) / " + s + " - 0.5";
  }
  return "(" + x + " + 0.5) / " + s + " - 0.5";
}

std::string nearestIndexCode(llvm::StringRef mode, llvm::StringRef x) {
  std::string X = x.str();
  if (mode == "floor")
    return "(int64_t)floor(" + X + ")";
  if (mode == "ceil")
    return "(int64_t)ceil(" + X + ")";
  std::string f = "floor(" + X + ")";
  return "(int64_t)(" + X + " - " + f + " == 0.5 ? " + f +
         (mode == "round_prefer_ceil" ? " + 1.0" : "") + " : round(" + X +
         "))";
}

/// A closed form for a nearest axis whose table is (o * p) / q (integer
/// scale factors): "" when there is none.
std::string nearestClosedForm(const resize::Axis &axis, llvm::StringRef o) {
  int64_t g = std::gcd(axis.in, axis.out), p = axis.in / g, q = axis.out / g;
  resize::AxisTable table = resize::axisTable(axis);
  for (int64_t k = 0; k < axis.out; ++k)
    if (table.index[k] != k * p / q)
      return "";
  std::string text = o.str();
  if (p != 1)
    text += " * " + cudaIntLiteral(p);
  if (q != 1)
    text = "(" + text + ") / " + cudaIntLiteral(q);
  return text;
}

/// The resize axes of a node, as the host kernel resolves them (the
/// strings point into `strings`, which must outlive them).
std::vector<resize::Axis> resizeAxes(EmitContext &context, const TensorRef &x,
                                     const TensorRef &y,
                                     const std::vector<std::string> &strings) {
  size_t rank = x.rank();
  std::vector<float> given = context.floatsAttr("scales");
  std::vector<float> roi = context.floatsAttr("roi");
  std::vector<resize::Axis> axes;
  for (size_t d = 0; d < rank; ++d) {
    resize::Axis axis;
    axis.mode = strings[0], axis.transform = strings[1];
    axis.nearest = strings[2];
    axis.in = x.dims[d], axis.out = y.dims[d];
    axis.scale = given.size() == rank ? double(given[d])
                 : x.dims[d] ? double(y.dims[d]) / double(x.dims[d])
                             : 1.0;
    axis.cubicA = context.floatAttr("cubic_coeff_a", -0.75f);
    axis.antialias = context.intAttr("antialias", 0) != 0;
    axis.excludeOutside = context.intAttr("exclude_outside", 0) != 0;
    if (roi.size() == 2 * rank)
      axis.roiStart = roi[d], axis.roiEnd = roi[d + rank];
    axes.push_back(axis);
  }
  return axes;
}

/// Cubic, antialiased and tf_crop_and_resize axes: the host's tap tables
/// (core/ResizeCoordinates.h), baked into the kernel as static arrays
/// (input offsets and weights per output coordinate), and the same sum in
/// the same order as the host: axis 0's taps varying fastest, the weight
/// multiplied in axis order, zero weights skipped.
void emitResizeTables(EmitContext &context, const std::vector<resize::Axis> &axes,
                      bool copies) {
  const TensorRef &x = context.in(0), &y = context.out();
  size_t rank = axes.size();
  std::vector<int64_t> inStrides = x.strides();
  const char *index = indexTypeFor(context, y.numElements, x.numElements);
  Kernel kernel;
  kernel.tag = "resize";
  kernel.addTensor("x", x, true);
  kernel.addTensor("out", y, false);
  std::string text;
  llvm::raw_string_ostream os(text);
  std::vector<bool> needed;
  std::vector<resize::AxisTable> tables;
  bool anyOutside = false;
  for (size_t d = 0; d < rank; ++d) {
    needed.push_back(axes[d].out > 1);
    tables.push_back(axes[d].identity() ? resize::AxisTable()
                                        : resize::axisTable(axes[d]));
    const resize::AxisTable &table = tables.back();
    if (axes[d].identity())
      continue;
    bool outside = llvm::is_contained(table.outside, true);
    anyOutside |= outside;
    std::string D = std::to_string(d);
    os << "  static const int64_t at" << D << "[] = {";
    for (size_t k = 0; k < table.index.size(); ++k)
      os << (k ? ", " : "") << cudaIntLiteral(table.index[k] * inStrides[d]);
    os << "};\n";
    if (!copies) {
      os << "  static const double wt" << D << "[] = {";
      for (size_t k = 0; k < table.weight.size(); ++k)
        os << (k ? ", " : "") << cudaFloatLiteral(table.weight[k]);
      os << "};\n";
    }
    if (outside) {
      os << "  static const unsigned char ot" << D << "[] = {";
      for (size_t k = 0; k < table.outside.size(); ++k)
        os << (k ? ", " : "") << (table.outside[k] ? 1 : 0);
      os << "};\n";
    }
  }
  os << gridStrideLoop(index, y.numElements)
     << emitCoordinates(y.dims, index, "i", "d", needed);
  auto coordinate = [&](size_t d) {
    return axes[d].out > 1 ? "d" + std::to_string(d) : std::string("0");
  };
  std::string base; // identity axes
  for (size_t d = 0; d < rank; ++d)
    if (axes[d].identity() && axes[d].out > 1)
      base += " + " + coordinate(d) +
              (inStrides[d] == 1 ? "" : " * " + cudaIntLiteral(inStrides[d]));
  if (anyOutside) {
    std::string test;
    for (size_t d = 0; d < rank; ++d)
      if (!axes[d].identity() && llvm::is_contained(tables[d].outside, true))
        test += std::string(test.empty() ? "" : " || ") + "ot" +
                std::to_string(d) + "[" + coordinate(d) + "]";
    os << "    if (" << test << ") {\n      "
       << storeConverted(y.dtype, "double", "out + i",
                         cudaFloatLiteral(context.floatAttr(
                             "extrapolation_value", 0.0f)))
       << "      continue;\n    }\n";
  }
  // Loops over the taps, the last axis outermost so axis 0's vary fastest.
  std::vector<size_t> tapped;
  for (size_t d = 0; d < rank; ++d)
    if (!axes[d].identity())
      tapped.push_back(d);
  if (!copies)
    os << "    double acc = 0.0;\n";
  std::string indent = "    ", offset = base, weight;
  for (size_t k = tapped.size(); k-- > 0;) {
    size_t d = tapped[k];
    std::string D = std::to_string(d), C = cudaIntLiteral(tables[d].count);
    os << indent << "for (int t" << D << " = 0; t" << D << " < " << C << "; ++t"
       << D << ") {\n";
    indent += "  ";
    os << indent << "const int64_t r" << D << " = " << coordinate(d) << " * "
       << C << " + t" << D << ";\n";
    offset += " + at" + D + "[r" + D + "]";
  }
  for (size_t d : tapped)
    weight += std::string(weight.empty() ? "" : " * ") + "wt" +
              std::to_string(d) + "[r" + std::to_string(d) + "]";
  std::string at = offset.empty() ? "0" : offset.substr(3);
  if (copies) {
    os << indent << "out[i] = x[" << at << "];\n";
  } else {
    os << indent << "const double w = " << (weight.empty() ? "1.0" : weight)
       << ";\n"
       << indent << "if (w != 0.0)\n"
       << indent << "  acc += w * (double)snug_load(x + (" << at << "));\n";
  }
  for (size_t k = tapped.size(); k-- > 0;) {
    indent.resize(indent.size() - 2);
    os << indent << "}\n";
  }
  if (!copies)
    os << "    " << storeConverted(y.dtype, "double", "out + i", "acc");
  os << "  }\n";
  kernel.body = os.str();
  launchGridStride(context, std::move(kernel), y.numElements);
}

} // namespace

llvm::Error emitResize(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  size_t rank = x.rank();
  if (y.rank() != rank || x.dtype != y.dtype)
    return context.unsupported("result rank or dtype differs from the "
                               "operand's");
  std::vector<std::string> strings = {
      context.stringAttr("mode", "nearest"),
      context.stringAttr("coordinate_transformation_mode", "half_pixel"),
      context.stringAttr("nearest_mode", "round_prefer_floor")};
  const std::string &mode = strings[0], &transform = strings[1];
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return context.unsupported("mode '" + mode + "' is not supported");
  if (transform == "tf_crop_and_resize" &&
      context.floatsAttr("roi").size() != 2 * rank)
    return context.unsupported("tf_crop_and_resize needs a roi of 2 x rank "
                               "values");
  if (x.numElements == 0 && y.numElements)
    return context.unsupported("cannot resize an empty tensor");
  if (y.numElements == 0)
    return llvm::Error::success();
  std::vector<resize::Axis> axes = resizeAxes(context, x, y, strings);
  bool linear = mode == "linear";
  // Closed forms cover nearest and plain linear; the rest reads tables.
  bool tables = mode == "cubic" || transform == "tf_crop_and_resize" ||
                llvm::any_of(axes, [](const resize::Axis &axis) {
                  return axis.filters();
                });
  if (tables) {
    emitResizeTables(context, axes, mode == "nearest");
    return llvm::Error::success();
  }
  Kernel kernel;
  kernel.tag = "resize";
  kernel.addTensor("x", x, true);
  kernel.addTensor("out", y, false);
  std::vector<int64_t> inStrides = x.strides();
  const char *index = indexTypeFor(context, y.numElements, x.numElements);
  std::string text;
  llvm::raw_string_ostream os(text);
  // Axes that collapse to index 0 need no coordinate.
  std::vector<bool> needed;
  for (const resize::Axis &axis : axes)
    needed.push_back(axis.identity() ? axis.out > 1 : axis.in > 1);
  os << gridStrideLoop(index, y.numElements)
     << emitCoordinates(y.dims, index, "i", "d", needed);
  auto term = [&](const std::string &coordinate, size_t d) {
    return " + " + coordinate +
           (inStrides[d] == 1 ? "" : " * " + cudaIntLiteral(inStrides[d]));
  };
  std::string base;          // offset terms of identity and nearest axes
  std::vector<size_t> blend; // linear axes that interpolate
  for (size_t d = 0; d < rank; ++d) {
    std::string o = "d" + std::to_string(d);
    const resize::Axis &axis = axes[d];
    std::string source = resizeSourceCode(axis, o);
    std::string N1 = cudaIntLiteral(axis.in - 1);
    if (axis.identity()) {
      if (axis.out > 1)
        base += term(o, d);
      continue;
    }
    if (axis.in == 1)
      continue; // every coordinate clamps to 0 (with weight 0 when linear)
    if (!linear) {
      std::string closed = nearestClosedForm(axis, o);
      if (closed.empty()) {
        os << "    const double s" << d << " = " << source << ";\n"
           << "    int64_t n" << d << " = "
           << nearestIndexCode(axis.nearest, "s" + std::to_string(d)) << ";\n"
           << "    n" << d << " = n" << d << " < 0 ? 0 : (n" << d << " > " << N1
           << " ? " << N1 << " : n" << d << ");\n";
        closed = "n" + std::to_string(d);
      }
      base += term("(" + closed + ")", d);
      continue;
    }
    // As the host: clamp to [0, n - 1], the two neighbours and the weight
    // of the second.
    os << "    double s" << d << " = " << source << ";\n"
       << "    s" << d << " = s" << d << " < 0.0 ? 0.0 : s" << d << ";\n"
       << "    s" << d << " = " << cudaFloatLiteral(double(axis.in - 1))
       << " < s" << d << " ? " << cudaFloatLiteral(double(axis.in - 1))
       << " : s" << d << ";\n"
       << "    const int64_t lo" << d << " = (int64_t)floor(s" << d << ");\n"
       << "    const int64_t hi" << d << " = lo" << d << " + 1 < " << N1
       << " ? lo" << d << " + 1 : " << N1 << ";\n"
       << "    const double w" << d << " = s" << d << " - (double)lo" << d
       << ";\n";
    blend.push_back(d);
  }
  std::string offset = base.empty() ? "0" : base.substr(3);
  if (!linear) {
    os << "    out[i] = x[" << offset << "];\n  }\n";
  } else {
    // Every corner of the interpolated axes, weights multiplied in axis
    // order and zero-weight corners skipped, as the host (a NaN there
    // would otherwise spread).
    os << "    double acc = 0.0;\n";
    for (uint64_t corner = 0; corner < (uint64_t(1) << blend.size());
         ++corner) {
      std::string weight, at = offset;
      for (size_t k = 0; k < blend.size(); ++k) {
        std::string d = std::to_string(blend[k]);
        bool second = (corner >> k) & 1;
        weight += std::string(weight.empty() ? "" : " * ") +
                  (second ? "w" + d : "(1.0 - w" + d + ")");
        at += term((second ? "hi" : "lo") + d, blend[k]);
      }
      os << "    {\n      const double w = " << weight << ";\n"
         << "      if (w != 0.0)\n        acc += w * (double)snug_load(x + ("
         << at << "));\n    }\n";
    }
    os << "    " << storeConverted(y.dtype, "double", "out + i", "acc")
       << "  }\n";
  }
  kernel.body = os.str();
  launchGridStride(context, std::move(kernel), y.numElements);
  return llvm::Error::success();
}

} // namespace cuda
} // namespace snug
