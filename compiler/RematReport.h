//===- RematReport.h - What rematerialization did to a module ---*- C++ -*-===//
//
// Read from the module attributes the remat pass records (passes/memory/budget/Remat.cpp):
// the arena and FLOPs before its first decision, how many values it
// recomputed, and one line per decision. Extra FLOPs are the module's FLOPs
// now (the cost model's count, passes/analysis/CostModel.h) minus those before; the
// peak before is the weights plus the arena before, as the report adds them.
// A module remat never ran on has applied == false. Offload (passes/
// Offload.cpp) records its own attributes the same way: the values parked
// in pinned host memory, the bytes copied out (and back), one line per
// decision; the pinned host region is the plan's host_arena.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_REMATREPORT_H
#define SNUG_COMPILER_REMATREPORT_H

#include "ir/Module.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snug {

struct RematSummary {
  bool applied = false;
  uint64_t arenaBeforeBytes = 0;
  uint64_t peakBeforeBytes = 0;
  uint64_t flopsBefore = 0;
  /// FLOPs added (a move adds none; never negative in practice, clamped).
  uint64_t extraFlops = 0;
  /// Nodes run a second time (copies whose original stayed).
  unsigned nodesRecomputed = 0;
  std::vector<std::string> decisions;
};

struct OffloadSummary {
  bool applied = false;
  unsigned values = 0;
  /// Bytes copied to pinned host memory (each comes back once).
  uint64_t bytes = 0;
  /// The pinned host region the runtime allocates (cuMemHostAlloc).
  uint64_t pinnedHostBytes = 0;
  std::vector<std::string> decisions;
};

/// `weightsBytes` and `flopsNow` are the report's own figures.
RematSummary summarizeRemat(const ir::Module &module, uint64_t weightsBytes,
                            uint64_t flopsNow);

OffloadSummary summarizeOffload(const ir::Module &module);

/// --print-remat: one line per decision, then the totals (offload's first
/// when it ran: it runs before remat).
void printRemat(const RematSummary &summary, const OffloadSummary &offload,
                uint64_t peakAfterBytes, llvm::raw_ostream &os);

} // namespace snug

#endif // SNUG_COMPILER_REMATREPORT_H
