//===- PlanTimeline.h - A picture of the arena plan -------------*- C++ -*-===//
//
// Writes one self-contained HTML page (inline SVG, no scripts, no network)
// drawing a planned module's arena: address upward, schedule step to the
// right, each buffer a rectangle whose tooltip gives its values, producing
// ops, bytes and live steps; beside it, the live bytes per step with the
// lower bound and the arena size as lines. Scratch buffers (a GEMM's cuBLAS
// workspace) are dark grey, one step wide. The plan comes from
// getModuleMemoryPlan.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_PLANTIMELINE_H
#define SNUG_COMPILER_PLANTIMELINE_H

#include "ir/Module.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace snug {

llvm::Error writePlanTimeline(const ir::Module &module, llvm::StringRef title,
                              llvm::raw_ostream &os);

} // namespace snug

#endif // SNUG_COMPILER_PLANTIMELINE_H
