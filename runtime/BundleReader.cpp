//===- BundleReader.cpp - Reading and checking a .snug bundle -------------===//
//
// Decoding is a bounds-checked cursor over each section; every count is
// checked against the bytes left before anything is allocated, so a corrupt
// bundle is rejected with a message and never crashes or allocates wildly
// (a gtest feeds it hundreds of mutated bundles under ASan).
//
// This file holds the driver: the header and section table, the manifest
// and the state, the external weights, and reading a bundle from a file or
// from memory. The host plan's sections are decoded in
// BundleReaderHostPlan.cpp, the device plan's and the kernel images in
// BundleReaderDevicePlan.cpp; the cursor they share is in
// BundleReaderInternal.h.
//
// A mapped file (the bundle, its external weights) stays open with the
// stamp it had when opened, before its bytes were checked: a file written
// in place with as many bytes faults nowhere, so the executors ask
// checkFilesUnchanged after they read the mapping (runtime/Api.cpp).
//
//===----------------------------------------------------------------------===//
#include "runtime/BundleReader.h"
#include "core/CheckedArithmetic.h"
#include "core/FileAccess.h"
#include "core/SignalCleanup.h"
#include "runtime/BundleReaderInternal.h"
#include "runtime/PlanVerifier.h"

#include <algorithm>
#include <cerrno>
#include <optional>
#include <tuple>
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
  unregisterMappedFile(storageFaultSlot);
  unregisterMappedFile(weightsFaultSlot);
  if (mapped)
    munmap(storage, storageSize);
  else
    std::free(storage);
  if (weightsMap)
    munmap(weightsMap, weightsMapSize);
  for (const WatchedFile &file : watchedFiles)
    ::close(file.fd);
}

Status Bundle::watchFile(const InputFile &file, const std::string &what) {
  // A descriptor of its own: the caller's closes, and a path may name
  // another file by the next check.
  int fd = fcntl(file.getFd(), F_DUPFD_CLOEXEC, 0);
  if (fd < 0)
    return Status(SNUG_ERROR_IO, "cannot keep " + what + " open: " +
                                     std::strerror(errno));
  watchedFiles.push_back({fd, file.getStamp(), what});
  return Status::ok();
}

Status Bundle::checkFilesUnchanged() const {
  for (const WatchedFile &file : watchedFiles) {
    FileStamp now;
    if (!readFileStamp(file.fd, now))
      return Status(SNUG_ERROR_IO, "cannot check " + file.what +
                                       " for changes: " +
                                       std::strerror(errno));
    if (now != file.stamp)
      return Status(SNUG_ERROR_IO,
                    file.what +
                        " was written in place while in use (its size or "
                        "modification time changed since it was loaded), "
                        "so what was read from it may not be what its hash "
                        "checked; replace a file in use by renaming a new "
                        "one over it");
  }
  return Status::ok();
}

const StateDesc *Bundle::findState(const std::string &name) const {
  for (const StateDesc &entry : state)
    if (entry.name == name)
      return &entry;
  return nullptr;
}

const Attr *PlanOp::getAttr(const std::string &name) const {
  for (const auto &entry : attributes)
    if (entry.first == name)
      return &entry.second;
  return nullptr;
}

