//===- ScratchRequest.cpp - Device scratch memory a node asks for ---------===//
//
// The cuBLAS workspace rule. What the sources say:
//  - cuBLAS, cublasSetWorkspace (CUDA 12 API reference, section 2.4):
//    after the call every cuBLAS function on the handle uses the user's
//    buffer instead of the default pool, and a graph that captured it keeps
//    fixed addresses; the pointer must be 256-byte aligned; "too small
//    workspaceSizeInBytes may cause some routines to fail with
//    CUBLAS_STATUS_ALLOC_FAILED ... Workspace size equal to or larger than
//    16KiB is enough to prevent" that failure; the recommended size, that of
//    the default pool, is 32 MiB on Hopper and 4 MiB elsewhere.
//  - cuBLASLt, cublasLtMatmulAlgoConfigAttributes_t: SPLITK_NUM splits the
//    reduction dimension, and REDUCTION_SCHEME COMPUTE_TYPE / OUTPUT_TYPE
//    reduce the slices "out of place" in "a user-provided workspace", one
//    partial C per slice in the compute (or output) type. The non-split
//    kernels write C directly and take no workspace.
//  - CUTLASS's parallel split-K (cutlass/reduction/kernel/reduce_split_k.h)
//    is the same scheme made explicit: workspace = slices x M x N
//    accumulators, then a reduction kernel.
// Every GEMM cuBLAS (or cuBLASLt) runs gets at least the 16 KiB cuBLAS
// names: with less, or none, "some routines" fail with
// CUBLAS_STATUS_ALLOC_FAILED, and a GEMM given none (cublasSetWorkspace(h,
// NULL, 0), what snug did for every GEMM that splits nothing) is below it
// too. Above that minimum the workspace is sized for split-K.
// Split-K pays when C has too few output tiles to give every SM a thread
// block and K is long enough that each slice still runs its main loop a
// while (the small-M x N, large-K shapes: a classifier's last Gemm at batch
// 1, BERT's FFN-down). So, for C[m x n] over `batch` items:
//   tiles  = ceil(m / 128) * ceil(n / 128) * batch   (128 x 128 CTA tiles)
//   slices = min(ceil(kSms / tiles), floor(k / 256), 32)
//   bytes  = min(max(split, 16 KiB), cap), where split is 0 when
//            slices < 2, else slices * m * n * batch * sizeof(compute
//            type), rounded up to 256
// with kSms = 132 (H100/H200 SXM, the most SMs among the sm_80/sm_90 parts
// snug targets: more SMs means more slices, so this errs towards room). The
// compute type is f32 for f32, f16 and bf16 (snug asks for
// CUBLAS_COMPUTE_32F) and f64 for f64. The rule is an upper estimate of
// what cuBLAS's closed heuristic picks, not a copy of it: with less than it
// wants cuBLAS chooses another algorithm (slower, never wrong), and the cap
// (--cublas-workspace, at least kMinCublasWorkspace) bounds every GEMM. A
// 1x64 by 64x10 GEMM gets the 16 KiB minimum (k is 64: no slice of 256);
// resnet50's 1x2048 by 2048x1000 classifier gets 8 slices of 1000 floats,
// 32000 bytes.
//
//===----------------------------------------------------------------------===//
#include "passes/memory/ScratchRequest.h"

#include "ir/OpInfo.h"
#include "passes/fusion/LtEpilogue.h"
#include "ir/ShapeFunctions.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace snug {

namespace {
/// SMs of the largest GPU targeted (H100/H200 SXM).
constexpr int64_t kSms = 132;
/// The output tile one thread block computes (m and n).
constexpr int64_t kTile = 128;
/// The shortest slice of K worth splitting off.
constexpr int64_t kMinSliceK = 256;
constexpr int64_t kMaxSlices = 32;

bool takenByCublas(ir::DType dtype) {
  return dtype == ir::DType::F32 || dtype == ir::DType::F16 ||
         dtype == ir::DType::BF16 || dtype == ir::DType::F64;
}

bool fitsInt32(int64_t value) { return value >= 0 && value <= INT32_MAX; }

/// The GEMM a MatMul or Gemm node becomes, as the CUDA emitter lowers it
/// (GemmEmitters.cpp): row-major M x K by K x N over a batch; a batch over
/// the left operand alone folds into M.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool valid = false;
};

GemmShape getMatMulShape(const ir::Node &node) {
  GemmShape shape;
  if (node.getNumOperands() < 2 || !node.getOperand(0) || !node.getOperand(1))
    return shape;
  std::vector<int64_t> a(node.getOperand(0)->getType().getDims().begin(),
                         node.getOperand(0)->getType().getDims().end());
  std::vector<int64_t> b(node.getOperand(1)->getType().getDims().begin(),
                         node.getOperand(1)->getType().getDims().end());
  if (a.empty() || b.empty())
    return shape;
  bool rightHasBatch = b.size() > 2;
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  shape.m = a[a.size() - 2], shape.k = a.back(), shape.n = b.back();
  size_t rank = std::max(a.size(), b.size()) - 2;
  a.insert(a.begin(), rank + 2 - a.size(), 1);
  b.insert(b.begin(), rank + 2 - b.size(), 1);
  for (size_t d = 0; d < rank; ++d)
    shape.batch *= std::max(a[d], b[d]);
  if (!rightHasBatch) {
    shape.m *= shape.batch;
    shape.batch = 1;
  }
  shape.valid = true;
  return shape;
}

