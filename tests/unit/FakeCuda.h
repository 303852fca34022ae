//===- FakeCuda.h - What the fake CUDA driver counts ------------*- C++ -*-===//
//
// The counters of tests/unit/FakeCuda.cpp, read by snug-fake-cuda-tests
// through dlsym(fakeCudaStats) on the library the runtime dlopened; the
// library also exports fakeCudaSetComputeCapability(major, minor) and
// fakeCudaLtNoAlgorithm(none).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_UNIT_FAKECUDA_H
#define SNUG_TESTS_UNIT_FAKECUDA_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#define FAKE_CUDA_API __attribute__((visibility("default")))

/// What the fake charges against free memory besides allocations, so that
/// device_used_bytes has something to measure.
constexpr uint64_t kFakeModuleBytes = 2u << 20;
constexpr uint64_t kFakeCublasBytes = 4u << 20;
/// The smallest workspace a cuBLAS GEMM runs with (a NULL one or less is
/// refused with CUBLAS_STATUS_ALLOC_FAILED).
constexpr size_t kFakeMinCublasWorkspace = 16u << 10;

struct FakeCudaStats {
  // Live objects (created minus destroyed).
  int primaryRetains = 0;
  int streams = 0, events = 0, modules = 0, cublasHandles = 0;
  int graphs = 0, graphExecs = 0;
  std::map<void *, uint64_t> allocBytes; // live allocations
  std::map<void *, uint64_t> pinnedBytes; // live cuMemHostAlloc blocks
  // Totals.
  int allocCalls = 0;
  int hostToDevice = 0, deviceToDevice = 0, deviceToHost = 0;
  int directLaunches = 0, gemms = 0;
  int instantiations = 0, graphLaunches = 0;
  int functionsLoaded = 0;
  int cubinLoads = 0, ptxLoads = 0; // modules loaded, by image kind
  // What the fake refused: launches over a limit, GEMMs without a usable
  // workspace, prohibited calls during a capture.
  int launchRefusals = 0, workspaceRefusals = 0, captureRefusals = 0;
  // cuBLAS settings last made.
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  int setWorkspaceCalls = 0;
  // Per GEMM call, in order: the workspace its handle had then.
  std::vector<std::pair<void *, size_t>> gemmWorkspaces;
  int mathMode = -1, lastComputeType = -1;

  // cuBLASLt: live objects (created minus destroyed).
  int ltHandles = 0, ltDescs = 0, ltLayouts = 0, ltPreferences = 0;
  int ltHeuristics = 0, ltMatmuls = 0;
  /// Set by a test: the next heuristics find no algorithm.
  bool ltNoAlgorithm = false;
  /// What the last heuristic call was asked (its preference's
  /// MAX_WORKSPACE_BYTES) and what the last cublasLtMatmul got.
  size_t ltMaxWorkspace = 0;
  struct LtLayout {
    int type = -1;
    uint64_t rows = 0, cols = 0;
    int64_t ld = 0, stride = 0;
    int batch = 1;
  };
  struct LtCall {
    int computeType = -1, scaleType = -1, transA = 0, transB = 0;
    uint32_t epilogue = 0;
    const void *bias = nullptr;
    int64_t biasBatchStride = -1;
    LtLayout a, b, c, d;
    const void *pointerA = nullptr, *pointerB = nullptr;
    const void *pointerC = nullptr, *pointerD = nullptr;
    const void *workspace = nullptr;
    size_t workspaceBytes = 0;
    uint64_t algo = 0; // the algorithm's first word, as the heuristic set it
    /// The MIN_ALIGNMENT_{A,B,C,D}_BYTES preferences the algorithm was
    /// picked under (0: not set, which cuBLASLt takes as 256).
    uint32_t minAlignment[4] = {0, 0, 0, 0};
  } lastLt;
  /// Every cublasLtMatmul call, in order.
  std::vector<LtCall> ltCalls;
};

#endif // SNUG_TESTS_UNIT_FAKECUDA_H
