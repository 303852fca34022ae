//===- MemoryPlannerStateSet.h - Hashed set of dead search states -*- C++ -*-===//
//
// The transposition table of the planner's exact searches (the skyline
// search, MemoryPlannerSkyline.cpp, and the time sweep,
// MemoryPlannerTimeSweep.cpp): 64-bit hashes of states every branch of which
// failed, so that a state reached again by another order (or by a later
// restart) is cut off at once. Open addressing with linear probing, at most
// half full; it starts small, doubles up to a cap and is then emptied, so
// there is no per-key allocation and what growth costs is reported to the
// caller to charge as work. A hash collision can only cost a packing, never
// produce an invalid one. Not part of the public API.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_MEMORYPLANNERSTATESET_H
#define SNUG_PASSES_MEMORYPLANNERSTATESET_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace snug {
namespace planner {

/// A set of 64-bit state hashes (the low bit is used as the occupied tag).
class DeadStateSet {
public:
  /// Slots: minSlots at first, doubling up to maxSlots (powers of two).
  explicit DeadStateSet(size_t minSlots = size_t(1) << 12,
                        size_t maxSlots = size_t(1) << 23)
      : slots(minSlots, 0), maxSlots(maxSlots) {}
  bool contains(uint64_t key) const {
    uint64_t tag = key | 1, mask = slots.size() - 1;
    for (uint64_t k = tag & mask; slots[k]; k = (k + 1) & mask)
      if (slots[k] == tag)
        return true;
    return false;
  }
  /// Inserts key; returns the slots touched by a resize (work to charge).
  uint64_t insert(uint64_t key) {
    uint64_t work = 0;
    if (2 * (count + 1) > slots.size()) {
      std::vector<uint64_t> old;
      old.swap(slots);
      slots.assign(old.size() < maxSlots ? 2 * old.size() : old.size(), 0);
      count = 0;
      work = old.size();
      if (slots.size() > old.size())
        for (uint64_t tag : old)
          if (tag)
            insertTag(tag);
    }
    insertTag(key | 1);
    return work;
  }

private:
  void insertTag(uint64_t tag) {
    uint64_t mask = slots.size() - 1, k = tag & mask;
    while (slots[k] && slots[k] != tag)
      k = (k + 1) & mask;
    count += slots[k] == 0;
    slots[k] = tag;
  }
  std::vector<uint64_t> slots;
  size_t maxSlots;
  size_t count = 0;
};

} // namespace planner
} // namespace snug

#endif // SNUG_PASSES_MEMORYPLANNERSTATESET_H
