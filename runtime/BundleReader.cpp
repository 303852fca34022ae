//===- BundleReader.cpp - Reading and checking a .snug bundle -------------===//
//
// Decoding is a bounds-checked cursor over each section; every count is
// checked against the bytes left before anything is allocated, so a corrupt
// bundle is rejected with a message and never crashes or allocates wildly
// (a gtest feeds it hundreds of mutated bundles under ASan).
//
//===----------------------------------------------------------------------===//
#include "runtime/BundleReader.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace snug {
namespace rt {

using namespace bundle;

Bundle::~Bundle() {
  if (mapped)
    munmap(storage, storageSize);
  else
    std::free(storage);
}

const Attr *PlanOp::getAttr(const std::string &name) const {
  for (const auto &entry : attributes)
    if (entry.first == name)
      return &entry.second;
  return nullptr;
}

std::string PlanOp::describe(size_t index) const {
  if (!nodeName.empty())
    return "node '" + nodeName + "' (" + opName + ")";
  return "op #" + std::to_string(index) + " (" + opName + ")";
}

namespace {

uint32_t readU32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
uint64_t readU64(const uint8_t *p) {
  return uint64_t(readU32(p)) | uint64_t(readU32(p + 4)) << 32;
}

/// A bounds-checked reader over one section; the first failure sticks.
class Cursor {
public:
  Cursor(const uint8_t *data, uint64_t size, std::string where)
      : data(data), size(size), where(std::move(where)) {}

  bool failed() const { return !error.empty(); }
  const std::string &getError() const { return error; }
  uint64_t remaining() const { return size - position; }
  bool fail(const std::string &message) {
    if (error.empty())
      error = where + ": " + message + " at byte " + std::to_string(position);
    return false;
  }