const Attr *BodyOp::getAttr(const std::string &name) const {
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

std::string dimsText(const std::vector<int64_t> &dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

/// The largest product of an empty tensor's nonzero dims.
constexpr uint64_t kMaxEmptyExtent = uint64_t(1) << 24;

/// Whether an empty tensor's nonzero dims are small: a full tensor's dims
/// are bounded by its bytes, but [0, 2^40, 2^40] holds nothing and would
/// let the kernels' products of some dims (strides, outer and inner
/// extents, per-channel buffers) overflow or allocate wildly.
bool hasBoundedDims(const std::vector<int64_t> &dims) {
  if (std::find(dims.begin(), dims.end(), 0) == dims.end())
    return true;
  uint64_t product = 1;
  for (int64_t dim : dims) {
    if (dim == 0)
      continue;
    std::optional<uint64_t> next = checkedMul(product, uint64_t(dim));
    if (!next || *next > kMaxEmptyExtent)
      return false;
    product = *next;
  }
  return true;
}

/// Reads a location and checks it against its region of `b`: the arena,
/// the weights or the pinned host region.
bool readLocation(Cursor &cursor, Location &location, const Bundle &b,
                  const std::string &what) {
  uint16_t reserved;
  uint32_t rank;
  if (!cursor.u8(location.kind) || !cursor.u8(location.dtype) ||
      !cursor.u16(reserved) || !cursor.count(rank, 8))
    return false;
  if (location.kind > Host)
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
  for (int64_t dim : location.dims)
    if (dim < 0)
      return cursor.fail(what + ": negative dim");
  std::optional<uint64_t> bytes = checkedByteSize(
      location.dims.data(), location.dims.size(), elementSize);
  if (!bytes || !hasBoundedDims(location.dims))
    return cursor.fail(what + ": dims " + dimsText(location.dims) +
                       " are too large");
  location.bytes = *bytes;
  location.numElements = int64_t(*bytes / elementSize);
  uint64_t space = location.kind == Arena    ? b.arenaSize
                   : location.kind == Weight ? b.weightsSize
                                             : b.hostSize;
  if (location.offset > space || location.bytes > space - location.offset)
    return cursor.fail(what + ": " + std::to_string(location.bytes) +
                       " bytes at offset " + std::to_string(location.offset) +
                       " lie outside the " +
                       (location.kind == Arena    ? "arena"
                        : location.kind == Weight ? "weights"
                                                  : "pinned host region") +
                       " (" + std::to_string(space) + " bytes)");
  if (location.kind == Weight && location.offset % elementSize)
    return cursor.fail(what + ": misaligned weight offset");
  return true;
}

namespace {

/// The State section, after the manifest: each entry's weights range lies in
/// the weights, no two overlap, and its output is an arena value of the
/// same bytes, so the write-back stays inside both.
bool readState(Cursor &cursor, Bundle &b) {
  uint32_t count;
  if (!cursor.count(count, 25))
    return false;
  b.state.resize(count);
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (uint32_t i = 0; i < count; ++i) {
    StateDesc &entry = b.state[i];
    if (!cursor.string(entry.name) || !cursor.u8(entry.role) ||
        !cursor.u64(entry.weightOffset) || !cursor.u64(entry.bytes) ||
        !cursor.u32(entry.output))
      return false;
    std::string what = "state '" + entry.name + "'";
    if (entry.role > StateStatistic)
      return cursor.fail(what + ": unknown role " + std::to_string(entry.role));
    if (entry.weightOffset > b.weightsSize ||
        entry.bytes > b.weightsSize - entry.weightOffset)
      return cursor.fail(what + " lies outside the weights");
    if (entry.output >= b.outputs.size())
      return cursor.fail(what + ": output " + std::to_string(entry.output) +
                         " does not exist");
    const Location &next = b.outputs[entry.output].location;
    if (next.kind != Arena || next.bytes != entry.bytes)
      return cursor.fail(what + ": output '" + b.outputs[entry.output].name +
                         "' is not an arena value of " +
                         std::to_string(entry.bytes) + " bytes");
    ranges.push_back({entry.weightOffset, entry.weightOffset + entry.bytes});
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return cursor.fail("two state entries overlap in the weights");
  return true;
}

bool readManifest(Cursor &cursor, Bundle &b) {
  uint32_t count;
  if (!cursor.string(b.compilerVersion) || !cursor.string(b.pipeline) ||
      !cursor.string(b.moduleName) || !cursor.u64(b.arenaSize) ||
      !cursor.u64(b.alignment) || !cursor.u64(b.weightsSize) ||
      !cursor.u64(b.lowerBound))
    return false;
  // Checked before any location is held against them or anything is
  // allocated: a 2^64 - 1 arena must not round up to a tiny allocation.
  if (b.arenaSize > kMaxTensorBytes)
    return cursor.fail("arena of " + std::to_string(b.arenaSize) +
                       " bytes exceeds the limit of " +
                       std::to_string(kMaxTensorBytes));
  if (b.weightsSize > kMaxTensorBytes)
    return cursor.fail("weights of " + std::to_string(b.weightsSize) +
                       " bytes exceed the limit of " +
                       std::to_string(kMaxTensorBytes));
  if (b.alignment & (b.alignment - 1) || b.alignment > kMaxArenaAlignment)
    return cursor.fail("arena alignment " + std::to_string(b.alignment) +
                       " is not a power of two up to " +
                       std::to_string(kMaxArenaAlignment));
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
          !readLocation(cursor, desc.location, b,
                        what + " '" + desc.name + "'"))
        return false;
      if (desc.location.kind == Absent || desc.location.kind == Host ||
          (isInput && desc.location.kind != Arena))
        return cursor.fail(what + " '" + desc.name +
                           "' has no arena location");
    }
  }
  return true;
}

} // namespace

