//===- WeightBlob.cpp - The module's weight storage -----------------------===//
#include "ir/WeightBlob.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace snug {
namespace ir {

static constexpr uint64_t segmentAlignment = 64;

uint64_t WeightBlob::nextOffset() const {
  if (segments.empty())
    return 0;
  const Segment &last = segments.back();
  return llvm::alignTo(last.offset + last.size, segmentAlignment);
}

uint64_t WeightBlob::addOwned(llvm::ArrayRef<uint8_t> bytes) {
  Segment segment;
  segment.offset = nextOffset();
  segment.size = bytes.size();
  segment.owned.assign(bytes.begin(), bytes.end());
  segments.push_back(std::move(segment));
  return segments.back().offset;
}

uint64_t WeightBlob::addMapped(std::shared_ptr<llvm::MemoryBuffer> buffer,
                               uint64_t start, uint64_t size) {
  assert(start + size <= buffer->getBufferSize() && "window out of buffer");
  Segment segment;
  segment.offset = nextOffset();
  segment.size = size;
  segment.mappedData =
      reinterpret_cast<const uint8_t *>(buffer->getBufferStart()) + start;
  segment.mapped = std::move(buffer);
  segments.push_back(std::move(segment));
  return segments.back().offset;
}

llvm::ArrayRef<uint8_t> WeightBlob::getBytes(uint64_t offset,
                                             uint64_t size) const {
  auto it = std::upper_bound(
      segments.begin(), segments.end(), offset,
      [](uint64_t value, const Segment &s) { return value < s.offset; });
  assert(it != segments.begin() && "offset before the first segment");
  const Segment &segment = *std::prev(it);
  assert(offset + size <= segment.offset + segment.size &&
         "range crosses a segment end");
  const uint8_t *base =
      segment.mapped ? segment.mappedData : segment.owned.data();
  return llvm::ArrayRef<uint8_t>(base + (offset - segment.offset), size);
}

uint64_t WeightBlob::getTotalBytes() const {
  uint64_t total = 0;
  for (const Segment &segment : segments)
    total += segment.size;
  return total;
}

} // namespace ir
} // namespace snug
