//===- KernelEmitter.h - What an op's CUDA emitter sees and makes -*- C++ -*-===//
//
// One emitter per op family turns one scheduled node into device steps:
// kernel launches (CUDA C++ source plus grid, block and arguments), cuBLAS
// GEMM descriptors, and device-to-device copies. Shapes are static, so an
// emitter bakes every size and stride into the source as a constant and
// passes only pointers; the driver (CudaEmitter.cpp) names each distinct
// kernel once (two nodes with the same shapes share one kernel) and records
// every launch in the device plan.
//
// Rules every emitted kernel keeps (the host CUDA simulator in tests/cudasim
// relies on them, and so does correctness on the device):
//   - It includes nothing; the prelude (CudaPrelude.cpp) defines the types
//     (int64_t ..., snug_half, snug_bfloat) and helpers (snug_load,
//     snug_store, block reductions, snug_inf, snug_nan).
//   - Results may alias operands exactly where the planner allows it
//     (elementwise ops in place, views): so no __restrict__, and elementwise
//     kernels read element i of every operand before writing element i.
//   - Shared memory is static (__shared__ arrays with constant sizes), at
//     most 48 KiB; __syncthreads(), and the prelude's warp and block
//     reductions, are reached by every thread of the block (uniform control
//     flow), never from inside a divergent branch.
//   - Results are deterministic: no atomics that reorder floating-point sums.
//   - The semantics are those of the host reference kernel of the same op
//     (runtime/host/kernels/), which is the oracle in tests.
//   - A kernel that checks data (snug.check_labels) cannot fail its
//     launch: it writes the device plan's check record
//     (EmitContext::useCheckRecord), which the executor reads after the
//     step.
//   - Index arithmetic is 32-bit only where it cannot wrap: every kernel
//     takes its index type ("int" or "int64_t") from
//     codegen::indexTypeFor (CodegenHelpers.h), never chooses one itself.
//     The rule: int64_t when the largest value an index variable reaches
//     passes 2^31 - 1, that is, when a grid-stride loop's bound plus its
//     step (the launch's grid, at most kMaxGridBlocks blocks, times the
//     items each block takes per iteration: 1048560 * 256 for the usual
//     256-thread loop, so outputs from about 1.88e9 elements on) can pass
//     it, or any offset or coordinate the kernel computes (the largest
//     tensor it addresses, in elements) can; int otherwise, since 32-bit
//     index math and division by a constant are much cheaper. A kernel
//     may always use int64_t (data-dependent indices, element counters);
//     a 32-bit index only through the rule. CudaOptions::index32Limit
//     lowers the limit, so tests run the 64-bit code on small tensors.
//   - Temporary device memory is the node's scratch buffer, which
//     plan-memory planned from getScratchRequest (passes/memory/ScratchRequest.h)
//     and EmitContext::scratchOffset/scratchBytes locate: a kernel that
//     needs scratch asks for it there, never allocates. Every GEMM step
//     records the node's scratch as its cuBLAS workspace.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_KERNELEMITTER_H
#define SNUG_COMPILER_CUDA_KERNELEMITTER_H

#include "ir/Module.h"
#include "core/DevicePlan.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snug {
namespace cuda {

/// An operand or result of the node being emitted: its type and where the
/// plan put it.
struct TensorRef {
  bool present = false; // false for an absent optional operand
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> dims;
  int64_t numElements = 0;
  uint64_t bytes = 0;
  bundle::DeviceArg place; // ArgArena or ArgWeight + byte offset

