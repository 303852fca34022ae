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

namespace snug {
namespace ir {
class Module;
} // namespace ir

/// ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul (, Add) over the
/// trailing dims -> LayerNormalization (LayerNormPattern.cpp). Returns how
/// many were rewritten.
unsigned rewriteDecomposedLayerNorms(ir::Module &module);

/// An inference BatchNormalization after a Conv with constant weights,
/// folded into the Conv's weight and bias (BatchNormPattern.cpp). Returns
/// how many were folded.
unsigned foldBatchNormsIntoConvs(ir::Module &module);

} // namespace snug

#endif // SNUG_PASSES_FUSEPATTERNS_H
