//===- WeightBlob.h - The module's weight storage ---------------*- C++ -*-===//
//
// All weights of a module live in one logical blob; a weight value refers to
// an (offset, bytes) range of it. The blob is a list of segments, each either
// bytes the module owns or a window of a memory buffer (an mmap-ed model or
// external-data file), so importing never needs a second copy of large
// weights. Offsets are global across segments and never change once handed
// out; segments start on 64-byte boundaries so typed reads stay aligned.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_WEIGHTBLOB_H
#define SNUG_IR_WEIGHTBLOB_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <vector>

namespace snug {
namespace ir {

class WeightBlob {
public:
  /// Appends a copy of `bytes`; returns its offset.
  uint64_t addOwned(llvm::ArrayRef<uint8_t> bytes);
  /// Appends a window [start, start + size) of `buffer` without copying;
  /// the buffer is shared so several windows may keep one file alive.
  uint64_t addMapped(std::shared_ptr<llvm::MemoryBuffer> buffer,
                     uint64_t start, uint64_t size);
  /// The bytes at [offset, offset + size); the range must lie inside one
  /// segment, as every range handed out does.
  llvm::ArrayRef<uint8_t> getBytes(uint64_t offset, uint64_t size) const;
  /// Sum of segment sizes (padding excluded).
  uint64_t getTotalBytes() const;

  /// Lets the weights leave this process's resident memory while it does
  /// something else big (snugc compiling kernels): the segments in memory
  /// (owned, or windows of buffers read rather than mapped) are written to
  /// one unlinked temporary file in `directory` and mapped back read-only,
  /// and every file mapping's pages are handed back (madvise). Offsets and
  /// bytes stay as they were; reading a weight faults its pages in again
  /// from the page cache. Invalidates the ArrayRefs getBytes returned
  /// before. Best effort: what cannot be moved (no temporary file) stays
  /// where it is. Returns the bytes moved to the file.
  uint64_t releaseResidentPages(llvm::StringRef directory);

private:
  struct Segment {
    uint64_t offset;
    uint64_t size;
    std::vector<uint8_t> owned;
    std::shared_ptr<llvm::MemoryBuffer> mapped;
    const uint8_t *mappedData = nullptr;
  };
  uint64_t nextOffset() const;
  std::vector<Segment> segments;
};

} // namespace ir
} // namespace snug

#endif // SNUG_IR_WEIGHTBLOB_H