  unsigned rank() const { return unsigned(dims.size()); }
  /// Row-major strides in elements.
  std::vector<int64_t> strides() const;
  /// The same bytes, `byteOffset` further in (a slice of a contiguous
  /// tensor).
  bundle::DeviceArg at(uint64_t byteOffset) const {
    return {place.kind, place.value + byteOffset};
  }
  /// Whether `other` occupies exactly the same bytes.
  bool sameAs(const TensorRef &other) const {
    return present && other.present && place.kind == other.place.kind &&
           place.value == other.place.value;
  }
};

/// The element type's name in emitted code: float, double, int64_t, int32_t,
/// int16_t, int8_t, uint8_t, uint16_t, uint32_t, uint64_t, bool, snug_half,
/// snug_bfloat.
const char *cudaTypeName(ir::DType type);
/// The type arithmetic happens in: float for f16/bf16, the type itself
/// otherwise (double for f64, int64_t for i64, ...).
const char *cudaComputeTypeName(ir::DType type);
/// A float literal of `value` for emitted code: exact (hex float), with
/// snug_inf()/snug_nan() for the non-finite ones.
std::string cudaFloatLiteral(double value);
/// An integer literal (with LL suffix when it does not fit in int).
std::string cudaIntLiteral(int64_t value);

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

/// A kernel parameter: a pointer to an operand/result (or a slice of one),
/// or a scalar.
struct KernelParam {
  std::string type; // "const float *", "float *", "int64_t"
  std::string name;
  bundle::DeviceArg arg;
};

/// One kernel launch. The source is the body only; the driver writes
///   extern "C" __global__ void __launch_bounds__(THREADS) SYMBOL(PARAMS) {
///     BODY }
struct Kernel {
  std::string tag; // short op tag for the symbol ("relu", "conv")
  std::vector<KernelParam> params;
  std::string body;
  Dim3 grid, block;
  uint32_t sharedBytes = 0; // dynamic shared memory; 0 (static only)

  /// Adds a pointer parameter for `tensor` (const when `readOnly`).
  void addTensor(const std::string &name, const TensorRef &tensor,
                 bool readOnly);
  /// Adds a pointer parameter to `tensor`'s bytes from `byteOffset` on.
  void addTensorAt(const std::string &name, const TensorRef &tensor,
                   uint64_t byteOffset, bool readOnly);
  uint32_t threads() const { return block.x * block.y * block.z; }
};

/// The most blocks gridFor launches along x: enough to fill any GPU many
/// times over, and every grid-stride loop's largest step (kMaxGridBlocks
/// times its items per block) is what codegen::indexTypeFor checks.
constexpr uint32_t kMaxGridBlocks = 65535u * 16;

/// A grid of `blockSize`-thread blocks covering `work` items, capped (the
/// kernel then loops grid-stride over the rest).
Dim3 gridFor(int64_t work, uint32_t blockSize,
             uint32_t maxBlocks = kMaxGridBlocks);

/// What an emitter works with: the node, its operands and results as
/// TensorRefs, and the sinks for the steps it produces.
class EmitContext {
public:
  EmitContext(const ir::Node &node, unsigned opIndex,
              std::vector<TensorRef> operands, std::vector<TensorRef> results,
              std::vector<bundle::DeviceStep> &steps,
              std::vector<Kernel> &kernels);

  const ir::Node &node;
  unsigned opIndex; // index of the node in the schedule (= host plan op)
  std::vector<TensorRef> operands;
  std::vector<TensorRef> results;
  /// The node's planned scratch buffer in the arena (0 bytes: none).
  uint64_t scratchOffset = 0, scratchBytes = 0;
  /// Where plan-memory put the device plan's check record
  /// (core/DevicePlan.h; kNoCheckRecord: nowhere); a run-time check's
  /// kernel takes it through useCheckRecord, which tells the driver the
  /// plan needs it.
  uint64_t checkRecordOffset = 0;
  bool checkRecordUsed = false;
  /// The largest value a 32-bit index may reach (CudaOptions::
  /// index32Limit); codegen::indexTypeFor applies it.
  int64_t index32Limit = INT32_MAX;
  bundle::DeviceArg useCheckRecord() {
    checkRecordUsed = true;
    return bundle::DeviceArg::arena(checkRecordOffset);
  }