/// Checks `size` bytes at `data` (the storage of `result`) and decodes them
/// into `result`.
/// Maps the external weights file an ExternalWeights section names, beside
/// the bundle `bundlePath`, and checks its size and SHA-256.
static Status mapExternalWeights(Cursor &cursor, const std::string &bundlePath,
                                 Bundle &b, const uint8_t *&weights, void *&map,
                                 size_t &mapSize, int &faultSlot) {
  std::string file;
  uint64_t size = 0;
  const uint8_t *digest = nullptr;
  if (!cursor.string(file) || !cursor.u64(size) || !cursor.bytes(digest, 32))
    return Status(SNUG_ERROR_INVALID_BUNDLE,
                  "bundle '" + bundlePath + "': " + cursor.getError());
  if (cursor.remaining())
    return Status(SNUG_ERROR_INVALID_BUNDLE,
                  "bundle '" + bundlePath +
                      "': external weights section has trailing bytes");
  if (file.empty() || file == "." || file == ".." ||
      file.find('/') != std::string::npos)
    return Status(SNUG_ERROR_INVALID_BUNDLE,
                  "bundle '" + bundlePath + "': external weights file name '" +
                      file + "' is not a plain file name");
  if (size != b.weightsSize)
    return Status(SNUG_ERROR_INVALID_BUNDLE,
                  "bundle '" + bundlePath + "': external weights of " +
                      std::to_string(size) + " bytes, the manifest says " +
                      std::to_string(b.weightsSize));
  size_t slash = bundlePath.rfind('/');
  std::string path = (slash == std::string::npos
                          ? std::string()
                          : bundlePath.substr(0, slash + 1)) +
                     file;
  b.externalWeightsPath = path;
  InputFile input;
  std::string why;
  if (!input.open(path, why))
    return Status(SNUG_ERROR_IO, "bundle '" + bundlePath +
                                     "': its weights file '" + path +
                                     "' cannot be opened: " +
                                     input.getFailureReason());
  if (input.getSize() != size)
    return Status(SNUG_ERROR_INVALID_BUNDLE,
                  "bundle '" + bundlePath + "': its weights file '" + path +
                      "' has " + std::to_string(input.getSize()) +
                      " bytes, the bundle expects " + std::to_string(size));
  if (Status s = b.watchFile(input, "weights file '" + path +
                                        "' of bundle '" + bundlePath + "'"))
    return s;
  if (size) {
    map = mmap(nullptr, size_t(size), PROT_READ, MAP_PRIVATE, input.getFd(), 0);
    int mapError = errno;
    if (map == MAP_FAILED) {
      map = nullptr;
      return Status(SNUG_ERROR_IO, "cannot map weights file '" + path +
                                       "': " + std::strerror(mapError));
    }
    mapSize = size_t(size);
    faultSlot = registerMappedFile(map, mapSize,
                                   "weights file '" + path + "' of bundle '" +
                                       bundlePath + "'");
  }
  Sha256::Digest actual =
      Sha256::of(static_cast<const uint8_t *>(map), size_t(size));
  if (std::memcmp(actual.data(), digest, 32) != 0)
    return Status(SNUG_ERROR_INVALID_BUNDLE,
                  "bundle '" + bundlePath + "': its weights file '" + path +
                      "' does not match (SHA-256 differs: another model's "
                      "weights, or changed since it was compiled)");
  static const uint8_t empty[64] = {};
  weights = size ? static_cast<const uint8_t *>(map) : empty;
  return Status::ok();
}

