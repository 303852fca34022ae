//===- PackingInstances.cpp - Generated packing problems ------------------===//
//
// The guillotine-tiling and training-trace generators declared in
// PackingInstances.h. Everything is driven by one splitmix64 stream; the
// tilings use integer arithmetic only, the training sizes a log-uniform draw
// (log2/pow) rounded to 256-byte units.
//
//===----------------------------------------------------------------------===//
#include "tests/support/PackingInstances.h"

#include <algorithm>
#include <cmath>

using namespace snug;

namespace {

/// The shared stream, with the generators' draws.
struct Random : SplitMix64 {
  uint64_t below(uint64_t bound) { return bound ? next() % bound : 0; }
  /// Log-uniform in [lo, hi] bytes, rounded up to 256-byte units.
  uint64_t bytes(uint64_t lo, uint64_t hi) {
    double a = std::log2(double(lo)), b = std::log2(double(hi));
    double e = a + (b - a) * double(below(1 << 20)) / double(1 << 20);
    return (uint64_t(std::pow(2.0, e)) + 255) / 256 * 256;
  }
};

/// A piece of the tiling: bytes [a0, a1) over steps [t0, t1).
struct Rect {
  uint64_t a0, a1;
  int64_t t0, t1;
};

} // namespace

std::vector<PlanBuffer> snug::makeGuillotineTiling(uint64_t capacity,
                                                   int64_t steps, size_t pieces,
                                                   uint64_t seed) {
  Random random{seed};
  std::vector<Rect> open{{0, capacity, 0, steps}}, done;
  while (!open.empty() && open.size() + done.size() < pieces) {
    size_t k = random.below(open.size());
    Rect rect = open[k];
    bool byAddress = rect.a1 - rect.a0 >= 2, byTime = rect.t1 - rect.t0 >= 2;
    if (!byAddress && !byTime) {
      open[k] = open.back();
      open.pop_back();
      done.push_back(rect);
      continue;
    }
    // Cut across the relatively longer side more often, so pieces stay
    // varied instead of turning into slivers.
    if (byAddress && byTime) {
      uint64_t h = (rect.a1 - rect.a0) * 1024 / capacity;
      uint64_t w = uint64_t(rect.t1 - rect.t0) * 1024 / uint64_t(steps);
      byAddress = random.below(h + w + 2) < h + 1;
    }
    Rect other = rect;
    if (byAddress) {
      uint64_t cut = rect.a0 + 1 + random.below(rect.a1 - rect.a0 - 1);
      rect.a1 = other.a0 = cut;
    } else {
      int64_t cut = rect.t0 + 1 + int64_t(random.below(rect.t1 - rect.t0 - 1));
      rect.t1 = other.t0 = cut;
    }
    open[k] = rect;
    open.push_back(other);
  }
  done.insert(done.end(), open.begin(), open.end());
  std::vector<PlanBuffer> buffers;
  for (const Rect &rect : done) {
    PlanBuffer buffer;
    buffer.id = int64_t(buffers.size());
    buffer.bytes = rect.a1 - rect.a0;
    buffer.firstStep = rect.t0;
    buffer.lastStep = rect.t1 - 1;
    buffers.push_back(buffer);
  }
  return buffers;
}

std::vector<PlanBuffer> snug::makeTrainingTrace(size_t numBuffers,
                                                uint64_t seed) {
  // Per layer: weight and bias (live all step), their gradients (from the
  // layer's backward step to the optimizer), kOps forward outputs (saved
  // for backward or consumed at once), and per op a gradient and a
  // workspace in the backward pass.
  constexpr int64_t kOps = 4;
  constexpr size_t kPerLayer = 4 + 3 * kOps;
  Random random{seed};
  int64_t layers = int64_t(std::max<size_t>(numBuffers / kPerLayer, 1));
  int64_t forwardSteps = layers * kOps;
  int64_t optimizerStep = 2 * forwardSteps;
  auto backwardOf = [&](int64_t step) { return 2 * forwardSteps - 1 - step; };
  std::vector<PlanBuffer> buffers;
  auto add = [&](uint64_t bytes, int64_t first, int64_t last) {
    PlanBuffer buffer;
    buffer.id = int64_t(buffers.size());
    buffer.bytes = bytes;
    buffer.alignment = 256;
    buffer.firstStep = first;
    buffer.lastStep = last;
    buffers.push_back(buffer);
  };
  for (int64_t layer = 0; layer < layers; ++layer) {
    int64_t firstOp = layer * kOps;
    // A few embedding- or projection-sized weights, many small ones.
    uint64_t weight = random.below(64) == 0 ? random.bytes(64 << 20, 512 << 20)
                                            : random.bytes(16 << 10, 16 << 20);
    uint64_t bias = random.bytes(256, 16 << 10);
    add(weight, 0, optimizerStep);
    add(bias, 0, optimizerStep);
    int64_t gradStart = backwardOf(firstOp + kOps - 1);
    add(weight, gradStart, optimizerStep);
    add(bias, gradStart, optimizerStep);
    for (int64_t op = 0; op < kOps; ++op) {
      int64_t step = firstOp + op;
      uint64_t activation = random.below(128) == 0
                                ? random.bytes(128 << 20, 1 << 30)
                                : random.bytes(4 << 10, 32 << 20);
      bool saved = random.below(10) < 6;
      add(activation, step, saved ? backwardOf(step) : step + 1);
      int64_t back = backwardOf(step);
      add(activation, back, std::min(back + 1, optimizerStep));
      add(random.bytes(256, 1 << 20), back, back);
    }
  }
  return buffers;
}
