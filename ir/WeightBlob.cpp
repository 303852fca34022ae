//===- WeightBlob.cpp - The module's weight storage -----------------------===//
#include "ir/WeightBlob.h"

#include "core/FileAccess.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <algorithm>

#include <sys/mman.h>
#include <unistd.h>

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

/// Whether a segment's bytes are pages of a file mapping, which the kernel
/// can drop and read again (not memory the process wrote).
static bool isFileBacked(const std::shared_ptr<llvm::MemoryBuffer> &mapped) {
  return mapped &&
         mapped->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap;
}

/// Writes `pieces` to an unlinked file in `directory`, each at its offset,
/// and maps it read-only; null when any step fails.
static std::shared_ptr<llvm::MemoryBuffer>
spillToFile(llvm::ArrayRef<llvm::ArrayRef<uint8_t>> pieces,
            llvm::ArrayRef<uint64_t> fileOffsets, uint64_t fileBytes,
            llvm::StringRef directory) {
  llvm::SmallString<256> model(directory.empty() ? "." : directory);
  llvm::sys::path::append(model, ".snug-weights-%%%%%%%%.tmp");
  int fd = -1;
  llvm::SmallString<256> path;
  if (llvm::sys::fs::createUniqueFile(model, fd, path))
    return nullptr;
  // Unlinked at once: the open descriptor and then the mapping keep it,
  // and nothing is left behind however the process ends.
  llvm::sys::fs::remove(path);
  bool written = true;
  std::string error;
  for (size_t i = 0; i < pieces.size() && written; ++i)
    written = ::lseek(fd, off_t(fileOffsets[i]), SEEK_SET) >= 0 &&
              writeAllToFd(fd, pieces[i].data(), pieces[i].size(),
                           path.str().str(), error);
  std::shared_ptr<llvm::MemoryBuffer> buffer;
  if (written && ::ftruncate(fd, off_t(fileBytes)) == 0) {
    auto mapped = llvm::MemoryBuffer::getOpenFile(
        fd, path, fileBytes, /*RequiresNullTerminator=*/false);
    if (mapped)
      buffer = std::move(*mapped);
  }
  ::close(fd);
  return buffer;
}

uint64_t WeightBlob::releaseResidentPages(llvm::StringRef directory) {
  const uint64_t page = llvm::sys::Process::getPageSizeEstimate();
  // Owned bytes, and windows of buffers read into memory (the importer's
  // initializers) rather than mapped.
  std::vector<Segment *> toMove;
  std::vector<llvm::ArrayRef<uint8_t>> pieces;
  std::vector<uint64_t> fileOffsets;
  uint64_t fileBytes = 0;
  for (Segment &segment : segments)
    if (!isFileBacked(segment.mapped) && segment.size) {
      toMove.push_back(&segment);
      pieces.push_back(segment.mapped
                           ? llvm::ArrayRef<uint8_t>(segment.mappedData,
                                                     segment.size)
                           : llvm::ArrayRef<uint8_t>(segment.owned));
      fileOffsets.push_back(fileBytes);
      fileBytes = llvm::alignTo(fileBytes + segment.size, page);
    }
  uint64_t moved = 0;
  if (fileBytes)
    if (std::shared_ptr<llvm::MemoryBuffer> buffer =
            spillToFile(pieces, fileOffsets, fileBytes, directory))
      for (size_t i = 0; i < toMove.size(); ++i) {
        Segment &segment = *toMove[i];
        segment.mappedData =
            reinterpret_cast<const uint8_t *>(buffer->getBufferStart()) +
            fileOffsets[i];
        segment.mapped = buffer;
        std::vector<uint8_t>().swap(segment.owned);
        moved += segment.size;
      }
  // The file-backed windows' pages, whole pages inside each window only (a
  // buffer read into memory is left alone: dropping its pages would lose
  // the bytes).
  for (const Segment &segment : segments) {
    if (!isFileBacked(segment.mapped))
      continue;
    uintptr_t begin = llvm::alignTo(uintptr_t(segment.mappedData), page);
    uintptr_t end = llvm::alignDown(uintptr_t(segment.mappedData) +
                                        segment.size,
                                    page);
    if (begin < end)
      ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
  }
  return moved;
}

} // namespace ir
} // namespace snug