GemmShape getGemmShape(const ir::Node &node) {
  GemmShape shape;
  if (node.getNumOperands() < 2 || !node.getOperand(0) || !node.getOperand(1))
    return shape;
  llvm::ArrayRef<int64_t> a = node.getOperand(0)->getType().getDims();
  llvm::ArrayRef<int64_t> b = node.getOperand(1)->getType().getDims();
  if (a.size() != 2 || b.size() != 2)
    return shape;
  auto flag = [&](llvm::StringRef name) {
    const ir::Attribute *attr = node.getAttribute(name);
    return attr && attr->getKind() == ir::Attribute::Kind::Int &&
           attr->getInt() != 0;
  };
  bool transA = flag("transA"), transB = flag("transB");
  shape.m = a[transA ? 1 : 0], shape.k = a[transA ? 0 : 1];
  shape.n = b[transB ? 0 : 1];
  shape.valid = true;
  return shape;
}

/// The GEMM `node` is to cuBLAS on the CUDA target (valid only for a
/// MatMul or Gemm with 32-bit sizes that cuBLAS may run). A product with an
/// epilogue runs as snug's tiled kernel, not cuBLAS
/// (compiler/cuda/GemmEmitters.cpp), and needs no workspace; unless
/// cuBLASLt runs the epilogue itself (LtEpilogue.h), when the product is a
/// cuBLAS GEMM as before and its workspace the same.
GemmShape getCublasShape(const ir::Node &node) {
  GemmShape shape;
  if (node.getNumResults() != 1 ||
      (node.hasEpilogue() && matchLtEpilogue(node).kind == LtEpilogue::None))
    return shape;
  if (node.is(ir::OpCode::MatMul))
    shape = getMatMulShape(node);
  else if (node.is(ir::OpCode::Gemm))
    shape = getGemmShape(node);
  if (!fitsInt32(shape.m) || !fitsInt32(shape.n) || !fitsInt32(shape.k) ||
      !fitsInt32(shape.batch))
    shape.valid = false;
  return shape;
}

/// The partial sums of the split-K that fills the GPU, rounded up to 256
/// bytes; 0 when splitting cannot help (see the file comment).
uint64_t getSplitKBytes(int64_t m, int64_t n, int64_t k, int64_t batch,
                        ir::DType dtype) {
  auto ceilDiv = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  // Saturate: a product past kSms tiles already fills the GPU.
  int64_t tiles = ceilDiv(m, kTile);
  for (int64_t factor : {ceilDiv(n, kTile), batch})
    tiles = tiles > kSms ? tiles : tiles * factor;
  if (tiles >= kSms)
    return 0;
  int64_t slices =
      std::min({ceilDiv(kSms, tiles), k / kMinSliceK, kMaxSlices});
  if (slices < 2)
    return 0;
  uint64_t accumulator = dtype == ir::DType::F64 ? 8 : 4;
  // tiles < kSms bounds m, n and batch (each at most kSms * kTile), so the
  // product stays far below 2^64.
  return llvm::alignTo(uint64_t(slices) * uint64_t(m) * uint64_t(n) *
                           uint64_t(batch) * accumulator,
                       kScratchAlignment);
}
} // namespace

uint64_t getGemmWorkspaceBytes(int64_t m, int64_t n, int64_t k, int64_t batch,
                               ir::DType dtype, uint64_t cap) {
  // k = 0 is still a cuBLAS call (it scales C by beta); an empty C is none.
  if (m <= 0 || n <= 0 || k < 0 || batch <= 0 || !takenByCublas(dtype))
    return 0;
  uint64_t largest = cap / kScratchAlignment * kScratchAlignment;
  return std::min(std::max(getSplitKBytes(m, n, k, batch, dtype),
                           kMinCublasWorkspace),
                  largest);
}

ScratchRequest getScratchRequest(const ir::Node &node,
                                 const ScratchOptions &options) {
  ScratchRequest request;
  // On both targets: the bundle's one plan serves the host executor too,
  // whose attention kernel computes its scores a row block at a time in it
  // (the CUDA kernel keeps them in registers and shared memory).
  if (node.is(ir::OpCode::SnugAttention)) {
    AttentionShape shape = getAttentionShape(node);
    if (shape.isValid())
      request.bytes = llvm::alignTo(getAttentionScratchBytes(shape),
                                    kScratchAlignment);
    request.purpose = "attention row block";
    return request;
  }
  if (!options.cuda)
    return request;
  GemmShape shape = getCublasShape(node);
  if (!shape.valid)
    return request;
  request.bytes = getGemmWorkspaceBytes(shape.m, shape.n, shape.k, shape.batch,
                                        node.getResult(0)->getType().getDType(),
                                        options.cublasWorkspaceCap);
  request.purpose = "cuBLAS workspace";
  return request;
}

bool splitsAlongK(const ir::Node &node) {
  GemmShape shape = getCublasShape(node);
  if (!shape.valid)
    return false;
  ir::DType dtype = node.getResult(0)->getType().getDType();
  return shape.m > 0 && shape.n > 0 && shape.k > 0 &&
         shape.batch > 0 && takenByCublas(dtype) &&
         getSplitKBytes(shape.m, shape.n, shape.k, shape.batch, dtype) != 0;
}

} // namespace snug
