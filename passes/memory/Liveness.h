//===- Liveness.h - Buffers and their live intervals ------------*- C++ -*-===//
//
// Turns a scheduled module into the planner's problem: which values share a
// buffer, where inside it each sits, and the closed step interval over which
// each buffer must keep its bytes. Node i of the schedule runs at step i; a
// node's operands and results are live at its step together (a kernel reads
// while it writes). Graph inputs are live from step 0, graph outputs to the
// last step. Weights live in the weights section and have no buffer.
//
// Three rules let values share memory, each lowering the lower bound itself:
//  - views: Reshape, Flatten, Squeeze, Unsqueeze and Identity results are
//    their operand's bytes (row-major data does not move);
//  - in place: an elementwise node writes its result over an operand of the
//    same type whose buffer dies at that node (never a graph input or
//    output, whose bytes belong to the caller);
//  - concat in place: when every operand of a Concat is one contiguous block
//    of its result (all dims before the axis are 1), producers write straight
//    into their slice and the copy disappears. The whole result then lives
//    from its first operand's definition, which can cost more than it saves,
//    so an operand is only taken in when a running upper bound of the live
//    bytes per step stays within the bound without sharing. That bound is
//    loose (a skip connection's operand taken in holds the whole result
//    across everything in between: U-Net), so computeLiveness then tries
//    each operand taken in out of it again (those that stretch the result
//    most first, at most 64) and leaves it out where that lowers the peak.
// Each rule can be turned off (LivenessOptions) to measure what it saves.
//
// Host-resident values (results of an op with the HostResult trait, the
// snug.offload copies) are not in the device arena: each gets a buffer of
// its own in hostBuffers, planned apart into the pinned host region, and no
// device buffer or step footprint counts them.
// This file decides sharing only; offsets are MemoryPlanner's business.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_MEMORY_LIVENESS_H
#define SNUG_PASSES_MEMORY_LIVENESS_H

#include "ir/Module.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace snug {

struct LivenessOptions {
  bool views = true;
  bool inPlace = true;
  bool concatInPlace = true;
  /// With concatInPlace: also place Concats whose operands are a prefix of
  /// a later Concat's (DenseNet) inside the later one's buffer, when that
  /// gives the lower bound.
  bool concatPrefixes = true;
  /// Footprints round up to this when concat in place checks that it does
  /// not raise the bound (the planner's alignment).
  uint64_t alignment = 1;
};

/// A set of values stored in one block of the arena.
struct LiveBuffer {
  /// Bytes of the block: max over members of offsetInBuffer + bytes.
  uint64_t bytes = 0;
  int64_t firstStep = 0;
  int64_t lastStep = 0;
  /// The value whose definition created the buffer, then the others.
  llvm::SmallVector<const ir::Value *, 2> values;
  /// Why members joined: "view", "in-place", "concat" (parallel to values;
  /// the first entry is "").
  llvm::SmallVector<const char *, 2> reasons;
};

struct ValueStorage {
  unsigned buffer = 0;
  uint64_t offsetInBuffer = 0;
  /// `buffer` indexes LivenessInfo::hostBuffers, not buffers.
  bool host = false;
};

/// Whether `value` lives in the pinned host region (a HostResult op's
/// result) rather than in the device arena.
bool isHostResident(const ir::Value *value);

struct LivenessInfo {
  std::vector<LiveBuffer> buffers;
  /// Buffers of the pinned host region: one per host-resident value.
  std::vector<LiveBuffer> hostBuffers;
  /// Every graph input and node result; weights are absent.
  llvm::DenseMap<const ir::Value *, ValueStorage> storage;
  /// Steps run from 0 to numSteps - 1 (at least 1).
  int64_t numSteps = 1;
  /// Per value: the step that defines it and the last step that needs it.
  llvm::DenseMap<const ir::Value *, std::pair<int64_t, int64_t>> intervals;
  /// How many times computeLiveness rebuilt this to try a Concat operand
  /// out of its result (at most kMaxConcatTrials, fewer on long modules).
  size_t concatTrials = 0;
};

LivenessInfo computeLiveness(const ir::Module &module,
                             const LivenessOptions &options = {});

} // namespace snug

#endif // SNUG_PASSES_MEMORY_LIVENESS_H
