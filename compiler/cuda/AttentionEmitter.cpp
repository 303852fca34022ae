//===- AttentionEmitter.cpp - snug.attention as one flash-style kernel ----===//
//
// softmax(scale * Q Kᵀ (+ mask)) V (core/Ops.def and core/AttentionShape.h:
// the mask kinds, zero_filled, the sizes) in one launch that never stores
// the scores, in
// the manner of FlashAttention (Dao et al., 2022, algorithm 1) without its
// tensor cores: a block of kRows threads owns kRows query rows of one batch
// item, one row a thread, its q row and its output accumulator in
// registers; K and V pass through shared memory a tile of `tile` key rows
// at a time (read through their strides, so a perm the op took in from a
// head-splitting Transpose costs no copy; the threads walk each tile along
// its contiguous axis), and each thread keeps its row's running max m and sum l
// (the online softmax, Milakov and Gimelshein 2018): per tile, the new max
// rescales the accumulator and the sum by exp(m_old - m_new) before the
// tile's exp(s - m_new) weights add their V rows (under zero_filled, a
// filled key's weight adds to l only). The output is acc / l.
// A row every score of which is -inf (fully masked) gives 0 / 0 = NaN, as
// the unfused Softmax does.
//
// Arithmetic is in the compute type (float for f32, f16 and bf16 storage,
// double for f64); loads widen through snug_load and the one store rounds
// through snug_store, so f16/bf16 attentions (after lower-precision) keep
// fp32 accumulation. The scores differ from the unfused graph's by the
// order of the dot product's additions and the rounding of exp: within
// fp32 rounding, not bitwise (tests/lit/bundle/attention.test).
//
// Shared memory: tile x (D + Dv) compute-type elements, at most 32 KiB
// (static, under the 48 KiB rule of KernelEmitter.h); every thread reaches
// both barriers of each tile (threads past Sq load and wait, but do not
// compute). Sizes D, Dv over kMaxHeadDim are refused (the registers would
// spill far more than they save).
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/ElementwiseExpr.h"
#include "compiler/cuda/KernelEmitter.h"
#include "ir/ShapeFunctions.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace snug {
namespace cuda {

namespace {

/// Query rows (threads) per block.
constexpr int64_t kRows = 64;
/// The largest head dim kept in registers.
constexpr int64_t kMaxHeadDim = 256;
/// Shared memory for one K tile and one V tile.
constexpr int64_t kTileBytes = 32 << 10;
constexpr int64_t kMaxTile = 32;
static_assert(kMaxTile <= 32, "zero_filled keeps a tile's fills in 32 bits");

std::string lit(int64_t value) { return cudaIntLiteral(value); }

/// Where batch item `b` starts in an operand with these strides (in
/// emitted code; AttentionShape::batchOffset unrolled).
std::string batchOffset(const AttentionShape &shape,
                        const std::vector<int64_t> &strides) {
  std::string offset = "(int64_t)0";
  std::string rest = "(int64_t)b";
  for (size_t d = shape.batchDims.size(); d-- > 0;) {
    if (strides[d] && shape.batchDims[d] != 1)
      offset += " + (" + rest + " % " + lit(shape.batchDims[d]) + ") * " +
                lit(strides[d]);
    rest = "(" + rest + " / " + lit(shape.batchDims[d]) + ")";
  }
  return offset;
}

/// The loop filling a shared tile `name`[jj * width + c] (jj < tile key
/// rows, c < width) from `pointer` at key row stride `rowStride` and
/// column stride `columnStride`, the threads walking along whichever of
/// the two is contiguous in memory.
std::string tileLoad(llvm::StringRef name, llvm::StringRef pointer,
                     int64_t tile, int64_t width, int64_t rowStride,
                     int64_t columnStride, int64_t skv, llvm::StringRef acc,
                     int64_t threads) {
  bool alongRows = rowStride == 1 && columnStride != 1;
  std::string split =
      alongRows ? "const int c = x / " + lit(tile) + ", jj = x % " + lit(tile)
                : "const int jj = x / " + lit(width) + ", c = x % " +
                      lit(width);
  return "    for (int x = threadIdx.x; x < " + lit(tile * width) +
         "; x += " + lit(threads) + ") {\n      " + split + ";\n      " +
         name.str() + "[jj * " + lit(width) + " + c] = j0 + jj < " + lit(skv) +
         " ? (" + acc.str() + ")snug_load(" + pointer.str() +
         " + (int64_t)(j0 + jj) * " + lit(rowStride) + " + (int64_t)c * " +
         lit(columnStride) + ") : (" + acc.str() + ")0;\n    }\n";
}

llvm::Error emitAttention(EmitContext &context) {
  AttentionShape shape = getAttentionShape(context.node);
  if (!shape.isValid())
    return context.unsupported(shape.error);
  if (shape.d > kMaxHeadDim || shape.dv > kMaxHeadDim)
    return context.unsupported("head dims over " + llvm::Twine(kMaxHeadDim));
  if (shape.batch > 65535)
    return context.unsupported("more than 65535 batch items");
  const TensorRef &y = context.out();
  if (!y.numElements)
    return llvm::Error::success();
  const std::string acc = cudaComputeTypeName(context.in(0).dtype);
  const int64_t sq = shape.sq, skv = shape.skv, d = shape.d, dv = shape.dv;
  int64_t accBytes = acc == "double" ? 8 : 4;
  int64_t tile = std::max<int64_t>(
      1, std::min<int64_t>(kMaxTile, kTileBytes / (accBytes * (d + dv))));
  std::string maskKind = context.stringAttr("mask", "none");
  AttentionMaskKind kind = getAttentionMaskKind(maskKind);
  if (!kind.valid)
    return context.unsupported("mask kind '" + maskKind + "'");
  float scale = context.floatAttr("scale", 1.0f);
  std::string inf = "(" + acc + ")snug_inf()";
  std::string exp = acc == "float" ? "expf" : "exp";
  using S = AttentionShape;

  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  // Sq " << sq << ", Skv " << skv << ", D " << d << ", Dv " << dv
     << "; " << kRows << " query rows a block, key tiles of " << tile << "\n"
     << "  __shared__ " << acc << " ks[" << tile * d << "];\n"
     << "  __shared__ " << acc << " vs[" << tile * dv << "];\n"
     << "  const int b = blockIdx.y;\n"
     << "  const int i = blockIdx.x * " << kRows << " + threadIdx.x;\n"
     << "  const bool active = i < " << lit(sq) << ";\n"
     << "  // Each operand's batch item, through its strides (its perm).\n"
     << "  const int64_t qb = " << batchOffset(shape, shape.qStrides)
     << ", kb = " << batchOffset(shape, shape.kStrides)
     << ", vb = " << batchOffset(shape, shape.vStrides)
     << ", yb = " << batchOffset(shape, shape.yStrides) << ";\n"
     << "  " << acc << " qr[" << d << "], o[" << dv << "], s[" << tile
     << "];\n"
     << "  for (int t = 0; t < " << d << "; ++t)\n"
     << "    qr[t] = active ? (" << acc << ")snug_load(q + qb + (int64_t)i * "
     << lit(S::rowStride(shape.qStrides)) << " + (int64_t)t * "
     << lit(S::columnStride(shape.qStrides)) << ") : (" << acc << ")0;\n"
     << "  for (int e = 0; e < " << dv << "; ++e)\n"
     << "    o[e] = 0;\n"
     << "  " << acc << " m = -" << inf << ", l = 0;\n";
  if (kind.hasMaskOperand())
    os << "  const int64_t maskRow = " << batchOffset(shape, shape.maskStrides)
       << " + (int64_t)i * " << lit(S::rowStride(shape.maskStrides)) << ";\n";
  // Operand 4: an additive mask ("bias") or a bool one ("mask2").
  const char *second = kind.bias ? "bias" : "mask2";
  if (kind.hasSecondMask())
    os << "  const int64_t secondRow = "
       << batchOffset(shape, shape.biasStrides) << " + (int64_t)i * "
       << lit(S::rowStride(shape.biasStrides)) << ";\n";
  const bool zeroFilled = context.intAttr("zero_filled", 0) != 0;
  // Kᵀ is [D, Skv]: key row jj of the tile is its column j0 + jj.
  os << "  for (int j0 = 0; j0 < " << lit(skv) << "; j0 += " << tile
     << ") {\n"
     << "    __syncthreads(); // the last tile's readers are done\n"
     << tileLoad("ks", "k + kb", tile, d, S::columnStride(shape.kStrides),
                 S::rowStride(shape.kStrides), skv, acc, kRows)
     << tileLoad("vs", "v + vb", tile, dv, S::rowStride(shape.vStrides),
                 S::columnStride(shape.vStrides), skv, acc, kRows)
     << "    __syncthreads();\n"
     << "    if (!active)\n"
     << "      continue;\n"
     << "    const int n = " << lit(skv) << " - j0 < " << tile << " ? "
     << lit(skv) << " - j0 : " << tile << ";\n"
     << "    " << acc << " top = m;\n";
  // zero_filled: bit jj says key j0 + jj was filled, and its weight only
  // normalizes (tiles hold at most 32 keys).
  if (zeroFilled)
    os << "    unsigned filled = 0;\n";
  os
     // Not unrolled: ptxas would unroll both key loops to keep s[] in
     // registers. On bert_small's kernel (D 64, tiles of 32) that took 243
     // registers, and ptxas 1.6 s and 80 MiB, the peak of the whole compile;
     // rolled, s[] is 128 B of L1-cached local memory (two accesses a key
     // beside the 2 x D FMAs), 166 registers, 0.18 s and 36 MiB. Not yet
     // timed on a GPU.
     << "#pragma unroll 1\n"
     << "    for (int jj = 0; jj < n; ++jj) {\n"
     << "      " << acc << " dot = 0;\n"
     << "      for (int t = 0; t < " << d << "; ++t)\n"
     << "        dot += qr[t] * ks[jj * " << lit(d) << " + t];\n";
  if (scale != 1.0f)
    os << "      dot *= (" << acc << ")" << cudaFloatLiteral(double(scale))
       << ";\n";
  std::string maskAt =
      !kind.hasMaskOperand()
          ? ""
          : "maskRow + (int64_t)(j0 + jj) * " +
                lit(S::columnStride(shape.maskStrides));
  std::string fill =
      "(" + acc + ")" + cudaFloatLiteral(double(context.floatAttr("fill", 0.0f)));
  std::string fillIt = zeroFilled
                           ? " {\n        dot = " + fill +
                                 ";\n        filled |= 1u << jj;\n      }\n"
                           : "\n        dot = " + fill + ";\n";
  std::string fillIf = context.intAttr("fill_if", 1) ? "true" : "false";
  std::string secondAt =
      !kind.hasSecondMask()
          ? ""
          : "secondRow + (int64_t)(j0 + jj) * " +
                lit(S::columnStride(shape.biasStrides));
  if (kind.causal)
    os << "      if ((int64_t)(j0 + jj) > (int64_t)i + "
       << lit(context.intAttr("causal", 0)) << ")" << fillIt;
  if (kind.additive)
    os << "      dot += (" << acc << ")snug_load(mask + " << maskAt << ");\n";
  else if (kind.where)
    os << "      if (mask[" << maskAt << "] == " << fillIf << ")" << fillIt;
  if (kind.bias)
    os << "      dot += (" << acc << ")snug_load(bias + " << secondAt
       << ");\n";
  else if (kind.whereAfter)
    os << "      if (mask2[" << secondAt << "] == " << fillIf << ")" << fillIt;
  os << "      s[jj] = dot;\n"
     << "      top = dot > top ? dot : top;\n"
     << "    }\n"
     << "    // Nothing but -inf so far: no weight yet, nothing to rescale.\n"
     << "    const " << acc << " rescale = top == -" << inf << " ? (" << acc
     << ")1 : " << exp << "(m - top);\n"
     << "    l *= rescale;\n"
     << "    for (int e = 0; e < " << dv << "; ++e)\n"
     << "      o[e] *= rescale;\n"
     << "#pragma unroll 1\n"
     << "    for (int jj = 0; jj < n; ++jj) {\n"
     << "      const " << acc << " p = top == -" << inf << " ? (" << acc
     << ")0 : " << exp << "(s[jj] - top);\n"
     << "      l += p;\n";
  if (zeroFilled)
    os << "      if ((filled >> jj) & 1u)\n"
       << "        continue;\n";
  os << "      for (int e = 0; e < " << dv << "; ++e)\n"
     << "        o[e] += p * vs[jj * " << lit(dv) << " + e];\n"
     << "    }\n"
     << "    m = top;\n"
     << "  }\n"
     << "  if (active)\n"
     << "    for (int e = 0; e < " << dv << "; ++e)\n"
     << "      snug_store(y + yb + (int64_t)i * "
     << lit(S::rowStride(shape.yStrides)) << " + (int64_t)e * "
     << lit(S::columnStride(shape.yStrides)) << ", "
     // Under zero_filled a row whose keys were all filled with -inf sums
     // no weight: 0, as Where(m, 0, NaN) gave.
     << (zeroFilled ? "l > (" + acc + ")0 ? o[e] / l : (" + acc + ")0"
                    : std::string("o[e] / l"))
     << ");\n";

  Kernel kernel;
  kernel.tag = "attention";
  kernel.block = {uint32_t(kRows), 1, 1};
  kernel.grid = {uint32_t((sq + kRows - 1) / kRows), uint32_t(shape.batch), 1};
  kernel.addTensor("q", context.in(0), true);
  kernel.addTensor("k", context.in(1), true);
  kernel.addTensor("v", context.in(2), true);
  if (kind.hasMaskOperand())
    kernel.addTensor("mask", context.in(3), true);
  if (kind.hasSecondMask())
    kernel.addTensor(second, context.in(4), true);
  kernel.addTensor("y", y, false);
  kernel.body = os.str();
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
  const char *index = codegen::indexTypeFor(x.numElements, x.numElements);
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
