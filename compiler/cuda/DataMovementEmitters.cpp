//===- DataMovementEmitters.cpp - CUDA emitters: data movement ------------===//
//
// Ops that move elements without looking at them (Transpose, Concat, Split,
// Slice, Expand, Tile, DepthToSpace, SpaceToDepth), plus the gathers whose
// element choice depends on data or coordinates (Gather, Pad), the host
// copies of offloading, and the family's table. Resize has its own file
// (ResizeEmitter.cpp), and so do the fills (FillEmitters.cpp: Dropout,
// Range, Shape, Size, Constant, ConstantOfShape and training Dropout's
// generated mask); the table here registers them too.
//
// The pure moves are all one strided copy: an iteration space whose every
// dim has a source and a destination stride. It is canonicalized (unit dims
// dropped, dims ordered by destination stride so writes are coalesced,
// adjacent dims merged where both sides are contiguous across them), then
// becomes a device-to-device memcpy step when it is one contiguous block,
// and otherwise a grid-stride kernel that moves opaque units of up to 16
// bytes (the widest the contiguous inner run and every address allow). A
// transpose that swaps the last two dims of a batch (NCHW <-> NHWC
// included, after merging) uses a tiled shared-memory kernel instead, so
// that both reads and writes are coalesced.
//
// Semantics are the host reference kernels' (DataMovementKernels.cpp). Where
// the host reports an error at run time (a Gather index out of range) the
// device cannot: the kernel writes zeros there instead of reading outside
// the operand.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/DataMovementInternal.h"
#include "compiler/cuda/KernelEmitter.h"
#include "core/CheckedArithmetic.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>

