//===- AttentionMma.cpp - snug.attention on the tensor cores --------------===//
//
// The f16/bf16 kernel of snug.attention in FlashAttention-2's tiling (Dao,
// 2023): a block of kWarps warps owns kWarps x 16 query rows, each warp 16
// of them, whose Q fragments it keeps in registers for the whole kernel;
// K and V pass through shared memory a tile of `keys` key rows at a time;
// each warp computes its 16 x keys scores S = Q Kᵀ and then O += P V with
// mma.sync m16n8k16 (the prelude's snug_mma_m16n8k16, f32 accumulators,
// the fragment layout MmaTile.h and the prelude document), and keeps the
// online softmax's running max and sum of its two rows per lane (rows gq
// and gq + 8) in registers: the row max is the lane's, then the quad's
// (two shuffles); the sum stays a per-lane partial, rescaled with the rest
// and added across the quad at the end. The score accumulators turn into
// the A fragments of P V in place (FlashAttention-2's register reuse): the
// accumulators of n-tiles 2kk and 2kk + 1 are the A fragment of key step
// kk, rounded to the element type (the 16-bit P, as FlashAttention does;
// the sum l adds the unrounded weights).
//
// The shared tiles hold 32-bit words of two elements, the lower index in
// the low half, the layout the fragments read: Ks[key][word of d] (Kᵀ as
// the column-major B of Q Kᵀ) and Vs[column][word of key] (V as the
// column-major B of P V), rows padded by 4 words (a multiple of 8 plus 4)
// so that a warp's fragment reads hit 32 banks. D is padded with zeros to
// a multiple of 16 (the product's depth), Dv to a multiple of 8 (its
// n-tiles): head dims 80 and 96 take 5 and 6 steps of 16. Every index into
// a register array is a constant after unrolling, so nothing goes to local
// memory (tests/lit/cuda/attention-resources.test reads ptxas's report).
//
// Rows past Sq load zeros, compute, read the masks at row Sq - 1 and store
// nothing; keys past Skv score -inf (no weight) and load zeros, so a
// partial tile's products stay finite.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/AttentionKernel.h"

#include "llvm/Support/raw_ostream.h"

#include <cassert>

