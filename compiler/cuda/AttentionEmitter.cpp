//===- AttentionEmitter.cpp - snug.attention as one flash-style kernel ----===//
//
// softmax(scale * Q Kᵀ (+ mask)) V (core/Ops.def and core/AttentionShape.h:
// the mask kinds, zero_filled, the sizes) in one launch that never stores
// the scores, in the manner of FlashAttention (Dao et al., 2022): K and V
// pass through shared memory a tile of key rows at a time (read through
// their strides, so a perm the op took in from a head-splitting Transpose
// costs no copy; the threads walk each tile along its contiguous axis), and
// each query row keeps its running max m and sum l (the online softmax,
// Milakov and Gimelshein 2018): the new max rescales the accumulator and
// the sum by exp(m_old - m_new) before the new keys' exp(s - m_new) weights
// add their V rows (under zero_filled, a filled key's weight adds to l
// only). The output is acc / l. A row every score of which is -inf (fully
// masked) gives 0 / 0 = NaN, as the unfused Softmax does.
//
// f16 and bf16 run on the tensor cores (AttentionMma.cpp). f32 and f64 run
// the scalar kernel here, in the compute type (float, double), with no
// per-thread array that a run-time index would put in local memory: G
// lanes of a warp share a query row (G a power of two, max(D, Dv) / G at
// most 8), lane c holding the row's q and output columns c + G u in
// registers (fully unrolled, so u is a constant); a score's dot product is
// the lanes' partial sums added by shuffles; keys go through the online
// softmax a chunk of kChunk at a time, their scores in an unrolled s[].
// Rows past Sq compute row Sq - 1 again (they take part in the shuffles
// and barriers) and store nothing. The scores differ from the unfused
// graph's by the order of the dot product's additions and the rounding of
// exp: within fp32 rounding, not bitwise (tests/lit/bundle/attention.test).
//
// Shared memory: tile x (D + Dv) compute-type elements (rows padded to G
// u), at most 32 KiB (static, under the 48 KiB rule of KernelEmitter.h);
// every thread reaches both barriers of each tile. Sizes D, Dv over
// kMaxHeadDim are refused.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/AttentionKernel.h"
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/ElementwiseExpr.h"
#include "compiler/cuda/KernelEmitter.h"
#include "ir/ShapeFunctions.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace snug {
namespace cuda {

namespace {

/// The largest head dim.
constexpr int64_t kMaxHeadDim = 256;
/// Shared memory for one K tile and one V tile.
constexpr int64_t kTileBytes = 32 << 10;
constexpr int64_t kMaxTile = 32;
/// Keys per online-softmax step (the unrolled s[]), and the most
/// registers of q (and of the output) a lane holds.
constexpr int64_t kChunk = 8, kColumnsPerLane = 8;
static_assert(kMaxTile % kChunk == 0, "tiles are whole chunks");
static_assert(kChunk <= 32, "zero_filled keeps a chunk's fills in 32 bits");

std::string lit(int64_t value) { return cudaIntLiteral(value); }

/// The loop filling a shared tile `name`[jj * width + c] (jj < tile key
/// rows, c < width; 0 past Skv or past `valid` columns) from `pointer` at
/// key row stride `rowStride` and column stride `columnStride`, the
/// threads walking along whichever of the two is contiguous in memory.
std::string tileLoad(llvm::StringRef name, llvm::StringRef pointer,
                     int64_t tile, int64_t width, int64_t valid,
                     int64_t rowStride, int64_t columnStride, int64_t skv,
                     llvm::StringRef acc, int64_t threads) {
  bool alongRows = rowStride == 1 && columnStride != 1;
  std::string split =
      alongRows ? "const int c = x / " + lit(tile) + ", jj = x % " + lit(tile)
                : "const int jj = x / " + lit(width) + ", c = x % " +
                      lit(width);
  std::string inside = "j0 + jj < " + lit(skv);
  if (valid < width)
    inside += " && c < " + lit(valid);
  return "    for (int x = threadIdx.x; x < " + lit(tile * width) +
         "; x += " + lit(threads) + ") {\n      " + split + ";\n      " +
         name.str() + "[jj * " + lit(width) + " + c] = " + inside + " ? (" +
         acc.str() + ")snug_load(" + pointer.str() +
         " + (int64_t)(j0 + jj) * " + lit(rowStride) + " + (int64_t)c * " +
         lit(columnStride) + ") : (" + acc.str() + ")0;\n    }\n";
}

/// The scalar kernel (the file comment): f32 or f64.
void emitScalarKernel(const AttentionKernelSpec &spec, Kernel &kernel) {
  const AttentionShape &shape = spec.shape;
  using S = AttentionShape;
  const std::string &acc = spec.acc;
  const int64_t sq = shape.sq, skv = shape.skv, d = shape.d, dv = shape.dv;
  int64_t lanes = 1;
  while (lanes < 32 && lanes * kColumnsPerLane < std::max(d, dv))
    lanes *= 2;
  const int64_t qn = (d + lanes - 1) / lanes, on = (dv + lanes - 1) / lanes;
  const int64_t dp = qn * lanes, dvp = on * lanes;
  const int64_t threads = std::min<int64_t>(256, 64 * lanes);
  const int64_t rows = threads / lanes;
  int64_t accBytes = acc == "double" ? 8 : 4;
  int64_t tile = std::min<int64_t>(kMaxTile,
                                   kTileBytes / (accBytes * (dp + dvp)));
  tile = std::max<int64_t>(kChunk, tile / kChunk * kChunk);
  std::string inf = "(" + acc + ")snug_inf()";
  std::string exp = acc == "float" ? "expf" : "exp";
  // Column `u` of this lane (c + lanes u).
  auto column = [&](llvm::StringRef u) {
    return lanes == 1 ? u.str() : "(c + " + lit(lanes) + " * " + u.str() + ")";
  };

  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  // Sq " << sq << ", Skv " << skv << ", D " << d << ", Dv " << dv
     << "; " << rows << " query rows a block, " << lanes
     << " lanes a row, key tiles of " << tile << "\n"
     << "  __shared__ " << acc << " ks[" << tile * dp << "];\n"
     << "  __shared__ " << acc << " vs[" << tile * dvp << "];\n"
     << "  const int b = blockIdx.y;\n"
     << (lanes == 1 ? "" : "  const int c = threadIdx.x % " + lit(lanes) + ";\n")
     << "  const int i = blockIdx.x * " << rows << " + threadIdx.x"
     << (lanes == 1 ? "" : " / " + lit(lanes)) << ";\n"
     << "  const bool active = i < " << lit(sq) << ";\n"
     << "  const int row = active ? i : " << lit(sq - 1) << ";\n"
     << "  // Each operand's batch item, through its strides (its perm).\n"
     << "  const int64_t qb = " << attentionBatchOffset(shape, shape.qStrides)
     << ", kb = " << attentionBatchOffset(shape, shape.kStrides)
     << ", vb = " << attentionBatchOffset(shape, shape.vStrides)
     << ", yb = " << attentionBatchOffset(shape, shape.yStrides) << ";\n"
     << "  // This lane's columns c + " << lanes << " u of q and of the output.\n"
     << "  " << acc << " qr[" << qn << "], o[" << on << "];\n"
     << "#pragma unroll\n"
     << "  for (int u = 0; u < " << qn << "; ++u)\n"
     << "    qr[u] = " << (dp == d ? "" : column("u") + " < " + lit(d) + " ? ")
     << "(" << acc << ")snug_load(q + qb + (int64_t)row * "
     << lit(S::rowStride(shape.qStrides)) << " + (int64_t)" << column("u")
     << " * " << lit(S::columnStride(shape.qStrides)) << ")"
     << (dp == d ? "" : " : (" + acc + ")0") << ";\n"
     << "#pragma unroll\n"
     << "  for (int u = 0; u < " << on << "; ++u)\n"
     << "    o[u] = 0;\n"
     << "  " << acc << " m = -" << inf << ", l = 0;\n"
     // Kᵀ is [D, Skv]: key row jj of the tile is its column j0 + jj.
     << "#pragma unroll 1\n"
     << "  for (int j0 = 0; j0 < " << lit(skv) << "; j0 += " << tile
     << ") {\n"
     << "    __syncthreads(); // the last tile's readers are done\n"
     << tileLoad("ks", "k + kb", tile, dp, d, S::columnStride(shape.kStrides),
                 S::rowStride(shape.kStrides), skv, acc, threads)
     << tileLoad("vs", "v + vb", tile, dvp, dv, S::rowStride(shape.vStrides),
                 S::columnStride(shape.vStrides), skv, acc, threads)
     << "    __syncthreads();\n"
     << "    const int n = " << lit(skv) << " - j0 < " << tile << " ? "
     << lit(skv) << " - j0 : " << tile << ";\n"
     << "#pragma unroll 1\n"
     << "    for (int jc = 0; jc < n; jc += " << kChunk << ") {\n"
     << "      " << acc << " s[" << kChunk << "], top = m;\n";
  // zero_filled: bit u says key jc + u was filled, and its weight only
  // normalizes.
  if (spec.zeroFilled)
    os << "      unsigned filled = 0;\n";
  os << "#pragma unroll\n"
     << "      for (int u = 0; u < " << kChunk << "; ++u) {\n"
     << "        " << acc << " dot = 0;\n"
     << "#pragma unroll\n"
     << "        for (int w = 0; w < " << qn << "; ++w)\n"
     << "          dot += qr[w] * ks[(jc + u) * " << dp << " + " << column("w")
     << "];\n";
  for (int64_t offset = lanes / 2; offset > 0; offset /= 2)
    os << "        dot += __shfl_xor_sync(0xffffffffu, dot, " << offset
       << ");\n";
  os << attentionScoreMask(spec, "dot", "row", "j0 + jc + u",
                           spec.zeroFilled ? "filled |= 1u << u;" : "",
                           "        ")
     << "        s[u] = dot;\n"
     << "        top = dot > top ? dot : top;\n"
     << "      }\n"
     << "      // Nothing but -inf so far: no weight yet, nothing to "
        "rescale.\n"
     << "      const " << acc << " rescale = top == -" << inf << " ? ("
     << acc << ")1 : " << exp << "(m - top);\n"
     << "      l *= rescale;\n"
     << "#pragma unroll\n"
     << "      for (int w = 0; w < " << on << "; ++w)\n"
     << "        o[w] *= rescale;\n"
     << "#pragma unroll\n"
     << "      for (int u = 0; u < " << kChunk << "; ++u) {\n"
     << "        " << acc << " p = top == -" << inf << " ? (" << acc
     << ")0 : " << exp << "(s[u] - top);\n"
     << "        l += p;\n";
  if (spec.zeroFilled)
    os << "        if ((filled >> u) & 1u)\n"
       << "          p = 0;\n";
  os << "#pragma unroll\n"
     << "        for (int w = 0; w < " << on << "; ++w)\n"
     << "          o[w] += p * vs[(jc + u) * " << dvp << " + " << column("w")
     << "];\n"
     << "      }\n"
     << "      m = top;\n"
     << "    }\n"
     << "  }\n"
     << "  if (active)\n"
     << "#pragma unroll\n"
     << "    for (int w = 0; w < " << on << "; ++w)\n"
     << (dvp == dv ? "" : "      if (" + column("w") + " < " + lit(dv) + ")\n")
     << "        snug_store(y + yb + (int64_t)i * "
     << lit(S::rowStride(shape.yStrides)) << " + (int64_t)" << column("w")
     << " * " << lit(S::columnStride(shape.yStrides)) << ", "
     // Under zero_filled a row whose keys were all filled with -inf sums
     // no weight: 0, as Where(m, 0, NaN) gave.
     << (spec.zeroFilled ? "l > (" + acc + ")0 ? o[w] / l : (" + acc + ")0"
                         : std::string("o[w] / l"))
     << ");\n";
  kernel.block = {uint32_t(threads), 1, 1};
  kernel.grid = {uint32_t((sq + rows - 1) / rows), uint32_t(shape.batch), 1};
  kernel.body = os.str();
}

llvm::Error emitAttention(EmitContext &context) {
  AttentionKernelSpec spec;
  AttentionShape &shape = spec.shape;
  shape = getAttentionShape(context.node);
  if (!shape.isValid())
    return context.unsupported(shape.error);
  if (shape.d > kMaxHeadDim || shape.dv > kMaxHeadDim)
    return context.unsupported("head dims over " + llvm::Twine(kMaxHeadDim));
  if (shape.batch > 65535)
    return context.unsupported("more than 65535 batch items");
  const TensorRef &y = context.out();
  if (!y.numElements)
    return llvm::Error::success();
  std::string maskKind = context.stringAttr("mask", "none");
  spec.kind = getAttentionMaskKind(maskKind);
  if (!spec.kind.valid)
    return context.unsupported("mask kind '" + maskKind + "'");
  ir::DType dtype = context.in(0).dtype;
  spec.acc = cudaComputeTypeName(dtype);
  spec.scale = context.floatAttr("scale", 1.0f);
  spec.fill = context.floatAttr("fill", 0.0f);
  spec.fillIf = context.intAttr("fill_if", 1) != 0;
  spec.causal = context.intAttr("causal", 0);
  spec.zeroFilled = context.intAttr("zero_filled", 0) != 0;
  const AttentionMaskKind &kind = spec.kind;

  Kernel kernel;
  kernel.tag = "attention";
  kernel.addTensor("q", context.in(0), true);
  kernel.addTensor("k", context.in(1), true);
  kernel.addTensor("v", context.in(2), true);
  if (kind.hasMaskOperand())
    kernel.addTensor("mask", context.in(3), true);
  // Operand 4: an additive mask ("bias") or a bool one ("mask2").
  if (kind.hasSecondMask())
    kernel.addTensor(kind.bias ? "bias" : "mask2", context.in(4), true);
  kernel.addTensor("y", y, false);
  bool sixteenBit = (dtype == ir::DType::F16 || dtype == ir::DType::BF16) &&
                    context.in(1).dtype == dtype &&
                    context.in(2).dtype == dtype;
  if (sixteenBit)
    emitAttentionMmaKernel(spec, cudaTypeName(dtype), kernel);
  else
    emitScalarKernel(spec, kernel);
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

/// snug.rotary: one thread an element, its rotated partner read from the
/// other half of the row, cos and sin at their broadcast offsets; each
/// product and the sum rounded to x's type (the unfused Mul, Mul, Add).
llvm::Error emitRotary(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  if (x.rank() == 0 || x.dims.back() % 2)
    return context.unsupported("x's last dim must be even");
  std::vector<std::vector<int64_t>> strides(2);
  if (!codegen::broadcastStrides(context.in(1), x.dims, strides[0]) ||
      !codegen::broadcastStrides(context.in(2), x.dims, strides[1]))
    return context.unsupported("cos and sin do not broadcast to x");
  if (!y.numElements)
    return llvm::Error::success();
  std::vector<int64_t> dims = x.dims;
  int64_t d = x.dims.back();
  const char *index =
      codegen::indexTypeFor(context, x.numElements, x.numElements);
  std::string acc = cudaComputeTypeName(x.dtype);
  auto round = [&](const std::string &value) {
    return roundTripExpr(x.dtype, value);
  };
  std::string body = codegen::gridStrideLoop(index, x.numElements);
  body += codegen::emitOffsets(dims, strides, {"co", "so"}, index, "i");
  body += "    const " + std::string(index) + " k = i % " + lit(d) + ";\n";
  body += "    const " + acc + " xr = k < " + lit(d / 2) + " ? -(" + acc +
          ")snug_load(x + i + " + lit(d / 2) + ") : (" + acc +
          ")snug_load(x + i - " + lit(d / 2) + ");\n";
  body += "    const " + acc + " a = " +
          round("(" + acc + ")snug_load(x + i) * (" + acc +
                ")snug_load(cosine + co)") +
          ";\n";
  body += "    const " + acc +
          " b = " + round("xr * (" + acc + ")snug_load(sine + so)") + ";\n";
  body += "    snug_store(y + i, a + b);\n  }\n";
  Kernel kernel;
  kernel.tag = "rotary";
  kernel.addTensor("x", x, true);
  kernel.addTensor("cosine", context.in(1), true);
  kernel.addTensor("sine", context.in(2), true);
  kernel.addTensor("y", y, false);
  kernel.body = body;
  codegen::launchGridStride(context, std::move(kernel), x.numElements);
  return llvm::Error::success();
}

const EmitterEntry attentionEmitters[] = {
    {ir::OpCode::SnugAttention, emitAttention},
    {ir::OpCode::SnugRotary, emitRotary},
};

} // namespace

llvm::ArrayRef<EmitterEntry> getAttentionEmitters() {
  return attentionEmitters;
}

} // namespace cuda
} // namespace snug
