//===- DevicePlan.h - The CUDA launch plan of a bundle ----------*- C++ -*-===//
//
// What the CUDA executor does, step by step, decoded from the DevicePlan and
// KernelImages sections of a bundle (core/BundleFormat.h). The compiler
// (compiler/cuda) fills the same structs and the bundle writer encodes them,
// so writer and reader share one definition. Header-only, free of LLVM and
// of CUDA headers.
//
// Every pointer a step uses is a DeviceArg: a region (the device arena or the
// weights) plus a byte offset, resolved against the session's base pointers
// once, when the session is created. All shapes are static, so kernels carry
// their sizes as constants and their arguments are mostly pointers.
//
// The device arena is the host plan's arena: plan-memory planned every
// GEMM's cuBLAS workspace into it as a buffer live at that GEMM's step, so
// each Gemm step carries its own workspace (offset, bytes; 256-byte aligned,
// inside the arena, clear of the step's operands; bytes 0: cuBLAS runs
// algorithms that need none), which the executor hands to
// cublasSetWorkspace before a GEMM whose workspace differs from the last
// one. Fixed addresses, one allocation.
//
// Run-time checks (snug.check_labels): a check kernel that finds a bad
// value cannot fail the launch, so it writes the check record,
// kCheckRecordWords u64s at checkRecordOffset, which plan-memory placed
// past every tensor of the arena: word 0 the failing check's host plan op
// index + 1 (0: every check passed), word 1 the bad element's index in the
// check's operand, word 2 its value (int64 bits), word 3 reserved. The
// first check to fail writes it; later ones leave it. The executor zeroes
// it before each run and reads it after the plan's last step, before the
// state write-back: a failed check fails the run and leaves the state as
// it was.
//
// Encoding (DevicePlan section), in the flat stream of BundleFormat.h, for
// bundle format version 9 (as 7, and Branch steps from 9):
//   u64 device arena bytes
//   u64 check record offset (kNoCheckRecord: no run-time checks; from
//       version 7)
//   list of strings: kernel symbols
//   list of steps: u8 kind, u32 host op index, then by kind
//     Launch: u32 kernel, u32 grid[3], u32 block[3], u32 shared bytes,
//             list of args
//     Gemm:   u8 dtype, u8 transA, u8 transB, i32 m, n, k, i32 batch,
//             i64 lda, ldb, ldc, strideA, strideB, strideC, f32 alpha, beta,
//             arg a, arg b, arg c, u64 workspace offset, u64 workspace bytes,
//             u8 math (GemmMath; from version 5),
//             u8 epilogue (GemmEpilogue; from version 6), then arg bias
//             when the epilogue has one
//     Copy:   arg dst, arg src, u64 bytes (into the arena from the arena,
//             the weights or the pinned host region, or into the pinned
//             host region from the arena: the offload copies)
//     Branch: arg condition, u8 when, u32 count (DeviceBranch; from
//             version 9)
//   an arg is u8 kind + u64 value (offset, or the scalar's bits)
// Version 1 (read, never written) had one workspace for every GEMM: the
// header was u64 device arena bytes, u64 workspace offset, u64 workspace
// bytes, and Gemm steps ended at arg c; the reader gives each Gemm step that
// one workspace. Versions 2 to 4 had no math byte: every GEMM there is
// GemmMathDefault. Versions 1 to 5 had no epilogue byte: every GEMM there
// is GemmEpilogueNone.
//
// A Gemm step with an epilogue (GemmEpilogue other than none) runs through
// cuBLASLt (cublasLtMatmul with CUBLASLT_MATMUL_DESC_EPILOGUE) rather than
// cublasGemmStridedBatchedEx: C = act(alpha op(A) op(B) + beta C + bias),
// bias an m-element vector of the GEMM's dtype added to each row i of
// every column of every batch item (cuBLASLt's bias is per row of the
// column-major result: per column of snug's row-major one), act ReLU or
// the tanh GELU, computed in the compute type, then rounded to the dtype.
// f32, f16 and bf16 only.
// KernelImages section: from version 8 the toolchain record (KernelToolchain:
//   u32 NVRTC version, u32 nvJitLink version, u32 PTX ISA, u32 minimum
//   driver version), then list of images: u8 kind, u32 arch (80 = sm_80),
//   u64 size + bytes. Cubins for each target arch, PTX for the lowest arch
//   of each group of archs that compile alike (compiler/cuda/Nvrtc.h).
//   Versions 1 to 7 record no toolchain: theirs reads as all zeros.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_DEVICEPLAN_H
#define SNUG_CORE_DEVICEPLAN_H

#include <cstdint>
#include <string>
#include <vector>

