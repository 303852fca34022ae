//===- FusionReport.h - What fusion did to a module -------------*- C++ -*-===//
//
// Read from the module itself, after the pipeline: every snug.fused node is
// one group (passes/fusion/Fuse.cpp made it, or a hand-written IR did), and so is
// every op with an epilogue (its op and the body's, pattern "epilogue"). Its body
// nodes are the nodes it replaced, and its body values that it does not
// yield are the intermediates the arena no longer holds. A snug.attention
// is one too: its products, mask and Softmax, and their score-sized
// results. Kernels count the
// nodes an executor launches one by one: views (Reshape and its kind) run
// no kernel, and a fused node runs one for its whole body.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_FUSIONREPORT_H
#define SNUG_COMPILER_FUSIONREPORT_H

#include "ir/Module.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace snug {

/// One fused node.
struct FusedGroup {
  std::string name;  ///< the node's name (its root's ONNX name)
  std::string pattern; ///< "elementwise", "epilogue" or "attention"
  std::vector<std::string> ops; ///< body ops, in order
  unsigned results = 0;
  /// Body values not yielded, and their bytes at their own types.
  unsigned intermediates = 0;
  uint64_t intermediateBytes = 0;
};

struct FusionSummary {
  std::vector<FusedGroup> groups;
  unsigned nodesFused = 0;
  /// Kernels with every fused node's body run node by node, and as planned.
  unsigned kernelsBefore = 0;
  unsigned kernelsAfter = 0;
  uint64_t intermediateBytesRemoved = 0;
};

FusionSummary summarizeFusion(const ir::Module &module);

/// --print-fusion: one line per group, then the totals.
void printFusion(const FusionSummary &summary, llvm::raw_ostream &os);

} // namespace snug

#endif // SNUG_COMPILER_FUSIONREPORT_H
