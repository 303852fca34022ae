//===- MmaTile.cpp - The tensor-core tile the GEMM kernels share ---------===//
//
// The pieces MmaTile.h describes. The fragment layout is the PTX ISA's
// "Matrix Fragments for mma.m16n8k16 with floating point type", as the
// prelude's snug_mma_m16n8k16 documents it: with lane = 4 * gq + tq, A's
// words are rows gq and gq + 8 at words tq and tq + 4, B's column gq at
// words tq and tq + 4. "Matrix Fragments for mma.m16n8k8" for .tf32 puts
// its one-element words at the same places (snug_mma_m16n8k8_tf32), so the
// element width changes only the loads (one element a word, rounded by
// snug_tf32), the step (kMmaWords k) and the product's name.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/MmaTile.h"
#include "compiler/cuda/KernelEmitter.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

namespace snug {
namespace cuda {

/// Words of each operand's tile a thread loads per step (either role).
constexpr int64_t kWords = kTileM * kMmaWords / kThreads;
static_assert(kTileM == kTileN, "both roles fit both tiles");
/// Threads per row of a tile loaded along k (one word each), and per word
/// column of one loaded along its rows.
constexpr int64_t kThreadsPerRowA = kMmaWords, kThreadsPerColumnB = kTileN;

llvm::Optional<MmaElement> MmaElement::select(ir::DType a, ir::DType b,
                                              llvm::StringRef math) {
  if (a != b)
    return llvm::None;
  if (a == ir::DType::F16 || a == ir::DType::BF16)
    return MmaElement{cudaTypeName(a)};
  if (a == ir::DType::F32 && math == "tf32")
    return MmaElement{""};
  return llvm::None;
}

std::string MmaElement::bits(llvm::StringRef value) const {
  return isTf32() ? "snug_tf32(" + value.str() + ")"
                  : "(uint32_t)" + value.str() + ".bits";
}

/// The product of one MMA tile in the depth loop.
static std::string product(const MmaElement &element) {
  return element.isTf32() ? std::string("snug_mma_m16n8k8_tf32")
                          : "snug_mma_m16n8k16<" + element.pair + ">";
}

std::string mmaTiles(const MmaElement &element) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // Rows of kMmaRowWords words (a multiple of 8 plus 4): the fragment reads
  // of a warp (rows g = 0..7, words t = 0..3) then hit 32 different banks.
  os << "  __shared__ __align__(16) uint32_t As[" << kTileM << "]["
     << kMmaRowWords << "];\n"
     << "  __shared__ __align__(16) uint32_t Bs[" << kTileN << "]["
     << kMmaRowWords << "];\n"
     << "  const int tid = threadIdx.x;\n"
     << "  // Along k, this thread loads rows ma + "
     << kThreads / kThreadsPerRowA << " * j at words ka ("
     << (element.isTf32() ? "k = ka" : "k = 2 ka, 2 ka + 1") << ");\n"
     << "  // along the rows, words kb + " << kThreads / kThreadsPerColumnB
     << " * j of row pb.\n"
     << "  const int ka = tid % " << kThreadsPerRowA << ", ma = tid / "
     << kThreadsPerRowA << ";\n"
     << "  const int pb = tid % " << kThreadsPerColumnB << ", kb = tid / "
     << kThreadsPerColumnB << ";\n";
  return os.str();
}

/// The loop filling registers `regs` with this thread's words of
/// `operand`'s tile (MmaLoad): word w at depth k0 + perWord * w.
static std::string loadWords(llvm::StringRef index, const MmaElement &element,
                             const MmaOperand &operand, llvm::StringRef regs) {
  // The word from the caller's lambda applied to (args, k): one element,
  // or two at k and k + 1.
  auto word = [&](llvm::StringRef args) {
    std::string at = operand.word + "(" + args.str();
    return element.isTf32() ? at + "k)" : at + "k) | " + at + "k + 1) << 16";
  };
  const char *twice = element.isTf32() ? "" : "2 * ";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "    for (int j = 0; j < " << kWords << "; ++j) {\n";
  if (operand.load == MmaLoad::AlongK)
    os << "      const " << index << " m = " << operand.origin << " + ma + "
       << kThreads / kThreadsPerRowA << " * j, k = k0 + " << twice << "ka;\n"
       << "      " << regs << "[j] = " << word("m, ") << ";\n";
  else
    os << "      const " << index << " k = k0 + " << twice << "(kb + "
       << kThreads / kThreadsPerColumnB << " * j);\n"
       << "      " << regs << "[j] = " << word("") << ";\n";
  os << "    }\n";
  return os.str();
}

std::string mmaLoads(llvm::StringRef index, const MmaElement &element,
                     const MmaOperand &a, const MmaOperand &b) {
  return "  uint32_t a[" + std::to_string(kWords) + "], b[" +
         std::to_string(kWords) + "];\n  auto load = [&](" + index.str() +
         " k0) {\n" + loadWords(index, element, a, "a") +
         loadWords(index, element, b, "b") + "  };\n";
}

/// The statements storing registers `regs` into shared tile `tile` (MmaLoad).
static std::string stageWords(MmaLoad load, llvm::StringRef tile,
                              llvm::StringRef regs) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "    for (int j = 0; j < " << kWords << "; ++j)\n";
  if (load == MmaLoad::AlongK)
    os << "      " << tile << "[ma + " << kThreads / kThreadsPerRowA
       << " * j][ka] = " << regs << "[j];\n";
  else
    os << "      " << tile << "[pb][kb + " << kThreads / kThreadsPerColumnB
       << " * j] = " << regs << "[j];\n";
  return os.str();
}