namespace snug {
namespace bundle {

enum DeviceArgKind : uint8_t {
  ArgArena = 1,  // device arena + offset
  ArgWeight = 2, // device weights + offset
  ArgI32 = 3,    // scalar, value holds the bits
  ArgI64 = 4,
  ArgF32 = 5,
  ArgHost = 6,   // pinned host region + offset (offload copies only)
};

struct DeviceArg {
  uint8_t kind = 0;
  uint64_t value = 0;

  bool isPointer() const {
    return kind == ArgArena || kind == ArgWeight || kind == ArgHost;
  }
  static DeviceArg arena(uint64_t offset) { return {ArgArena, offset}; }
  static DeviceArg weight(uint64_t offset) { return {ArgWeight, offset}; }
  static DeviceArg host(uint64_t offset) { return {ArgHost, offset}; }
};

enum DeviceStepKind : uint8_t {
  StepLaunch = 1,
  StepGemm = 2,
  StepCopy = 3,
  StepBranch = 4, // from version 9
};

/// How a GEMM multiplies: GemmMathDefault, in its dtype's compute type
/// (CUBLAS_COMPUTE_32F, 64F for f64); GemmMathTf32 (f32 only, the nodes
/// --precision=tf32 marks), CUBLAS_COMPUTE_32F_FAST_TF32: the operands
/// rounded to TF32 on the tensor cores, f32 sums.
enum GemmMath : uint8_t { GemmMathDefault = 0, GemmMathTf32 = 1 };

/// What a GEMM applies to its result before it stores it (cuBLASLt's
/// cublasLtEpilogue_t of the same name): nothing; the bias; the bias, then
/// ReLU; the bias, then the tanh GELU; ReLU; the tanh GELU.
enum GemmEpilogue : uint8_t {
  GemmEpilogueNone = 0,
  GemmEpilogueBias = 1,
  GemmEpilogueReluBias = 2,
  GemmEpilogueGeluBias = 3,
  GemmEpilogueRelu = 4,
  GemmEpilogueGelu = 5,
  GemmEpilogueLast = GemmEpilogueGelu,
};

/// Whether `epilogue` (a GemmEpilogue) reads a bias vector.
inline bool gemmEpilogueHasBias(uint8_t epilogue) {
  return epilogue == GemmEpilogueBias || epilogue == GemmEpilogueReluBias ||
         epilogue == GemmEpilogueGeluBias;
}

/// "none", "bias", "relu_bias", "gelu_bias", "relu", "gelu"; "?" past them.
inline const char *gemmEpilogueName(uint8_t epilogue) {
  static const char *const names[] = {"none",      "bias", "relu_bias",
                                      "gelu_bias", "relu", "gelu"};
  return epilogue <= GemmEpilogueLast ? names[epilogue] : "?";
}

struct DeviceLaunch {
  uint32_t kernel = 0; // index into DevicePlan::kernels
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<DeviceArg> args;
};

/// One cublasGemmStridedBatchedEx call, column-major as cuBLAS sees it:
/// for each batch b < batch,
///   C_b[m x n] = alpha * op(A_b) * op(B_b) + beta * C_b
/// with X_b = X + b * strideX elements, op(A) m x k, op(B) k x n.
/// dtype is the element type of A, B and C (f32, f16, bf16 or f64);
/// accumulation is in f32 (f64 for f64). cuBLAS may use the workspace
/// arena[workspaceOffset, workspaceOffset + workspaceBytes) during the call.
/// With an epilogue (GemmEpilogue), cuBLASLt applies it to C as it stores
/// it; `bias` (m elements of dtype) when the epilogue has one.
struct DeviceGemm {
  uint8_t dtype = 0; // DTypeCode
  uint8_t transA = 0, transB = 0;
  int32_t m = 0, n = 0, k = 0, batch = 1;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  float alpha = 1, beta = 0;
  DeviceArg a, b, c;
  uint64_t workspaceOffset = 0, workspaceBytes = 0;
  uint8_t math = GemmMathDefault;
  uint8_t epilogue = GemmEpilogueNone;
  DeviceArg bias; // read when gemmEpilogueHasBias(epilogue)
};

struct DeviceCopy {
  DeviceArg dst, src;
  uint64_t bytes = 0;
};

/// A host plan's snug.skip_if on the device: when the bool at `condition`
/// (an arena byte) is `when` (0 or 1), the `count` steps after this one are
/// skipped. The executor reads the byte back, so it waits for the steps
/// before; a plan with branches runs step by step, never as a CUDA graph.
struct DeviceBranch {
  DeviceArg condition;
  uint8_t when = 0;
  uint32_t count = 0;
};

struct DeviceStep {
  uint8_t kind = StepLaunch;
  uint32_t op = 0; // the host plan op this step implements (for messages)
  DeviceLaunch launch;
  DeviceGemm gemm;
  DeviceCopy copy;
  DeviceBranch branch;
};

/// The check record's size, in u64 words, and its alignment in the arena.
constexpr uint64_t kCheckRecordWords = 4;
constexpr uint64_t kCheckRecordBytes = kCheckRecordWords * 8;
constexpr uint64_t kCheckRecordAlignment = 256;
/// DevicePlan::checkRecordOffset of a plan without run-time checks.
constexpr uint64_t kNoCheckRecord = ~uint64_t(0);

struct DevicePlan {
  uint64_t arenaBytes = 0;
  /// Where the check record lies in the device arena, or kNoCheckRecord.
  uint64_t checkRecordOffset = kNoCheckRecord;
  bool hasCheckRecord() const { return checkRecordOffset != kNoCheckRecord; }
  std::vector<std::string> kernels;
  std::vector<DeviceStep> steps;

