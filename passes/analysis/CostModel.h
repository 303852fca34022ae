//===- CostModel.h - FLOPs, bytes and a roofline per node -------*- C++ -*-===//
//
// An analysis, recomputed on demand: IR in, numbers out. For one node, a
// group of nodes costed as if fused, or a whole module it counts the
// floating-point (and integer) operations, the multiply-accumulates of the
// contractions, and the bytes read and written, each split by element type;
// and it turns those counts into a roofline time estimate for a named
// device. Schedule, fusion, remat, the memory report and the benchmarks
// share it.
//
// Counting conventions (every op of core/Ops.def has a rule: View and
// Elementwise ops by their traits, every other op by its line in
// CostRules.def; CostModel.cpp counts each rule):
//   - A multiply-add is 2 FLOPs and 1 MAC. MACs are counted for the
//     contractions only (Conv, ConvTranspose, MatMul, Gemm): the figure
//     model zoos publish as "GMACs" (torchvision's "GFLOPS" for resnet50,
//     4.09, are MACs). A bias add is 1 FLOP per result element, no MAC.
//   - Every other elementary operation in an op's ONNX formula counts 1 FLOP
//     per element it produces: add, sub, mul, div, min, max, compare,
//     select, and the transcendentals (exp, log, tanh, erf, sqrt, sin, pow,
//     ...), which a GPU evaluates in a few SFU or FMA instructions and which
//     therefore are not weighted more. Composite activations count their
//     formula: Sigmoid = 1/(1+exp(-x)) is 4, Gelu (erf) 5, Gelu (tanh) 9.
//   - A reduction over S elements counts S operations per result (not S-1),
//     so reductions, pools and softmax cost a whole number per element:
//     Softmax is 5 per element (max, subtract, exp, sum, divide).
//   - Integer and bool arithmetic counts like float arithmetic, under its
//     own dtype; data movement (Cast, Concat, Gather, Pad, Slice, Split,
//     Tile, Transpose, Expand, ...) and nearest-neighbour Resize are 0 FLOPs.
//   - Views (Reshape, Flatten, Squeeze, Unsqueeze, Identity: the View trait)
//     cost nothing, bytes included: no kernel runs for them.
//   - Bytes: each distinct operand is read once and each result written
//     once per node, whatever the access pattern or cache reuse (a stated
//     simplification: the model is a traffic lower bound for an ideal
//     cache, not a cache simulation). Weights count as reads like any other
//     operand. Two refinements keep the worst overcounts out: Gather and
//     Slice read only as many elements of their data as their result holds
//     (an embedding lookup reads its rows, not the table), and Shape and
//     Size read no data.
//   - FLOPs belong to the dtype the op computes in (operand 0's; Where's
//     operand 1's, since its operand 0 is the bool condition); bytes belong
//     to the dtype of the tensor moved.
//
// Groups (fusion's question, and the cost of a `snug.fused` region): a group
// of nodes costs its nodes' FLOPs summed, but bytes only at its boundary:
// each value entering from outside (graph input, weight, or a result of a
// node outside) is read once however many group nodes use it, and each
// value defined inside is written once if it leaves: used outside the
// group, a graph output, or not used at all (its kernel still writes it).
// Values that stay inside cost no bytes. A view inside a group is followed
// to the bytes it names. costOfGroup({&node}) == costOfNode(node).
// A node with a body (`snug.fused`, when the region IR lands) is to cost
// costOfBody(its body nodes, its operands, its results): FLOPs of the body,
// bytes at the region boundary. In CostModel.cpp that is a rule whose
// compute is the body's (addCompute over the body nodes), the node's own
// traffic being its operands and results like any node's. An op without
// a rule (no trait that gives one, no line in CostRules.def) fails the
// coverage test.
//
// The roofline: a node takes max(compute, memory) seconds, compute being the
// sum over dtypes of FLOPs / peak (f16 and bf16 FLOPs of contractions at the
// device's dense tensor-core peak, f32 ones under --precision=tf32 at its
// dense TF32 peak, every other FLOP at its f32 non-tensor
// peak) and memory being bytes moved / HBM bandwidth; a module takes the sum
// over its nodes (one kernel after the other, no overlap, no launch
// overhead). f64 and integer FLOPs also use the f32 figure (a simplification:
// the zoo is f32; a device entry would need more peaks to do better). It is an estimate of how fast the plan could run, not a
// measurement or a prediction of what it will: it ignores launch latency,
// occupancy, caches, and kernels that reach neither roof.
//
// What it deliberately does not do: model caches, tiling or the CUDA
// emitter's actual kernels; count index arithmetic; look inside cuBLAS.
// References: S. Williams, A. Waterman, D. Patterson, "Roofline: an
// insightful visual performance model for multicore architectures", CACM
// 52(4), 2009; fvcore's and ptflops' MAC conventions for the zoo figures.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_ANALYSIS_COSTMODEL_H
#define SNUG_PASSES_ANALYSIS_COSTMODEL_H

