//===- RematReport.cpp - What rematerialization did to a module -----------===//
#include "compiler/RematReport.h"

#include "llvm/Support/Format.h"

namespace snug {

static uint64_t readInt(const ir::Module &module, llvm::StringRef name) {
  const ir::Attribute *attr = module.getAttribute(name);
  return attr && attr->getKind() == ir::Attribute::Kind::Int &&
                 attr->getInt() > 0
             ? uint64_t(attr->getInt())
             : 0;
}

RematSummary summarizeRemat(const ir::Module &module, uint64_t weightsBytes,
                            uint64_t flopsNow) {
  RematSummary summary;
  const ir::Attribute *decisions = module.getAttribute("remat_decisions");
  if (!module.getAttribute("remat_arena_before") || !decisions ||
      decisions->getKind() != ir::Attribute::Kind::Strings)
    return summary;
  summary.applied = true;
  summary.arenaBeforeBytes = readInt(module, "remat_arena_before");
  summary.peakBeforeBytes = weightsBytes + summary.arenaBeforeBytes;
  summary.flopsBefore = readInt(module, "remat_flops_before");
  summary.extraFlops =
      flopsNow > summary.flopsBefore ? flopsNow - summary.flopsBefore : 0;
  summary.nodesRecomputed = unsigned(readInt(module, "remat_values"));
  for (const std::string &line : decisions->getStrings())
    summary.decisions.push_back(line);
  return summary;
}

OffloadSummary summarizeOffload(const ir::Module &module) {
  OffloadSummary summary;
  const ir::Attribute *decisions = module.getAttribute("offload_decisions");
  if (!decisions || decisions->getKind() != ir::Attribute::Kind::Strings)
    return summary;
  summary.applied = true;
  summary.values = unsigned(readInt(module, "offload_values"));
  summary.bytes = readInt(module, "offload_bytes");
  summary.pinnedHostBytes = readInt(module, "host_arena");
  for (const std::string &line : decisions->getStrings())
    summary.decisions.push_back(line);
  return summary;
}

void printRemat(const RematSummary &summary, const OffloadSummary &offload,
                uint64_t peakAfterBytes, llvm::raw_ostream &os) {
  if (offload.applied) {
    for (size_t i = 0; i < offload.decisions.size(); ++i)
      os << "offload " << (i + 1) << ": " << offload.decisions[i] << '\n';
    os << "offload: " << offload.values << " values, " << offload.bytes
       << " B copied out and back; pinned host region "
       << offload.pinnedHostBytes << " B\n";
  }
  if (!summary.applied) {
    os << "remat: not run (no --memory-budget, or the weights alone are over it)\n";
    return;
  }
  for (size_t i = 0; i < summary.decisions.size(); ++i)
    os << "remat " << (i + 1) << ": " << summary.decisions[i] << '\n';
  os << "remat: " << summary.decisions.size() << " decisions, "
     << summary.nodesRecomputed << " nodes recomputed, +"
     << summary.extraFlops << " FLOPs";
  if (summary.flopsBefore)
    os << llvm::format(" (%.2f%% of the model)",
                       100.0 * double(summary.extraFlops) /
                           double(summary.flopsBefore));
  os << "; predicted peak " << summary.peakBeforeBytes << " B -> "
     << peakAfterBytes << " B\n";
}

} // namespace snug