  bool bytes(const uint8_t *&out, uint64_t count) {
    if (failed())
      return false;
    if (count > remaining())
      return fail("truncated (needs " + std::to_string(count) +
                  " bytes, has " + std::to_string(remaining()) + ")");
    out = data + position;
    position += count;
    return true;
  }
  bool u8(uint8_t &out) {
    const uint8_t *p;
    if (!bytes(p, 1))
      return false;
    out = *p;
    return true;
  }
  bool u16(uint16_t &out) {
    const uint8_t *p;
    if (!bytes(p, 2))
      return false;
    out = uint16_t(p[0] | p[1] << 8);
    return true;
  }
  bool u32(uint32_t &out) {
    const uint8_t *p;
    if (!bytes(p, 4))
      return false;
    out = readU32(p);
    return true;
  }
  bool u64(uint64_t &out) {
    const uint8_t *p;
    if (!bytes(p, 8))
      return false;
    out = readU64(p);
    return true;
  }
  bool i64(int64_t &out) {
    uint64_t value;
    if (!u64(value))
      return false;
    std::memcpy(&out, &value, 8);
    return true;
  }
  bool f32(float &out) {
    uint32_t value;
    if (!u32(value))
      return false;
    std::memcpy(&out, &value, 4);
    return true;
  }
  bool string(std::string &out) {
    uint32_t length;
    const uint8_t *p;
    if (!u32(length) || !bytes(p, length))
      return false;
    out.assign(reinterpret_cast<const char *>(p), length);
    return true;
  }
  /// A list count; each element takes at least `minBytes`.
  bool count(uint32_t &out, uint64_t minBytes) {
    if (!u32(out))
      return false;
    if (uint64_t(out) * minBytes > remaining())
      return fail("count " + std::to_string(out) + " exceeds the section");
    return true;
  }

private:
  const uint8_t *data;
  uint64_t size;
  uint64_t position = 0;
  std::string where;
  std::string error;
};

/// Reads a location and checks it against the arena and the weights.
bool readLocation(Cursor &cursor, Location &location, uint64_t arenaSize,
                  uint64_t weightsSize, const std::string &what) {
  uint16_t reserved;
  uint32_t rank;
  if (!cursor.u8(location.kind) || !cursor.u8(location.dtype) ||
      !cursor.u16(reserved) || !cursor.count(rank, 8))
    return false;
  if (location.kind > Weight)
    return cursor.fail(what + ": unknown location kind " +
                       std::to_string(location.kind));
  if (rank > kMaxRank)
    return cursor.fail(what + ": rank " + std::to_string(rank) +
                       " exceeds " + std::to_string(kMaxRank));
  location.dims.resize(rank);
  for (int64_t &dim : location.dims)
    if (!cursor.i64(dim))
      return false;
  if (!cursor.u64(location.offset))
    return false;
  if (location.kind == Absent)
    return true;
  unsigned elementSize = dtypeSize(location.dtype);
  if (!elementSize)
    return cursor.fail(what + ": unknown dtype code " +
                       std::to_string(location.dtype));
  uint64_t elements = 1;
  const uint64_t limit = uint64_t(1) << 56;
  for (int64_t dim : location.dims) {
    if (dim < 0)
      return cursor.fail(what + ": negative dim");
    if (dim && elements > limit / uint64_t(dim))
      return cursor.fail(what + ": too many elements");
    elements *= uint64_t(dim);
  }
  location.numElements = int64_t(elements);
  location.bytes = elements * elementSize;
  uint64_t space = location.kind == Arena ? arenaSize : weightsSize;
  if (location.offset > space || location.bytes > space - location.offset)
    return cursor.fail(what + ": " + std::to_string(location.bytes) +
                       " bytes at offset " + std::to_string(location.offset) +
                       " lie outside the " +
                       (location.kind == Arena ? "arena" : "weights") + " (" +
                       std::to_string(space) + " bytes)");
  if (location.kind == Weight && location.offset % elementSize)
    return cursor.fail(what + ": misaligned weight offset");
  return true;
}

bool readAttr(Cursor &cursor, Attr &attr) {
  uint32_t n;
  if (!cursor.u8(attr.kind))
    return false;
  switch (attr.kind) {
  case AttrInt:
    return cursor.i64(attr.i);
  case AttrFloat:
    return cursor.f32(attr.f);
  case AttrString:
    return cursor.string(attr.s);
  case AttrInts:
    if (!cursor.count(n, 8))
      return false;
    attr.ints.resize(n);
    for (int64_t &v : attr.ints)
      cursor.i64(v);
    return !cursor.failed();
  case AttrFloats:
    if (!cursor.count(n, 4))
      return false;
    attr.floats.resize(n);
    for (float &v : attr.floats)
      cursor.f32(v);
    return !cursor.failed();
  case AttrStrings:
    if (!cursor.count(n, 4))
      return false;
    attr.strings.resize(n);
    for (std::string &v : attr.strings)
      cursor.string(v);
    return !cursor.failed();
  case AttrTensor: {
    uint32_t rank;
    uint64_t size;
    const uint8_t *p;
    if (!cursor.u8(attr.tensorDType) || !cursor.count(rank, 8))
      return false;
    if (rank > kMaxRank)
      return cursor.fail("tensor attribute rank too large");
    attr.tensorDims.resize(rank);
    uint64_t elements = 1;
    for (int64_t &dim : attr.tensorDims) {
      if (!cursor.i64(dim))
        return false;
      if (dim < 0 || (dim && elements > (uint64_t(1) << 40) / uint64_t(dim)))
        return cursor.fail("tensor attribute has a bad dim");
      elements *= uint64_t(dim);
    }
    if (!cursor.u64(size) || !cursor.bytes(p, size))
      return false;
    if (!dtypeSize(attr.tensorDType) ||
        size != elements * dtypeSize(attr.tensorDType))
      return cursor.fail("tensor attribute size does not match its type");
    attr.tensorBytes.assign(p, p + size);
    return true;
  }
  default:
    return cursor.fail("unknown attribute kind " + std::to_string(attr.kind));
  }
}

bool readManifest(Cursor &cursor, Bundle &b) {
  uint32_t count;
  if (!cursor.string(b.compilerVersion) || !cursor.string(b.pipeline) ||
      !cursor.string(b.moduleName) || !cursor.u64(b.arenaSize) ||
      !cursor.u64(b.alignment) || !cursor.u64(b.weightsSize) ||
      !cursor.u64(b.lowerBound))
    return false;
  for (auto *list : {&b.inputs, &b.outputs}) {
    bool isInput = list == &b.inputs;
    if (!cursor.count(count, 20))
      return false;
    list->resize(count);
    for (uint32_t i = 0; i < count; ++i) {
      TensorDesc &desc = (*list)[i];
      std::string what = std::string(isInput ? "input " : "output ") +
                         std::to_string(i);
      if (!cursor.string(desc.name) ||
          !readLocation(cursor, desc.location, b.arenaSize, b.weightsSize,
                        what + " '" + desc.name + "'"))
        return false;
      if (desc.location.kind == Absent ||
          (isInput && desc.location.kind != Arena))
        return cursor.fail(what + " '" + desc.name +
                           "' has no arena location");
    }
  }
  return true;
}

bool readHostPlan(Cursor &cursor, Bundle &b) {
  uint32_t count;
  if (!cursor.count(count, 20))
    return false;
  b.ops.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    PlanOp &op = b.ops[i];
    uint32_t n;
    if (!cursor.string(op.opName) || !cursor.string(op.nodeName) ||
        !cursor.count(n, 6))
      return false;
    op.attributes.resize(n);
    for (auto &entry : op.attributes)
      if (!cursor.string(entry.first) || !readAttr(cursor, entry.second))
        return false;
    for (auto *list : {&op.operands, &op.results}) {
      if (!cursor.count(n, 16))
        return false;
      list->resize(n);
      for (uint32_t k = 0; k < n; ++k) {
        std::string what = op.describe(i) +
                           (list == &op.operands ? " operand " : " result ") +
                           std::to_string(k);
        if (!readLocation(cursor, (*list)[k], b.arenaSize, b.weightsSize,
                          what))
          return false;
        if (list == &op.results && (*list)[k].kind == Weight)
          return cursor.fail(what + " is a weight");
      }
    }
  }
  return true;
}

} // namespace

