//===- HostExecutor.h - Running a host plan in one host arena ---*- C++ -*-===//
//
// The host executor runs a bundle's host plan with the reference kernels. It
// allocates one arena of exactly the planned size (64-byte aligned) or
// borrows the caller's, binds every operand and result to its planned place
// (arena offset or weights offset) once, at creation, and then only calls
// kernels: a run allocates nothing in the arena's stead and touches no byte
// outside the planned locations. It is the oracle on machines without a
// GPU, not a fast path.
//
// A bundle with persistent state (its State section) gets a private,
// writable copy of its weights, made once at creation; every run ends by
// copying each state's output over its weight (a copy after the step, when
// nothing reads the old value any more), so the next run is the next step.
// getState reads a state's current bytes.
//
// With poisoning on, every run first fills the arena with 0xFF bytes (NaN in
// every float type, -1 in the integers) except where the graph inputs are,
// so a kernel that reads memory the plan never wrote shows up as NaN.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_HOST_HOSTEXECUTOR_H
#define SNUG_RUNTIME_HOST_HOSTEXECUTOR_H

#include "runtime/BundleReader.h"
#include "runtime/host/Kernels.h"

#include <memory>
#include <vector>

namespace snug {
namespace rt {

/// Checks that the host has a kernel for every op of the plan; the error
/// names the first op without one.
Status checkHostSupport(const Bundle &bundle);

class HostExecutor {
public:
  /// `arena` may be null (allocate) or a caller buffer of `arenaBytes`.
  static Status create(const Bundle &bundle, void *arena, uint64_t arenaBytes,
                       bool poison, std::unique_ptr<HostExecutor> &out);
  ~HostExecutor();

  Status run();
  uint8_t *getArena() { return arena; }
  /// The current bytes of persistent state `entry` (one of the bundle's).
  const uint8_t *getState(const StateDesc &entry) const {
    return weights + entry.weightOffset;
  }
  void setPoison(bool enabled) { poison = enabled; }

private:
  HostExecutor() = default;
  struct BoundOp {
    Kernel kernel;
    KernelContext context;
    /// snug.skip_if: the ops after it to skip when its condition equals
    /// `skipWhen` (0: not a skip).
    size_t skipCount = 0;
    bool skipWhen = false;
  };

  uint8_t *arena = nullptr;
  bool ownsArena = false;
  /// The pinned host region's stand-in (offloaded values); host memory
  /// like the arena here, a separate block so offsets mean what they mean
  /// on the device.
  uint8_t *hostRegion = nullptr;
  bool poison = false;
  std::vector<BoundOp> ops;
  const Bundle *bundle = nullptr;
  /// The weights the plan reads: the bundle's, or with state the private
  /// copy `ownedWeights`.
  uint8_t *weights = nullptr;
  uint8_t *ownedWeights = nullptr;
  /// Arena ranges outside every input: what poisoning fills.
  std::vector<std::pair<uint64_t, uint64_t>> poisonRanges;
};

} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_HOST_HOSTEXECUTOR_H
