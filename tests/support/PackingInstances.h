//===- PackingInstances.h - Generated packing problems ----------*- C++ -*-===//
//
// Deterministic generators of planMemory problems for tests and benchmarks:
//  - guillotine tilings: a capacity x steps rectangle cut by random
//    guillotine cuts; each piece is a buffer (address extent = size, time
//    extent = live interval). The pieces tile the rectangle, so every step is
//    exactly full and the optimum arena equals the lower bound, capacity;
//  - training-like traces: long-lived parameters, gradients living from the
//    backward step that makes them to the optimizer, forward activations
//    saved for the backward pass (nested lifetimes), short-lived temporaries,
//    many small buffers and a few huge ones.
//
// Both use a portable splitmix64 stream, so a (size, seed) pair gives the
// same problem on every run (the training sizes go through log2/pow, so
// another libm could round one differently). They do not read files; see BufferTrace.h for
// recorded traces.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_SUPPORT_PACKINGINSTANCES_H
#define SNUG_TESTS_SUPPORT_PACKINGINSTANCES_H

#include "passes/planner/MemoryPlanner.h"

#include <cstdint>
#include <vector>

namespace snug {

/// splitmix64 (Steele, Lea and Flood, 2014): a portable random stream, so
/// generated problems are the same on every platform. Shared by the
/// generators, the planner's tests and the packing bench.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t x = (state += 0x9e3779b97f4a7c15ULL);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  uint64_t below(uint64_t bound) { return next() % bound; }
};

/// A tiling of capacity bytes x steps steps into pieces buffers (fewer if
/// the rectangle cannot be cut that often), alignment 1; ids are 0, 1, ...
/// in creation order. Requires capacity >= 1 and steps >= 1.
std::vector<PlanBuffer> makeGuillotineTiling(uint64_t capacity, int64_t steps,
                                             size_t pieces, uint64_t seed);

/// A training step of about numBuffers buffers (at least one layer's worth),
/// sizes multiples of 256 with alignment 256.
std::vector<PlanBuffer> makeTrainingTrace(size_t numBuffers, uint64_t seed);

} // namespace snug

#endif // SNUG_TESTS_SUPPORT_PACKINGINSTANCES_H