  /// The largest workspace one GEMM step may use (0 without GEMMs).
  uint64_t getLargestWorkspaceBytes() const {
    uint64_t largest = 0;
    for (const DeviceStep &step : steps)
      if (step.kind == StepGemm && step.gemm.workspaceBytes > largest)
        largest = step.gemm.workspaceBytes;
    return largest;
  }
};

enum KernelImageKind : uint8_t { ImageCubin = 1, ImagePtx = 2 };

/// What made a bundle's kernel images and what loads them. Versions are in
/// cuDriverGetVersion's encoding, 1000 * major + 10 * minor (12000: CUDA
/// 12.0); the PTX ISA is 10 * major + minor (80: ISA 8.0), the newest
/// `.version` among the PTX images. The CUDA executor refuses a driver
/// older than minDriverVersion before it loads anything. All zeros: not
/// recorded (bundles before version 8, images made by hand in tests): the
/// driver alone then judges the images when it loads them.
struct KernelToolchain {
  uint32_t nvrtcVersion = 0;
  uint32_t jitLinkVersion = 0;
  uint32_t ptxIsa = 0;
  uint32_t minDriverVersion = 0;

  bool isRecorded() const { return minDriverVersion != 0; }
};

/// "12.0" for 12000 (a CUDA version), "12.8" for 12080.
inline std::string cudaVersionString(uint32_t version) {
  return std::to_string(version / 1000) + "." +
         std::to_string(version % 1000 / 10);
}

/// "8.0" for 80 (a PTX ISA).
inline std::string ptxIsaString(uint32_t isa) {
  return std::to_string(isa / 10) + "." + std::to_string(isa % 10);
}

struct KernelImage {
  uint8_t kind = ImageCubin;
  uint32_t arch = 0; // 80 for sm_80
  std::vector<uint8_t> bytes;
};

/// The extent, in elements, a column-major operand of `rows` x `cols`
/// (before op()) with leading dimension `ld` and `batch` matrices `stride`
/// apart reaches: the index of its last element + 1 (0 when empty), or
/// UINT64_MAX when that overflows (a crafted plan's extents must fail the
/// bounds check, not wrap into it).
inline uint64_t gemmOperandExtent(int64_t rows, int64_t cols, int64_t ld,
                                  int64_t stride, int64_t batch) {
  if (rows <= 0 || cols <= 0 || batch <= 0)
    return 0;
  if (ld < 0 || stride < 0)
    return UINT64_MAX;
  uint64_t batchPart, colPart, sum;
  if (__builtin_mul_overflow(uint64_t(batch - 1), uint64_t(stride),
                             &batchPart) ||
      __builtin_mul_overflow(uint64_t(cols - 1), uint64_t(ld), &colPart) ||
      __builtin_add_overflow(batchPart, colPart, &sum) ||
      __builtin_add_overflow(sum, uint64_t(rows), &sum))
    return UINT64_MAX;
  return sum;
}

/// gemmOperandExtent in bytes of `elementSize` each; UINT64_MAX on overflow.
inline uint64_t gemmOperandBytes(int64_t rows, int64_t cols, int64_t ld,
                                 int64_t stride, int64_t batch,
                                 uint64_t elementSize) {
  uint64_t bytes;
  if (__builtin_mul_overflow(gemmOperandExtent(rows, cols, ld, stride, batch),
                             elementSize, &bytes))
    return UINT64_MAX;
  return bytes;
}

} // namespace bundle
} // namespace snug

#endif // SNUG_CORE_DEVICEPLAN_H
