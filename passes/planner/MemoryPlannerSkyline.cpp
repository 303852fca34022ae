//===- MemoryPlannerSkyline.cpp - Bottom-left skyline search --------------===//
//
// A budgeted depth-first search that fills a partition from the bottom up,
// always at the lowest point of its skyline, for a given capacity. It is
// sharpest where the capacity leaves little or no slack, which is where the
// canonical search (MemoryPlannerSearch.cpp) struggles: on a guillotine
// tiling at capacity = lower bound every section is exactly full, so no byte
// may ever be wasted.
//
// State: the skyline, per section the height below which everything is
// committed (placed buffers or declared waste). Let h* be its lowest height
// and s* the first section at that height, [s*, b) the maximal run of
// sections at h*. Whatever covers address h* in section s* must be a buffer
// that starts in section s* (section s* - 1, if any, is committed above h*),
// lies inside the run (every other section is committed at h*) and sits at
// h* rounded up to its alignment. So a node branches only on the unplaced
// buffers starting at s* that end by b, plus one "waste" branch that raises
// the run to its lower neighbour. Waste (including alignment padding) is
// charged per section against its slack, capacity minus the section's live
// total; a section whose waste would exceed its slack cannot be packed, so
// at zero slack the waste branch never exists and every hole is refused at
// once (the rule MiniMalloc and TelaMalloc prune with).
//
// Zero slack (every section exactly full at the capacity, as a tiling at
// its bound) gets a sharper, complete rule set instead of the lowest point:
// every run must be coverable at its height from each higher neighbour by a
// chain of buffers inside it; the section of a valley with the fewest
// buffers able to cover it is branched on (chooseZeroSlackBranching); and
// candidates are ordered by how flush their top is with the neighbouring
// skyline (the skyline heuristics' fitness). States every branch of which
// failed are remembered by a hash of the placed set and the skyline, which
// catches the many orders that reach the same state. Restarts (Luby
// limits, the step axis mirrored every other one, branch orders perturbed)
// undo early mistakes; when nothing fits the capacity, each restart's most
// complete state is finished by first fit and the lowest result is kept.
//
// Completeness: at zero slack the branching is complete, so a packing at
// capacity is found whenever the budget lets the search finish. With slack,
// raising a whole run to its lower neighbour skips packings in which a
// later-starting buffer would have used the run's lower part; the search is
// then a strong heuristic, never a proof of infeasibility. The caller only
// uses what it finds.
//
// Cost: with slack a node is O(log S) segment-tree work (the trees are in
// MemoryPlannerSkylineTrees.h) plus the buffers starting at s*, independent
// of the number of items, so the search also runs on partitions far larger
// than the canonical search's kMaxSearchItems; at zero slack the look-ahead
// makes a node O(S + items).
// It keeps no per-node allocations: an explicit stack with one pool of
// candidates, undone by reassigning the run's old height.
//
// References: the bottom-left/skyline rule of 2D strip packing (Wei, Oon,
// Zhu and Lim's skyline heuristics), applied to dynamic storage allocation
// with fixed time extents; slack accounting as in TelaMalloc (Maas et al.,
// ASPLOS 2023) and MiniMalloc's inference rule (Moffitt, ASPLOS 2023).
//
//===----------------------------------------------------------------------===//
#include "passes/planner/MemoryPlannerInternal.h"
#include "passes/planner/MemoryPlannerSkylineTrees.h"

#include <algorithm>
#include <limits>
#include <tuple>

using namespace snug;
using namespace snug::planner;

