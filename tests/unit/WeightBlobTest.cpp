//===- WeightBlobTest.cpp - The module's weight storage -------------------===//
#include "ir/WeightBlob.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace snug;
using namespace snug::ir;

namespace {

std::vector<uint8_t> pattern(size_t size, uint8_t seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i)
    bytes[i] = uint8_t(seed + i * 7 + i / 251);
  return bytes;
}

/// A fresh directory; its entries, to see what a call left behind.
struct TempDir {
  llvm::SmallString<128> path;
  TempDir() { llvm::sys::fs::createUniqueDirectory("weight-blob", path); }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    std::error_code error;
    for (llvm::sys::fs::directory_iterator it(path, error), end;
         it != end && !error; it.increment(error))
      names.push_back(llvm::sys::path::filename(it->path()).str());
    std::sort(names.begin(), names.end());
    return names;
  }
};

struct Blob {
  WeightBlob blob;
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> expected;
  void add(uint64_t offset, std::vector<uint8_t> bytes) {
    expected.push_back({offset, std::move(bytes)});
  }
  void check() const {
    for (const auto &[offset, bytes] : expected) {
      llvm::ArrayRef<uint8_t> got = blob.getBytes(offset, bytes.size());
      EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.end()), bytes)
          << "at offset " << offset;
    }
  }
};

} // namespace

// Owned bytes and windows of a buffer read into memory move to an unlinked
// file and read back the same; a window of a mapped file stays mapped (its
// pages are only handed back) and reads back the same; nothing is left in
// the directory.
TEST(WeightBlobTest, ReleasingResidentPagesKeepsEveryByte) {
  TempDir dir;
  llvm::SmallString<128> modelPath(dir.path);
  llvm::sys::path::append(modelPath, "model.bin");
  std::vector<uint8_t> fileBytes = pattern(3 * 65536 + 123, 5);
  {
    std::error_code error;
    llvm::raw_fd_ostream out(modelPath, error);
    ASSERT_FALSE(error);
    out.write(reinterpret_cast<const char *>(fileBytes.data()),
              fileBytes.size());
  }
  auto mapped = llvm::MemoryBuffer::getFile(modelPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  ASSERT_TRUE(bool(mapped));
  ASSERT_EQ((*mapped)->getBufferKind(), llvm::MemoryBuffer::MemoryBuffer_MMap);
  std::shared_ptr<llvm::MemoryBuffer> file = std::move(*mapped);

  std::vector<uint8_t> readBytes = pattern(100000, 9);
  std::shared_ptr<llvm::MemoryBuffer> read(llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(reinterpret_cast<const char *>(readBytes.data()),
                      readBytes.size())));
  ASSERT_NE(read->getBufferKind(), llvm::MemoryBuffer::MemoryBuffer_MMap);

  Blob b;
  std::vector<uint8_t> owned = pattern(70001, 1), small = pattern(3, 2);
  b.add(b.blob.addOwned(owned), owned);
  b.add(b.blob.addMapped(file, 1000, 70000),
        std::vector<uint8_t>(fileBytes.begin() + 1000,
                             fileBytes.begin() + 71000));
  b.add(b.blob.addMapped(read, 10, 5000),
        std::vector<uint8_t>(readBytes.begin() + 10, readBytes.begin() + 5010));
  b.add(b.blob.addOwned(small), small);
  b.add(b.blob.addMapped(read, 60000, 40000),
        std::vector<uint8_t>(readBytes.begin() + 60000, readBytes.end()));
  b.add(b.blob.addOwned({}), {});
  b.check();
  uint64_t total = b.blob.getTotalBytes();

  EXPECT_EQ(b.blob.releaseResidentPages(dir.path),
            owned.size() + 5000 + small.size() + 40000);
  b.check();
  EXPECT_EQ(b.blob.getTotalBytes(), total);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"model.bin"});
  // Again: everything is file-backed now, nothing moves.
  EXPECT_EQ(b.blob.releaseResidentPages(dir.path), 0u);
  b.check();
}

// Without a directory to write in, the bytes stay where they are.
TEST(WeightBlobTest, ReleasingWithoutATemporaryFileKeepsTheBytesInMemory) {
  Blob b;
  std::vector<uint8_t> owned = pattern(4096, 3);
  b.add(b.blob.addOwned(owned), owned);
  EXPECT_EQ(b.blob.releaseResidentPages("/nonexistent/snug-weight-blob"), 0u);
  b.check();
}
