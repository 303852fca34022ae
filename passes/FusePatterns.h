//===- FusePatterns.h - Patterns exporters leave, rewritten as one op -*- C++ -*-===//
//
// The fuse pass (passes/Fuse.cpp) runs these before it groups elementwise
// nodes: each recognizes a subgraph by its structure (ops, operand
// positions, constants, users), never by node names, and replaces it by the
// op that computes the same function in one kernel.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_FUSEPATTERNS_H
#define SNUG_PASSES_FUSEPATTERNS_H

#include "ir/Module.h"

#include <cstring>
#include <vector>

namespace snug {

/// The values of an f32 weight that holds `count` of them (false for
/// anything else: a graph input, an elided weight, another type or size):
/// how the patterns read the constants they fold.
inline bool readF32Weight(const ir::Module &module, const ir::Value *value,
                          int64_t count, std::vector<float> &into) {
  if (!value || !value->isWeight() || value->isWeightElided() ||
      value->getType().getDType() != ir::DType::F32 ||
      value->getType().getNumElements() != count)
    return false;
  llvm::ArrayRef<uint8_t> data = module.getWeightData(value);
  if (data.size() != size_t(count) * sizeof(float))
    return false;
  into.resize(size_t(count));
  if (count)
    std::memcpy(into.data(), data.data(), data.size());
  return true;
}

/// ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul (, Add) over the
/// trailing dims -> LayerNormalization (LayerNormPattern.cpp). Returns how
/// many were rewritten.
unsigned rewriteDecomposedLayerNorms(ir::Module &module);

/// An inference BatchNormalization after a Conv with constant weights,
/// folded into the Conv's weight and bias (BatchNormPattern.cpp). Returns
/// how many were folded.
unsigned foldBatchNormsIntoConvs(ir::Module &module);

/// Every other inference BatchNormalization of f32 with constant
/// parameters, as Mul and Add by per-channel constants that fuse with their
/// neighbours (BatchNormPattern.cpp). Returns how many were rewritten.
unsigned rewriteBatchNormsAsAffine(ir::Module &module);

/// A Conv (an op that takes an epilogue) whose one reader is an
/// elementwise node or snug.fused group takes it as its epilogue
/// (EpiloguePattern.cpp). Runs after grouping. Returns how many were fused.
unsigned fuseEpilogues(ir::Module &module);

} // namespace snug

#endif // SNUG_PASSES_FUSEPATTERNS_H