namespace {

constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kNodeWork = 32;
/// A hash-set probe, mostly a cache miss once the set is large.
constexpr uint64_t kHashWork = 64;
/// Slots of the dead-state set: it starts small and doubles up to 2^23
/// (64 MiB), then starts over.
constexpr size_t kMinDeadSlots = size_t(1) << 12;
constexpr size_t kMaxDeadSlots = size_t(1) << 23;

uint64_t alignUp(uint64_t value, uint64_t align) {
  return (value + align - 1) & ~(align - 1);
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The most complete packing seen by one restart (by placed area), kept so
/// that a failed search still leaves something to finish greedily. States
/// below floor (a share of the best area of earlier restarts) are not
/// copied: the first descent of every restart would otherwise copy its
/// whole path.
struct BestPartial {
  double area = 0, floor = 0;
  std::vector<uint64_t> offsets;
};

class SkylineSearch {
public:
  /// reverseTime mirrors the step axis (the search then fills from the
  /// other end of the partition).
  SkylineSearch(const Problem &problem, uint32_t part, uint64_t capacity,
                uint64_t seed, bool reverseTime);
  /// 1: found (offsets in solution), 0: not found, -1: budget spent.
  int run(uint64_t nodeLimit, unsigned variant, WorkBudget &budget);
  /// Where run() records its most complete state (nullptr: nowhere).
  void trackPartial(BestPartial *best) { partial = best; }
  const std::vector<uint64_t> &getSolution() const { return offset; }
  bool isHopeless() const { return hopeless; }

private:
  /// One node: the run it fills and how far its branches have got.
  struct Frame {
    uint64_t height;   // h*
    uint64_t raiseTo;  // the waste branch's height, kNone if unaffordable
    uint32_t section;  // s*
    uint32_t runEnd;   // b
    uint32_t candBegin, candEnd, next;
    int64_t applied;   // item placed, -2 for waste, -1 for nothing
    bool wasteTried;
  };
  bool pushFrame();
  void undo(Frame &frame);
  void setHeights(uint32_t begin, uint32_t end, uint64_t from, uint64_t to);
  uint64_t stateKey() const { return placedHash ^ mix(skyHash); }
  bool chooseZeroSlackBranching(Frame &frame);
  std::pair<size_t, size_t> countChainEnds(uint32_t l, uint32_t r, uint64_t h);
  bool chainCovers(uint32_t a, uint32_t b, uint32_t c, uint64_t h,
                   bool fromLeft);
  std::pair<size_t, uint32_t> leastCoveredSection(uint32_t l, uint32_t r,
                                                  uint64_t h);
  void sortCandidates(Frame &frame);

  size_t numItems = 0, numSections = 0;
  uint64_t capacity;
  std::vector<uint64_t> size, align, tieKey;
  std::vector<uint32_t> secLo, secHi;
  std::vector<uint32_t> startBegin, starts; // section -> items starting there
  std::vector<uint32_t> endBegin, ends;     // section -> items ending there
  // At zero slack: the skyline as a plain array too, for the look-ahead.
  bool zeroSlack = true;
  std::vector<uint64_t> sky;
  std::vector<uint32_t> reachRight, reachLeft, monotone;
  std::vector<uint8_t> chainHead, chainTail;
  std::vector<unsigned> score;
  std::vector<int64_t> cover;
  std::vector<uint64_t> offset;
  HeightTree heights;
  SlackTree slack;
  std::vector<Frame> stack;
  std::vector<uint32_t> pool;
  size_t placed = 0;
  unsigned variant = 0;
  uint64_t seed, pendingWork = 0, perturbations = 0;
  BestPartial *partial = nullptr;
  double placedArea = 0;
  bool hopeless = false;
  // Transpositions: what remains to be done depends only on the skyline and
  // on which buffers are placed, not on where below it they went (stacks of
  // equal-range buffers in either order, sub-tilings rearranged). States
  // whose every branch failed are remembered by a hash of both and cut off
  // when reached again, also by later restarts. A collision can only cost
  // a packing, never produce an invalid one.
  std::vector<uint64_t> itemHash, weightPrefix;
  uint64_t placedHash = 0, skyHash = 0;
  // An open-addressing set (linear probing, at most half full) that
  // doubles up to kMaxDeadSlots and is then emptied: no per-key
  // allocation, so neither growth (charged as work) nor destruction costs
  // time the budget does not see.
  std::vector<uint64_t> deadStates;
  size_t deadCount = 0;
  bool isDead(uint64_t key) const {
    uint64_t tag = key | 1, mask = deadStates.size() - 1;
    for (uint64_t k = tag & mask; deadStates[k]; k = (k + 1) & mask)
      if (deadStates[k] == tag)
        return true;
    return false;
  }
  void markDead(uint64_t key) {
    if (2 * (deadCount + 1) > deadStates.size()) {
      std::vector<uint64_t> old;
      old.swap(deadStates);
      deadStates.assign(old.size() < kMaxDeadSlots ? 2 * old.size()
                                                  : old.size(),
                        0);
      deadCount = 0;
      pendingWork += old.size();
      if (deadStates.size() > old.size())
        for (uint64_t tag : old)
          if (tag)
            insertDead(tag);
    }
    insertDead(key | 1);
  }
  void insertDead(uint64_t tag) {
    uint64_t mask = deadStates.size() - 1, k = tag & mask;
    while (deadStates[k] && deadStates[k] != tag)
      k = (k + 1) & mask;
    deadCount += deadStates[k] == 0;
    deadStates[k] = tag;
  }
};

} // namespace

SkylineSearch::SkylineSearch(const Problem &problem, uint32_t part,
                             uint64_t capacity, uint64_t seed,
                             bool reverseTime)
    : capacity(capacity),
      heights(problem.partSecEnd[part] - problem.partSecBegin[part]),
      slack([&] {
        std::vector<uint64_t> initial;
        for (uint32_t s = problem.partSecBegin[part];
             s < problem.partSecEnd[part]; ++s) {
          uint64_t total = problem.sectionTotal[s];
          initial.push_back(total > capacity ? 0 : capacity - total);
        }
        if (reverseTime)
          std::reverse(initial.begin(), initial.end());
        return initial;
      }()),
      seed(seed) {
  const std::vector<uint32_t> &partItems = problem.partItems[part];
  uint32_t secBase = problem.partSecBegin[part];
  numItems = partItems.size();
  numSections = problem.partSecEnd[part] - secBase;
  for (uint32_t s = secBase; s < problem.partSecEnd[part]; ++s) {
    if (problem.sectionTotal[s] > capacity)
      hopeless = true;
    if (problem.sectionTotal[s] != capacity)
      zeroSlack = false;
  }
  startBegin.assign(numSections + 1, 0);
  endBegin.assign(numSections + 2, 0);
  for (uint32_t local = 0; local < numItems; ++local) {
    uint32_t global = partItems[local];
    const Item &item = problem.items[global];
    size.push_back(item.size);
    align.push_back(item.align);
    uint32_t lo = problem.secBegin[global] - secBase;
    uint32_t hi = problem.secEnd[global] - secBase;
    if (reverseTime) {
      uint32_t mirroredLo = numSections - hi;
      hi = numSections - lo;
      lo = mirroredLo;
    }
    secLo.push_back(lo);
    secHi.push_back(hi);
    tieKey.push_back(mix(seed ^ mix(item.index)));
    ++startBegin[secLo.back() + 1];
    ++endBegin[secHi.back() + 1];
    if (item.size > capacity)
      hopeless = true;
  }
  for (size_t s = 0; s < numSections; ++s)
    startBegin[s + 1] += startBegin[s];
  starts.resize(numItems);
  score.assign(numItems, 0);
  for (uint32_t i = 0; i < numItems; ++i)
    itemHash.push_back(mix(0x5eed ^ mix(i)));
  deadStates.assign(kMinDeadSlots, 0);
  weightPrefix.assign(numSections + 1, 0);
  for (size_t s = 0; s < numSections; ++s)
    weightPrefix[s + 1] = weightPrefix[s] + (mix(0xa11 ^ mix(s)) | 1);
  std::vector<uint32_t> fill(startBegin.begin(), startBegin.end() - 1);
  for (uint32_t i = 0; i < numItems; ++i)
    starts[fill[secLo[i]]++] = i;
  for (size_t s = 0; s <= numSections; ++s)
    endBegin[s + 1] += endBegin[s];
  ends.resize(numItems);
  fill.assign(endBegin.begin(), endBegin.end() - 1);
  for (uint32_t i = 0; i < numItems; ++i)
    ends[fill[secHi[i]]++] = i;
}

/// Sets sections [begin, end), all at height from, to height to, keeping
/// the skyline's hash (sum of height times a random weight per section).
void SkylineSearch::setHeights(uint32_t begin, uint32_t end, uint64_t from,
                               uint64_t to) {
  uint64_t value = to;
  heights.assign(begin, end, value);
  skyHash += (to - from) * (weightPrefix[end] - weightPrefix[begin]);
  if (zeroSlack) {
    std::fill(sky.begin() + begin, sky.begin() + end, value);
    pendingWork += end - begin;
  }
}

/// The look-ahead and the branching at zero slack, where every byte below
/// the skyline is a placed buffer and every byte above it must become one.
/// Take a run of sections [l, r) at height H < capacity. If section l - 1 is
/// higher (or l is the first section), address H in section l can only be
/// covered by a buffer starting at l, placed at H, whose sections are all at
/// most H now (heights only grow); symmetrically at r. Without such a buffer
/// the state is dead, however far from the lowest point the run lies
/// (returns false); a one-sided run needs a whole chain of such buffers
/// reaching past its other end (chainCovers). A run with both neighbours
/// higher (a valley; the lowest run is one) can be filled now: each of its
/// sections is covered at H by a buffer of a chain of buffers side by side
/// that fills the valley's bottom exactly. Of all sections of all valleys,
/// the one with the fewest such buffers is branched on (most constrained
/// first: a single candidate is a forced move, none a dead state), its
/// candidates appended to pool.
bool SkylineSearch::chooseZeroSlackBranching(Frame &frame) {
  size_t n = numSections;
  // reachRight[s]: the first section after s higher than s; reachLeft[s]:
  // one past the last section before s higher than s (monotone stacks).
  reachRight.resize(n);
  reachLeft.resize(n);
  monotone.clear();
  for (size_t s = n; s-- > 0;) {
    while (!monotone.empty() && sky[monotone.back()] <= sky[s])
      monotone.pop_back();
    reachRight[s] = monotone.empty() ? n : monotone.back();
    monotone.push_back(s);
  }
  monotone.clear();
  for (size_t s = 0; s < n; ++s) {
    while (!monotone.empty() && sky[monotone.back()] <= sky[s])
      monotone.pop_back();
    reachLeft[s] = monotone.empty() ? 0 : monotone.back() + 1;
    monotone.push_back(s);
  }
  pendingWork += 4 * n;
  size_t bestCount = std::numeric_limits<size_t>::max();
  uint32_t bestL = 0, bestR = 0;
  uint32_t bestSection = 0;
  uint64_t bestH = 0;
  auto fits = [&](uint32_t i, uint64_t h) {
    return offset[i] == kNone && h + size[i] <= capacity &&
           h % align[i] == 0;
  };
  for (size_t l = 0; l < n;) {
    uint64_t h = sky[l];
    size_t r = l + 1;
    while (r < n && sky[r] == h)
      ++r;
    if (h < capacity) {
      bool leftEdge = l == 0 || sky[l - 1] > h;
      bool rightEdge = r == n || sky[r] > h;
      if (leftEdge && rightEdge) {
        auto [count, section] = leastCoveredSection(l, r, h);
        if (count == 0)
          return false;
        if (count < bestCount) {
          bestCount = count;
          bestL = l;
          bestR = r;
          bestSection = section;
          bestH = h;
        }
      } else if (leftEdge) {
        if (!chainCovers(l, r, reachRight[l], h, /*fromLeft=*/true))
          return false;
      } else if (rightEdge) {
        if (!chainCovers(reachLeft[r - 1], l, r, h, /*fromLeft=*/false))
          return false;
      }
    }
    l = r;
  }
  // The lowest run is a valley, so some valley was found.
  frame.height = bestH;
  frame.section = bestL;
  frame.runEnd = bestR;
  countChainEnds(bestL, bestR, bestH);
  for (uint32_t x = bestL; x <= bestSection; ++x) {
    if (!chainHead[x])
      continue;
    for (uint32_t k = startBegin[x]; k < startBegin[x + 1]; ++k) {
      uint32_t i = starts[k];
      if (fits(i, bestH) && secHi[i] > bestSection && secHi[i] <= bestR &&
          chainTail[secHi[i]])
        pool.push_back(i);
    }
  }
  pendingWork += startBegin[bestSection + 1] - startBegin[bestL];
  return true;
}

/// A run whose left neighbour is higher, [l, r) at height h, is covered at
/// h by buffers side by side starting at l and reaching r or beyond, all
/// within [l, limit) (sections up to limit are at most h now, those past r
/// lower); fromLeft = false is the mirror image: a run [r0, end) whose right
/// neighbour is higher, covered by a chain ending at end that starts at r0
/// or before, all within [limit, end) (here the arguments are limit, r0,
/// end). Returns whether such a chain exists.
bool SkylineSearch::chainCovers(uint32_t a, uint32_t b, uint32_t c, uint64_t h,
                                bool fromLeft) {
  chainHead.resize(numSections + 1);
  auto fits = [&](uint32_t i) {
    return offset[i] == kNone && h + size[i] <= capacity && h % align[i] == 0;
  };
  if (fromLeft) {
    // a = l, b = r, c = limit: forward from l.
    std::fill(chainHead.begin() + a, chainHead.begin() + c + 1, 0);
    chainHead[a] = 1;
    for (uint32_t y = a + 1; y <= c; ++y) {
      for (uint32_t k = endBegin[y]; k < endBegin[y + 1] && !chainHead[y];
           ++k) {
        uint32_t i = ends[k];
        chainHead[y] = secLo[i] >= a && chainHead[secLo[i]] && fits(i);
      }
      if (chainHead[y] && y >= b) {
        pendingWork += endBegin[y + 1] - endBegin[a];
        return true;
      }
    }
    pendingWork += endBegin[c + 1] - endBegin[a];
    return false;
  }
  // a = limit, b = r0, c = end: backward from end.
  std::fill(chainHead.begin() + a, chainHead.begin() + c + 1, 0);
  chainHead[c] = 1;
  for (uint32_t x = c; x-- > a;) {
    for (uint32_t k = startBegin[x]; k < startBegin[x + 1] && !chainHead[x];
         ++k) {
      uint32_t i = starts[k];
      chainHead[x] = secHi[i] <= c && chainHead[secHi[i]] && fits(i);
    }
    if (chainHead[x] && x <= b) {
      pendingWork += startBegin[c] - startBegin[x];
      return true;
    }
  }
  pendingWork += startBegin[c] - startBegin[a];
  return false;
}

/// In a valley [l, r) at height h, every section is covered at h by one
/// buffer of a chain (see countChainEnds). Returns the fewest buffers that
/// can do so for one section, and the first section with that few (0 when
/// some section cannot be covered at all or no chain exists): branching
/// there is complete, and the narrowest choice.
std::pair<size_t, uint32_t>
SkylineSearch::leastCoveredSection(uint32_t l, uint32_t r, uint64_t h) {
  auto [left, right] = countChainEnds(l, r, h);
  if (left == 0)
    return {0, l};
  cover.resize(numSections + 1);
  std::fill(cover.begin() + l, cover.begin() + r + 1, 0);
  for (uint32_t x = l; x < r; ++x) {
    if (!chainHead[x])
      continue;
    for (uint32_t k = startBegin[x]; k < startBegin[x + 1]; ++k) {
      uint32_t i = starts[k];
      if (offset[i] == kNone && h + size[i] <= capacity &&
          h % align[i] == 0 && secHi[i] <= r && chainTail[secHi[i]]) {
        ++cover[x];
        --cover[secHi[i]];
      }
    }
  }
  pendingWork += startBegin[r] - startBegin[l] + (r - l);
  size_t best = std::numeric_limits<size_t>::max();
  uint32_t section = l;
  int64_t running = 0;
  for (uint32_t x = l; x < r; ++x) {
    running += cover[x];
    if (size_t(running) < best) {
      best = size_t(running);
      section = x;
    }
  }
  return {best, section};
}

/// A valley [l, r) at height h is filled at h by buffers side by side, the
/// first starting at l, each starting where the previous one ends, the last
/// ending at r, all inside the valley: a chain. Marks in chainHead the
/// section boundaries a chain from l reaches and in chainTail those from
/// which one reaches r; returns how many buffers can start and how many can
/// end a full chain (0, 0 when there is none).
std::pair<size_t, size_t> SkylineSearch::countChainEnds(uint32_t l, uint32_t r,
                                                        uint64_t h) {
  chainHead.resize(numSections + 1);
  chainTail.resize(numSections + 1);
  auto fits = [&](uint32_t i) {
    return offset[i] == kNone && h + size[i] <= capacity && h % align[i] == 0;
  };
  std::fill(chainTail.begin() + l, chainTail.begin() + r + 1, 0);
  chainTail[r] = 1;
  for (uint32_t x = r; x-- > l;)
    for (uint32_t k = startBegin[x]; k < startBegin[x + 1] && !chainTail[x];
         ++k) {
      uint32_t i = starts[k];
      chainTail[x] = secHi[i] <= r && chainTail[secHi[i]] && fits(i);
    }
  std::fill(chainHead.begin() + l, chainHead.begin() + r + 1, 0);
  chainHead[l] = 1;
  for (uint32_t y = l + 1; y <= r; ++y)
    for (uint32_t k = endBegin[y]; k < endBegin[y + 1] && !chainHead[y]; ++k) {
      uint32_t i = ends[k];
      chainHead[y] = secLo[i] >= l && chainHead[secLo[i]] && fits(i);
    }
  pendingWork += startBegin[r] - startBegin[l] + endBegin[r + 1] - endBegin[l];
  size_t left = 0, right = 0;
  if (!chainTail[l])
    return {0, 0};
  for (uint32_t k = startBegin[l]; k < startBegin[l + 1]; ++k) {
    uint32_t i = starts[k];
    left += fits(i) && secHi[i] <= r && chainTail[secHi[i]];
  }
  for (uint32_t k = endBegin[r]; k < endBegin[r + 1]; ++k) {
    uint32_t i = ends[k];
    right += fits(i) && secLo[i] >= l && chainHead[secLo[i]];
  }
  return {left, right};
}

/// Orders the frame's candidates: the most flush first (fitness), then the
/// longest, then the largest (mirrored restarts put size before length);
/// ties by the seeded key. Buffers identical in what matters (sections,
/// size, alignment) are tried once.
void SkylineSearch::sortCandidates(Frame &frame) {
  uint32_t b = frame.runEnd;
  auto begin = pool.begin() + frame.candBegin, end = pool.end();
  // Fitness (the skyline heuristics' rule): how many of the buffer's sides
  // meet the skyline flush: its top level with the section left of it or
  // right of it, or its ends those of the run. With slack, the level tops
  // count on every other pair of restarts only: a top level with a
  // neighbour merges two runs, so later (long) buffers find a wider flat
  // floor and less is wasted raising runs, which takes the bench's
  // tiling-750 from 1.054 to 1.041 of its bound; ranked so on every
  // restart it cost the hard instances D and J 2-3 %, so the restarts
  // alternate between both rankings.
  bool levelTops = zeroSlack || (variant / 2) % 2 == 1;
  auto heightAt = [&](uint32_t s) {
    return zeroSlack ? sky[s] : heights.at(s);
  };
  auto fitness = [&](uint32_t i) {
    uint64_t top = alignUp(frame.height, align[i]) + size[i];
    unsigned score = 0;
    if (levelTops) {
      score += secLo[i] > 0 && heightAt(secLo[i] - 1) == top;
      score += secHi[i] < numSections && heightAt(secHi[i]) == top;
    }
    score += 2 * (secHi[i] == b && secLo[i] == frame.section);
    return score;
  };
  for (size_t k = frame.candBegin; k < pool.size(); ++k)
    score[pool[k]] = fitness(pool[k]);
  std::sort(begin, end, [&](uint32_t x, uint32_t y) {
    if (score[x] != score[y])
      return score[x] > score[y];
    if (variant % 2 == 1 && size[x] != size[y])
      return size[x] > size[y];
    if (secHi[x] - secLo[x] != secHi[y] - secLo[y])
      return secHi[x] - secLo[x] > secHi[y] - secLo[y];
    if (secLo[x] != secLo[y])
      return secLo[x] < secLo[y];
    if (size[x] != size[y])
      return size[x] > size[y];
    if (align[x] != align[y])
      return align[x] > align[y];
    return tieKey[x] < tieKey[y];
  });
  // Identical buffers are adjacent in this order; the lowest index of each
  // run stands for it, so the choice does not depend on the seeded keys.
  auto same = [&](uint32_t x, uint32_t y) {
    return secLo[x] == secLo[y] && secHi[x] == secHi[y] &&
           size[x] == size[y] && align[x] == align[y];
  };
  size_t kept = frame.candBegin;
  for (size_t k = frame.candBegin; k < pool.size(); ++k) {
    if (kept > frame.candBegin && same(pool[kept - 1], pool[k]))
      pool[kept - 1] = std::min(pool[kept - 1], pool[k]);
    else
      pool[kept++] = pool[k];
  }
  pool.resize(kept);
  frame.candEnd = pool.size();
  // Without the plain skyline array the two neighbour heights are tree
  // lookups.
  pendingWork += (levelTops && !zeroSlack ? 3 : 1) *
                 (frame.candEnd - frame.candBegin);
  // Later restarts also perturb the order: now and then another candidate
  // goes first, so that they do not all follow the heuristic into the same
  // dead region.
  size_t count = frame.candEnd - frame.candBegin;
  if (variant >= 2 && count >= 2) {
    uint64_t r = mix(seed ^ mix(variant ^ mix(++perturbations)));
    if (r % 8 == 0)
      std::swap(pool[frame.candBegin],
                pool[frame.candBegin + 1 + (r >> 8) % (count - 1)]);
  }
}

/// Opens a node for the current state. Returns false when every item is
/// placed.
bool SkylineSearch::pushFrame() {
  if (placed == numItems)
    return false;
  auto [h, s] = heights.lowest();
  Frame frame;
  frame.height = h;
  frame.section = s;
  frame.runEnd = heights.firstAbove(s, h);
  frame.candBegin = pool.size();
  frame.next = 0;
  frame.applied = -1;
  frame.wasteTried = false;
  uint32_t b = frame.runEnd;
  frame.raiseTo = kNone;
  frame.candEnd = pool.size();
  pendingWork += kHashWork;
  if (isDead(stateKey())) {
    stack.push_back(frame);
    return true;
  }
  if (zeroSlack) {
    if (chooseZeroSlackBranching(frame))
      sortCandidates(frame);
    stack.push_back(frame);
    return true;
  }
  for (uint32_t k = startBegin[s]; k < startBegin[s + 1]; ++k) {
    uint32_t i = starts[k];
    ++pendingWork;
    if (offset[i] != kNone || secHi[i] > b)
      continue;
    uint64_t at = alignUp(h, align[i]);
    if (at + size[i] > capacity)
      continue;
    if (at != h && slack.min(secLo[i], secHi[i]) < int64_t(at - h))
      continue;
    pool.push_back(i);
  }
  sortCandidates(frame);
  // Waste: raise the run to the lower of its neighbours, if every section in
  // it has the slack. A run spanning the whole partition has no neighbour;
  // raising it to the capacity would strand whatever is left.
  uint64_t left = s > 0 ? heights.at(s - 1) : kNone;
  uint64_t right = b < numSections ? heights.at(b) : kNone;
  frame.raiseTo = std::min(left, right);
  if (frame.raiseTo != kNone &&
      slack.min(s, b) < int64_t(frame.raiseTo - h))
    frame.raiseTo = kNone;
  stack.push_back(frame);
  return true;
}

void SkylineSearch::undo(Frame &frame) {
  if (frame.applied == -2) {
    setHeights(frame.section, frame.runEnd, frame.raiseTo, frame.height);
    slack.change(frame.section, frame.runEnd,
                 int64_t(frame.raiseTo - frame.height));
  } else if (frame.applied >= 0) {
    uint32_t i = uint32_t(frame.applied);
    setHeights(secLo[i], secHi[i], offset[i] + size[i], frame.height);
    placedHash ^= itemHash[i];
    uint64_t gap = offset[i] - frame.height;
    if (gap)
      slack.change(secLo[i], secHi[i], int64_t(gap));
    offset[i] = kNone;
    --placed;
    placedArea -= double(size[i]) * double(secHi[i] - secLo[i]);
  }
  frame.applied = -1;
}

int SkylineSearch::run(uint64_t nodeLimit, unsigned newVariant,
                       WorkBudget &budget) {
  if (hopeless)
    return 0;
  variant = newVariant;
  if (variant > 0)
    for (uint32_t i = 0; i < numItems; ++i)
      tieKey[i] = mix(tieKey[i] ^ variant);
  offset.assign(numItems, kNone);
  heights.reset();
  slack.reset();
  if (zeroSlack)
    sky.assign(numSections, 0);
  stack.clear();
  pool.clear();
  placed = 0;
  placedArea = 0;
  placedHash = skyHash = 0;
  if (!pushFrame())
    return 1;
  while (!stack.empty()) {
    Frame &frame = stack.back();
    undo(frame);
    pendingWork += kNodeWork;
    if (nodeLimit-- == 0 || !budget.charge(pendingWork))
      return -1;
    pendingWork = 0;
    if (frame.candBegin + frame.next < frame.candEnd) {
      uint32_t i = pool[frame.candBegin + frame.next++];
      uint64_t at = alignUp(frame.height, align[i]);
      offset[i] = at;
      ++placed;
      placedArea += double(size[i]) * double(secHi[i] - secLo[i]);
      if (partial && placedArea > partial->area &&
          placedArea >= partial->floor) {
        partial->area = placedArea;
        partial->offsets = offset;
        pendingWork += numItems;
      }
      setHeights(secLo[i], secHi[i], frame.height, at + size[i]);
      placedHash ^= itemHash[i];
      if (at != frame.height)
        slack.change(secLo[i], secHi[i], -int64_t(at - frame.height));
      frame.applied = i;
    } else if (frame.raiseTo != kNone && !frame.wasteTried) {
      setHeights(frame.section, frame.runEnd, frame.height, frame.raiseTo);
      slack.change(frame.section, frame.runEnd,
                   -int64_t(frame.raiseTo - frame.height));
      frame.applied = -2;
      frame.wasteTried = true;
    } else {
      // Every branch failed (none was cut short, or we would have returned):
      // the state itself is a dead end, whatever order reaches it.
      markDead(stateKey());
      pendingWork += kHashWork;
      pool.resize(frame.candBegin);
      stack.pop_back();
      continue;
    }
    if (!pushFrame())
      return 1;
  }
  return 0;
}

/// The Luby sequence 1, 1, 2, 1, 1, 2, 4, 1, ... (k >= 1): restart limits
/// within a log factor of the best fixed one for any run-time distribution
/// (Luby, Sinclair and Zuckerman, 1993).
static uint64_t luby(uint64_t k) {
  while (true) {
    uint64_t power = 1;
    while (power * 2 - 1 < k)
      power *= 2;
    if (power * 2 - 1 == k)
      return power;
    k -= power - 1;
  }
}

/// Finishes a partial packing of the partition: the unplaced items (kNone)
/// go, largest first, at the lowest offset free of every conflicting item
/// placed so far. O(n^2 log n); only used up to kMaxSearchItems items.
static void completeGreedily(const Problem &problem, uint32_t part,
                             std::vector<uint64_t> &offsets) {
  const std::vector<uint32_t> &items = problem.partItems[part];
  std::vector<uint32_t> order, placed;
  for (uint32_t k = 0; k < items.size(); ++k)
    (offsets[k] == kNone ? order : placed).push_back(k);
  auto itemOf = [&](uint32_t k) -> const Item & {
    return problem.items[items[k]];
  };
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return itemOf(a).size > itemOf(b).size;
  });
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  for (uint32_t k : order) {
    uint32_t i = items[k];
    busy.clear();
    for (uint32_t j : placed) {
      uint32_t g = items[j];
      if (problem.secBegin[g] < problem.secEnd[i] &&
          problem.secBegin[i] < problem.secEnd[g])
        busy.push_back({offsets[j], offsets[j] + problem.items[g].size});
    }
    std::sort(busy.begin(), busy.end());
    const Item &item = problem.items[i];
    uint64_t x = 0;
    for (auto [begin, end] : busy) {
      if (begin >= x + item.size)
        break;
      if (end > x)
        x = alignUp(end, item.align);
    }
    offsets[k] = x;
    placed.push_back(k);
  }
}