#include "ir/Module.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <cstdint>

namespace snug {

/// One dtype's share of a cost.
struct DTypeCost {
  /// Every operation computed in this dtype (a multiply-add is 2).
  uint64_t flops = 0;
  /// The part of `flops` done by contractions (Conv, ConvTranspose, MatMul,
  /// Gemm): what tensor cores can run.
  uint64_t contractionFlops = 0;
  /// The part of `contractionFlops` multiplied in TF32 (f32 contractions
  /// --precision=tf32 marks math = "tf32", passes/precision/Tf32Math.cpp).
  uint64_t tf32Flops = 0;
  uint64_t macs = 0;
  /// Bytes of tensors of this dtype read and written.
  uint64_t bytesRead = 0;
  uint64_t bytesWritten = 0;

  bool operator==(const DTypeCost &other) const {
    return flops == other.flops && contractionFlops == other.contractionFlops &&
           tf32Flops == other.tf32Flops && macs == other.macs &&
           bytesRead == other.bytesRead && bytesWritten == other.bytesWritten;
  }
};

/// The cost of a node, a group or a module: counts per dtype and their
/// totals. Adding costs adds every count.
class Cost {
public:
  /// One slot per dtype a DTypeSet can name.
  static constexpr unsigned NumDTypeSlots = sizeof(ir::DTypeSet) * 8;

  const DTypeCost &get(ir::DType type) const {
    return byDType[unsigned(type)];
  }
  DTypeCost &get(ir::DType type) { return byDType[unsigned(type)]; }

  uint64_t getFlops() const;
  uint64_t getContractionFlops() const;
  uint64_t getMacs() const;
  uint64_t getBytesRead() const;
  uint64_t getBytesWritten() const;
  uint64_t getBytesMoved() const { return getBytesRead() + getBytesWritten(); }
  /// FLOPs per byte moved; 0 when nothing moves.
  double getArithmeticIntensity() const;

  /// The dtypes with a nonzero count, in DType order.
  llvm::SmallVector<ir::DType, 4> getDTypes() const;