namespace snug {
namespace cuda {

namespace {

constexpr int64_t kWarps = 4, kWarpRows = 16;
constexpr int64_t kThreads = kWarps * 32, kRows = kWarps * kWarpRows;
/// Words a shared row is padded by (bank-conflict-free fragment reads).
constexpr int64_t kPadWords = 4;
/// The static shared memory rule (KernelEmitter.h).
constexpr int64_t kMaxSharedBytes = 48 << 10;

int64_t roundUp(int64_t value, int64_t to) {
  return (value + to - 1) / to * to;
}

std::string lit(int64_t value) { return cudaIntLiteral(value); }

/// The lambda `name`(x, t): the word of elements t and t + 1 along the
/// axis of stride `along`, at index x along the other (stride `across`),
/// 0 outside [0, xs) x [0, ts).
std::string pairLambda(llvm::StringRef name, llvm::StringRef pointer,
                       int64_t across, int64_t xs, int64_t along,
                       int64_t ts) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "  auto " << name << " = [&](int x, int t) -> uint32_t {\n"
     << "    if (x >= " << lit(xs) << ")\n"
     << "      return 0u;\n"
     << "    const int64_t at = (int64_t)x * " << lit(across)
     << " + (int64_t)t * " << lit(along) << ";\n"
     << "    return (t < " << lit(ts) << " ? (uint32_t)" << pointer
     << "[at].bits : 0u) | (t + 1 < " << lit(ts) << " ? (uint32_t)"
     << pointer << "[at + " << lit(along) << "].bits << 16 : 0u);\n"
     << "  };\n";
  return os.str();
}

/// The loop filling shared words `tile`[x][w] (x < xs, w < ws) with the
/// expression `get` of x and w, the threads walking along w when
/// `alongWords` (the pair axis is contiguous in memory), else along x.
std::string fillTile(llvm::StringRef tile, int64_t xs, int64_t ws,
                     bool alongWords, llvm::StringRef get) {
  std::string split = alongWords ? "const int x = i / " + lit(ws) +
                                       ", w = i % " + lit(ws)
                                 : "const int w = i / " + lit(xs) +
                                       ", x = i % " + lit(xs);
  return "    for (int i = threadIdx.x; i < " + lit(xs * ws) + "; i += " +
         lit(kThreads) + ") {\n      " + split + ";\n      " + tile.str() +
         "[x][w] = " + get.str() + ";\n    }\n";
}

} // namespace

void emitAttentionMmaKernel(const AttentionKernelSpec &spec,
                            llvm::StringRef element, Kernel &kernel) {
  using S = AttentionShape;
  const AttentionShape &shape = spec.shape;
  const int64_t sq = shape.sq, skv = shape.skv, d = shape.d, dv = shape.dv;
  const int64_t dk = roundUp(d, 16), dn = roundUp(dv, 8);
  // Keys a tile: 64 while the score and output accumulators stay small,
  // else 32 (D = Dv = 256: 64 Q words, 128 output and 16 score floats a
  // lane).
  const int64_t keys = dk + dn <= 256 ? 64 : 16;
  const int64_t kWords = dk / 2 + kPadWords, vWords = keys / 2 + kPadWords;
  const int64_t steps = dk / 16, tilesN = keys / 8, tilesO = dn / 8;
  assert((keys * kWords + dn * vWords) * 4 <= kMaxSharedBytes &&
         "the tiles fit the static shared memory");
  (void)kMaxSharedBytes;
  const std::string mma = "snug_mma_m16n8k16<" + element.str() + ">";
  const std::string pack = "snug_pack2<" + element.str() + ">";
  const int64_t kDStride = S::rowStride(shape.kStrides),
                kKeyStride = S::columnStride(shape.kStrides);
  const int64_t vKeyStride = S::rowStride(shape.vStrides),
                vColumnStride = S::columnStride(shape.vStrides);

  std::string body;
  llvm::raw_string_ostream os(body);
  os << "  // Sq " << sq << ", Skv " << skv << ", D " << d << ", Dv " << dv
     << "; " << kRows << " query rows a block (16 a warp), key tiles of "
     << keys << ", on the tensor cores\n"
     << "  __shared__ __align__(16) uint32_t Ks[" << keys << "][" << kWords
     << "];\n"
     << "  __shared__ __align__(16) uint32_t Vs[" << dn << "][" << vWords
     << "];\n"
     << "  const int b = blockIdx.y;\n"
     << "  const int warp = threadIdx.x / 32, gq = (threadIdx.x % 32) / 4, "
        "tq = threadIdx.x % 4;\n"
     << "  // This lane's rows: r0 and r0 + 8; the masks read rows past Sq at "
        "Sq - 1.\n"
     << "  const int r0 = blockIdx.x * " << kRows << " + warp * " << kWarpRows
     << " + gq;\n"
     << "  const int mrow[2] = {r0 < " << lit(sq) << " ? r0 : " << lit(sq - 1)
     << ", r0 + 8 < " << lit(sq) << " ? r0 + 8 : " << lit(sq - 1) << "};\n"
     << "  // Each operand's batch item, through its strides (its perm).\n"
     << "  const int64_t qb = " << attentionBatchOffset(shape, shape.qStrides)
     << ", kb = " << attentionBatchOffset(shape, shape.kStrides)
     << ", vb = " << attentionBatchOffset(shape, shape.vStrides)
     << ", yb = " << attentionBatchOffset(shape, shape.yStrides) << ";\n"
     << "  const " << element << " *qp = q + qb, *kp = k + kb, *vp = v + vb;\n"
     << "  // Words of two elements: Q's row x at d = t, t + 1; Kᵀ's key x at "
        "d = t, t + 1; V's column x at keys t, t + 1.\n"
     << pairLambda("qword", "qp", S::rowStride(shape.qStrides), sq,
                   S::columnStride(shape.qStrides), d)
     << pairLambda("kword", "kp", kKeyStride, skv, kDStride, d)
     << pairLambda("vword", "vp", vColumnStride, dv, vKeyStride, skv)
     << "  // Q's A fragments, " << steps << " steps of 16 along d.\n"
     << "  uint32_t qa[" << steps << "][4];\n"
     << "#pragma unroll\n"
     << "  for (int kk = 0; kk < " << steps << "; ++kk) {\n"
     << "    qa[kk][0] = qword(r0, 16 * kk + 2 * tq);\n"
     << "    qa[kk][1] = qword(r0 + 8, 16 * kk + 2 * tq);\n"
     << "    qa[kk][2] = qword(r0, 16 * kk + 2 * tq + 8);\n"
     << "    qa[kk][3] = qword(r0 + 8, 16 * kk + 2 * tq + 8);\n"
     << "  }\n"
     << "  float oacc[" << tilesO << "][4];\n"
     << "#pragma unroll\n"
     << "  for (int e = 0; e < " << tilesO << "; ++e)\n"
     << "    oacc[e][0] = oacc[e][1] = oacc[e][2] = oacc[e][3] = 0.0f;\n"
     << "  float m[2] = {-snug_inf(), -snug_inf()}, l[2] = {0.0f, 0.0f};\n"
     << "#pragma unroll 1\n"
     << "  for (int j0 = 0; j0 < " << lit(skv) << "; j0 += " << keys
     << ") {\n"
     << "    __syncthreads(); // the last tile's readers are done\n"
     << fillTile("Ks", keys, dk / 2, kDStride == 1 && kKeyStride != 1,
                 "kword(j0 + x, 2 * w)")
     << fillTile("Vs", dn, keys / 2, !(vColumnStride == 1 && vKeyStride != 1),
                 "vword(x, j0 + 2 * w)")
     << "    __syncthreads();\n"
     << "    // S = Q Kᵀ: n-tile j is keys j0 + 8 j + [0, 8).\n"
     << "    float sacc[" << tilesN << "][4];\n"
     << "#pragma unroll\n"
     << "    for (int j = 0; j < " << tilesN << "; ++j) {\n"
     << "      sacc[j][0] = sacc[j][1] = sacc[j][2] = sacc[j][3] = 0.0f;\n"
     << "#pragma unroll\n"
     << "      for (int kk = 0; kk < " << steps << "; ++kk) {\n"
     << "        const uint32_t bk[2] = {Ks[8 * j + gq][8 * kk + tq], Ks[8 * j "
        "+ gq][8 * kk + tq + 4]};\n"
     << "        " << mma << "(sacc[j], qa[kk], bk);\n"
     << "      }\n"
     << "    }\n";
  // zero_filled: bit 4 j + r says score r of n-tile j was filled, and its
  // weight only normalizes.
  if (spec.zeroFilled)
    os << "    unsigned filled = 0;\n";
  os << "    // The scores (accumulator r: row mrow[r / 2], key j0 + 8 j + 2 "
        "tq + r % 2) and their rows' maxima.\n"
     << "    float top[2] = {m[0], m[1]};\n"
     << "#pragma unroll\n"
     << "    for (int j = 0; j < " << tilesN << "; ++j)\n"
     << "#pragma unroll\n"
     << "      for (int r = 0; r < 4; ++r) {\n"
     << "        float dot = sacc[j][r];\n"
     << attentionScoreMask(spec, "dot", "mrow[r / 2]",
                           "j0 + 8 * j + 2 * tq + r % 2",
                           spec.zeroFilled ? "filled |= 1u << (4 * j + r);"
                                           : "",
                           "        ")
     << "        sacc[j][r] = dot;\n"
     << "        top[r / 2] = dot > top[r / 2] ? dot : top[r / 2];\n"
     << "      }\n"
     << "#pragma unroll\n"
     << "    for (int h = 0; h < 2; ++h) {\n"
     << "      // The quad (lanes 4 gq + [0, 4)) holds the row.\n"
     << "      float other = __shfl_xor_sync(0xffffffffu, top[h], 1);\n"
     << "      top[h] = other > top[h] ? other : top[h];\n"
     << "      other = __shfl_xor_sync(0xffffffffu, top[h], 2);\n"
     << "      top[h] = other > top[h] ? other : top[h];\n"
     << "      // Nothing but -inf so far: no weight yet, nothing to "
        "rescale.\n"
     << "      const float rescale = top[h] == -snug_inf() ? 1.0f : expf(m[h] "
        "- top[h]);\n"
     << "      l[h] *= rescale;\n"
     << "#pragma unroll\n"
     << "      for (int e = 0; e < " << tilesO << "; ++e) {\n"
     << "        oacc[e][2 * h] *= rescale;\n"
     << "        oacc[e][2 * h + 1] *= rescale;\n"
     << "      }\n"
     << "      m[h] = top[h];\n"
     << "    }\n"
     << "    // O += P V, 16 keys a step: n-tiles 2 kk and 2 kk + 1 of the "
        "scores are P's A fragment.\n"
     << "#pragma unroll\n"
     << "    for (int kk = 0; kk < " << keys / 16 << "; ++kk) {\n"
     << "      float p[8];\n"
     << "#pragma unroll\n"
     << "      for (int x = 0; x < 8; ++x) {\n"
     << "        const int j = 2 * kk + x / 4, r = x % 4;\n"
     << "        const float weight = m[r / 2] == -snug_inf() ? 0.0f : "
        "expf(sacc[j][r] - m[r / 2]);\n"
     << "        l[r / 2] += weight;\n";
  if (spec.zeroFilled)
    os << "        p[x] = (filled >> (4 * j + r)) & 1u ? 0.0f : weight;\n";
  else
    os << "        p[x] = weight;\n";
  os << "      }\n"
     << "      const uint32_t pa[4] = {" << pack << "(p[0], p[1]), " << pack
     << "(p[2], p[3]), " << pack << "(p[4], p[5]), " << pack
     << "(p[6], p[7])};\n"
     << "#pragma unroll\n"
     << "      for (int e = 0; e < " << tilesO << "; ++e) {\n"
     << "        const uint32_t bv[2] = {Vs[8 * e + gq][8 * kk + tq], Vs[8 * "
        "e + gq][8 * kk + tq + 4]};\n"
     << "        " << mma << "(oacc[e], pa, bv);\n"
     << "      }\n"
     << "    }\n"
     << "  }\n"
     << "  // The rows' sums over the quad, and the result: accumulator r of "
        "n-tile e is row r0 + 8 (r / 2), column 8 e + 2 tq + r % 2.\n"
     << "#pragma unroll\n"
     << "  for (int h = 0; h < 2; ++h) {\n"
     << "    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);\n"
     << "    l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);\n"
     << "    const int row = r0 + 8 * h;\n"
     << "    if (row >= " << lit(sq) << ")\n"
     << "      continue;\n"
     << "#pragma unroll\n"
     << "    for (int e = 0; e < " << tilesO << "; ++e)\n"
     << "#pragma unroll\n"
     << "      for (int c = 0; c < 2; ++c) {\n"
     << "        const int col = 8 * e + 2 * tq + c;\n"
     << "        if (col < " << lit(dv) << ")\n"
     << "          snug_store(y + yb + (int64_t)row * "
     << lit(S::rowStride(shape.yStrides)) << " + (int64_t)col * "
     << lit(S::columnStride(shape.yStrides)) << ", "
     // Under zero_filled a row whose keys were all filled with -inf sums
     // no weight: 0, as Where(m, 0, NaN) gave.
     << (spec.zeroFilled ? "l[h] > 0.0f ? oacc[e][2 * h + c] / l[h] : 0.0f"
                         : "oacc[e][2 * h + c] / l[h]")
     << ");\n"
     << "      }\n"
     << "  }\n";
  kernel.block = {uint32_t(kThreads), 1, 1};
  kernel.grid = {uint32_t((sq + kRows - 1) / kRows), uint32_t(shape.batch),
                 1};
  kernel.body = os.str();
}

} // namespace cuda
} // namespace snug
