//===- MmaTile.h - The tensor-core tile the GEMM kernels share --*- C++ -*-===//
//
// The tensor-core code of the implicit-GEMM convolution (ConvEmitters.cpp)
// and of the tiled MatMul/Gemm kernel (GemmEmitters.cpp): a kTileM x kTileN
// block tile of the product on kThreads threads, its 8 warps as kWarpsM x
// kWarpsN, each computing a kWarpTileM x kWarpTileN warp tile of MMA
// products with f32 accumulators. Both operands are staged in shared memory
// as 32-bit words, kMmaWords of them per row per step: As [row][word] (A
// row-major) and Bs [column][word] (B column-major), the layout the
// fragments read, each row padded to kMmaRowWords words so that a warp's
// fragment reads hit 32 different banks.
//
// What a word holds is the element width (MmaElement): two f16 or bf16
// elements at consecutive k (the lower k in the low half), a step kTileK
// deep, m16n8k16 products through the prelude's snug_mma_m16n8k16
// (CudaPrelude.cpp); or, for f32 operands under --precision=tf32, one f32
// element rounded to tf32 on load (the prelude's snug_tf32, cvt.rna), a
// step kTileK / 2 deep, m16n8k8 products through snug_mma_m16n8k8_tf32. The
// PTX ISA's m16n8k8 .tf32 fragments put their words where m16n8k16's put
// theirs, so the shared tiles, the fragment reads and the stores are the
// same code for both.
//
// The kernels differ only in where an element of A or B comes from, the
// bounds and what each result is stored through; the caller emits those
// (the word lambdas, through MmaElement::bits(), the block's origin, the
// store statements) and these pieces, in this order: mmaTiles() at the
// kernel's start, mmaLoads(), mmaDepthLoop(), mmaStoreLoop(). The pieces
// are written two spaces in, as at a kernel's top level; indentBy() moves
// them into a loop.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_MMATILE_H
#define SNUG_COMPILER_CUDA_MMATILE_H

#include "ir/DType.h"

#include "llvm/ADT/Optional.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace snug {
namespace cuda {

/// The block tile: kTileM rows by kTileN columns, kTileK deep per step of
/// 16-bit elements, kThreads threads (also the scalar implicit-GEMM
/// convolution's).
constexpr int64_t kTileM = 64, kTileN = 64, kTileK = 16, kThreads = 256;
/// The warps and their MMA tiles; shared rows of kMmaRowWords words
/// (kMmaWords used).
constexpr int64_t kWarpsM = 2, kWarpsN = 4, kMmaM = 16, kMmaN = 8;
constexpr int64_t kMmaWords = kTileK / 2, kMmaRowWords = kMmaWords + 4;
constexpr int64_t kWarpTileM = kTileM / kWarpsM, kWarpTileN = kTileN / kWarpsN;
static_assert(kWarpsM * kWarpsN * 32 == kThreads, "one warp per warp tile");
static_assert(kTileK == 16, "one m16n8k16 product deep per k step");
static_assert(kWarpTileM % kMmaM == 0 && kWarpTileN % kMmaN == 0,
              "warp tiles are whole MMA tiles");
static_assert(kTileM * kMmaWords % kThreads == 0 &&
                  kTileN * kMmaWords % kThreads == 0,
              "every thread loads the same number of words");

/// The expression of the accumulator mmaStoreLoop() stores (a float).
constexpr const char kMmaAccumulator[] = "acc[i][j][2 * h + e]";

/// What the tile's words hold (see the file comment): two 16-bit elements
/// of CUDA type `pair` (snug_half or snug_bfloat), or, with `pair` empty,
/// one f32 element rounded to tf32.
struct MmaElement {
  std::string pair;

  /// The element for operands A and B of types `a` and `b` under the
  /// node's `math` attribute: f16 or bf16 (both the same), or f32 (both)
  /// with math "tf32". None: the product is not for the tensor cores.
  static llvm::Optional<MmaElement> select(ir::DType a, ir::DType b,
                                           llvm::StringRef math);
  bool isTf32() const { return pair.empty(); }
  /// Elements per word, and the depth one step (one MMA deep) covers.
  int64_t perWord() const { return isTf32() ? 1 : 2; }
  int64_t stepK() const { return kMmaWords * perWord(); }
  /// The bits the tensor cores take for the operand element `value`
  /// (an expression of the operand's type): a 16-bit element's raw bits,
  /// the low half of the word; an f32's tf32 rounding.
  std::string bits(llvm::StringRef value) const;
};

/// The shared tiles As and Bs and this thread's load roles (MmaLoad).
std::string mmaTiles(const MmaElement &element);

/// How the threads load an operand's tile (64 rows of A, or columns of B,
/// by 8 words of k), chosen so that neighbouring threads read neighbouring
/// elements of global memory:
///  - AlongK, for an operand whose rows run along k in memory (row-major
///    A, the conv's weights, Gemm's transposed B): this thread loads rows
///    ma + 32 * j at word ka; the caller's `word(row, k)` gives the bits
///    (MmaElement::bits) of element (row, k), row counted from the tile's
///    first row `origin`;
///  - AlongRows, for one whose k steps are rows of memory (row-major B, the
///    conv's patches, Gemm's transposed A): this thread loads words kb +
///    4 * j of row pb; `word(k)` gives the bits of that row's element at
///    depth k (the caller fixes the row, origin + pb).
/// Either gives 0 outside the operand (past M, N or K, or in the padding).
enum class MmaLoad { AlongK, AlongRows };
struct MmaOperand {
  MmaLoad load;
  std::string word;   ///< the caller's lambda
  std::string origin; ///< the tile's first row (AlongK only)
};

/// The registers a[] and b[] and `load(k0)`, which fills them with this
/// thread's words of the tiles at depth k0: two elements at consecutive k
/// (the lower in the low half), or one tf32.
std::string mmaLoads(llvm::StringRef index, const MmaElement &element,
                     const MmaOperand &a, const MmaOperand &b);

/// The depth loop over `depth` (k0 from 0, element.stepK() a step): words
/// to shared memory (each operand by its load role), the next step's loads,
/// this warp's fragments and products into the f32 accumulators acc[][][].
std::string mmaDepthLoop(llvm::StringRef index, int64_t depth,
                         const MmaElement &element, MmaLoad a, MmaLoad b);

/// Where mmaStoreLoop() stores this thread's accumulators: accumulator r of
/// MMA tile (i, j) is row gq + 8 * (r / 2), column 2 * tq + r % 2 of it.
struct MmaStore {
  std::string index;             ///< the index type
  std::string row, rowOrigin;    ///< the row's variable, the tile's first row
  int64_t rows = 0;              ///< rows below this are stored
  std::string column, colOrigin; ///< likewise for the columns
  int64_t columns = 0;
  std::string rowSetup; ///< statements per stored row (6 spaces in)
  std::string store;    ///< statements storing kMmaAccumulator (12 in)
};
std::string mmaStoreLoop(const MmaStore &where);

/// `text` with `pad` before each of its lines.
std::string indentBy(llvm::StringRef text, llvm::StringRef pad);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_MMATILE_H
