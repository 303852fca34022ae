//===- PrecisionReport.h - What precision each op runs in ------*- C++ -*-===//
//
// Read from a module after the lower-precision pass (its `precision`
// attribute names the lowered type): per op type, how many nodes compute
// in the lowered type and how many stay in f32 (kept by a rule, by
// --keep-fp32 or --calibration, or because the op does not take it), and
// the inserted casts. Nodes inside fused groups count under their own op.
// A module that was not lowered has an empty precision. Under
// --precision=tf32 (the module's math = "tf32", passes/precision/Tf32Math.cpp)
// storage stays f32: precision is "tf32", and the counts are of the
// contractions (Conv, MatMul, Gemm on f32) multiplying in TF32 and of those
// kept at full f32 math; no casts.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_PRECISIONREPORT_H
#define SNUG_COMPILER_PRECISIONREPORT_H

#include "ir/Module.h"

#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>

namespace snug {

struct PrecisionSummary {
  std::string precision; ///< "f16", "bf16", "tf32", or "" when not lowered
  /// The math mode of the contractions: "tf32" (storage f32), or "" (they
  /// compute in their storage type).
  std::string math;
  unsigned lowered = 0, keptF32 = 0, casts = 0;
  /// What the model takes in fp32, planned the same way (snugc and the
  /// Python package record it: recordFp32Baseline in compiler/Driver.h);
  /// 0 when not recorded (a module lowered by --passes alone).
  uint64_t weightsBeforeBytes = 0, arenaBeforeBytes = 0;
  /// A training step's master weights and optimizer state (ir/State.h):
  /// their dtype ("f32"; "mixed" when they differ), "" without state.
  std::string stateDType;
  /// The bytes of the values the nodes compute (activations, gradients,
  /// the update's temporaries) in the lowered dtype and in f32.
  uint64_t loweredValueBytes = 0, f32ValueBytes = 0;
  /// op type -> (lowered, kept in f32)
  std::map<std::string, std::pair<unsigned, unsigned>> byOp;
};

PrecisionSummary summarizePrecision(const ir::Module &module);

/// --print-precision: the per-op table, then the totals.
void printPrecision(const PrecisionSummary &summary, llvm::raw_ostream &os);

} // namespace snug

#endif // SNUG_COMPILER_PRECISIONREPORT_H
