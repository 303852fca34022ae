//===- MmaTile.h - The tensor-core tile the GEMM kernels share --*- C++ -*-===//
//
// The f16/bf16 tensor-core code of the implicit-GEMM convolution
// (ConvEmitters.cpp) and of the tiled MatMul/Gemm kernel (GemmEmitters.cpp):
// a kTileM x kTileN block tile of the product, kTileK deep per step, on
// kThreads threads, its 8 warps as kWarpsM x kWarpsN, each computing a
// kWarpTileM x kWarpTileN warp tile as m16n8k16 products with f32
// accumulators through the prelude's snug_mma_m16n8k16 (CudaPrelude.cpp).
// Both operands are staged in shared memory as 32-bit words holding two
// 16-bit elements at consecutive k (the lower k in the low half): As
// [row][k / 2] (A row-major) and Bs [column][k / 2] (B column-major), the
// layout the fragments read, each row padded to kMmaRowWords words so that
// a warp's fragment reads hit 32 different banks.
//
// The kernels differ only in where an element of A or B comes from, the
// bounds and what each result is stored through; the caller emits those
// (the word lambdas, the block's origin, the store statements) and these
// pieces, in this order: mmaTiles() at the kernel's start, mmaLoads(),
// mmaDepthLoop(), mmaStoreLoop(). The pieces are written two spaces in,
// as at a kernel's top level; indentBy() moves them into a loop.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_MMATILE_H
#define SNUG_COMPILER_CUDA_MMATILE_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace snug {
namespace cuda {

/// The block tile: kTileM rows by kTileN columns, kTileK deep per step,
/// kThreads threads (also the scalar implicit-GEMM convolution's).
constexpr int64_t kTileM = 64, kTileN = 64, kTileK = 16, kThreads = 256;
/// The warps and their MMA tiles; shared rows of kMmaRowWords words
/// (kTileK / 2 used).
constexpr int64_t kWarpsM = 2, kWarpsN = 4, kMmaM = 16, kMmaN = 8;
constexpr int64_t kMmaRowWords = kTileK / 2 + 4;
constexpr int64_t kWarpTileM = kTileM / kWarpsM, kWarpTileN = kTileN / kWarpsN;
static_assert(kWarpsM * kWarpsN * 32 == kThreads, "one warp per warp tile");
static_assert(kTileK == 16, "one m16n8k16 product deep per k step");
static_assert(kWarpTileM % kMmaM == 0 && kWarpTileN % kMmaN == 0,
              "warp tiles are whole MMA tiles");
static_assert(kTileM * kTileK / 2 % kThreads == 0 &&
                  kTileN * kTileK / 2 % kThreads == 0,
              "every thread loads the same number of words");

/// The expression of the accumulator mmaStoreLoop() stores (a float).
constexpr const char kMmaAccumulator[] = "acc[i][j][2 * h + e]";

/// The shared tiles As and Bs and this thread's load roles (MmaLoad).
std::string mmaTiles();

/// How the threads load an operand's tile (64 rows of A, or columns of B,
/// by 8 words of k), chosen so that neighbouring threads read neighbouring
/// elements of global memory:
///  - AlongK, for an operand whose rows run along k in memory (row-major
///    A, the conv's weights, Gemm's transposed B): this thread loads rows
///    ma + 32 * j at word ka; the caller's `word(row, k)` gives the bits of
///    element (row, k), row counted from the tile's first row `origin`;
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
/// thread's words of the tiles at depth k0, each two elements at
/// consecutive k (the lower in the low half).
std::string mmaLoads(llvm::StringRef index, const MmaOperand &a,
                     const MmaOperand &b);

/// The depth loop over `depth` (k0 from 0, kTileK a step): words to shared
/// memory (each operand by its load role), the next step's loads, this
/// warp's fragments and products into the f32 accumulators acc[][][].
/// `element` is snug_half or snug_bfloat.
std::string mmaDepthLoop(llvm::StringRef index, int64_t depth,
                         llvm::StringRef element, MmaLoad a, MmaLoad b);

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
