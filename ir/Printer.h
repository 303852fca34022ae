//===- Printer.h - Textual form of a module ---------------------*- C++ -*-===//
//
// Prints a module in snug's textual IR:
//
//   func @mlp(%x: f32[1,64], %w: f32[64,64] weight, %b: f32[64] weight = [..])
//       -> f32[1,64] attributes {arena = 512} {
//     %0 = MatMul(%x, %w) : f32[1,64]
//     %1 = Add(%0, %b) : f32[1,64] {offset = 256}
//     %2, %3 = Split(%1) {axis = 1} : f32[1,32], f32[1,32] loc("split1")
//     return %2, %3
//   }
//
// A node with a body prints it after the node, one level further in:
//
//     %4 = snug.fused(%x, %b) : f32[1,64] {offset = 0} {
//     ^bb(%5: f32[1,64], %6: f32[64]):
//       %7 = Add(%5, %6) : f32[1,64]
//       yield %7
//     }
//
// Deterministic: values keep their names; unnamed ones are numbered in
// definition order (a node's results, then its block arguments and body);
// attributes print sorted. Weights with more elements than
// the elision limit print as `weight` alone and read back as elided.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_PRINTER_H
#define SNUG_IR_PRINTER_H

#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace snug {
namespace ir {

class Module;

struct PrintOptions {
  /// Weights with more elements than this print without their data.
  int64_t elideWeightsOver = 16;
};

void printModule(const Module &module, llvm::raw_ostream &os,
                 const PrintOptions &options = {});

} // namespace ir
} // namespace snug

#endif // SNUG_IR_PRINTER_H