  Cost &operator+=(const Cost &other);
  bool operator==(const Cost &other) const { return byDType == other.byDType; }
  bool operator!=(const Cost &other) const { return !(*this == other); }

private:
  std::array<DTypeCost, NumDTypeSlots> byDType{};
};

/// How an op's FLOPs are counted (the rule CostModel.cpp applies); the
/// coverage test checks that every op of the table has one.
enum class CostRule {
  None,        ///< no rule: an op added to Ops.def without one
  View,        ///< no kernel: nothing
  Elementwise, ///< a fixed count per result element
  Variadic,    ///< Max/Min/Sum/Mean: per result element, per operand
  Contraction, ///< Conv, ConvTranspose, MatMul, Gemm: MACs
  Normalize,   ///< BatchNorm, InstanceNorm, LayerNorm, LRN
  Softmax,     ///< Softmax, LogSoftmax, Hardmax
  Pool,        ///< windowed and global pools
  Reduction,   ///< Reduce*, ArgMax, ArgMin
  Resize,      ///< interpolation per result element
  Movement,    ///< copies and index computations: bytes only
};

/// The rule `op` is counted by: View and Elementwise (or Variadic) from the
/// op table's traits, every other op's from its line in CostRules.def.
CostRule getCostRule(ir::OpCode op);
/// The rule CostRules.def's line gives `op`, None when it has no line (the
/// views and elementwise ops, or an op whose line is missing).
CostRule getDeclaredCostRule(ir::OpCode op);
llvm::StringRef getCostRuleName(CostRule rule);

/// The cost of one node: its FLOPs and its own reads and writes.
Cost costOfNode(const ir::Node &node);

/// Where a group of nodes meets the rest of the module.
struct GroupBoundary {
  /// Each value read from outside the group, once, with the bytes read of
  /// it (less than its size when only Gathers or Slices read it).
  llvm::SmallVector<std::pair<const ir::Value *, uint64_t>, 8> inputs;
  /// Each buffer the group writes for outside readers, once.
  llvm::SmallVector<const ir::Value *, 4> outputs;
};

/// The boundary of `nodes` (any order; each node once).
GroupBoundary findGroupBoundary(llvm::ArrayRef<const ir::Node *> nodes);

/// The cost of `nodes` run as one fused kernel: their FLOPs summed, bytes
/// at the boundary only.
Cost costOfGroup(llvm::ArrayRef<const ir::Node *> nodes);

/// FLOPs of `body` with bytes read of `inputs` and written of `outputs`:
/// the cost of a region whose boundary values are known (a fused node's
/// operands and results).
Cost costOfBody(llvm::ArrayRef<const ir::Node *> body,
                llvm::ArrayRef<const ir::Value *> inputs,
                llvm::ArrayRef<const ir::Value *> outputs);

/// Every node's cost summed: the module's FLOPs and its unfused traffic.
Cost costOfModule(const ir::Module &module);

/// Peak rates of a device, for the roofline. Figures are the vendor's
/// published peaks (dense, no sparsity, boost clock).
struct DeviceSpec {
  llvm::StringRef name;        ///< lookup key: "h200"
  llvm::StringRef displayName; ///< "H200"
  double memoryBytesPerSecond;
  /// f32 on the CUDA cores: every FLOP that is not a tensor-core one.
  double vectorFlopsPerSecond;
  /// f16/bf16 dense on the tensor cores: f16/bf16 contraction FLOPs.
  double tensorFlopsPerSecond;
  /// TF32 dense on the tensor cores (half the f16 rate on A100 and
  /// Hopper): the TF32 part of f32 contraction FLOPs; 0 when the device
  /// has none (they then run at vectorFlopsPerSecond).
  double tf32FlopsPerSecond = 0;

  /// The peak a FLOP of `type` runs at, in a contraction or not.
  double getPeakFlopsPerSecond(ir::DType type, bool contraction) const;
  /// The peak of a TF32 contraction FLOP.
  double getTf32FlopsPerSecond() const {
    return tf32FlopsPerSecond > 0 ? tf32FlopsPerSecond : vectorFlopsPerSecond;
  }
};

/// The device table, in one place.
llvm::ArrayRef<DeviceSpec> getDevices();
/// nullptr for a name the table does not list.
const DeviceSpec *lookupDevice(llvm::StringRef name);
/// The device reports use when none is named (H200).
const DeviceSpec &getDefaultDevice();

/// A roofline time estimate (seconds).
struct RooflineEstimate {
  /// Sum over nodes of max(compute, memory).
  double seconds = 0;
  /// The part of `seconds` spent in nodes whose compute time is the larger.
  double computeBoundSeconds = 0;
  unsigned computeBoundNodes = 0;
  unsigned memoryBoundNodes = 0;
};

/// max(compute, memory) of one cost run as one kernel.
double estimateSeconds(const Cost &cost, const DeviceSpec &device);
/// Compute time alone: FLOPs of each dtype over the peak they run at.
double estimateComputeSeconds(const Cost &cost, const DeviceSpec &device);
/// Each node as one kernel, one after the other; views are free.
RooflineEstimate estimateModule(const ir::Module &module,
                                const DeviceSpec &device);

} // namespace snug

#endif // SNUG_PASSES_ANALYSIS_COSTMODEL_H
