//===- MemoryPlannerSkylineTrees.h - Skyline search segment trees -*- C++ -*-===//
//
// The two segment trees of the skyline search (MemoryPlannerSkyline.cpp),
// over the sections of one partition: HeightTree keeps the skyline (range
// assignment, leftmost minimum, point value, first section above a height),
// SlackTree the slack left per section (range add, range minimum). Every
// operation is O(log S); both are reset in place between restarts, so a
// search allocates them once. Not part of the public API.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_PLANNER_MEMORYPLANNERSKYLINETREES_H
#define SNUG_PASSES_PLANNER_MEMORYPLANNERSKYLINETREES_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace snug {
namespace planner {

/// A height no section reaches (padding leaves, "no pending assignment").
constexpr uint64_t kNoHeight = std::numeric_limits<uint64_t>::max();

/// Heights per section: range assignment, global leftmost minimum, point
/// value and "first section at or after s above h", each O(log S).
class HeightTree {
public:
  explicit HeightTree(size_t n) : n(n) {
    leaves = 1;
    while (leaves < std::max<size_t>(n, 1))
      leaves *= 2;
    // Padding leaves are "infinitely high" so they never become the minimum
    // and always end a run.
    lo.assign(2 * leaves, kNoHeight);
    hi.assign(2 * leaves, kNoHeight);
    pending.assign(2 * leaves, kNoHeight);
    for (size_t s = 0; s < n; ++s)
      lo[leaves + s] = hi[leaves + s] = 0;
    for (size_t v = leaves - 1; v >= 1; --v)
      pull(v);
  }
  void reset() {
    std::fill(pending.begin(), pending.end(), kNoHeight);
    for (size_t s = 0; s < leaves; ++s)
      lo[leaves + s] = hi[leaves + s] = s < n ? 0 : kNoHeight;
    for (size_t v = leaves - 1; v >= 1; --v)
      pull(v);
  }
  /// The lowest height and the first section at it.
  std::pair<uint64_t, uint32_t> lowest() {
    size_t v = 1;
    while (v < leaves) {
      push(v);
      v = lo[2 * v] <= lo[2 * v + 1] ? 2 * v : 2 * v + 1;
    }
    return {lo[v], uint32_t(v - leaves)};
  }
  uint64_t at(uint32_t s) {
    size_t v = 1, l = 0, r = leaves;
    while (v < leaves) {
      push(v);
      size_t mid = (l + r) / 2;
      if (s < mid) {
        v = 2 * v;
        r = mid;
      } else {
        v = 2 * v + 1;
        l = mid;
      }
    }
    return lo[v];
  }
  /// The first section >= from whose height exceeds h (n if none).
  uint32_t firstAbove(uint32_t from, uint64_t h) {
    size_t found = findAbove(1, 0, leaves, from, h);
    return uint32_t(std::min(found, n));
  }
  void assign(uint32_t begin, uint32_t end, uint64_t value) {
    assign(1, 0, leaves, begin, end, value);
  }

private:
  void pull(size_t v) {
    lo[v] = std::min(lo[2 * v], lo[2 * v + 1]);
    hi[v] = std::max(hi[2 * v], hi[2 * v + 1]);
  }
  void apply(size_t v, uint64_t value) {
    lo[v] = hi[v] = value;
    if (v < leaves)
      pending[v] = value;
  }
  void push(size_t v) {
    if (pending[v] == kNoHeight)
      return;
    apply(2 * v, pending[v]);
    apply(2 * v + 1, pending[v]);
    pending[v] = kNoHeight;
  }
  size_t findAbove(size_t v, size_t l, size_t r, size_t from, uint64_t h) {
    if (r <= from || hi[v] <= h)
      return leaves;
    if (v >= leaves)
      return l;
    push(v);
    size_t mid = (l + r) / 2;
    size_t left = findAbove(2 * v, l, mid, from, h);
    return left != leaves ? left : findAbove(2 * v + 1, mid, r, from, h);
  }
  void assign(size_t v, size_t l, size_t r, size_t begin, size_t end,
              uint64_t value) {
    if (end <= l || r <= begin)
      return;
    if (begin <= l && r <= end) {
      apply(v, value);
      return;
    }
    push(v);
    size_t mid = (l + r) / 2;
    assign(2 * v, l, mid, begin, end, value);
    assign(2 * v + 1, mid, r, begin, end, value);
    pull(v);
  }
  size_t n, leaves;
  std::vector<uint64_t> lo, hi, pending;
};

/// Slack left per section: range add and range minimum, O(log S).
class SlackTree {
public:
  explicit SlackTree(const std::vector<uint64_t> &initial) : n(initial.size()) {
    leaves = 1;
    while (leaves < std::max<size_t>(n, 1))
      leaves *= 2;
    base = initial;
    reset();
  }
  void reset() {
    lo.assign(2 * leaves, std::numeric_limits<int64_t>::max());
    add.assign(2 * leaves, 0);
    for (size_t s = 0; s < n; ++s)
      lo[leaves + s] = int64_t(std::min<uint64_t>(base[s], uint64_t(1) << 62));
    for (size_t v = leaves - 1; v >= 1; --v)
      lo[v] = std::min(lo[2 * v], lo[2 * v + 1]);
  }
  int64_t min(uint32_t begin, uint32_t end) {
    return query(1, 0, leaves, begin, end);
  }
  void change(uint32_t begin, uint32_t end, int64_t delta) {
    update(1, 0, leaves, begin, end, delta);
  }

private:
  int64_t query(size_t v, size_t l, size_t r, size_t begin, size_t end) {
    if (end <= l || r <= begin)
      return std::numeric_limits<int64_t>::max();
    if (begin <= l && r <= end)
      return lo[v];
    size_t mid = (l + r) / 2;
    return add[v] + std::min(query(2 * v, l, mid, begin, end),
                             query(2 * v + 1, mid, r, begin, end));
  }
  void update(size_t v, size_t l, size_t r, size_t begin, size_t end,
              int64_t delta) {
    if (end <= l || r <= begin)
      return;
    if (begin <= l && r <= end) {
      lo[v] += delta;
      add[v] += delta;
      return;
    }
    size_t mid = (l + r) / 2;
    update(2 * v, l, mid, begin, end, delta);
    update(2 * v + 1, mid, r, begin, end, delta);
    lo[v] = add[v] + std::min(lo[2 * v], lo[2 * v + 1]);
  }
  size_t n, leaves;
  std::vector<uint64_t> base;
  std::vector<int64_t> lo, add;
};

} // namespace planner
} // namespace snug

#endif // SNUG_PASSES_PLANNER_MEMORYPLANNERSKYLINETREES_H