namespace snug {
namespace cuda {

// Index and loop helpers shared with the elementwise emitters, defined in
// ElementwiseEmitters.cpp (see there for what each emits).

using namespace codegen;

//===----------------------------------------------------------------------===//
// Opaque units, shared with FillEmitters.cpp (DataMovementInternal.h)
//===----------------------------------------------------------------------===//

unsigned elementBytes(const TensorRef &ref) {
  return ir::getDTypeSize(ref.dtype);
}

std::string tagOf(const EmitContext &context) {
  return context.node.getOpName().lower();
}

/// The type a kernel moves `bytes` (1, 2, 4, 8 or 16) at a time as.
std::string unitType(unsigned bytes) {
  return bytes == 16 ? "snug_u128" : "uint" + std::to_string(bytes * 8) + "_t";
}

/// A pointer parameter `name` of unit type to `ref`'s bytes from
/// `byteOffset`. 16-byte units are a struct local to the kernel, so the
/// parameter is a uint64_t pointer and the returned prologue line casts it.
std::string addUnitPointer(Kernel &kernel, const std::string &name,
                           const TensorRef &ref, uint64_t byteOffset,
                           bool readOnly, unsigned bytes) {
  std::string constness = readOnly ? "const " : "";
  if (bytes != 16) {
    kernel.params.push_back(
        {constness + unitType(bytes) + " *", name, ref.at(byteOffset)});
    return "";
  }
  kernel.params.push_back(
      {constness + "uint64_t *", name + "_words", ref.at(byteOffset)});
  return "  " + constness + "snug_u128 *" + name + " = (" + constness +
         "snug_u128 *)" + name + "_words;\n";
}

/// The widest unit (up to 16 bytes) that divides `runBytes` and every
/// address in `addresses`, at least `minimum`.
unsigned widestUnit(unsigned minimum, uint64_t runBytes,
                    llvm::ArrayRef<uint64_t> addresses) {
  for (unsigned bytes = 16; bytes > minimum; bytes /= 2)
    if (runBytes % bytes == 0 &&
        llvm::all_of(addresses, [&](uint64_t a) { return a % bytes == 0; }))
      return bytes;
  return minimum;
}

namespace {

uint64_t byteAddress(const TensorRef &ref, uint64_t byteOffset) {
  return ref.place.value + byteOffset;
}

std::string unitPrologue(unsigned bytes) {
  return bytes == 16 ? "  struct alignas(16) snug_u128 { uint64_t lo, hi; };\n"
                     : "";
}

//===----------------------------------------------------------------------===//
// Strided copies
//===----------------------------------------------------------------------===//

/// One dim of a strided copy; strides in elements.
struct CopyDim {
  int64_t size;
  int64_t src;
  int64_t dst;
};

/// `dims` as sizes and the two stride vectors (source, destination) the
/// shared index helpers take.
void unzip(llvm::ArrayRef<CopyDim> dims, std::vector<int64_t> &sizes,
           std::vector<std::vector<int64_t>> &strides) {
  strides.assign(2, {});
  for (const CopyDim &d : dims) {
    sizes.push_back(d.size);
    strides[0].push_back(d.src);
    strides[1].push_back(d.dst);
  }
}

/// Unit dims dropped, dims ordered by destination stride (outermost first),
/// neighbours merged where both sides step over the inner dim exactly.
/// Empty when there is nothing to move or a single element.
std::vector<CopyDim> canonicalize(std::vector<CopyDim> dims) {
  llvm::erase_if(dims, [](const CopyDim &d) { return d.size == 1; });
  std::stable_sort(
      dims.begin(), dims.end(),
      [](const CopyDim &a, const CopyDim &b) { return a.dst > b.dst; });
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;
  unzip(dims, sizes, strides);
  collapseDims(sizes, strides);
  std::vector<CopyDim> result;
  for (size_t d = 0; d < sizes.size(); ++d)
    result.push_back({sizes[d], strides[0][d], strides[1][d]});
  return result;
}

int64_t countOf(llvm::ArrayRef<CopyDim> dims) {
  int64_t count = 1;
  for (const CopyDim &d : dims)
    count *= d.size;
  return count;
}

/// Moves the canonical `dims` (elements of `bytes` each) from `src` at
/// `srcOffset` to `dst` at `dstOffset`: one memcpy step for a contiguous
/// block (none when it is already in place), a kernel otherwise.
void emitCanonicalCopy(EmitContext &context, llvm::StringRef tag,
                       const TensorRef &src, uint64_t srcOffset,
                       const TensorRef &dst, uint64_t dstOffset,
                       unsigned bytes, std::vector<CopyDim> dims) {
  if (dims.empty() ||
      (dims.size() == 1 && dims[0].src == 1 && dims[0].dst == 1)) {
    context.copy(dst.at(dstOffset), src.at(srcOffset), countOf(dims) * bytes);
    return;
  }
  // Widen the unit over a contiguous inner run when every address allows.
  CopyDim &inner = dims.back();
  if (inner.src == 1 && inner.dst == 1) {
    std::vector<uint64_t> addresses = {byteAddress(src, srcOffset),
                                       byteAddress(dst, dstOffset)};
    for (size_t d = 0; d + 1 < dims.size(); ++d) {
      addresses.push_back(uint64_t(std::abs(dims[d].src)) * bytes);
      addresses.push_back(uint64_t(dims[d].dst) * bytes);
    }
    unsigned unit = widestUnit(bytes, uint64_t(inner.size) * bytes, addresses);
    int64_t factor = unit / bytes;
    for (CopyDim &d : dims)
      if (&d != &inner)
        d.src /= factor, d.dst /= factor;
    inner.size /= factor;
    bytes = unit;
  }
  Kernel kernel;
  kernel.tag = tag.str();
  kernel.body = unitPrologue(bytes);
  kernel.body += addUnitPointer(kernel, "src", src, srcOffset, true, bytes);
  kernel.body += addUnitPointer(kernel, "dst", dst, dstOffset, false, bytes);
  int64_t count = countOf(dims);
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;
  unzip(dims, sizes, strides);
  int64_t extent = int64_t(std::max(src.bytes, dst.bytes) / bytes);
  const char *index = indexTypeFor(context, count, extent);
  kernel.body += gridStrideLoop(index, count);
  kernel.body += emitOffsets(sizes, strides, {"s", "t"}, index, "i");
  kernel.body += "    dst[t] = src[s];\n  }\n";
  launchGridStride(context, std::move(kernel), count);
}

void emitStridedCopy(EmitContext &context, llvm::StringRef tag,
                     const TensorRef &src, uint64_t srcOffset,
                     const TensorRef &dst, uint64_t dstOffset,
                     std::vector<CopyDim> dims) {
  if (llvm::any_of(dims, [](const CopyDim &d) { return d.size == 0; }))
    return;
  emitCanonicalCopy(context, tag, src, srcOffset, dst, dstOffset,
                    elementBytes(dst), canonicalize(std::move(dims)));
}

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

/// A batch of row-major R x C matrices transposed: each block stages a
/// 32 x 32 tile in shared memory (one padding column avoids bank conflicts),
/// so both the reads along C and the writes along R are coalesced.
void emitTiledTranspose(EmitContext &context, const TensorRef &x,
                        const TensorRef &y, int64_t batch, int64_t rows,
                        int64_t cols) {
  unsigned bytes = elementBytes(x);
  std::string unit = unitType(bytes);
  Kernel kernel;
  kernel.tag = "transpose_tiled";
  addUnitPointer(kernel, "src", x, 0, true, bytes);
  addUnitPointer(kernel, "dst", y, 0, false, bytes);
  int64_t tilesX = (cols + 31) / 32, tilesY = (rows + 31) / 32;
  const char *index = indexTypeFor(context, 0, batch * rows * cols);
  std::string I = index;
  std::string R = cudaIntLiteral(rows), C = cudaIntLiteral(cols);
  std::string text;
  llvm::raw_string_ostream os(text);
  // The loops over tiles depend only on blockIdx, so every thread of a
  // block reaches each __syncthreads().
  os << "  __shared__ " << unit << " tile[32][33];\n"
     << "  for (" << I << " b = blockIdx.z; b < " << cudaIntLiteral(batch)
     << "; b += gridDim.z)\n"
     << "    for (" << I << " ty = blockIdx.y; ty < " << cudaIntLiteral(tilesY)
     << "; ty += gridDim.y)\n"
     << "      for (" << I << " tx = blockIdx.x; tx < "
     << cudaIntLiteral(tilesX) << "; tx += gridDim.x) {\n"
     << "        const " << unit << " *from = src + b * "
     << cudaIntLiteral(rows * cols) << ";\n"
     << "        " << unit << " *to = dst + b * " << cudaIntLiteral(rows * cols)
     << ";\n"
     << "        for (int k = threadIdx.y; k < 32; k += 8) {\n"
     << "          const " << I
     << " r = ty * 32 + k, c = tx * 32 + threadIdx.x;\n"
     << "          if (r < " << R << " && c < " << C << ")\n"
     << "            tile[k][threadIdx.x] = from[r * " << C << " + c];\n"
     << "        }\n"
     << "        __syncthreads();\n"
     << "        for (int k = threadIdx.y; k < 32; k += 8) {\n"
     << "          const " << I
     << " c = tx * 32 + k, r = ty * 32 + threadIdx.x;\n"
     << "          if (r < " << R << " && c < " << C << ")\n"
     << "            to[c * " << R << " + r] = tile[threadIdx.x][k];\n"
     << "        }\n"
     << "        __syncthreads();\n"
     << "      }\n";
  kernel.body = os.str();
  kernel.block = {32, 8, 1};
  kernel.grid.x = uint32_t(std::min<int64_t>(tilesX, 65535));
  kernel.grid.y = uint32_t(std::min<int64_t>(tilesY, 65535));
  kernel.grid.z = uint32_t(std::min<int64_t>(batch, 65535));
  context.launch(std::move(kernel));
}

llvm::Error emitTranspose(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  size_t rank = x.rank();
  std::vector<int64_t> perm = context.intsAttr("perm");
  if (!context.hasAttr("perm"))
    for (size_t i = rank; i-- > 0;)
      perm.push_back(int64_t(i));
  if (perm.size() != rank || y.rank() != rank)
    return context.unsupported("perm does not match the rank");
  std::vector<int64_t> inStrides = x.strides(), outStrides = y.strides();
  std::vector<bool> seen(rank, false);
  std::vector<CopyDim> dims;
  for (size_t d = 0; d < rank; ++d) {
    int64_t p = perm[d];
    if (p < 0 || p >= int64_t(rank) || seen[p] || y.dims[d] != x.dims[p])
      return context.unsupported(
          "perm is not a permutation matching the result");
    seen[p] = true;
    dims.push_back({y.dims[d], inStrides[p], outStrides[d]});
  }
  if (y.numElements == 0)
    return llvm::Error::success();
  dims = canonicalize(std::move(dims));
  // A batch of R x C -> C x R (in destination order: [batch,] C, R): tiled
  // when both sides are wide enough to fill a tile's rows.
  size_t n = dims.size();
  if (n == 2 || n == 3) {
    const CopyDim &c = dims[n - 2], &r = dims[n - 1];
    bool swap = c.src == 1 && c.dst == r.size && r.dst == 1 && r.src == c.size;
    bool batched = n == 2 || (dims[0].src == r.size * c.size &&
                              dims[0].dst == dims[0].src);
    if (swap && batched && r.size >= 16 && c.size >= 16) {
      emitTiledTranspose(context, x, y, n == 3 ? dims[0].size : 1, r.size,
                         c.size);
      return llvm::Error::success();
    }
  }
  emitCanonicalCopy(context, "transpose", x, 0, y, 0, elementBytes(x),
                    std::move(dims));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Concat, Split
//===----------------------------------------------------------------------===//

/// A tensor around its axis: `outer` blocks of dim(axis) * `inner`
/// elements.
struct AxisSplit {
  int64_t axis = 0, outer = 1, inner = 1;
};

bool splitAroundAxis(const EmitContext &context, const TensorRef &ref,
                     AxisSplit &split) {
  int64_t rank = ref.rank();
  split.axis = context.intAttr("axis", 0);
  if (split.axis < 0)
    split.axis += rank;
  if (split.axis < 0 || split.axis >= rank)
    return false;
  for (int64_t d = 0; d < rank; ++d)
    if (d < split.axis)
      split.outer *= ref.dims[d];
    else if (d > split.axis)
      split.inner *= ref.dims[d];
  return true;
}

/// Each operand's rows go to its column range of the result. An operand
/// the planner already put at its slice (Concat in place: a contiguous
/// slice at the same byte offset) is a memcpy onto itself, which copy()
/// skips: no step at all.
llvm::Error emitConcat(EmitContext &context) {
  const TensorRef &y = context.out();
  AxisSplit split;
  if (!splitAroundAxis(context, y, split))
    return context.unsupported("axis out of range");
  int64_t row = y.dims[split.axis] * split.inner, at = 0;
  unsigned bytes = elementBytes(y);
  for (const TensorRef &x : context.operands) {
    if (!x.present || x.rank() != y.rank() || x.dtype != y.dtype)
      return context.unsupported("operands must be present, of the result's "
                                 "rank and dtype");
    int64_t chunk = x.dims[split.axis] * split.inner;
    if (x.numElements != split.outer * chunk)
      return context.unsupported(
          "operands differ from the result off the axis");
    if (at + chunk > row)
      return context.unsupported("operands exceed the result along the axis");
    emitStridedCopy(context, "concat", x, 0, y, uint64_t(at) * bytes,
                    {{split.outer, chunk, row}, {chunk, 1, 1}});
    at += chunk;
  }
  if (at != row)
    return context.unsupported("operands do not add up to the result");
  return llvm::Error::success();
}

llvm::Error emitSplit(EmitContext &context) {
  const TensorRef &x = context.in(0);
  AxisSplit split;
  if (!splitAroundAxis(context, x, split))
    return context.unsupported("axis out of range");
  int64_t row = x.dims[split.axis] * split.inner, at = 0;
  unsigned bytes = elementBytes(x);
  for (const TensorRef &y : context.results) {
    if (!y.present)
      return context.unsupported("every result must be present");
    int64_t chunk =
        y.rank() == x.rank() ? y.dims[split.axis] * split.inner : -1;
    if (chunk < 0 || y.numElements != split.outer * chunk || at + chunk > row)
      return context.unsupported("results do not split the operand");
    emitStridedCopy(context, "split", x, uint64_t(at) * bytes, y, 0,
                    {{split.outer, row, chunk}, {chunk, 1, 1}});
    at += chunk;
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Slice, Expand, Tile, DepthToSpace, SpaceToDepth
//===----------------------------------------------------------------------===//

llvm::Error emitSlice(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  size_t rank = x.rank();
  if (y.rank() != rank)
    return context.unsupported("result rank differs from the operand's");
  std::vector<int64_t> starts = context.intsAttr("starts");
  std::vector<int64_t> axes = context.intsAttr("axes");
  std::vector<int64_t> steps = context.intsAttr("steps");
  if (context.operands.size() > 1 && !context.hasAttr("starts"))
    return context.unsupported("slice parameters must be attributes "
                               "(the importer's canonical form)");
  std::vector<int64_t> start(rank, 0), step(rank, 1);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = i < axes.size() ? axes[i] : int64_t(i);
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= int64_t(rank))
      return context.unsupported("slice axis out of range");
    start[axis] = starts[i];
    step[axis] = i < steps.size() ? steps[i] : 1;
  }
  std::vector<int64_t> inStrides = x.strides(), outStrides = y.strides();
  std::vector<CopyDim> dims;
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (!isStridedRangeInside(start[d], step[d], y.dims[d], x.dims[d]))
      return context.unsupported("slice of dim " + std::to_string(d) +
                                 " reads outside the operand");
    // A dim of extent 1 never steps, and its step may be INT64_MAX: keep it
    // out of the emitted stride.
    if (y.dims[d] <= 1)
      step[d] = 1;
    base += start[d] * inStrides[d];
    dims.push_back({y.dims[d], inStrides[d] * step[d], outStrides[d]});
  }
  if (y.numElements == 0)
    return llvm::Error::success();
  emitStridedCopy(context, "slice", x, uint64_t(base) * elementBytes(x), y, 0,
                  std::move(dims));
  return llvm::Error::success();
}

llvm::Error emitExpand(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  std::vector<int64_t> strides, outStrides = y.strides();
  if (!broadcastStrides(x, y.dims, strides))
    return context.unsupported("operand does not broadcast to the result");
  std::vector<CopyDim> dims;
  for (size_t d = 0; d < y.rank(); ++d)
    dims.push_back({y.dims[d], strides[d], outStrides[d]});
  emitStridedCopy(context, "expand", x, 0, y, 0, std::move(dims));
  return llvm::Error::success();
}

/// Each result dim d is (repeat, dim) pairs: the repeat steps over a whole
/// copy of the operand's dim in the result and not at all in the operand.
llvm::Error emitTile(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  size_t rank = x.rank();
  if (y.rank() != rank)
    return context.unsupported("result rank differs from the operand's");
  std::vector<int64_t> inStrides = x.strides(), outStrides = y.strides();
  std::vector<CopyDim> dims;
  for (size_t d = 0; d < rank; ++d) {
    if (x.dims[d] == 0 ? y.dims[d] != 0 : y.dims[d] % x.dims[d] != 0)
      return context.unsupported("result dims are not multiples of the "
                                 "operand's");
    if (x.dims[d] == 0)
      return llvm::Error::success(); // nothing to move
    dims.push_back({y.dims[d] / x.dims[d], 0, x.dims[d] * outStrides[d]});
    dims.push_back({x.dims[d], inStrides[d], outStrides[d]});
  }
  emitStridedCopy(context, "tile", x, 0, y, 0, std::move(dims));
  return llvm::Error::success();
}

/// Both ops move between the depth side (N, C*b*b, H, W) and the space side
/// (N, C, H*b, W*b) over (n, c, i, j, h, w), the channel split as DCR
/// (i, j, c) or CRD (c, i, j), exactly as the host's loops.
llvm::Error emitDepthSpace(EmitContext &context, bool toSpace) {
  const TensorRef &x = context.in(0), &y = context.out();
  int64_t b = context.intAttr("blocksize", 0);
  if (x.rank() != 4 || y.rank() != 4 || b <= 0)
    return context.unsupported("expects 4-d tensors and a positive blocksize");
  bool crd = context.stringAttr("mode", "DCR") == "CRD";
  const TensorRef &depth = toSpace ? x : y, &space = toSpace ? y : x;
  int64_t n = space.dims[0], c = space.dims[1], h = depth.dims[2],
          w = depth.dims[3];
  if (depth.dims[0] != n || depth.dims[1] != c * b * b ||
      space.dims[2] != h * b || space.dims[3] != w * b)
    return context.unsupported("shapes do not match the blocksize");
  int64_t hw = h * w, sw = w * b;
  // Per dim: size, depth-side stride, space-side stride.
  struct { int64_t size, depth, space; } dims[] = {
      {n, c * b * b * hw, c * h * b * sw},
      {c, crd ? b * b * hw : hw, h * b * sw},
      {b, crd ? b * hw : b * c * hw, sw},
      {b, crd ? hw : c * hw, 1},
      {h, w, b * sw},
      {w, 1, b},
  };
  std::vector<CopyDim> copy;
  for (const auto &d : dims)
    copy.push_back(toSpace ? CopyDim{d.size, d.depth, d.space}
                           : CopyDim{d.size, d.space, d.depth});
  emitStridedCopy(context, toSpace ? "depthtospace" : "spacetodepth", x, 0, y,
                  0, std::move(copy));
  return llvm::Error::success();
}

llvm::Error emitDepthToSpace(EmitContext &context) {
  return emitDepthSpace(context, true);
}
llvm::Error emitSpaceToDepth(EmitContext &context) {
  return emitDepthSpace(context, false);
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

/// y[o, k, j] = x[o, indices[k], j], inner runs moved in the widest unit.
llvm::Error emitGather(EmitContext &context) {
  if (!context.hasIn(0) || !context.hasIn(1))
    return context.unsupported("expects data and indices");
  const TensorRef &x = context.in(0), &indices = context.in(1),
                  &y = context.out();
  if (ir::isFloatDType(indices.dtype))
    return context.unsupported("indices must be integers");
  AxisSplit split;
  if (!splitAroundAxis(context, x, split))
    return context.unsupported("axis out of range");
  int64_t n = x.dims[split.axis], count = indices.numElements;
  if (y.numElements != split.outer * count * split.inner || x.dtype != y.dtype)
    return context.unsupported("result does not match the gather");
  if (y.numElements == 0)
    return llvm::Error::success();
  unsigned bytes = elementBytes(x);
  unsigned unit = widestUnit(bytes, uint64_t(split.inner) * bytes,
                             {x.place.value, y.place.value});
  int64_t inner = split.inner * bytes / unit,
          total = y.numElements * bytes / unit;
  Kernel kernel;
  kernel.tag = "gather";
  kernel.body = unitPrologue(unit);
  kernel.body += addUnitPointer(kernel, "src", x, 0, true, unit);
  kernel.addTensor("indices", indices, true);
  kernel.body += addUnitPointer(kernel, "dst", y, 0, false, unit);
  const char *index = indexTypeFor(context, total, int64_t(x.bytes / unit));
  kernel.body += gridStrideLoop(index, total);
  kernel.body += emitCoordinates({split.outer, count, inner}, index, "i", "d",
                                 {split.outer > 1, true, inner > 1});
  std::string N = cudaIntLiteral(n);
  std::string from = split.outer > 1 ? "d0 * " + N + " + at" : "at";
  if (inner > 1)
    from = "(" + from + ") * " + cudaIntLiteral(inner) + " + d2";
  kernel.body +=
      "    int64_t at = (int64_t)snug_load(indices + d1);\n"
      "    if (at < 0)\n      at += " + N + ";\n"
      "    // Out of range (an error on the host): zeros, never a stray read.\n"
      "    dst[i] = at >= 0 && at < " + N + " ? src[" + from + "] : " +
      unitType(unit) + "();\n  }\n";
  launchGridStride(context, std::move(kernel), total);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Pad
//===----------------------------------------------------------------------===//

/// Statements mapping result coordinate `coordinate` to the operand's `at`
/// along a dim of `size` padded by `before`, for `mode`; constant mode
/// clears `inside` instead.
std::string padMapping(llvm::StringRef mode, int64_t size, int64_t before,
                       llvm::StringRef coordinate, llvm::StringRef indexType) {
  std::string n = cudaIntLiteral(size);
  std::string text = "      " + indexType.str() + " at = " + coordinate.str() +
                     " - " + cudaIntLiteral(before) + ";\n";
  if (mode == "constant")
    return text + "      inside = inside && at >= 0 && at < " + n + ";\n";
  if (mode == "edge")
    return text + "      at = at < 0 ? 0 : (at >= " + n + " ? " +
           cudaIntLiteral(size - 1) + " : at);\n";
  if (mode == "wrap")
    return text + "      at = ((at % " + n + ") + " + n + ") % " + n + ";\n";
  // reflect, without repeating the edge
  if (size == 1)
    return text + "      at = 0;\n";
  std::string period = cudaIntLiteral(2 * (size - 1));
  return text + "      at = ((at % " + period + ") + " + period + ") % " +
         period + ";\n      if (at >= " + n + ")\n        at = " + period +
         " - at;\n";
}

llvm::Error emitPad(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  int64_t rank = x.rank();
  if (!context.hasAttr("pads"))
    return context.unsupported("pads must be an attribute (the importer's "
                               "canonical form)");
  std::vector<int64_t> pads = context.intsAttr("pads");
  if (int64_t(pads.size()) != 2 * rank || y.rank() != x.rank() ||
      x.dtype != y.dtype)
    return context.unsupported("pads must hold 2 x rank values");
  for (int64_t d = 0; d < rank; ++d)
    if (y.dims[d] != x.dims[d] + pads[d] + pads[rank + d])
      return context.unsupported("result dims do not match the pads");
  std::string mode = context.stringAttr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return context.unsupported("unsupported mode '" + mode + "'");
  if (x.numElements == 0 && mode != "constant")
    return context.unsupported("cannot " + mode + "-pad an empty tensor");
  if (y.numElements == 0)
    return llvm::Error::success();
  // Merge an unpadded dim into the dim outside it: the merged coordinate
  // maps the same way in constant mode, and an unpadded pair always does.
  std::vector<int64_t> inDims, outDims, before;
  std::vector<bool> padded;
  for (int64_t d = 0; d < rank; ++d) {
    bool unpadded = pads[d] == 0 && pads[rank + d] == 0;
    if (y.dims[d] == 1 && unpadded)
      continue;
    if (unpadded && !inDims.empty() && (mode == "constant" || !padded.back())) {
      inDims.back() *= x.dims[d], outDims.back() *= y.dims[d];
      before.back() *= y.dims[d];
      continue;
    }
    inDims.push_back(x.dims[d]), outDims.push_back(y.dims[d]);
    before.push_back(pads[d]), padded.push_back(!unpadded);
  }
  std::string type = cudaTypeName(y.dtype);
  Kernel kernel;
  kernel.tag = "pad";
  kernel.addTensor("x", x, true);
  if (mode == "constant") {
    // The value as the host stores it: read as a double, stored in the
    // result's type.
    std::string value = cudaFloatLiteral(double(context.floatAttr("value", 0)));
    if (context.hasIn(2) && context.in(2).numElements) {
      kernel.addTensor("value", context.in(2), true);
      value = "(double)snug_load(value)";
    }
    kernel.body += "  " + type + " pad_value;\n  " +
                   storeConverted(y.dtype, "double", "&pad_value", value);
  }
  kernel.addTensor("out", y, false);
  std::vector<int64_t> inStrides(inDims.size(), 1);
  for (size_t d = inDims.size(); d-- > 1;)
    inStrides[d - 1] = inStrides[d] * inDims[d];
  const char *index = indexTypeFor(context, y.numElements,
                                   std::max(x.numElements, y.numElements));
  std::string I = index;
  kernel.body += gridStrideLoop(index, y.numElements);
  kernel.body += emitCoordinates(outDims, index, "i", "d");
  kernel.body += "    " + I + " from = 0;\n";
  if (mode == "constant")
    kernel.body += "    bool inside = true;\n";
  for (size_t d = 0; d < outDims.size(); ++d) {
    std::string coordinate = "d" + std::to_string(d);
    std::string stride =
        inStrides[d] == 1 ? "" : " * " + cudaIntLiteral(inStrides[d]);
    if (!padded[d]) {
      kernel.body += "    from += " + coordinate + stride + ";\n";
      continue;
    }
    kernel.body += "    {\n" +
                   padMapping(mode, inDims[d], before[d], coordinate, I) +
                   "      from += at" + stride + ";\n    }\n";
  }
  kernel.body += mode == "constant"
                     ? "    out[i] = inside ? x[from] : pad_value;\n"
                     : "    out[i] = x[from];\n";
  kernel.body += "  }\n";
  launchGridStride(context, std::move(kernel), y.numElements);
  return llvm::Error::success();
}

/// snug.offload / snug.reload: one copy step between the arena and the
/// pinned host region (the operand's and result's places say which way).
llvm::Error emitHostCopy(EmitContext &context) {
  context.copy(context.out().place, context.in(0).place, context.out().bytes);
  return llvm::Error::success();
}

/// The condition's copy (its result), then the branch that skips the
/// nodes of the branch not taken.
llvm::Error emitSkipIf(EmitContext &context) {
  context.copy(context.out().place, context.in(0).place, context.out().bytes);
  context.branch(context.in(0).place, context.intAttr("when", 0) != 0,
                 uint32_t(context.intAttr("count", 0)));
  return llvm::Error::success();
}

const EmitterEntry kDataMovementEmitters[] = {
    {ir::OpCode::SnugSkipIf, emitSkipIf},
    {ir::OpCode::SnugOffload, emitHostCopy},
    {ir::OpCode::SnugReload, emitHostCopy},
    {ir::OpCode::Transpose, emitTranspose},
    {ir::OpCode::Concat, emitConcat},
    {ir::OpCode::Split, emitSplit},
    {ir::OpCode::Slice, emitSlice},
    {ir::OpCode::Gather, emitGather},
    {ir::OpCode::Pad, emitPad},
    {ir::OpCode::Resize, emitResize},
    {ir::OpCode::Expand, emitExpand},
    {ir::OpCode::Tile, emitTile},
    {ir::OpCode::DepthToSpace, emitDepthToSpace},
    {ir::OpCode::SpaceToDepth, emitSpaceToDepth},
    {ir::OpCode::Dropout, emitDropout},
    {ir::OpCode::Shape, emitShape},
    {ir::OpCode::Size, emitSize},
    {ir::OpCode::Constant, emitConstant},
    {ir::OpCode::ConstantOfShape, emitConstant},
    {ir::OpCode::Range, emitRange},
    {ir::OpCode::SnugDropoutMask, emitDropoutMask},
};

} // namespace

llvm::ArrayRef<EmitterEntry> getDataMovementEmitters() {
  return kDataMovementEmitters;
}

} // namespace cuda
} // namespace snug
