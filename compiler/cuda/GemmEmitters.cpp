//===- GemmEmitters.cpp - CUDA emitters: MatMul, Gemm ---------------------===//
//
// f32, f16, bf16 and f64 products go to cuBLAS (one
// cublasGemmStridedBatchedEx per DeviceGemm step, or one cublasLtMatmul for
// a step with an epilogue, below). cuBLAS is column-major
// and snug row-major, so a row-major Y[M,N] = A[M,K] B[K,N] is computed as
// the column-major Y^T[N,M] = B^T[N,K] A^T[K,M]: cuBLAS's A is our B (ld N),
// its B our A (ld K), m = N, n = M, and Y^T has ld N. A transposed operand
// (Gemm's transA/transB) is a transposed cuBLAS operand with the other
// leading dimension.
//
// MatMul broadcasts batch dims (numpy). A right operand without batch dims
// folds the batch into M: one plain GEMM. Otherwise every operand's batch
// offset must be a fixed stride times the batch index (0 for a broadcast
// operand) over the batch dims one call covers: the longest run of trailing
// batch dims where that holds is one strided call, and the dims before it
// become separate calls. When that would take too many calls, or for
// integer dtypes, the tiled kernel below computes the product instead
// (integers as the host does: MatMul's exactly, in wrapping 64-bit sums;
// Gemm's operands converted to float, sums in double, rounded to float).
//
// Gemm's C is broadcast into Y first (a copy when it already is [M,N], a
// small kernel otherwise) and cuBLAS adds the product with Gemm's beta.
//
// A product with an epilogue (the bias Add, the activation and the
// residual Add the fuse pass moved into it, passes/fusion/EpiloguePattern.cpp)
// takes one of two ways:
//  - an epilogue cuBLASLt runs itself (passes/fusion/LtEpilogue.h: bias, ReLU,
//    tanh GELU, bias then ReLU or tanh GELU; MatMul, or Gemm without C) on
//    f32, f16 or bf16, when the product is one strided-batched call, is a
//    Gemm step with that epilogue and its bias (DeviceGemm::epilogue): the
//    runtime calls cublasLtMatmul with CUBLASLT_MATMUL_DESC_EPILOGUE, so
//    the product keeps cuBLAS's kernels and split-K (its workspace is
//    planned as for any cuBLAS GEMM, ScratchRequest.cpp) and the bias and
//    activation cost no launch;
//  - any other (the Erf Gelu of BERT and ViT, the residual Add, SiLU,
//    Clip; Gemm's beta * C; a product whose batch takes several cuBLAS
//    calls) runs as the tiled kernel, whose store applies the epilogue per
//    element (EpilogueStore.h) and Gemm's beta * C in the same
//    expression: one launch where cuBLAS and the elementwise kernel after
//    it were two (three with a broadcast C).
//
// The tiled kernel has two bodies. When A and B are both f16 or both bf16
// it runs on the tensor cores with the implicit-GEMM convolution's tile
// (MmaTile.h): 64x64 tiles of Y, 16 deep, the raw 16-bit elements packed
// two consecutive k to a word in shared memory (zero past M, N and K), 8
// warps of mma.sync.m16n8k16 products with f32 accumulators through the
// prelude's snug_mma_m16n8k16, and the store guarded by M and N. The
// products of two 16-bit elements are exact in f32, so the sums are float
// sums in another order than the host's. f32 products under
// --precision=tf32 (math = "tf32", passes/precision/Tf32Math.cpp) take the same tile
// over MmaTile.h's tf32 element width: one f32 element per word, rounded to
// tf32 on load (snug_tf32), 8 deep per step, mma.sync.m16n8k8 tf32 products
// (snug_mma_m16n8k8_tf32); the products of tf32 values are exact in f32, so
// the result is the host's tf32 result (LinalgKernels.cpp rounds the
// operands alike) in another summation order. That covers the products
// with an epilogue cuBLASLt does not run and those that would take too many
// cuBLAS calls; the others are cuBLAS (or cuBLASLt) steps with
// CUBLAS_COMPUTE_32F_FAST_TF32 (CudaEmitter.cpp). Otherwise (f32, f64, integers) it runs on the CUDA cores:
// 16x16 threads, each a 4x4 register tile of the same 64x64 tile. Either is
// plainer than cuBLAS (no multi-stage copy pipeline, no split-K), so slower on
// large products; EpiloguePattern.cpp keeps the long-K products cuBLAS would
// split on cuBLAS: unfused, unless their epilogue is a cuBLASLt one.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/EpilogueStore.h"
#include "compiler/cuda/KernelEmitter.h"
#include "compiler/cuda/MmaTile.h"

