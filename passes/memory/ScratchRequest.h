//===- ScratchRequest.h - Device scratch memory a node asks for -*- C++ -*-===//
//
// The one place where the target says how many bytes of scratch memory a
// node needs while it runs: the cuBLAS workspace of a GEMM today, any
// kernel's temporary buffer tomorrow. plan-memory asks getScratchRequest for
// every node and plans each nonzero request as a buffer of its own, live at
// that node's step only and packed with every value, so the arena it
// reports is the arena the device allocates. The emitters then find the
// node's scratch in the plan (ModuleMemoryPlan::getScratch) and hand it to
// the kernel or to cublasSetWorkspace.
//
// Invariants: a request depends only on the node's types and attributes and
// on the options, never on the plan, so planning and checking agree; on
// the host target it is 0 for every node but snug.attention, whose host
// kernel computes a row block of scores in it (requested on both targets,
// as a bundle's host plan runs in the CUDA plan's arena); a GEMM's request
// is at least kMinCublasWorkspace (cuBLAS's documented minimum) and at
// most ScratchOptions::cublasWorkspaceCap; scratch buffers are
// aligned to kScratchAlignment (or the arena alignment, if larger).
//
// It does not decide how a node is lowered: for a MatMul whose batch the
// CUDA emitter splits into more than 64 calls (it then runs a tiled kernel),
// or one with a cuBLASLt epilogue (passes/fusion/LtEpilogue.h) that would take
// more than one call (the tiled kernel again), the request still assumes
// cuBLAS; that costs arena bytes, never correctness. A product with any
// other epilogue is the tiled kernel and asks for nothing.
//
// The GEMM rule and its sources are in ScratchRequest.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_MEMORY_SCRATCHREQUEST_H
#define SNUG_PASSES_MEMORY_SCRATCHREQUEST_H

#include "ir/Module.h"

#include <cstdint>

namespace snug {

/// cublasSetWorkspace rejects a workspace pointer not aligned to 256 bytes
/// (CUBLAS_STATUS_INVALID_VALUE); kernels want no less.
constexpr uint64_t kScratchAlignment = 256;

/// The least workspace any cuBLAS or cuBLASLt GEMM gets. cuBLAS,
/// cublasSetWorkspace: "too small workspaceSizeInBytes may cause some
/// routines to fail with CUBLAS_STATUS_ALLOC_FAILED error returned ...
/// Workspace size equal to or larger than 16KiB is enough to prevent
/// CUBLAS_STATUS_ALLOC_FAILED error". So --cublas-workspace is at least
/// this too.
constexpr uint64_t kMinCublasWorkspace = uint64_t(16) << 10;

/// What the target is and how much scratch it may use.
struct ScratchOptions {
  /// The CUDA target plans cuBLAS workspaces; the host target needs none.
  bool cuda = true;
  /// No GEMM gets more workspace than this (snugc --cublas-workspace);
  /// 4 MiB is cuBLAS's default workspace pool on every architecture before
  /// Hopper. A multiple of 256, at least kMinCublasWorkspace (the option
  /// parsers refuse less; below it every GEMM gets the cap).
  uint64_t cublasWorkspaceCap = uint64_t(4) << 20;
};

/// One node's request: bytes (0: none) and, for messages and the report,
/// what they are for.
struct ScratchRequest {
  uint64_t bytes = 0;
  const char *purpose = "";
};

/// The cuBLAS workspace a column-major GEMM C[m x n] = op(A) op(B) over
/// `batch` items with inner dimension `k` may use, in bytes, for elements
/// of `dtype`: 0 when cuBLAS does not run it (another dtype, an empty C),
/// else the partial sums of the split-K that fills the GPU, at least
/// kMinCublasWorkspace (also when nothing splits), at most `cap` (see
/// ScratchRequest.cpp).
uint64_t getGemmWorkspaceBytes(int64_t m, int64_t n, int64_t k, int64_t batch,
                               ir::DType dtype, uint64_t cap);

/// Whether cuBLAS would split `node`'s product along K (a MatMul or Gemm
/// it runs, whose long K meets too few output tiles to fill the GPU: the
/// split-K part of getGemmWorkspaceBytes is nonzero). The epilogue fusion
/// keeps such products on cuBLAS; every cuBLAS GEMM has a workspace, so
/// that is not the test.
bool splitsAlongK(const ir::Node &node);

/// The scratch `node` needs on the target of `options`.
ScratchRequest getScratchRequest(const ir::Node &node,
                                 const ScratchOptions &options);

} // namespace snug

#endif // SNUG_PASSES_MEMORY_SCRATCHREQUEST_H