/// Checks `size` bytes at `data` (the storage of `result`) and decodes them
/// into `result`.
Status decodeBundle(const uint8_t *data, size_t size, const std::string &name,
                    std::unique_ptr<Bundle> &result) {
  auto fail = [&](const std::string &message) {
    return invalidBundle("bundle '" + name + "': " + message);
  };
  if (size < kHeaderSize)
    return fail("truncated: " + std::to_string(size) +
                " bytes, shorter than the header");
  if (std::memcmp(data, kMagic, 8))
    return fail("bad magic (not a snug bundle)");
  uint32_t version = readU32(data + 8);
  if (version > kBundleVersion)
    return Status(SNUG_ERROR_UNSUPPORTED,
                  "bundle '" + name + "': format version " +
                      std::to_string(version) + " is newer than this runtime (" +
                      std::to_string(kBundleVersion) + ")");
  if (version == 0)
    return fail("format version 0 is invalid");
  uint32_t sectionCount = readU32(data + 12);
  uint64_t fileSize = readU64(data + 16);
  uint64_t hash = readU64(data + 24);
  if (fileSize != size)
    return fail(size < fileSize
                    ? "truncated: " + std::to_string(size) + " of " +
                          std::to_string(fileSize) + " bytes"
                    : "size " + std::to_string(size) +
                          " does not match the header's " +
                          std::to_string(fileSize));
  if (bundleHash(data, size) != hash)
    return fail("plan hash mismatch (the file is corrupt)");
  if (sectionCount > kMaxSections ||
      kHeaderSize + uint64_t(sectionCount) * kSectionEntrySize > size)
    return fail("bad section count " + std::to_string(sectionCount));

  Bundle &b = *result;
  b.path = name;
  b.version = version;
  b.planHash = hash;
  const uint8_t *base = data;

  struct Section {
    uint64_t offset = 0, size = 0;
    bool present = false;
  } sections[KernelImages + 1];
  uint64_t tableEnd = kHeaderSize + uint64_t(sectionCount) * kSectionEntrySize;
  for (uint32_t i = 0; i < sectionCount; ++i) {
    const uint8_t *entry = base + kHeaderSize + i * kSectionEntrySize;
    uint32_t kind = readU32(entry);
    uint64_t offset = readU64(entry + 8), length = readU64(entry + 16);
    if (offset < tableEnd || offset > size || length > size - offset ||
        offset % kSectionAlignment)
      return fail("section " + std::to_string(i) + " (kind " +
                  std::to_string(kind) + ") lies outside the file");
    if (kind >= Manifest && kind <= KernelImages) {
      if (sections[kind].present)
        return fail("duplicate section kind " + std::to_string(kind));
      sections[kind] = {offset, length, true};
    }
    // Unknown kinds are skipped: a later v1 writer may add sections.
  }
  for (uint32_t kind : {Manifest, Weights, HostPlan})
    if (!sections[kind].present)
      return fail(std::string("missing ") +
                  (kind == Manifest  ? "manifest"
                   : kind == Weights ? "weights"
                                     : "host plan") +
                  " section");

  Cursor manifest(base + sections[Manifest].offset, sections[Manifest].size,
                  "manifest");
  if (!readManifest(manifest, b))
    return fail(manifest.getError());
  if (manifest.remaining())
    return fail("manifest has trailing bytes");
  if (b.weightsSize != sections[Weights].size)
    return fail("weights section has " +
                std::to_string(sections[Weights].size) +
                " bytes, the manifest says " + std::to_string(b.weightsSize));
  b.weights = base + sections[Weights].offset;

  Cursor plan(base + sections[HostPlan].offset, sections[HostPlan].size,
              "host plan");
  if (!readHostPlan(plan, b))
    return fail(plan.getError());
  if (plan.remaining())
    return fail("host plan has trailing bytes");
  return Status::ok();
}

