//===- CudaExecutor.h - Running a device plan on a CUDA device --*- C++ -*-===//
//
// The CUDA executor runs a bundle's device plan (core/DevicePlan.h). All
// that can fail for reasons other than a kernel fault happens at creation:
// the driver, the device, the kernel image for its arch, the free memory
// check, the weights and arena allocations (once, exactly the planned
// sizes), the weight upload, module and function loading, cuBLAS setup
// (each GEMM's workspace lies inside the arena, where plan-memory placed
// it), cuBLASLt setup for the GEMMs with an epilogue (their descriptors and
// the algorithm its heuristic picks, LtGemm.h), resolving every launch
// argument to a
// device address or value, and one call of each GEMM (so that cuBLAS loads
// its kernels then, not during a run). A run then only enqueues: the first
// run executes the steps one by one, the second captures them into a CUDA
// graph, and every later run replays that graph (fixed addresses make this
// safe). Persistent state (the bundle's State section) lives in the
// weights buffer; one device-to-device copy per state after the plan's last
// step writes its next value back, so every run is the next step. A plan
// with run-time checks (core/DevicePlan.h's check record) has the record
// zeroed before each run and read back after the plan's last step: a failed
// check fails the run before any state is written back (the write-back is
// then enqueued apart from the graph, after the read). Runs
// allocate nothing themselves (the driver may take memory for
// the graph it instantiates in the second run) and synchronize before they
// return.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_CUDA_CUDAEXECUTOR_H
#define SNUG_RUNTIME_CUDA_CUDAEXECUTOR_H

#include "runtime/BundleReader.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/LtGemm.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace snug {
namespace rt {
namespace cuda {

struct CudaSessionOptions {
  /// A caller-owned device arena of `arenaBytes` (>= the device arena,
  /// 256-byte aligned), or null for the session to allocate one.
  void *arena = nullptr;
  uint64_t arenaBytes = 0;
  /// A caller CUstream, or null for a stream of the session's own.
  void *stream = nullptr;
  /// Capture the plan into a CUDA graph on the second run.
  bool graphs = true;
};

struct CudaMemoryStats {
  uint64_t allocatedBytes = 0; // the session's own cuMemAlloc bytes
  uint64_t allocations = 0;
  uint64_t deviceUsedBytes = 0; // free memory before minus after creation
  uint64_t arenaBytes = 0;      // the device arena, owned or borrowed
  uint64_t weightsBytes = 0;
  uint64_t pinnedHostBytes = 0; // cuMemHostAlloc: the offload region
};

class CudaExecutor {
public:
  /// Fails with NO_DEVICE (no driver or device, no cuBLAS for a plan with
  /// GEMMs, no cuBLASLt for one with GEMM epilogues), UNSUPPORTED (no device
  /// plan, no image for the device's arch, no cuBLASLt algorithm for a GEMM
  /// with an epilogue),
  /// INVALID_ARGUMENT (caller arena) or OUT_OF_MEMORY (checked before any
  /// allocation); nothing stays allocated on failure.
  static Status create(const Bundle &bundle, const CudaSessionOptions &options,
                       std::unique_ptr<CudaExecutor> &out);
  ~CudaExecutor();
  CudaExecutor(const CudaExecutor &) = delete;
  CudaExecutor &operator=(const CudaExecutor &) = delete;

  /// Runs the plan and waits for it. With `milliseconds`, also the device
  /// time between the run's first and last step (CUDA events).
  Status run(double *milliseconds = nullptr);

  /// Host <-> device copies into and out of the arena (or, for reads, the
  /// weights), ordered with the runs on the session's stream; they return
  /// once the copy is done.
  Status write(uint64_t arenaOffset, const void *data, uint64_t bytes);
  Status read(const Location &location, void *data, uint64_t bytes);
  /// The device address of a location (arena or weights).
  void *getDevicePointer(const Location &location) const;

  const CudaMemoryStats &getMemoryStats() const { return stats; }
  /// Whether runs after the first replay a captured graph (false when
  /// graphs are off, the stream cannot be captured, the plan branches, or
  /// a capture failed).
  bool usesGraphs() const { return graphs; }

private:
  explicit CudaExecutor(const Bundle &bundle, const CudaDriver &driver)
      : bundle(bundle), driver(driver) {}

