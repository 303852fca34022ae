//===- ConvEmitters.cpp - CUDA emitters: Conv, ConvTranspose --------------===//
//
// Conv is an implicit GEMM per group: for group g,
//   Y[n, g*MG + m, o] = sum_k W[g*MG + m, k] * patch(n, o)[k] + bias
// with m < MG (output channels per group) the GEMM rows, (n, o) the columns
// (batch times output pixels) and k < CG * taps (input channels per group
// times kernel taps) the depth. No im2col buffer: each block computes a
// 64x64 tile of Y, stepping through k 16 at a time; its 256 threads gather
// the weight tile (16 consecutive k per row, coalesced) and the patch tile
// (64 consecutive pixels per k, coalesced for stride 1) from global memory
// straight into shared memory, with the pads, strides and dilations baked
// in, and each thread accumulates a 4x4 register tile from 16-byte vector
// reads of shared memory. The next k step's loads are issued before the
// current step's arithmetic, so they overlap. The bias is added when the
// tile is stored, and so is the node's epilogue when it has one
// (EpilogueStore.h: Relu, the residual Add, ... applied per element on the
// way out, so the raw result never reaches memory).
//
// f16 and bf16 convolutions (both operands of the type) run the same tiles
// on the tensor cores (the tile code is MmaTile.h's, which the tiled
// MatMul/Gemm kernel shares): the raw 16-bit elements are packed two
// consecutive k to a 32-bit word in shared memory (As [m][k/2] row-major, Bs
// [pixel][k/2], i.e. B column-major), and each of the 8 warps computes a 32x16
// warp tile as 2x2 mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16} products
// with f32 accumulators, through the prelude's snug_mma_m16n8k16
// (CudaPrelude.cpp: the fragment layout of the PTX ISA's "Matrix Fragments for
// mma.m16n8k16 with floating point type", emulated on sm_75 and on the
// simulator). The products of two 16-bit elements are exact in f32, so the sums
// are float sums as the host's, in another order.
//
// f32 convolutions under --precision=tf32 (the node's math = "tf32", set by
// passes/precision/Tf32Math.cpp) run the same MMA kernel over MmaTile.h's tf32 element
// width: one f32 element per word, rounded to tf32 on load (the prelude's
// snug_tf32, cvt.rna.tf32.f32), 8 k deep per step, each product an
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (snug_mma_m16n8k8_tf32).
// Products of two tf32 values are exact in f32, so the result is the host's
// tf32 result (operands rounded the same way, sums in float) in another
// summation order. The direct kernel rounds its operands the same way.
// Other f32, f64 and integer convolutions keep the scalar kernel.
//
// Convolutions with few output channels per group (depthwise, or grouped
// ones with MG < 16) waste most of a 64-row tile: a direct kernel, one
// thread per output element, handles them. ConvTranspose is a direct gather
// kernel: each output element sums the input elements whose taps land on
// it.
//
// Everything runs as the host reference (runtime/host/kernels/
// ConvKernels.cpp) defines it: 1 to 3 spatial dims, sums in float,
// f16/bf16 converted on load and rounded on store, integers truncated on
// store. f64 sums in double (the host's float sums are the less accurate
// of the two; they agree to float precision).
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/EpilogueStore.h"
#include "compiler/cuda/KernelEmitter.h"
#include "compiler/cuda/MmaTile.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace snug {
namespace cuda {
namespace {

using ir::DType;

std::string lit(int64_t value) { return cudaIntLiteral(value); }

/// The scalar implicit-GEMM kernel: the block tile of MmaTile.h (kTileM
/// output channels by kTileN output pixels, kTileK deep, kThreads
/// threads), each thread computing kRegM x kRegN results.
constexpr int64_t kRegM = 4, kRegN = 4;
static_assert(kTileM * kTileN == kThreads * kRegM * kRegN,
              "every thread computes one register tile");
static_assert(kTileM * kTileK % kThreads == 0 &&
                  kTileN * kTileK % kThreads == 0,
              "every thread loads the same number of elements");

/// One spatial axis of a convolution.
struct ConvAxis {
  int64_t in, out, kernel, stride, dilation, padBegin;
};

/// A convolution's shape: x [N, C, in...], y [N, M, out...], per group CG
/// input and MG output channels.
struct ConvShape {
  int64_t batch = 0, c = 0, m = 0, group = 1, cg = 0, mg = 0;
  std::vector<ConvAxis> axes;
  int64_t inSize = 1, outSize = 1, taps = 1;
  /// The largest tensor the kernel addresses, in elements: every offset
  /// stays below it.
  int64_t extent = 0;
  std::string acc, index; // accumulator and index types (index: setIndex)
};

/// Reads and checks Conv's (or, with `transpose`, ConvTranspose's) shape;
/// the weight is [M, CG, k...] (transposed: [C, MG, k...]).
llvm::Expected<ConvShape> readConv(const EmitContext &context, bool transpose) {
  const TensorRef &x = context.in(0), &w = context.in(1), &y = context.out();
  if (x.rank() < 3 || x.rank() > 5 || w.rank() != x.rank() ||
      y.rank() != x.rank())
    return context.unsupported("supports 1 to 3 spatial dims");
  size_t spatial = x.rank() - 2;
  std::vector<int64_t> kernelDims(w.dims.begin() + 2, w.dims.end());
  std::vector<int64_t> kernel = context.hasAttr("kernel_shape")
                                    ? context.intsAttr("kernel_shape")
                                    : kernelDims;
  std::vector<int64_t> strides = context.windowAttr("strides", spatial, 1),
                       dilations = context.windowAttr("dilations", spatial, 1),
                       pads = context.windowAttr("pads", 2 * spatial, 0);
  if (kernel != kernelDims || strides.empty() || dilations.empty() ||
      pads.empty())
    return context.unsupported("kernel_shape, strides, dilations or pads do "
                               "not fit the weight's spatial dims");
  ConvShape shape;
  shape.batch = x.dims[0], shape.c = x.dims[1], shape.m = y.dims[1];
  shape.group = context.intAttr("group", 1);
  if (shape.group <= 0 || shape.c % shape.group || shape.m % shape.group ||
      y.dims[0] != shape.batch)
    return context.unsupported("channels and group do not agree");
  shape.cg = shape.c / shape.group, shape.mg = shape.m / shape.group;
  bool weightFits = transpose ? w.dims[0] == shape.c && w.dims[1] == shape.mg
                              : w.dims[0] == shape.m && w.dims[1] == shape.cg;
  if (!weightFits)
    return context.unsupported("the weight's shape does not fit the "
                               "channels and group");
  if (context.hasIn(2) && context.in(2).numElements != shape.m)
    return context.unsupported("bias needs one value per output channel");
  for (size_t a = 0; a < spatial; ++a) {
    if (strides[a] <= 0 || dilations[a] <= 0)
      return context.unsupported("strides and dilations must be positive");
    shape.axes.push_back({x.dims[2 + a], y.dims[2 + a], kernel[a], strides[a],
                          dilations[a], pads[a]});
    shape.inSize *= x.dims[2 + a], shape.outSize *= y.dims[2 + a];
    shape.taps *= kernel[a];
  }
  shape.acc = x.dtype == DType::F64 ? "double" : "float";
  shape.extent = std::max({x.numElements, w.numElements, y.numElements});
  return shape;
}

/// Statements defining `names[i]` as the coordinates of linear index `var`
/// over `extents` (outermost first, which is left unbounded).
std::string coordinates(llvm::StringRef indent, llvm::StringRef type,
                        llvm::StringRef var, llvm::ArrayRef<std::string> names,
                        llvm::ArrayRef<int64_t> extents) {
  std::string text;
  int64_t below = 1;
  for (size_t i = names.size(); i-- > 0;) {
    std::string value = var.str();
    if (below != 1)
      value = "(" + value + " / " + lit(below) + ")";
    if (i != 0)
      value = "(" + value + " % " + lit(extents[i]) + ")";
    text = (indent + "const " + type + " " + names[i] + " = " + value + ";\n")
               .str() +
           text;
    below *= extents[i];
  }
  return text;
}

/// The names prefix0, prefix1, ... of the spatial axes.
std::vector<std::string> axisNames(llvm::StringRef prefix, size_t count) {
  std::vector<std::string> names;
  for (size_t a = 0; a < count; ++a)
    names.push_back(prefix.str() + std::to_string(a));
  return names;
}

/// The row-major offset of coordinates `names` in a box of `extents`.
std::string rowMajor(llvm::ArrayRef<std::string> names,
                     llvm::ArrayRef<int64_t> extents) {
  std::string expr = names[0];
  for (size_t a = 1; a < names.size(); ++a)
    expr = "(" + expr + ") * " + lit(extents[a]) + " + " + names[a];
  return expr;
}

std::vector<int64_t> inExtents(const ConvShape &shape) {
  std::vector<int64_t> extents;
  for (const ConvAxis &axis : shape.axes)
    extents.push_back(axis.in);
  return extents;
}
std::vector<int64_t> outExtents(const ConvShape &shape) {
  std::vector<int64_t> extents;
  for (const ConvAxis &axis : shape.axes)
    extents.push_back(axis.out);
  return extents;
}
std::vector<int64_t> kernelExtents(const ConvShape &shape) {
  std::vector<int64_t> extents;
  for (const ConvAxis &axis : shape.axes)
    extents.push_back(axis.kernel);
  return extents;
}

/// "i0 >= 0 && i0 < 8 && i1 >= 0 && ...": coordinates `names` inside the
/// input.
std::string insideInput(const ConvShape &shape,
                        llvm::ArrayRef<std::string> names) {
  std::string test;
  for (size_t a = 0; a < names.size(); ++a)
    test += (a ? " && " : "") + names[a] + " >= 0 && " + names[a] + " < " +
            lit(shape.axes[a].in);
  return test;
}

Kernel convKernel(EmitContext &context, const EpilogueStore &epilogue,
                  llvm::StringRef tag, Dim3 grid, Dim3 block,
                  std::string body) {
  Kernel kernel;
  kernel.tag = tag.str();
  kernel.grid = grid, kernel.block = block;
  kernel.addTensor("x", context.in(0), true);
  kernel.addTensor("w", context.in(1), true);
  if (context.hasIn(2))
    kernel.addTensor("bias", context.in(2), true);
  kernel.addTensor("y", context.out(), false);
  epilogue.addParams(kernel, context);
  kernel.body = epilogue.getSetup() + body;
  return kernel;
}

/// The scalar kernel's shared tiles and each thread's load roles.
std::string scalarTiles(const ConvShape &shape) {
  const std::string &acc = shape.acc;
  std::string text;
  llvm::raw_string_ostream os(text);
  // As is [k][m] (transposed while stored, so the inner loop reads rows);
  // the padding spreads the transposing stores over more banks and keeps
  // rows 16-byte aligned, like the __align__, so that a thread's kRegM
  // (kRegN) consecutive values load as one vector.
  os << "  __shared__ __align__(16) " << acc << " As[" << kTileK << "]["
     << kTileM + 4 << "];\n"
     << "  __shared__ __align__(16) " << acc << " Bs[" << kTileK << "]["
     << kTileN << "];\n"
     << "  const int tid = threadIdx.x;\n"
     << "  // This thread loads weight rows ma + " << kThreads / kTileK
     << " * j at depth column ka,\n"
     << "  // and patch rows kb + " << kThreads / kTileN
     << " * j at pixel column pb.\n"
     << "  const int ka = tid % " << kTileK << ", ma = tid / " << kTileK
     << ";\n"
     << "  const int pb = tid % " << kTileN << ", kb = tid / " << kTileN
     << ";\n";
  return os.str();
}

/// The implicit-GEMM kernel's start after the tiles: the block's tile and
/// this thread's pixel column's coordinates: batch n and the window start
/// s0, s1, ... of output pixel p.
std::string gemmPrologue(const EmitContext &context, const ConvShape &shape) {
  const std::string &idx = shape.index;
  std::vector<std::string> pixelNames = axisNames("o", shape.axes.size());
  pixelNames.insert(pixelNames.begin(), "n");
  std::vector<int64_t> pixelExtents = outExtents(shape);
  pixelExtents.insert(pixelExtents.begin(), shape.batch);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "  const " << idx << " g = blockIdx.z;\n"
     << "  const " << idx << " m0 = (" << idx << ")blockIdx.y * " << kTileM
     << ", p0 = (" << idx << ")blockIdx.x * " << kTileN << ";\n"
     << "  const " << idx << " p = p0 + pb;\n"
     << "  const bool pixelInside = p < " << lit(shape.batch * shape.outSize)
     << ";\n"
     << coordinates("  ", idx, "p", pixelNames, pixelExtents);
  for (size_t a = 0; a < shape.axes.size(); ++a)
    os << "  const " << idx << " s" << a << " = " << pixelNames[a + 1] << " * "
       << lit(shape.axes[a].stride) << " - " << lit(shape.axes[a].padBegin)
       << ";\n";
  os << "  const " << cudaTypeName(context.in(0).dtype) << " *xg = x + (n * "
     << lit(shape.c) << " + g * " << lit(shape.cg) << ") * "
     << lit(shape.inSize) << ";\n"
     << "  const " << cudaTypeName(context.in(1).dtype) << " *wg = w + (g * "
     << lit(shape.mg) << " + m0) * " << lit(shape.cg * shape.taps) << ";\n";
  return os.str();
}

/// `load(k0)`: this thread's share of the weight and patch tiles at depth
/// k0 from global memory into registers a[] and b[], zero outside the
/// tile's bounds and in the padding. Depth k is input channel c and kernel
/// tap (t0, t1, ...).
std::string gemmLoads(const ConvShape &shape) {
  const std::string &acc = shape.acc, &idx = shape.index;
  int64_t depth = shape.cg * shape.taps;
  std::vector<std::string> tapNames = axisNames("t", shape.axes.size()),
                           inNames = axisNames("i", shape.axes.size());
  std::vector<std::string> depthNames = tapNames;
  depthNames.insert(depthNames.begin(), "c");
  std::vector<int64_t> depthExtents = kernelExtents(shape);
  depthExtents.insert(depthExtents.begin(), shape.cg);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "  " << acc << " a[" << kTileM * kTileK / kThreads << "], b["
     << kTileN * kTileK / kThreads << "];\n"
     << "  auto load = [&](" << idx << " k0) {\n"
     << "    for (int j = 0; j < " << kTileM * kTileK / kThreads << "; ++j) {\n"
     << "      const " << idx << " m = m0 + ma + " << kThreads / kTileK
     << " * j, k = k0 + ka;\n"
     << "      a[j] = m < " << lit(shape.mg) << " && k < " << lit(depth)
     << " ? (" << acc << ")snug_load(wg + (m - m0) * " << lit(depth)
     << " + k) : (" << acc << ")0;\n"
     << "    }\n"
     << "    for (int j = 0; j < " << kTileN * kTileK / kThreads << "; ++j) {\n"
     << "      const " << idx << " k = k0 + kb + " << kThreads / kTileN
     << " * j;\n"
     << coordinates("      ", idx, "k", depthNames, depthExtents);
  for (size_t a = 0; a < shape.axes.size(); ++a)
    os << "      const " << idx << " " << inNames[a] << " = s" << a << " + "
       << tapNames[a] << " * " << lit(shape.axes[a].dilation) << ";\n";
  os << "      b[j] = pixelInside && k < " << lit(depth) << " && "
     << insideInput(shape, inNames) << " ? (" << acc << ")snug_load(xg + c * "
     << lit(shape.inSize) << " + " << rowMajor(inNames, inExtents(shape))
     << ") : (" << acc << ")0;\n"
     << "    }\n"
     << "  };\n";
  return os.str();
}

/// The MMA kernel's word lambdas and `load(k0)` (MmaTile.h): the bits the
/// tensor cores take for the weight and patch elements (16-bit ones
/// unconverted, f32 ones rounded to tf32), zero outside the tile's bounds
/// and in the padding.
std::string convMmaLoads(const ConvShape &shape, const MmaElement &element) {
  const std::string &idx = shape.index;
  int64_t depth = shape.cg * shape.taps;
  std::vector<std::string> tapNames = axisNames("t", shape.axes.size()),
                           inNames = axisNames("i", shape.axes.size());
  std::vector<std::string> depthNames = tapNames;
  depthNames.insert(depthNames.begin(), "c");
  std::vector<int64_t> depthExtents = kernelExtents(shape);
  depthExtents.insert(depthExtents.begin(), shape.cg);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "  auto weightAt = [&](" << idx << " m, " << idx
     << " k) -> uint32_t {\n"
     << "    return m < " << lit(shape.mg) << " && k < " << lit(depth) << " ? "
     << element.bits("wg[(m - m0) * " + lit(depth) + " + k]") << " : 0u;\n"
     << "  };\n"
     << "  auto patchAt = [&](" << idx << " k) -> uint32_t {\n"
     << coordinates("    ", idx, "k", depthNames, depthExtents);
  for (size_t a = 0; a < shape.axes.size(); ++a)
    os << "    const " << idx << " " << inNames[a] << " = s" << a << " + "
       << tapNames[a] << " * " << lit(shape.axes[a].dilation) << ";\n";
  os << "    return pixelInside && k < " << lit(depth) << " && "
     << insideInput(shape, inNames) << " ? "
     << element.bits("xg[c * " + lit(shape.inSize) + " + " +
                     rowMajor(inNames, inExtents(shape)) + "]")
     << " : 0u;\n"
     << "  };\n"
     << mmaLoads(idx, element, {MmaLoad::AlongK, "weightAt", "m0"},
                 {MmaLoad::AlongRows, "patchAt", ""});
  return os.str();
}

/// The accumulators plus bias into Y[n, g * MG + m, pixel], rounded to the
/// output's type.
std::string convMmaStore(const EmitContext &context, const ConvShape &shape,
                         const EpilogueStore &epilogue) {
  MmaStore where;
  where.index = shape.index;
  where.row = "m", where.rowOrigin = "m0", where.rows = shape.mg;
  where.column = "q", where.colOrigin = "p0";
  where.columns = shape.batch * shape.outSize;
  where.rowSetup = "      const " + shape.index + " oc = g * " + lit(shape.mg) +
                   " + m;\n      const float shift = " +
                   (context.hasIn(2) ? "snug_load(bias + oc)" : "0") + ";\n";
  where.store = epilogue.store(
      "((q / " + lit(shape.outSize) + ") * " + lit(shape.m) + " + oc) * " +
          lit(shape.outSize) + " + q % " + lit(shape.outSize),
      std::string(kMmaAccumulator) + " + shift", "            ", shape.index);
  return mmaStoreLoop(where);
}

/// The depth loop: registers to shared memory, the next step's loads, then
/// this step's products into the kRegM x kRegN register tile sum.
std::string gemmDepthLoop(const ConvShape &shape) {
  const std::string &acc = shape.acc;
  int64_t depth = shape.cg * shape.taps;
  int64_t threadsN = kTileN / kRegN;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "  " << acc << " sum[" << kRegM << "][" << kRegN << "];\n"
     << "  for (int i = 0; i < " << kRegM << "; ++i)\n"
     << "    for (int j = 0; j < " << kRegN << "; ++j)\n"
     << "      sum[i][j] = 0;\n"
     << "  // Thread (tm, tn) computes rows tm * " << kRegM
     << " + i and columns tn * " << kRegN
     << " + j: vector loads, consecutive threads on consecutive Bs columns.\n"
     << "  const int tm = tid / " << threadsN << ", tn = tid % " << threadsN
     << ";\n"
     << "  load(0);\n"
     << "  for (" << shape.index << " k0 = 0; k0 < " << lit(depth)
     << "; k0 += " << kTileK << ") {\n"
     << "    for (int j = 0; j < " << kTileM * kTileK / kThreads << "; ++j)\n"
     << "      As[ka][ma + " << kThreads / kTileK << " * j] = a[j];\n"
     << "    for (int j = 0; j < " << kTileN * kTileK / kThreads << "; ++j)\n"
     << "      Bs[kb + " << kThreads / kTileN << " * j][pb] = b[j];\n"
     << "    __syncthreads();\n"
     << "    if (k0 + " << kTileK << " < " << lit(depth) << ")\n"
     << "      load(k0 + " << kTileK << ");\n"
     << "    for (int kk = 0; kk < " << kTileK << "; ++kk) {\n"
     << "      " << acc << " ra[" << kRegM << "], rb[" << kRegN << "];\n"
     << "      for (int i = 0; i < " << kRegM << "; ++i)\n"
     << "        ra[i] = As[kk][tm * " << kRegM << " + i];\n"
     << "      for (int j = 0; j < " << kRegN << "; ++j)\n"
     << "        rb[j] = Bs[kk][tn * " << kRegN << " + j];\n"
     << "      for (int i = 0; i < " << kRegM << "; ++i)\n"
     << "        for (int j = 0; j < " << kRegN << "; ++j)\n"
     << "          sum[i][j] += ra[i] * rb[j];\n"
     << "    }\n"
     << "    __syncthreads();\n"
     << "  }\n";
  return os.str();
}

/// The register tile plus bias into Y[n, g * MG + m, pixel].
std::string gemmStore(const EmitContext &context, const ConvShape &shape,
                      const EpilogueStore &epilogue) {
  const std::string &idx = shape.index;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "  for (int i = 0; i < " << kRegM << "; ++i) {\n"
     << "    const " << idx << " m = m0 + tm * " << kRegM << " + i;\n"
     << "    if (m >= " << lit(shape.mg) << ")\n"
     << "      continue;\n"
     << "    const " << idx << " oc = g * " << lit(shape.mg) << " + m;\n"
     << "    const " << shape.acc
     << " shift = " << (context.hasIn(2) ? "snug_load(bias + oc)" : "0")
     << ";\n"
     << "    for (int j = 0; j < " << kRegN << "; ++j) {\n"
     << "      const " << idx << " q = p0 + tn * " << kRegN << " + j;\n"
     << "      if (q < " << lit(shape.batch * shape.outSize) << ")\n"
     << epilogue.store("((q / " + lit(shape.outSize) + ") * " +
                           lit(shape.m) + " + oc) * " + lit(shape.outSize) +
                           " + q % " + lit(shape.outSize),
                       "sum[i][j] + shift", "        ", idx)
     << "    }\n"
     << "  }\n";
  return os.str();
}

/// The implicit-GEMM kernel (see the file comment). Grid: x over pixel
/// tiles, y over channel tiles of a group, z over groups.
/// With `mma` (f16 and bf16 operands; f32 under tf32), on the tensor cores.
Kernel implicitGemmKernel(EmitContext &context, ConvShape shape,
                          const llvm::Optional<MmaElement> &mma,
                          const EpilogueStore &epilogue) {
  Dim3 grid;
  grid.x = uint32_t((shape.batch * shape.outSize + kTileN - 1) / kTileN);
  grid.y = uint32_t((shape.mg + kTileM - 1) / kTileM);
  grid.z = uint32_t(shape.group);
  // No grid-stride loop; the tile origins and depth steps run one tile
  // past the pixels, channels and depth, and the last pixel tile's batch
  // coordinate n (xg, formed before the pixelInside test) past the batch.
  int64_t depth = shape.cg * shape.taps;
  int64_t pixelReach = int64_t(grid.x) * kTileN;
  int64_t lastBatch = (pixelReach - 1) / shape.outSize;
  shape.index = codegen::indexTypeFor(
      context, 0,
      std::max({shape.extent, pixelReach, shape.mg + kTileM, depth + kTileK,
                (lastBatch + 1) * shape.c * shape.inSize}));
  std::string body =
      mma ? mmaTiles(*mma) + gemmPrologue(context, shape) +
                convMmaLoads(shape, *mma) +
                mmaDepthLoop(shape.index, shape.cg * shape.taps, *mma,
                             MmaLoad::AlongK, MmaLoad::AlongRows) +
                convMmaStore(context, shape, epilogue)
          : scalarTiles(shape) + gemmPrologue(context, shape) +
                gemmLoads(shape) + gemmDepthLoop(shape) +
                gemmStore(context, shape, epilogue);
  return convKernel(context, epilogue, "conv", grid,
                    {uint32_t(kThreads), 1, 1}, std::move(body));
}

/// A grid-stride loop over the output elements, with `n`, `oc` and the
/// output coordinates o0, o1, ... defined, around `body`.
std::string overOutputs(const TensorRef &y, const ConvShape &shape,
                        llvm::StringRef body) {
  const std::string &idx = shape.index;
  std::vector<std::string> names = axisNames("o", shape.axes.size());
  names.insert(names.begin(), {"n", "oc"});
  std::vector<int64_t> extents = outExtents(shape);
  extents.insert(extents.begin(), {shape.batch, shape.m});
  return codegen::gridStrideLoop(idx.c_str(), y.numElements, "e") +
         coordinates("    ", idx, "e", names, extents) + body.str() + "  }\n";
}

/// One thread per output element, summing its CG input channels' taps.
/// Under tf32 (`tf32`) each operand is rounded as the MMA kernel's are.
Kernel directKernel(EmitContext &context, ConvShape shape, bool tf32,
                    const EpilogueStore &epilogue) {
  shape.index =
      codegen::indexTypeFor(context, context.out().numElements, shape.extent);
  const std::string &acc = shape.acc, &idx = shape.index;
  size_t spatial = shape.axes.size();
  std::vector<std::string> tapNames = axisNames("t", spatial),
                           inNames = axisNames("i", spatial);
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "    const " << idx << " g = oc / " << lit(shape.mg) << ";\n"
     << "    " << acc
     << " sum = " << (context.hasIn(2) ? "snug_load(bias + oc)" : "0") << ";\n"
     << "    for (" << idx << " c = 0; c < " << lit(shape.cg) << "; ++c) {\n"
     << "      const " << cudaTypeName(context.in(0).dtype)
     << " *xc = x + ((n * " << lit(shape.c) << " + g * " << lit(shape.cg)
     << " + c) * " << lit(shape.inSize) << ");\n"
     << "      const " << cudaTypeName(context.in(1).dtype)
     << " *wc = w + (oc * " << lit(shape.cg) << " + c) * " << lit(shape.taps)
     << ";\n";
  std::string indent = "      ";
  for (size_t a = 0; a < spatial; ++a) {
    const ConvAxis &axis = shape.axes[a];
    os << indent << "for (" << idx << " " << tapNames[a] << " = 0; "
       << tapNames[a] << " < " << lit(axis.kernel) << "; ++" << tapNames[a]
       << ") {\n"
       << indent << "  const " << idx << " " << inNames[a] << " = o" << a
       << " * " << lit(axis.stride) << " - " << lit(axis.padBegin) << " + "
       << tapNames[a] << " * " << lit(axis.dilation) << ";\n"
       << indent << "  if (" << inNames[a] << " < 0 || " << inNames[a]
       << " >= " << lit(axis.in) << ")\n"
       << indent << "    continue;\n";
    indent += "  ";
  }
  auto operand = [&](const std::string &load) {
    return tf32 ? "snug::scalar::roundToTf32(" + load + ")"
                : "(" + acc + ")" + load;
  };
  os << indent << "sum += "
     << operand("snug_load(xc + " + rowMajor(inNames, inExtents(shape)) + ")")
     << " * "
     << operand("snug_load(wc + " + rowMajor(tapNames, kernelExtents(shape)) +
                ")")
     << ";\n";
  for (size_t a = spatial; a-- > 0;) {
    indent.resize(indent.size() - 2);
    os << indent << "}\n";
  }
  os << "    }\n" << epilogue.store("e", "sum", "    ", idx);
  const TensorRef &y = context.out();
  return convKernel(context, epilogue, "conv_direct",
                    gridFor(y.numElements, 256), {256, 1, 1},
                    overOutputs(y, shape, os.str()));
}

llvm::Error emitConv(EmitContext &context) {
  auto shape = readConv(context, false);
  if (!shape)
    return shape.takeError();
  if (!context.out().numElements)
    return llvm::Error::success();
  // The tiled kernel's grid must fit: y (channel tiles) and z (groups) are
  // at most 65535.
  bool tiled =
      shape->mg >= 16 && shape->group <= 65535 &&
      (shape->mg + kTileM - 1) / kTileM <= 65535 &&
      (shape->batch * shape->outSize + kTileN - 1) / kTileN <= INT32_MAX;
  DType x = context.in(0).dtype;
  std::string math = context.stringAttr("math");
  llvm::Optional<MmaElement> mma =
      MmaElement::select(x, context.in(1).dtype, math);
  bool tf32 = x == DType::F32 && context.in(1).dtype == x && math == "tf32";
  auto epilogue = EpilogueStore::create(context);
  if (!epilogue)
    return epilogue.takeError();
  context.launch(tiled ? implicitGemmKernel(context, *shape, mma, *epilogue)
                       : directKernel(context, *shape, tf32, *epilogue));
  return llvm::Error::success();
}

/// y[n, oc, o] = bias[oc] + sum over input channels c of oc's group and
/// taps t with o = i * stride - pad + t * dilation of x[n, c, i] * w[c,
/// oc % MG, t]: each tap gives i = (o + pad - t * dilation) / stride when
/// that divides exactly and lands inside the input.
llvm::Error emitConvTranspose(EmitContext &context) {
  auto shape = readConv(context, true);
  if (!shape)
    return shape.takeError();
  const TensorRef &y = context.out();
  if (!y.numElements)
    return llvm::Error::success();
  shape->index = codegen::indexTypeFor(context, y.numElements, shape->extent);
  const std::string &acc = shape->acc, &idx = shape->index;
  size_t spatial = shape->axes.size();
  std::vector<std::string> tapNames = axisNames("t", spatial),
                           inNames = axisNames("i", spatial);
  std::string body;
  llvm::raw_string_ostream os(body);
  os << "    const " << idx << " g = oc / " << lit(shape->mg) << ", j = oc % "
     << lit(shape->mg) << ";\n"
     << "    " << acc
     << " sum = " << (context.hasIn(2) ? "snug_load(bias + oc)" : "0") << ";\n";
  std::string indent = "    ";
  for (size_t a = 0; a < spatial; ++a) {
    const ConvAxis &axis = shape->axes[a];
    std::string d = "d" + std::to_string(a);
    os << indent << "for (" << idx << " " << tapNames[a] << " = 0; "
       << tapNames[a] << " < " << lit(axis.kernel) << "; ++" << tapNames[a]
       << ") {\n"
       << indent << "  const " << idx << " " << d << " = o" << a << " + "
       << lit(axis.padBegin) << " - " << tapNames[a] << " * "
       << lit(axis.dilation) << ";\n"
       << indent << "  if (" << d << " < 0 || " << d << " % "
       << lit(axis.stride) << " != 0 || " << d << " / " << lit(axis.stride)
       << " >= " << lit(axis.in) << ")\n"
       << indent << "    continue;\n"
       << indent << "  const " << idx << " " << inNames[a] << " = " << d
       << " / " << lit(axis.stride) << ";\n";
    indent += "  ";
  }
  os << indent << "for (" << idx << " c = 0; c < " << lit(shape->cg)
     << "; ++c) {\n"
     << indent << "  const " << idx << " ic = g * " << lit(shape->cg)
     << " + c;\n"
     << indent << "  sum += (" << acc << ")snug_load(x + (n * " << lit(shape->c)
     << " + ic) * " << lit(shape->inSize) << " + "
     << rowMajor(inNames, inExtents(*shape)) << ") * (" << acc
     << ")snug_load(w + (ic * " << lit(shape->mg) << " + j) * "
     << lit(shape->taps) << " + " << rowMajor(tapNames, kernelExtents(*shape))
     << ");\n"
     << indent << "}\n";
  for (size_t a = spatial; a-- > 0;) {
    indent.resize(indent.size() - 2);
    os << indent << "}\n";
  }
  os << "    snug_store(y + e, sum);\n";
  context.launch(convKernel(context, EpilogueStore(), "convtranspose",
                            gridFor(y.numElements, 256), {256, 1, 1},
                            overOutputs(y, *shape, os.str())));
  return llvm::Error::success();
}

const EmitterEntry convEmitters[] = {
    {ir::OpCode::Conv, emitConv},
    {ir::OpCode::ConvTranspose, emitConvTranspose},
};

} // namespace

llvm::ArrayRef<EmitterEntry> getConvEmitters() { return convEmitters; }

} // namespace cuda
} // namespace snug