bool planner::packBySkylineSearch(const Problem &problem, uint32_t part,
                                  uint64_t capacity, WorkBudget &budget,
                                  uint64_t seed,
                                  std::vector<uint64_t> &localOffsets,
                                  std::vector<uint64_t> *bestEffort) {
  // Two orientations, used in turn by the restarts: the step axis as given
  // and mirrored. A region that is hard to fill from one end is often easy
  // from the other.
  SkylineSearch forward(problem, part, capacity, seed, false);
  if (forward.isHopeless())
    return false;
  SkylineSearch backward(problem, part, capacity, seed, true);
  // Each restart's most complete state is finished greedily and the lowest
  // result kept: how well a state finishes varies far more between
  // restarts than its placed area says.
  const std::vector<uint32_t> &items = problem.partItems[part];
  BestPartial run;
  std::vector<uint64_t> finished;
  uint64_t finishedTop = kNone;
  double bestArea = 0;
  if (bestEffort && items.size() <= kMaxSearchItems) {
    forward.trackPartial(&run);
    backward.trackPartial(&run);
  }
  // Restarts with Luby node limits (base 4 nodes per buffer), each pair
  // forward and mirrored, with varied and (from the second pair) perturbed
  // branch orders: a wrong early choice is undone by a restart, not by
  // backtracking over it; the dead states found survive the restarts.
  uint64_t nodeLimit =
      std::max<uint64_t>(4 * problem.partItems[part].size(), 1024);
  bool found = false;
  for (unsigned variant = 0; !budget.checkDeadline(); ++variant) {
    SkylineSearch &search = variant % 2 ? backward : forward;
    run.area = 0;
    run.floor = 0.95 * bestArea;
    run.offsets.clear();
    int outcome = search.run(nodeLimit * luby(variant / 2 + 1), variant,
                             budget);
    if (outcome == 1) {
      localOffsets = search.getSolution();
      found = true;
      break;
    }
    if (!run.offsets.empty()) {
      bestArea = std::max(bestArea, run.area);
      size_t unplaced = 0;
      for (uint64_t at : run.offsets)
        unplaced += at == kNone;
      completeGreedily(problem, part, run.offsets);
      budget.charge(unplaced * items.size() + items.size());
      uint64_t top = 0;
      for (uint32_t k = 0; k < items.size(); ++k)
        top = std::max(top, run.offsets[k] + problem.items[items[k]].size);
      if (top < finishedTop) {
        finishedTop = top;
        finished.swap(run.offsets);
      }
    }
    // The whole tree was searched: another order searches the same one.
    if (outcome == 0)
      break;
  }
  if (!found && bestEffort && !finished.empty())
    *bestEffort = std::move(finished);
  return found;
}