#include "passes/fusion/LtEpilogue.h"
#include "core/BundleFormat.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace snug {
namespace cuda {
namespace {

using ir::DType;

std::string lit(int64_t value) { return cudaIntLiteral(value); }

/// More GEMM steps than this for one MatMul run as one kernel instead.
constexpr int64_t kMaxGemmSteps = 64;
/// The tiled kernel: kTile x kTile threads, each computing kReg x kReg
/// results of a kBlockTile square tile of Y, kTile deep per step.
constexpr int64_t kTile = 16, kReg = 4, kBlockTile = kTile * kReg;

/// cuBLAS's element type for `type`, or 0 when cuBLAS does not take it.
uint8_t cublasDType(DType type) {
  switch (type) {
  case DType::F32:
    return bundle::DTypeF32;
  case DType::F16:
    return bundle::DTypeF16;
  case DType::BF16:
    return bundle::DTypeBF16;
  case DType::F64:
    return bundle::DTypeF64;
  default:
    return 0;
  }
}

bool fitsInt32(int64_t value) { return value <= INT32_MAX; }

/// A batch dim of a product: its extent and each operand's offset step per
/// index, in elements (0 for an operand broadcast along it).
struct BatchAxis {
  int64_t extent, strideA, strideB, strideY;
};

/// A row-major product Y[b] = op(A[b]) op(B[b]) of M x K by K x N matrices
/// over `batch` (outermost first).
struct Product {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  std::vector<BatchAxis> batch;