std::string mmaDepthLoop(llvm::StringRef index, int64_t depth,
                         const MmaElement &element, MmaLoad a, MmaLoad b) {
  int64_t stepK = element.stepK();
  int64_t tilesM = kWarpTileM / kMmaM, tilesN = kWarpTileN / kMmaN;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "  float acc[" << tilesM << "][" << tilesN << "][4];\n"
     << "  for (int i = 0; i < " << tilesM << "; ++i)\n"
     << "    for (int j = 0; j < " << tilesN << "; ++j)\n"
     << "      for (int r = 0; r < 4; ++r)\n"
     << "        acc[i][j][r] = 0.0f;\n"
     << "  // Warp (wm, wn) computes rows wm * " << kWarpTileM << " + [0, "
     << kWarpTileM << ") and columns wn * " << kWarpTileN << " + [0, "
     << kWarpTileN << "); lane = 4 * gq + tq.\n"
     << "  const int warp = tid / 32, gq = (tid % 32) / 4, tq = tid % 4;\n"
     << "  const int wm = warp / " << kWarpsN << ", wn = warp % " << kWarpsN
     << ";\n"
     << "  load(0);\n"
     << "  for (" << index << " k0 = 0; k0 < " << cudaIntLiteral(depth)
     << "; k0 += " << stepK << ") {\n"
     << stageWords(a, "As", "a") << stageWords(b, "Bs", "b")
     << "    __syncthreads();\n"
     << "    if (k0 + " << stepK << " < " << cudaIntLiteral(depth) << ")\n"
     << "      load(k0 + " << stepK << ");\n"
     << "    uint32_t fa[" << tilesM << "][4], fb[" << tilesN << "][2];\n"
     << "    for (int i = 0; i < " << tilesM << "; ++i) {\n"
     << "      const int r = wm * " << kWarpTileM << " + i * " << kMmaM
     << " + gq;\n"
     << "      fa[i][0] = As[r][tq], fa[i][1] = As[r + 8][tq];\n"
     << "      fa[i][2] = As[r][tq + 4], fa[i][3] = As[r + 8][tq + 4];\n"
     << "    }\n"
     << "    for (int j = 0; j < " << tilesN << "; ++j) {\n"
     << "      const int col = wn * " << kWarpTileN << " + j * " << kMmaN
     << " + gq;\n"
     << "      fb[j][0] = Bs[col][tq], fb[j][1] = Bs[col][tq + 4];\n"
     << "    }\n"
     << "    for (int i = 0; i < " << tilesM << "; ++i)\n"
     << "      for (int j = 0; j < " << tilesN << "; ++j)\n"
     << "        " << product(element) << "(acc[i][j], fa[i], fb[j]);\n"
     << "    __syncthreads();\n"
     << "  }\n";
  return os.str();
}

std::string mmaStoreLoop(const MmaStore &where) {
  int64_t tilesM = kWarpTileM / kMmaM, tilesN = kWarpTileN / kMmaN;
  const std::string &idx = where.index;
  std::string text;
  llvm::raw_string_ostream os(text);
  // Every loop unrolled: acc[i][j][2 * h + e] indexed by a loop variable
  // otherwise puts the accumulators in local memory (a 64 B frame in every
  // f16 conv and matmul of the zoo, --kernel-report).
  os << "#pragma unroll\n"
     << "  for (int i = 0; i < " << tilesM << "; ++i)\n"
     << "#pragma unroll\n"
     << "    for (int h = 0; h < 2; ++h) {\n"
     << "      const " << idx << " " << where.row << " = " << where.rowOrigin
     << " + wm * " << kWarpTileM << " + i * " << kMmaM << " + gq + 8 * h;\n"
     << "      if (" << where.row << " >= " << cudaIntLiteral(where.rows)
     << ")\n"
     << "        continue;\n"
     << where.rowSetup << "#pragma unroll\n"
     << "      for (int j = 0; j < " << tilesN << "; ++j)\n"
     << "#pragma unroll\n"
     << "        for (int e = 0; e < 2; ++e) {\n"
     << "          const " << idx << " " << where.column << " = "
     << where.colOrigin << " + wn * " << kWarpTileN << " + j * " << kMmaN
     << " + 2 * tq + e;\n"
     << "          if (" << where.column << " < "
     << cudaIntLiteral(where.columns) << ")\n"
     << where.store << "        }\n"
     << "    }\n";
  return os.str();
}

std::string indentBy(llvm::StringRef text, llvm::StringRef pad) {
  llvm::SmallVector<llvm::StringRef, 64> lines;
  text.split(lines, '\n');
  std::string result;
  for (size_t l = 0; l < lines.size(); ++l) {
    if (l + 1 == lines.size() && lines[l].empty())
      break; // the text's final newline
    if (!lines[l].empty())
      result += pad.str();
    result += lines[l].str() + "\n";
  }
  return result;
}

} // namespace cuda
} // namespace snug