Status decodeBundle(const uint8_t *data, size_t size, const std::string &name,
                    std::unique_ptr<Bundle> &result) {
  auto fail = [&](const std::string &message) {
    return invalidBundle("bundle '" + name + "': " + message);
  };
  if (size < kLegacyHeaderSize)
    return fail("truncated: " + std::to_string(size) +
                " bytes, shorter than the header");
  if (std::memcmp(data, kMagic, 8))
    return fail("bad magic (not a snug bundle)");
  uint32_t version = readU32(data + 8);
  if (version > kBundleVersion)
    return Status(SNUG_ERROR_UNSUPPORTED,
                  "bundle '" + name + "': format version " +
                      std::to_string(version) +
                      " is newer than this runtime (which reads versions " +
                      std::to_string(kOldestBundleVersion) + " to " +
                      std::to_string(kBundleVersion) + ")");
  if (version < kOldestBundleVersion)
    return fail("format version " + std::to_string(version) +
                " is invalid (this runtime reads versions " +
                std::to_string(kOldestBundleVersion) + " to " +
                std::to_string(kBundleVersion) + ")");
  const uint64_t header = headerSize(version);
  if (size < header)
    return fail("truncated: " + std::to_string(size) +
                " bytes, shorter than the header");
  uint32_t sectionCount = readU32(data + 12);
  uint64_t fileSize = readU64(data + 16);
  uint64_t hash = readU64(data + kHashOffset);
  if (fileSize != size)
    return fail(size < fileSize
                    ? "truncated: " + std::to_string(size) + " of " +
                          std::to_string(fileSize) + " bytes"
                    : "size " + std::to_string(size) +
                          " does not match the header's " +
                          std::to_string(fileSize));
  if (!isSealed(data, size))
    return fail(std::string(version >= kFirstVersionWithDigest
                                ? "SHA-256 hash"
                                : "plan hash") +
                " mismatch (the file is corrupt)");
  if (version >= kFirstVersionWithDigest && readU64(data + kHashOffset +
                                                    kDigestSize))
    return fail("reserved header bytes are not zero");
  if (sectionCount > kMaxSections ||
      header + uint64_t(sectionCount) * kSectionEntrySize > size)
    return fail("bad section count " + std::to_string(sectionCount));

  Bundle &b = *result;
  b.path = name;
  b.version = version;
  b.planHash = hash;
  const uint8_t *base = data;

  struct Section {
    uint64_t offset = 0, size = 0;
    bool present = false;
  } sections[SectionKind::State + 1];
  uint64_t tableEnd = header + uint64_t(sectionCount) * kSectionEntrySize;
  for (uint32_t i = 0; i < sectionCount; ++i) {
    const uint8_t *entry = base + header + i * kSectionEntrySize;
    uint32_t kind = readU32(entry);
    uint64_t offset = readU64(entry + 8), length = readU64(entry + 16);
    if (offset < tableEnd || offset > size || length > size - offset ||
        offset % kSectionAlignment)
      return fail("section " + std::to_string(i) + " (kind " +
                  std::to_string(kind) + ") lies outside the file");
    if (kind >= Manifest && kind <= SectionKind::State) {
      if (sections[kind].present)
        return fail("duplicate section kind " + std::to_string(kind));
      sections[kind] = {offset, length, true};
    }
    // Unknown kinds are skipped: a later v1 writer may add sections.
  }
  for (uint32_t kind : {Manifest, HostPlan})
    if (!sections[kind].present)
      return fail(std::string("missing ") +
                  (kind == Manifest ? "manifest" : "host plan") + " section");
  if (sections[Weights].present == sections[ExternalWeights].present)
    return fail(sections[Weights].present
                    ? "both embedded and external weights"
                    : "missing weights section");

  // Before the manifest: its locations and the host plan's are checked
  // against the pinned host region.
  if (sections[PinnedHost].present) {
    Cursor pinned(base + sections[PinnedHost].offset,
                  sections[PinnedHost].size, "pinned host");
    if (!pinned.u64(b.hostSize))
      return fail(pinned.getError());
    if (pinned.remaining())
      return fail("pinned host section has trailing bytes");
    if (b.hostSize > kMaxTensorBytes)
      return fail("pinned host region of " + std::to_string(b.hostSize) +
                  " bytes exceeds the limit of " +
                  std::to_string(kMaxTensorBytes));
  }
  Cursor manifest(base + sections[Manifest].offset, sections[Manifest].size,
                  "manifest");
  if (!readManifest(manifest, b))
    return fail(manifest.getError());
  if (manifest.remaining())
    return fail("manifest has trailing bytes");
  if (sections[ExternalWeights].present) {
    Cursor external(base + sections[ExternalWeights].offset,
                    sections[ExternalWeights].size, "external weights");
    if (Status s =
            mapExternalWeights(external, name, b, b.weights, b.weightsMap,
                               b.weightsMapSize, b.weightsFaultSlot))
      return s;
  } else {
    if (b.weightsSize != sections[Weights].size)
      return fail("weights section has " +
                  std::to_string(sections[Weights].size) +
                  " bytes, the manifest says " + std::to_string(b.weightsSize));
    b.weights = base + sections[Weights].offset;
  }

  Cursor plan(base + sections[HostPlan].offset, sections[HostPlan].size,
              "host plan");
  if (!readHostPlan(plan, b))
    return fail(plan.getError());
  if (plan.remaining())
    return fail("host plan has trailing bytes");

  if (sections[SectionKind::State].present) {
    Cursor state(base + sections[SectionKind::State].offset,
                 sections[SectionKind::State].size, "state");
    if (!readState(state, b))
      return fail(state.getError());
    if (state.remaining())
      return fail("state section has trailing bytes");
  }

  // The CUDA sections come together or not at all.
  if (sections[DevicePlanSection].present != sections[KernelImages].present)
    return fail("a device plan needs kernel images and vice versa");
  if (sections[DevicePlanSection].present) {
    Cursor device(base + sections[DevicePlanSection].offset,
                  sections[DevicePlanSection].size, "device plan");
    if (!readDevicePlan(device, b))
      return fail(device.getError());
    if (device.remaining())
      return fail("device plan has trailing bytes");
    Cursor images(base + sections[KernelImages].offset,
                  sections[KernelImages].size, "kernel images");
    if (!readKernelImages(images, b))
      return fail(images.getError());
    if (images.remaining())
      return fail("kernel images have trailing bytes");
    b.hasDevicePlan = true;
  }
  // Every op well-formed for its kind, so what loads stays in its buffers.
  return verifyPlan(b);
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
  // A regular file only: a FIFO would block, /dev/zero never ends.
  InputFile file;
  std::string why;
  if (!file.open(path, why))
    return Status(SNUG_ERROR_IO, "cannot open bundle '" + path +
                                     "': " + file.getFailureReason());
  size_t size = size_t(file.getSize());
  if (size == 0)
    return parseBundle(nullptr, 0, path, out);
  void *map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.getFd(), 0);
  int mapError = errno;
  if (map == MAP_FAILED)
    return Status(SNUG_ERROR_IO, "cannot map bundle '" + path +
                                     "': " + std::strerror(mapError));
  auto result = std::make_unique<Bundle>();
  result->storage = static_cast<uint8_t *>(map);
  result->storageSize = size;
  result->mapped = true;
  if (Status s = result->watchFile(file, "bundle '" + path + "'"))
    return s;
  result->storageFaultSlot =
      registerMappedFile(map, size, "bundle '" + path + "'");
  if (Status s = decodeBundle(result->storage, size, path, result))
    return s;
  out = std::move(result);
  return Status::ok();
}

} // namespace rt
} // namespace snug