Status parseBundle(const uint8_t *data, size_t size, const std::string &name,
                   std::unique_ptr<Bundle> &out) {
  auto result = std::make_unique<Bundle>();
  // Copy, 64-byte aligned, so weights are aligned for any type.
  result->storageSize = size;
  result->storage = static_cast<uint8_t *>(
      std::aligned_alloc(64, alignTo(size ? size : 1, 64)));
  if (!result->storage)
    return Status(SNUG_ERROR_OUT_OF_MEMORY,
                  "bundle '" + name + "': cannot allocate " +
                      std::to_string(size) + " bytes");
  if (size)
    std::memcpy(result->storage, data, size);
  if (Status s = decodeBundle(result->storage, size, name, result))
    return s;
  out = std::move(result);
  return Status::ok();
}

Status readBundle(const std::string &path, std::unique_ptr<Bundle> &out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status(SNUG_ERROR_IO, "cannot open bundle '" + path +
                                     "': " + std::strerror(errno));
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    close(fd);
    return Status(SNUG_ERROR_IO,
                  "cannot read bundle '" + path + "': not a regular file");
  }
  size_t size = size_t(info.st_size);
  if (size == 0) {
    close(fd);
    return parseBundle(nullptr, 0, path, out);
  }
  void *map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED)
    return Status(SNUG_ERROR_IO, "cannot map bundle '" + path +
                                     "': " + std::strerror(errno));
  auto result = std::make_unique<Bundle>();
  result->storage = static_cast<uint8_t *>(map);
  result->storageSize = size;
  result->mapped = true;
  if (Status s = decodeBundle(result->storage, size, path, result))
    return s;
  out = std::move(result);
  return Status::ok();
}

} // namespace rt
} // namespace snug