  const TensorRef &in(unsigned i) const { return operands[i]; }
  const TensorRef &out(unsigned i = 0) const { return results[i]; }
  bool hasIn(unsigned i) const { return i < operands.size() && operands[i].present; }

  int64_t intAttr(llvm::StringRef name, int64_t fallback) const;
  float floatAttr(llvm::StringRef name, float fallback) const;
  std::vector<int64_t> intsAttr(llvm::StringRef name) const;
  std::vector<float> floatsAttr(llvm::StringRef name) const;
  std::string stringAttr(llvm::StringRef name,
                         llvm::StringRef fallback = "") const;
  bool hasAttr(llvm::StringRef name) const;
  /// A per-spatial-dim attribute (strides, pads, ...): `count` values,
  /// `fallback` each when absent; empty when present with another count.
  std::vector<int64_t> windowAttr(llvm::StringRef name, size_t count,
                                  int64_t fallback) const;

  /// Records a launch of `kernel` (the driver names and dedupes it).
  void launch(Kernel kernel);
  /// Records a cuBLAS strided-batched GEMM, with the node's scratch as its
  /// workspace.
  void gemm(const bundle::DeviceGemm &gemm);
  /// Records a device-to-device copy (skipped when source and destination
  /// coincide or bytes is 0).
  void copy(bundle::DeviceArg dst, bundle::DeviceArg src, uint64_t bytes);
  /// A Branch step that skips the device steps of the next `hostOps` nodes
  /// when the bool at `condition` is `when` (snug.skip_if; the driver turns
  /// the node count into a step count once every node has its steps).
  void branch(bundle::DeviceArg condition, bool when, uint32_t hostOps);

  /// "node 'conv1' (Conv): why" as an error, for what the CUDA backend
  /// cannot do (an unsupported dtype or attribute combination).
  llvm::Error unsupported(const llvm::Twine &why) const;

private:
  std::vector<bundle::DeviceStep> &steps;
  std::vector<Kernel> &kernels;
};

/// An emitter for one op (or a family sharing a function).
using EmitFn = llvm::Error (*)(EmitContext &context);

/// The family tables; each file registers its ops. lookupEmitter searches
/// them all.
struct EmitterEntry {
  ir::OpCode op;
  EmitFn emit;
};
llvm::ArrayRef<EmitterEntry> getElementwiseEmitters();   // ElementwiseEmitters.cpp
llvm::ArrayRef<EmitterEntry> getDataMovementEmitters();  // DataMovementEmitters.cpp
llvm::ArrayRef<EmitterEntry> getIndexingEmitters();      // IndexingEmitters.cpp
llvm::ArrayRef<EmitterEntry> getTopKEmitters();          // TopKEmitter.cpp
llvm::ArrayRef<EmitterEntry> getSamplingEmitters();      // SamplingEmitters.cpp
llvm::ArrayRef<EmitterEntry> getReductionEmitters();     // ReductionEmitters.cpp
llvm::ArrayRef<EmitterEntry> getPoolingEmitters();       // PoolingEmitters.cpp
llvm::ArrayRef<EmitterEntry> getConvEmitters();          // ConvEmitters.cpp
llvm::ArrayRef<EmitterEntry> getGemmEmitters();          // GemmEmitters.cpp
llvm::ArrayRef<EmitterEntry> getFusedEmitters();         // FusedEmitter.cpp
llvm::ArrayRef<EmitterEntry> getAttentionEmitters();     // AttentionEmitter.cpp
/// Every family table above, once each, in the order lookupEmitter
/// searches them (CudaEmitter.cpp).
llvm::ArrayRef<llvm::ArrayRef<EmitterEntry>> getEmitterFamilies();
/// nullptr when no family registers `op`.
EmitFn lookupEmitter(ir::OpCode op);

/// GlobalAveragePool / GlobalMaxPool: registered with the pools, emitted as
/// row reductions (ReductionEmitters.cpp).
llvm::Error emitGlobalPool(EmitContext &context, bool isMax);

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_KERNELEMITTER_H