  /// A device step with every address and value resolved.
  struct Step {
    uint8_t kind = 0;
    size_t index = 0; // in the device plan, for messages
    // Launch.
    CUfunction function = nullptr;
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    unsigned sharedBytes = 0;
    size_t firstParam = 0, paramCount = 0;
    // Gemm.
    cublasOperation_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
    int m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0, batch = 1;
    long long strideA = 0, strideB = 0, strideC = 0;
    cudaDataType dataType = CUDA_R_32F;
    cublasComputeType_t computeType = CUBLAS_COMPUTE_32F;
    // alpha and beta in the compute type's precision, read by cuBLAS
    // through a host pointer at enqueue time (and baked into a captured
    // graph then).
    float alpha32 = 1, beta32 = 0;
    double alpha64 = 1, beta64 = 0;
    // Gemm operands and Copy (a: source, c: destination; a pinned host
    // address when copyDirection says so).
    CUdeviceptr a = 0, b = 0, c = 0;
    uint64_t bytes = 0;
    enum class Direction : uint8_t { DeviceToDevice, DeviceToHost, HostToDevice };
    Direction copyDirection = Direction::DeviceToDevice;
    // Gemm: the workspace cuBLAS may use during the call (0 bytes: none).
    CUdeviceptr workspace = 0;
    uint64_t workspaceBytes = 0;
    // Branch: the condition's byte is `a`, the steps to skip `bytes`, when
    // the byte is `when`.
    bool when = false;
    // Gemm with an epilogue: its index in ltGemms (cublasLtMatmul), or
    // kNoLtGemm for a plain cublasGemmStridedBatchedEx.
    size_t ltGemm = kNoLtGemm;
  };
  static constexpr size_t kNoLtGemm = ~size_t(0);

  Status setUp(const CudaSessionOptions &options);
  Status loadKernels(const KernelImageRef &image);
  /// Checks launch step `index`'s arguments against its kernel's
  /// parameters (count and sizes), where the driver can say them.
  Status checkLaunchArguments(size_t index) const;
  Status setUpCublas();
  /// Points cuBLAS at `step`'s workspace unless it already uses it.
  Status useWorkspace(const Step &step);
  Status resolveSteps();
  /// Sets up every Gemm step with an epilogue for cuBLASLt (LtGemm.h).
  Status setUpCublasLt();
  Status warmUpCublas();
  CUdeviceptr resolve(const bundle::DeviceArg &arg) const;
  /// Enqueues step `i` on the stream.
  Status enqueueStep(const Step &step);
  /// Enqueues steps [first, last).
  Status enqueueSteps(size_t first, size_t last);
  /// The steps a CUDA graph holds: all of them, or without a check record
  /// the plan's own (the write-back waits for the record).
  size_t getGraphSteps() const;
  /// Zeroes the check record; after the plan's steps, reads it back and
  /// turns a failed check into the run's error.
  Status resetCheckRecord();
  Status readCheckRecord();
  Status captureGraph();
  std::string describeStep(const Step &step) const;
  Status runtimeError(const std::string &what, CUresult result) const;

  const Bundle &bundle;
  const CudaDriver &driver;
  const Cublas *cublas = nullptr;
  std::unique_ptr<CudaContext> context;
  std::string deviceName;
  uint32_t arch = 0;
  CUstream stream = nullptr;
  bool ownsStream = false;
  CUevent startEvent = nullptr, endEvent = nullptr;
  CUdeviceptr weights = 0, arena = 0;
  bool ownsWeights = false, ownsArena = false;
  /// The pinned host region of offloaded values (cuMemHostAlloc; null
  /// without offload).
  void *pinned = nullptr;
  CUmodule module = nullptr;
  std::vector<CUfunction> functions;
  cublasHandle_t cublasHandle = nullptr;
  /// cuBLASLt, for the Gemm steps with an epilogue (null without them).
  const CublasLt *cublasLt = nullptr;
  cublasLtHandle_t ltHandle = nullptr;
  std::vector<LtGemm> ltGemms;
  // The workspace cuBLAS was last given (valid once workspaceSet).
  CUdeviceptr currentWorkspace = 0;
  uint64_t currentWorkspaceBytes = 0;
  bool workspaceSet = false;
  /// The plan's steps, then the state write-back's copies.
  std::vector<Step> steps;
  /// The check record's address (0: the plan has none), and the zeros the
  /// reset copies over it.
  CUdeviceptr checkRecord = 0;
  uint64_t checkRecordZeros[bundle::kCheckRecordWords] = {};
  std::vector<uint64_t> paramValues;
  std::vector<void *> params; // pointers into paramValues, per launch
  bool graphs = true;
  CUgraphExec graphExec = nullptr;
  uint64_t completedRuns = 0;
  CudaMemoryStats stats;
};

} // namespace cuda
} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_CUDA_CUDAEXECUTOR_H