  int64_t batchCount() const {
    int64_t count = 1;
    for (const BatchAxis &axis : batch)
      count *= axis.extent;
    return count;
  }
};

/// The column-major cuBLAS call for `product`'s batch items whose first one
/// sits `offsetA`, `offsetB`, `offsetY` elements into the operands, with
/// `count` items `stride` apart.
bundle::DeviceGemm gemmStep(const EmitContext &context, const Product &product,
                            int64_t offsetA, int64_t offsetB, int64_t offsetY,
                            int64_t count, const BatchAxis &stride) {
  const TensorRef &a = context.in(0), &b = context.in(1), &y = context.out();
  uint64_t size = ir::getDTypeSize(y.dtype);
  bundle::DeviceGemm gemm;
  gemm.dtype = cublasDType(y.dtype);
  gemm.m = int32_t(product.n), gemm.n = int32_t(product.m);
  gemm.k = int32_t(product.k), gemm.batch = int32_t(count);
  gemm.transA = product.transB, gemm.transB = product.transA;
  gemm.lda = product.transB ? product.k : product.n;
  gemm.ldb = product.transA ? product.m : product.k;
  gemm.ldc = product.n;
  gemm.strideA = stride.strideB, gemm.strideB = stride.strideA;
  gemm.strideC = stride.strideY;
  gemm.a = b.at(uint64_t(offsetB) * size);
  gemm.b = a.at(uint64_t(offsetA) * size);
  gemm.c = y.at(uint64_t(offsetY) * size);
  return gemm;
}

/// The bundle's code for a cuBLASLt epilogue.
uint8_t gemmEpilogueCode(LtEpilogue epilogue) {
  switch (epilogue) {
  case LtEpilogue::None:
    return bundle::GemmEpilogueNone;
  case LtEpilogue::Bias:
    return bundle::GemmEpilogueBias;
  case LtEpilogue::ReluBias:
    return bundle::GemmEpilogueReluBias;
  case LtEpilogue::GeluBias:
    return bundle::GemmEpilogueGeluBias;
  case LtEpilogue::Relu:
    return bundle::GemmEpilogueRelu;
  case LtEpilogue::Gelu:
    return bundle::GemmEpilogueGelu;
  }
  return bundle::GemmEpilogueNone;
}

/// The node's epilogue as cuBLASLt runs it (passes/fusion/LtEpilogue.h): None
/// without an epilogue, or when it is not one cuBLASLt has.
LtEpilogueMatch getLtMatch(const EmitContext &context) {
  if (!context.node.hasEpilogue())
    return LtEpilogueMatch();
  return matchLtEpilogue(context.node);
}

/// Gives `gemm` the node's cuBLASLt epilogue `match` and its bias.
void setLtEpilogue(const EmitContext &context, const LtEpilogueMatch &match,
                   bundle::DeviceGemm &gemm) {
  gemm.epilogue = gemmEpilogueCode(match.kind);
  if (match.biasOperand >= 0)
    gemm.bias = context.in(unsigned(match.biasOperand)).place;
}

/// Splits `product`'s batch into strided cuBLAS calls (see the file
/// comment); empty when more than kMaxGemmSteps would be needed.
std::vector<bundle::DeviceGemm> planGemms(const EmitContext &context,
                                          const Product &product) {
  const std::vector<BatchAxis> &batch = product.batch;
  // The longest run of trailing dims that one stride per operand walks:
  // the next outer dim joins when each operand's step over it is its step
  // over the run times the run's extent.
  size_t first = batch.size();
  BatchAxis run{1, 0, 0, 0};
  if (first)
    run = batch[--first];
  auto joins = [&](const BatchAxis &axis) {
    return axis.strideA == run.strideA * run.extent &&
           axis.strideB == run.strideB * run.extent &&
           axis.strideY == run.strideY * run.extent;
  };
  while (first > 0 && joins(batch[first - 1]))
    run.extent *= batch[--first].extent;
  int64_t calls = 1;
  for (size_t d = 0; d < first; ++d)
    calls *= batch[d].extent;
  if (calls > kMaxGemmSteps)
    return {};
  std::vector<bundle::DeviceGemm> steps;
  for (int64_t call = 0; call < calls; ++call) {
    int64_t offsetA = 0, offsetB = 0, offsetY = 0, rest = call;
    for (size_t d = first; d-- > 0;) {
      int64_t index = rest % batch[d].extent;
      rest /= batch[d].extent;
      offsetA += index * batch[d].strideA;
      offsetB += index * batch[d].strideB;
      offsetY += index * batch[d].strideY;
    }
    steps.push_back(
        gemmStep(context, product, offsetA, offsetB, offsetY, run.extent, run));
  }
  return steps;
}

/// The offset in Gemm's C (rank <= 2, broadcast to [M, N]) of the element
/// for Y's (`row`, `col`).
std::string offsetInC(const TensorRef &c, const std::string &row,
                      const std::string &col) {
  int64_t rows = c.rank() == 2 ? c.dims[0] : 1;
  int64_t cols = c.rank() >= 1 ? c.dims.back() : 1;
  if (rows == 1)
    return cols == 1 ? "0" : col;
  return cols == 1 ? row : row + " * " + lit(cols) + " + " + col;
}

/// The offset of batch item `z` in the operand whose steps over `batch` are
/// `stride` (0 where it is broadcast).
std::string batchOffset(llvm::ArrayRef<BatchAxis> batch,
                        int64_t BatchAxis::*stride) {
  std::string offset;
  int64_t below = 1;
  for (size_t d = batch.size(); d-- > 0;) {
    std::string index = below == 1 ? "z" : "(z / " + lit(below) + ")";
    if (d != 0) // the outermost dim needs no modulo
      index = "(" + index + " % " + lit(batch[d].extent) + ")";
    if (batch[d].*stride)
      offset +=
          (offset.empty() ? "" : " + ") + index + " * " + lit(batch[d].*stride);
    below *= batch[d].extent;
  }
  return offset.empty() ? "0" : offset;
}

/// The tiled kernel's loop over its (batch item, row tile) pairs: blockIdx.y
/// walks them (z the batch item, i0 the tile's first row), blockIdx.x the
/// column tiles (j0); az and bz are the item's A and B.
std::string batchLoopHead(const EmitContext &context, const Product &product,
                          llvm::StringRef idx, int64_t tileRows,
                          int64_t tileCols) {
  int64_t rowTiles = (product.m + tileRows - 1) / tileRows;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "  const " << idx << " j0 = (" << idx << ")blockIdx.x * " << tileCols
     << ";\n"
     << "  for (" << idx << " t = blockIdx.y; t < "
     << lit(product.batchCount() * rowTiles) << "; t += gridDim.y) {\n"
     << "    const " << idx << " z = t / " << lit(rowTiles) << ", i0 = t % "
     << lit(rowTiles) << " * " << tileRows << ";\n"
     << "    const " << cudaTypeName(context.in(0).dtype) << " *az = a + "
     << batchOffset(product.batch, &BatchAxis::strideA) << ";\n"
     << "    const " << cudaTypeName(context.in(1).dtype) << " *bz = b + "
     << batchOffset(product.batch, &BatchAxis::strideB) << ";\n";
  return os.str();
}

/// The offsets of A's element (`row`, `depth`) and of B's (`depth`,
/// `col`) in their batch item, with Gemm's transA and transB.
std::string offsetInA(const Product &product, llvm::StringRef row,
                      llvm::StringRef depth) {
  return product.transA ? (depth + " * " + lit(product.m) + " + " + row).str()
                        : (row + " * " + lit(product.k) + " + " + depth).str();
}
std::string offsetInB(const Product &product, llvm::StringRef depth,
                      llvm::StringRef col) {
  return product.transB ? (col + " * " + lit(product.k) + " + " + depth).str()
                        : (depth + " * " + lit(product.n) + " + " + col).str();
}

/// The SIMT kernel's body (the file comment): 64x64 tiles of Y through
/// shared memory, 16 deep, each of the 16x16 threads accumulating a 4x4
/// register tile (rows ty + 16 rr, columns tx + 16 cc, so that loads and
/// stores of neighbouring threads are neighbours), in `acc`; each result,
/// `result` of sum[rr][cc], goes out through the epilogue, in a loop
/// unrolled so that sum stays in registers.
std::string simtBody(const EmitContext &context, const Product &product,
                     const EpilogueStore &epilogue, llvm::StringRef idx,
                     llvm::StringRef acc, llvm::StringRef operand,
                     llvm::StringRef result) {
  std::string body;
  llvm::raw_string_ostream os(body);
  std::string m = lit(product.m), n = lit(product.n), k = lit(product.k);
  os << "  __shared__ " << acc << " As[" << kTile << "][" << kBlockTile + 1
     << "];\n"
     << "  __shared__ " << acc << " Bs[" << kTile << "][" << kBlockTile + 1
     << "];\n"
     << "  const int tx = threadIdx.x, ty = threadIdx.y;\n"
     << batchLoopHead(context, product, idx, kBlockTile, kBlockTile) << "    "
     << acc << " sum[" << kReg << "][" << kReg << "];\n"
     << "    for (int rr = 0; rr < " << kReg << "; ++rr)\n"
     << "      for (int cc = 0; cc < " << kReg << "; ++cc)\n"
     << "        sum[rr][cc] = 0;\n"
     << "    for (" << idx << " k0 = 0; k0 < " << k << "; k0 += " << kTile
     << ") {\n"
     << "      for (int l = 0; l < " << kReg << "; ++l) {\n"
     << "        const " << idx << " i = i0 + ty + " << kTile
     << " * l, p = k0 + tx;\n"
     << "        As[tx][ty + " << kTile << " * l] = i < " << m << " && p < "
     << k << " ? " << operand << "(az + " << offsetInA(product, "i", "p")
     << ") : 0;\n"
     << "      }\n"
     << "      for (int l = 0; l < " << kReg << "; ++l) {\n"
     << "        const " << idx << " p = k0 + ty, j = j0 + tx + " << kTile
     << " * l;\n"
     << "        Bs[ty][tx + " << kTile << " * l] = p < " << k << " && j < "
     << n << " ? " << operand << "(bz + " << offsetInB(product, "p", "j")
     << ") : 0;\n"
     << "      }\n"
     << "      __syncthreads();\n"
     << "      for (int q = 0; q < " << kTile << "; ++q) {\n"
     << "        " << acc << " ra[" << kReg << "], rb[" << kReg << "];\n"
     << "        for (int rr = 0; rr < " << kReg << "; ++rr)\n"
     << "          ra[rr] = As[q][ty + " << kTile << " * rr];\n"
     << "        for (int cc = 0; cc < " << kReg << "; ++cc)\n"
     << "          rb[cc] = Bs[q][tx + " << kTile << " * cc];\n"
     << "        for (int rr = 0; rr < " << kReg << "; ++rr)\n"
     << "          for (int cc = 0; cc < " << kReg << "; ++cc)\n"
     << "            sum[rr][cc] += ra[rr] * rb[cc];\n"
     << "      }\n"
     << "      __syncthreads();\n"
     << "    }\n"
     // Unrolled: a long epilogue (hf_gpt2's tanh GELU) kept the loop, and
     // sum[rr][cc] under loop variables is a 64 B local frame.
     << "#pragma unroll\n"
     << "    for (int rr = 0; rr < " << kReg << "; ++rr)\n"
     << "#pragma unroll\n"
     << "      for (int cc = 0; cc < " << kReg << "; ++cc) {\n"
     << "        const " << idx << " i = i0 + ty + " << kTile
     << " * rr, j = j0 + tx + " << kTile << " * cc;\n"
     << "        if (i < " << m << " && j < " << n << ")\n"
     << epilogue.store("z * " + lit(product.m * product.n) + " + i * " + n +
                           " + j",
                       result, "          ", idx)
     << "      }\n"
     << "  }\n";
  return os.str();
}

/// The lambda `name` giving the tensor cores' bits of an operand's element
/// (MmaElement::bits) at depth k in row `row` (A's row, B's column; fewer
/// than `rows`) as its load role `load` asks (MmaTile.h): a parameter along
/// k; along the rows, this thread's row `origin` + pb, named `row`. `at` is
/// the element's offset in the batch item `base`. Zero past the rows and
/// past K.
std::string wordLambda(const Product &product, const MmaElement &element,
                       llvm::StringRef idx, llvm::StringRef name, MmaLoad load,
                       llvm::StringRef row, llvm::StringRef origin,
                       int64_t rows, llvm::StringRef base,
                       const std::string &at) {
  std::string text;
  if (load == MmaLoad::AlongRows)
    text += ("const " + idx + " " + row + " = " + origin + " + pb;\n").str();
  text += ("auto " + name + " = [&](").str();
  if (load == MmaLoad::AlongK)
    text += (idx + " " + row + ", ").str();
  text += (idx + " k) -> uint32_t {\n  return " + row + " < ").str() +
          lit(rows) + " && k < " + lit(product.k) + " ? " +
          element.bits(base.str() + "[" + at + "]") + " : 0u;\n};\n";
  return text;
}

/// The tensor-core kernel's body (f16 or bf16 A and B; MmaTile.h): the
/// same loop over (batch item, row tile) pairs, each a kTileM x kTileN tile
/// of m16n8k16 products from A's and B's raw 16-bit elements (zero past M,
/// N and K), f32 accumulators, each result, `result` of the accumulator
/// (kMmaAccumulator), stored through the epilogue. Each operand's tile is
/// loaded along its contiguous dim: A along k, B along its columns, and the
/// other way round when Gemm transposes them.
std::string mmaBody(const EmitContext &context, const Product &product,
                    const MmaElement &element, const EpilogueStore &epilogue,
                    llvm::StringRef idx, llvm::StringRef result) {
  std::string n = lit(product.n);
  MmaLoad loadA = product.transA ? MmaLoad::AlongRows : MmaLoad::AlongK;
  MmaLoad loadB = product.transB ? MmaLoad::AlongK : MmaLoad::AlongRows;
  llvm::StringRef rowA = product.transA ? "ia" : "m";
  llvm::StringRef colB = product.transB ? "n" : "jb";
  std::string words =
      wordLambda(product, element, idx, "aWord", loadA, rowA, "i0", product.m,
                 "az", offsetInA(product, rowA, "k")) +
      wordLambda(product, element, idx, "bWord", loadB, colB, "j0", product.n,
                 "bz", offsetInB(product, "k", colB));
  MmaStore where;
  where.index = idx.str();
  where.row = "row", where.rowOrigin = "i0", where.rows = product.m;
  where.column = "col", where.colOrigin = "j0", where.columns = product.n;
  where.store = epilogue.store("z * " + lit(product.m * product.n) +
                                   " + row * " + n + " + col",
                               result, "            ", idx);
  return mmaTiles(element) +
         batchLoopHead(context, product, idx, kTileM, kTileN) +
         indentBy(words, "    ") +
         indentBy(mmaLoads(idx, element, {loadA, "aWord", "i0"},
                           {loadB, "bWord", "j0"}) +
                      mmaDepthLoop(idx, product.k, element, loadA, loadB) +
                      mmaStoreLoop(where),
                  "  ") +
         "  }\n";
}

/// Y[b] = alpha * op(A[b]) op(B[b]) (+ beta * C broadcast, for Gemm) as a
/// tiled kernel: on the tensor cores when A and B are both f16 or both
/// bf16, or both f32 under tf32 (mmaBody), else on the CUDA cores
/// (simtBody). Sums as the host: in
/// double over float-converted operands for integers (the result rounded
/// to float before it is stored), in the compute type for the floats (f32
/// accumulators for the tensor cores), each in k order but for the MMA's
/// order within each 16-deep step. Each result goes out through the node's
/// epilogue when it has one (EpilogueStore.h), so bias, activation and
/// residual cost no launch of their own.
llvm::Error launchTiledKernel(EmitContext &context, const Product &product,
                              float alpha, float beta) {
  auto epilogue = EpilogueStore::create(context);
  if (!epilogue)
    return epilogue.takeError();
  const TensorRef &a = context.in(0), &b = context.in(1), &y = context.out();
  // Gemm's own C; a MatMul's operand 2 is its epilogue's first extra.
  bool withC =
      context.node.is(ir::OpCode::Gemm) && context.hasIn(2) && beta != 0;
  bool isFloat = cublasDType(y.dtype) != 0;
  // An integer MatMul sums exactly, in wrapping 64-bit words, as the host
  // does; an integer Gemm (alpha and beta are floats) as the host does too.
  bool exactInteger = !isFloat && context.node.is(ir::OpCode::MatMul);
  llvm::Optional<MmaElement> mma =
      MmaElement::select(a.dtype, b.dtype, context.stringAttr("math"));
  std::string acc = isFloat ? cudaComputeTypeName(y.dtype) : "double";
  if (exactInteger)
    acc = "uint64_t";
  if (mma)
    acc = "float";
  std::string operand =
      isFloat ? "(" + acc + ")snug_load"
              : exactInteger ? "(uint64_t)(int64_t)snug_load"
                             : "(double)(float)snug_load";
  int64_t tileRows = mma ? kTileM : kBlockTile;
  int64_t tileCols = mma ? kTileN : kBlockTile;
  int64_t rowTiles = (product.m + tileRows - 1) / tileRows;
  int64_t colTiles = (product.n + tileCols - 1) / tileCols;
  if (colTiles > INT32_MAX)
    return context.unsupported("the product is too large for the kernel");
  // The tile loop steps over the grid's y (at most 65535, which the rule's
  // kMaxGridBlocks bounds); offsets stay inside the operands, tile
  // origins and depth steps at most one tile past M, N and K.
  int64_t tiles = product.batchCount() * rowTiles;
  int64_t largest =
      std::max({a.numElements, b.numElements, y.numElements,
                withC ? context.in(2).numElements : 0, colTiles * tileCols,
                rowTiles * tileRows, product.k + std::max(tileRows, tileCols)});
  std::string idx = codegen::indexTypeFor(context, tiles, largest, 1);
  std::string row = mma ? "row" : "i", col = mma ? "col" : "j";
  std::string result = mma ? kMmaAccumulator : "sum[rr][cc]";
  if (alpha != 1)
    result = "(" + acc + ")" + cudaFloatLiteral(alpha) + " * " + result;
  if (withC)
    result += " + (" + acc + ")" + cudaFloatLiteral(beta) +
              " * snug_load(c + " + offsetInC(context.in(2), row, col) + ")";
  if (exactInteger)
    result = "(int64_t)(" + result + ")";
  else if (!isFloat) // the host rounds its double result to float first
    result = "(float)(" + result + ")";

  Kernel kernel;
  kernel.tag = context.node.getOpName().lower();
  if (mma)
    kernel.block = {uint32_t(kThreads), 1, 1};
  else
    kernel.block = {uint32_t(kTile), uint32_t(kTile), 1};
  kernel.grid = {uint32_t(colTiles), uint32_t(std::min<int64_t>(tiles, 65535)),
                 1};
  kernel.addTensor("a", a, true);
  kernel.addTensor("b", b, true);
  if (withC)
    kernel.addTensor("c", context.in(2), true);
  kernel.addTensor("y", y, false);
  epilogue->addParams(kernel, context);
  kernel.body =
      epilogue->getSetup() +
      (mma ? mmaBody(context, product, *mma, *epilogue, idx, result)
           : simtBody(context, product, *epilogue, idx, acc, operand, result));
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

/// Whether cuBLAS can take `product` (32-bit sizes) in `type`.
bool cublasTakes(DType type, const Product &product) {
  return cublasDType(type) && fitsInt32(product.m) && fitsInt32(product.n) &&
         fitsInt32(product.k) && fitsInt32(product.batchCount());
}

llvm::Error emitMatMul(EmitContext &context) {
  const TensorRef &a = context.in(0), &b = context.in(1), &y = context.out();
  if (!a.rank() || !b.rank())
    return context.unsupported("operands must have rank >= 1");
  std::vector<int64_t> aDims = a.dims, bDims = b.dims;
  if (aDims.size() == 1)
    aDims.insert(aDims.begin(), 1);
  if (bDims.size() == 1)
    bDims.push_back(1);
  Product product;
  product.m = aDims[aDims.size() - 2], product.k = aDims.back();
  product.n = bDims.back();
  if (bDims[bDims.size() - 2] != product.k)
    return context.unsupported("inner dims differ");
  // Batch dims, right-aligned; an operand's stride is 0 where it has 1.
  size_t rank = std::max(aDims.size(), bDims.size()) - 2;
  aDims.insert(aDims.begin(), rank + 2 - aDims.size(), 1);
  bDims.insert(bDims.begin(), rank + 2 - bDims.size(), 1);
  int64_t strideA = product.m * product.k, strideB = product.k * product.n,
          strideY = product.m * product.n;
  std::vector<BatchAxis> batch(rank);
  for (size_t d = rank; d-- > 0;) {
    int64_t extent = std::max(aDims[d], bDims[d]);
    if ((aDims[d] != extent && aDims[d] != 1) ||
        (bDims[d] != extent && bDims[d] != 1))
      return context.unsupported("batch dims do not broadcast");
    batch[d] = {extent, aDims[d] == 1 ? 0 : strideA,
                bDims[d] == 1 ? 0 : strideB, strideY};
    strideA *= aDims[d], strideB *= bDims[d], strideY *= extent;
  }
  // Unit dims walk nothing.
  for (const BatchAxis &axis : batch)
    if (axis.extent != 1)
      product.batch.push_back(axis);
  if (y.numElements != product.batchCount() * product.m * product.n)
    return context.unsupported("result size does not match the product");
  if (!y.numElements)
    return llvm::Error::success();
  // A batch over A alone with B shared is one taller product.
  bool foldBatch = llvm::all_of(product.batch, [](const BatchAxis &axis) {
    return axis.strideB == 0 && axis.strideA != 0;
  });
  if (foldBatch) {
    product.m *= product.batchCount();
    product.batch.clear();
  }
  // cuBLAS stores the raw product, or (cuBLASLt) applies a bias, ReLU or
  // GELU epilogue in one call; any other epilogue needs the kernel's store.
  LtEpilogueMatch lt = getLtMatch(context);
  bool withEpilogue = context.node.hasEpilogue();
  if ((!withEpilogue || lt.kind != LtEpilogue::None) &&
      cublasTakes(y.dtype, product)) {
    std::vector<bundle::DeviceGemm> steps = planGemms(context, product);
    // An epilogue is the store of the whole result: one call.
    if (withEpilogue && steps.size() != 1)
      steps.clear();
    for (bundle::DeviceGemm &step : steps) {
      setLtEpilogue(context, lt, step);
      context.gemm(step);
    }
    if (!steps.empty())
      return llvm::Error::success();
  }
  return launchTiledKernel(context, product, 1.0f, 0.0f);
}

/// Writes C, broadcast to [M, N], into Y: a copy when it already has Y's
/// shape and type, else a kernel.
void broadcastC(EmitContext &context, int64_t m, int64_t n) {
  const TensorRef &c = context.in(2), &y = context.out();
  if (c.dtype == y.dtype && c.numElements == y.numElements) {
    context.copy(y.place, c.place, y.bytes);
    return;
  }
  const char *idx = codegen::indexTypeFor(
      context, y.numElements, std::max(y.numElements, c.numElements));
  std::string at = offsetInC(c, "e / " + lit(n), "e % " + lit(n));
  Kernel kernel;
  kernel.tag = "gemm_bias";
  kernel.block = {256, 1, 1};
  kernel.grid = gridFor(y.numElements, 256);
  kernel.addTensor("c", c, true);
  kernel.addTensor("y", y, false);
  kernel.body = codegen::gridStrideLoop(idx, m * n, "e") +
                "    snug_store(y + e, snug_load(c + " + at + "));\n  }\n";
  context.launch(std::move(kernel));
}

llvm::Error emitGemm(EmitContext &context) {
  const TensorRef &a = context.in(0), &b = context.in(1), &y = context.out();
  if (a.rank() != 2 || b.rank() != 2 || y.rank() != 2)
    return context.unsupported("A, B and Y must be 2-d");
  Product product;
  product.transA = context.intAttr("transA", 0);
  product.transB = context.intAttr("transB", 0);
  product.m = a.dims[product.transA ? 1 : 0];
  product.k = a.dims[product.transA ? 0 : 1];
  product.n = b.dims[product.transB ? 0 : 1];
  if (b.dims[product.transB ? 1 : 0] != product.k || y.dims[0] != product.m ||
      y.dims[1] != product.n)
    return context.unsupported("A, B and Y shapes do not agree");
  float alpha = context.floatAttr("alpha", 1.0f);
  float beta = context.floatAttr("beta", 1.0f);
  if (context.hasIn(2)) {
    const TensorRef &c = context.in(2);
    bool broadcasts =
        c.rank() <= 2 &&
        (c.rank() < 2 || c.dims[0] == 1 || c.dims[0] == product.m) &&
        (c.rank() < 1 || c.dims.back() == 1 || c.dims.back() == product.n);
    if (!broadcasts)
      return context.unsupported("C does not broadcast to M x N");
  }
  if (!y.numElements)
    return llvm::Error::success();
  // A cuBLASLt epilogue matches only a Gemm without C (LtEpilogue.h).
  LtEpilogueMatch lt = getLtMatch(context);
  if ((context.node.hasEpilogue() && lt.kind == LtEpilogue::None) ||
      !cublasTakes(y.dtype, product))
    return launchTiledKernel(context, product, alpha, beta);
  // beta scales what Y holds when cuBLAS runs: C, or nothing.
  bool withC = context.hasIn(2) && beta != 0;
  if (withC)
    broadcastC(context, product.m, product.n);
  bundle::DeviceGemm gemm =
      gemmStep(context, product, 0, 0, 0, 1, BatchAxis{1, 0, 0, 0});
  gemm.alpha = alpha;
  gemm.beta = withC ? beta : 0.0f;
  setLtEpilogue(context, lt, gemm);
  context.gemm(gemm);
  return llvm::Error::success();
}

const EmitterEntry gemmEmitters[] = {
    {ir::OpCode::MatMul, emitMatMul},
    {ir::OpCode::Gemm, emitGemm},
};

} // namespace

llvm::ArrayRef<EmitterEntry> getGemmEmitters() { return gemmEmitters; }

} // namespace cuda
} // namespace snug
