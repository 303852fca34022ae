//===- BundleReader.cpp - Reading and checking a .snug bundle -------------===//
//
// Decoding is a bounds-checked cursor over each section; every count is
// checked against the bytes left before anything is allocated, so a corrupt
// bundle is rejected with a message and never crashes or allocates wildly
// (a gtest feeds it hundreds of mutated bundles under ASan).
//
//===----------------------------------------------------------------------===//
#include "runtime/BundleReader.h"
#include "core/CheckedArithmetic.h"
#include "core/FileAccess.h"
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
  if (mapped)
    munmap(storage, storageSize);
  else
    std::free(storage);
  if (weightsMap)
    munmap(weightsMap, weightsMapSize);
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
    const uint8_t *p = nullptr;
    if (!bytes(p, 1))
      return false;
    out = *p;
    return true;
  }
  bool u16(uint16_t &out) {
    const uint8_t *p = nullptr;
    if (!bytes(p, 2))
      return false;
    out = uint16_t(p[0] | p[1] << 8);
    return true;
  }
  bool u32(uint32_t &out) {
    const uint8_t *p = nullptr;
    if (!bytes(p, 4))
      return false;
    out = readU32(p);
    return true;
  }
  bool u64(uint64_t &out) {
    const uint8_t *p = nullptr;
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
    const uint8_t *p = nullptr;
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
    const uint8_t *p = nullptr;
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

/// A body value's type: u8 dtype, u8 0, u16 0, u32 rank, dims.
bool readBodyType(Cursor &cursor, BodyType &type, const std::string &what) {
  uint8_t reserved8;
  uint16_t reserved16;
  uint32_t rank;
  if (!cursor.u8(type.dtype) || !cursor.u8(reserved8) ||
      !cursor.u16(reserved16) || !cursor.count(rank, 8))
    return false;
  if (!dtypeSize(type.dtype))
    return cursor.fail(what + ": unknown dtype code " +
                       std::to_string(type.dtype));
  if (rank > kMaxRank)
    return cursor.fail(what + ": rank " + std::to_string(rank) +
                       " exceeds " + std::to_string(kMaxRank));
  type.dims.resize(rank);
  for (int64_t &dim : type.dims) {
    if (!cursor.i64(dim))
      return false;
    if (dim < 0)
      return cursor.fail(what + ": negative dim");
  }
  std::optional<uint64_t> bytes = checkedByteSize(
      type.dims.data(), type.dims.size(), dtypeSize(type.dtype));
  if (!bytes || !hasBoundedDims(type.dims))
    return cursor.fail(what + ": dims " + dimsText(type.dims) +
                       " are too large");
  type.numElements = int64_t(*bytes / dtypeSize(type.dtype));
  return true;
}

bool sameType(const BodyType &type, const Location &location) {
  return type.dtype == location.dtype && type.dims == location.dims;
}

/// Reads op `op`'s body and checks that it is closed and typed (what the
/// per-element executors rely on).
bool readBody(Cursor &cursor, PlanOp &op, const std::string &where) {
  PlanBody &body = op.body;
  uint32_t n;
  if (!cursor.count(n, 8))
    return false;
  // An epilogue's argument 0 is the op's own result, the others its extra
  // operands after the op's own (ir/Module.h).
  int arity = op.opName == kFusedOpName ? -1 : getEpilogueArity(op.opName);
  bool epilogue = arity >= 0;
  if (epilogue && (op.operands.size() < size_t(arity) ||
                   op.results.size() != 1))
    return cursor.fail(where + ": an epilogue needs the op's " +
                       std::to_string(arity) + " operands and one result");
  size_t first = epilogue ? size_t(arity) - 1 : 0;
  size_t bound = op.operands.size() - first;
  if (n != bound)
    return cursor.fail(where + ": body has " + std::to_string(n) +
                       " block arguments for " + std::to_string(bound) +
                       (epilogue ? " (the result and the extra operands)"
                                 : " operands"));
  if (epilogue)
    op.numOwnOperands = size_t(arity);
  body.arguments.resize(n);
  for (uint32_t k = 0; k < n; ++k) {
    std::string what = where + " block argument " + std::to_string(k);
    if (!readBodyType(cursor, body.arguments[k], what))
      return false;
    bool own = epilogue && k == 0;
    const Location &source = own ? op.results[0] : op.operands[first + k];
    if (!source.isPresent() || !sameType(body.arguments[k], source))
      return cursor.fail(what + " does not match " +
                         (own ? std::string("result 0")
                              : "operand " + std::to_string(first + k)));
  }
  body.values = body.arguments;
  if (!cursor.count(n, 20))
    return false;
  body.ops.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    BodyOp &inner = body.ops[i];
    std::string what = where + " body op " + std::to_string(i);
    uint32_t m;
    if (!cursor.string(inner.opName) || !cursor.string(inner.nodeName) ||
        !cursor.count(m, 6))
      return false;
    inner.attributes.resize(m);
    for (auto &entry : inner.attributes)
      if (!cursor.string(entry.first) || !readAttr(cursor, entry.second))
        return false;
    if (!cursor.count(m, 4))
      return false;
    inner.operands.resize(m);
    for (uint32_t &index : inner.operands) {
      if (!cursor.u32(index))
        return false;
      if (index != kNoValue && index >= body.values.size())
        return cursor.fail(what + ": operand value " + std::to_string(index) +
                           " is not defined before it (" +
                           std::to_string(body.values.size()) + " are)");
    }
    if (!cursor.count(m, 8))
      return false;
    inner.results.resize(m);
    for (uint32_t k = 0; k < m; ++k) {
      if (!readBodyType(cursor, inner.results[k],
                        what + " result " + std::to_string(k)))
        return false;
      body.values.push_back(inner.results[k]);
    }
  }
  if (!cursor.count(n, 4))
    return false;
  if (n != op.results.size())
    return cursor.fail(where + ": body yields " + std::to_string(n) +
                       " values for " + std::to_string(op.results.size()) +
                       " results");
  body.yield.resize(n);
  for (uint32_t k = 0; k < n; ++k) {
    if (!cursor.u32(body.yield[k]))
      return false;
    uint32_t index = body.yield[k];
    if (index >= body.values.size() ||
        !sameType(body.values[index], op.results[k]))
      return cursor.fail(where + ": yield value " + std::to_string(k) +
                         " is undefined or does not match result " +
                         std::to_string(k));
  }
  if (op.results.empty())
    return cursor.fail(where + ": a body needs at least one result");
  for (const Location &result : op.results)
    if (result.dims != op.results[0].dims)
      return cursor.fail(where + ": results of a body differ in shape");
  for (const BodyType &type : body.values)
    if (!broadcastsTo(type.dims, op.results[0].dims))
      return cursor.fail(where + ": a body value does not broadcast to the "
                                 "result shape");
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
        if (!readLocation(cursor, (*list)[k], b, what))
          return false;
        if (list == &op.results && (*list)[k].kind == Weight)
          return cursor.fail(what + " is a weight");
      }
    }
    op.numOwnOperands = op.operands.size();
    if (b.version < kFirstVersionWithBodies)
      continue;
    uint8_t hasBody;
    if (!cursor.u8(hasBody))
      return false;
    if (hasBody > 1)
      return cursor.fail(op.describe(i) + ": bad has-body byte " +
                         std::to_string(hasBody));
    op.hasBody = hasBody;
    bool mayHaveBody = op.opName == kFusedOpName ||
                       getEpilogueArity(op.opName) >= 0;
    if (op.hasBody ? !mayHaveBody : op.opName == kFusedOpName)
      return cursor.fail(op.describe(i) +
                         (op.hasBody ? ": only snug.fused and ops that take "
                                       "an epilogue have a body"
                                     : ": snug.fused needs a body"));
    if (op.hasBody && !readBody(cursor, op, op.describe(i)))
      return false;
  }
  return true;
}

bool readDeviceArg(Cursor &cursor, DeviceArg &arg, uint64_t bytes,
                   uint64_t arenaSize, uint64_t weightsSize,
                   const std::string &what) {
  if (!cursor.u8(arg.kind) || !cursor.u64(arg.value))
    return false;
  if (arg.kind < ArgArena || arg.kind > ArgF32)
    return cursor.fail(what + ": unknown argument kind " +
                       std::to_string(arg.kind));
  if (!arg.isPointer())
    return true;
  uint64_t space = arg.kind == ArgArena ? arenaSize : weightsSize;
  if (arg.value > space || bytes > space - arg.value)
    return cursor.fail(what + ": " + std::to_string(bytes) +
                       " bytes at offset " + std::to_string(arg.value) +
                       " lie outside the device " +
                       (arg.kind == ArgArena ? "arena" : "weights") + " (" +
                       std::to_string(space) + " bytes)");
  return true;
}

/// The workspace a version-1 plan gave every GEMM; whether GEMMs carry a
/// math byte (from version 5) and an epilogue byte (from version 6).
struct SharedWorkspace {
  bool legacy = false;
  uint64_t offset = 0, bytes = 0;
  bool withMath = true;
  bool withEpilogue = true;
};

/// Reads a GEMM's epilogue byte and bias (format v6) after its math byte:
/// a known epilogue, on a dtype cuBLASLt's epilogues take, its bias m
/// elements inside the arena or the weights and clear of C (cuBLASLt
/// reads the bias while it writes C). `biasBytes` is set to the bias's size.
bool readGemmEpilogue(Cursor &cursor, DeviceGemm &g, uint64_t cBytes,
                      uint64_t arenaSize, uint64_t weightsSize,
                      const std::string &what, uint64_t &biasBytes) {
  biasBytes = 0;
  if (!cursor.u8(g.epilogue))
    return false;
  if (g.epilogue > GemmEpilogueLast)
    return cursor.fail(what + ": unknown GEMM epilogue " +
                       std::to_string(g.epilogue));
  if (g.epilogue != GemmEpilogueNone && g.dtype == DTypeF64)
    return cursor.fail(what + ": GEMM epilogue " +
                       gemmEpilogueName(g.epilogue) +
                       " on an f64 GEMM (cuBLASLt's epilogues take f32, "
                       "f16 and bf16)");
  if (!gemmEpilogueHasBias(g.epilogue))
    return true;
  biasBytes = uint64_t(g.m) * dtypeSize(g.dtype);
  if (!readDeviceArg(cursor, g.bias, biasBytes, arenaSize, weightsSize,
                     what + " bias"))
    return false;
  if (g.bias.kind != ArgArena && g.bias.kind != ArgWeight)
    return cursor.fail(what + ": GEMM bias is not in the device arena or "
                              "the weights (argument kind " +
                       std::to_string(g.bias.kind) + ")");
  if (g.bias.kind == ArgArena && biasBytes && cBytes &&
      g.bias.value < g.c.value + cBytes && g.c.value < g.bias.value + biasBytes)
    return cursor.fail(what + ": GEMM bias (" + std::to_string(biasBytes) +
                       " bytes at offset " + std::to_string(g.bias.value) +
                       ") overlaps its result C");
  return true;
}

bool readGemm(Cursor &cursor, DeviceGemm &g, uint64_t arenaSize,
              uint64_t weightsSize, const std::string &what,
              const SharedWorkspace &shared) {
  uint32_t m, n, k, batch;
  if (!cursor.u8(g.dtype) || !cursor.u8(g.transA) || !cursor.u8(g.transB) ||
      !cursor.u32(m) || !cursor.u32(n) || !cursor.u32(k) ||
      !cursor.u32(batch) || !cursor.i64(g.lda) || !cursor.i64(g.ldb) ||
      !cursor.i64(g.ldc) || !cursor.i64(g.strideA) || !cursor.i64(g.strideB) ||
      !cursor.i64(g.strideC) || !cursor.f32(g.alpha) || !cursor.f32(g.beta))
    return false;
  g.m = int32_t(m), g.n = int32_t(n), g.k = int32_t(k), g.batch = int32_t(batch);
  unsigned size = dtypeSize(g.dtype);
  if (g.dtype != DTypeF32 && g.dtype != DTypeF16 && g.dtype != DTypeBF16 &&
      g.dtype != DTypeF64)
    return cursor.fail(what + ": GEMM on unsupported dtype " +
                       std::to_string(g.dtype));
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 1 || g.transA > 1 ||
      g.transB > 1 || g.strideA < 0 || g.strideB < 0 || g.strideC < 0)
    return cursor.fail(what + ": bad GEMM shape");
  // Operand shapes before op(): A is m x k (k x m transposed), B k x n.
  int64_t aRows = g.transA ? g.k : g.m, aCols = g.transA ? g.m : g.k;
  int64_t bRows = g.transB ? g.n : g.k, bCols = g.transB ? g.k : g.n;
  if (g.lda < std::max<int64_t>(1, aRows) ||
      g.ldb < std::max<int64_t>(1, bRows) || g.ldc < std::max<int64_t>(1, g.m))
    return cursor.fail(what + ": GEMM leading dimension too small");
  const int64_t limit = int64_t(1) << 40;
  for (int64_t v : {g.lda, g.ldb, g.ldc, g.strideA, g.strideB, g.strideC})
    if (v > limit)
      return cursor.fail(what + ": GEMM stride too large");
  uint64_t aBytes = gemmOperandBytes(aRows, aCols, g.lda, g.strideA, g.batch, size);
  uint64_t bBytes = gemmOperandBytes(bRows, bCols, g.ldb, g.strideB, g.batch, size);
  uint64_t cBytes = gemmOperandBytes(g.m, g.n, g.ldc, g.strideC, g.batch, size);
  if (!readDeviceArg(cursor, g.a, aBytes, arenaSize, weightsSize, what + " A") ||
      !readDeviceArg(cursor, g.b, bBytes, arenaSize, weightsSize, what + " B") ||
      !readDeviceArg(cursor, g.c, cBytes, arenaSize, weightsSize, what + " C"))
    return false;
  if (g.c.kind != ArgArena)
    return cursor.fail(what + ": GEMM writes outside the arena");
  // cuBLAS leaves C over A or B undefined (C over itself, for beta, is fine).
  for (const auto &[arg, bytes, name] :
       {std::tuple<const DeviceArg &, uint64_t, const char *>{g.a, aBytes, "A"},
        {g.b, bBytes, "B"}})
    if (arg.kind == ArgArena && bytes && cBytes && arg.value < g.c.value + cBytes &&
        g.c.value < arg.value + bytes)
      return cursor.fail(what + ": GEMM result C (" + std::to_string(cBytes) +
                         " bytes at offset " + std::to_string(g.c.value) +
                         ") overlaps its operand " + name);
  if (shared.legacy) {
    g.workspaceOffset = shared.offset, g.workspaceBytes = shared.bytes;
  } else if (!cursor.u64(g.workspaceOffset) ||
             !cursor.u64(g.workspaceBytes)) {
    return false;
  }
  g.math = GemmMathDefault;
  if (shared.withMath) {
    if (!cursor.u8(g.math))
      return false;
    if (g.math > GemmMathTf32)
      return cursor.fail(what + ": unknown GEMM math " +
                         std::to_string(g.math));
    if (g.math == GemmMathTf32 && g.dtype != DTypeF32)
      return cursor.fail(what + ": TF32 math on a GEMM of dtype " +
                         std::to_string(g.dtype) + " (it takes f32 only)");
  }
  g.epilogue = GemmEpilogueNone;
  g.bias = DeviceArg();
  uint64_t biasBytes = 0;
  if (shared.withEpilogue && !readGemmEpilogue(cursor, g, cBytes, arenaSize,
                                               weightsSize, what, biasBytes))
    return false;
  if (!g.workspaceBytes)
    return true;
  std::string range = std::to_string(g.workspaceBytes) +
                      " bytes of cuBLAS workspace at offset " +
                      std::to_string(g.workspaceOffset);
  if (g.workspaceOffset > arenaSize ||
      g.workspaceBytes > arenaSize - g.workspaceOffset)
    return cursor.fail(what + ": " + range + " lie outside the device arena (" +
                       std::to_string(arenaSize) + " bytes)");
  // cublasSetWorkspace wants 256-byte alignment; the arena's base has it.
  if (g.workspaceOffset % 256)
    return cursor.fail(what + ": " + range +
                       " are not 256-byte aligned (cublasSetWorkspace "
                       "refuses them)");
  // cuBLAS writes its workspace while it reads A and B and writes C.
  const std::pair<const DeviceArg *, uint64_t> operands[] = {
      {&g.a, aBytes}, {&g.b, bBytes}, {&g.c, cBytes}, {&g.bias, biasBytes}};
  const char *names[] = {"A", "B", "C", "bias"};
  for (int i = 0; i < 4; ++i) {
    const DeviceArg &arg = *operands[i].first;
    uint64_t bytes = operands[i].second;
    if (arg.kind == ArgArena && bytes &&
        arg.value < g.workspaceOffset + g.workspaceBytes &&
        g.workspaceOffset < arg.value + bytes)
      return cursor.fail(what + ": " + range + " overlap its operand " +
                         names[i] + " (" + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(arg.value) +
                         ")");
  }
  return true;
}

bool readDevicePlan(Cursor &cursor, Bundle &b) {
  DevicePlan &plan = b.devicePlan;
  uint32_t count;
  SharedWorkspace shared;
  shared.legacy = b.version < 2;
  shared.withMath = b.version >= kFirstVersionWithGemmMath;
  shared.withEpilogue = b.version >= kFirstVersionWithGemmEpilogue;
  if (!cursor.u64(plan.arenaBytes))
    return false;
  if (shared.legacy && (!cursor.u64(shared.offset) || !cursor.u64(shared.bytes)))
    return false;
  if (plan.arenaBytes > kMaxTensorBytes)
    return cursor.fail("device arena of " + std::to_string(plan.arenaBytes) +
                       " bytes exceeds the limit of " +
                       std::to_string(kMaxTensorBytes));
  if (plan.arenaBytes < b.arenaSize)
    return cursor.fail("device arena of " + std::to_string(plan.arenaBytes) +
                       " bytes does not hold the host arena (" +
                       std::to_string(b.arenaSize) + " bytes)");
  if (!cursor.count(count, 4))
    return false;
  plan.kernels.resize(count);
  for (std::string &kernel : plan.kernels)
    if (!cursor.string(kernel))
      return false;
  if (!cursor.count(count, 5))
    return false;
  plan.steps.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    DeviceStep &step = plan.steps[i];
    if (!cursor.u8(step.kind) || !cursor.u32(step.op))
      return false;
    if (step.op >= b.ops.size())
      return cursor.fail("device step " + std::to_string(i) +
                         " names op " + std::to_string(step.op) +
                         " of " + std::to_string(b.ops.size()));
    std::string what = "device step " + std::to_string(i) + " of " +
                       b.ops[step.op].describe(step.op);
    switch (step.kind) {
    case StepLaunch: {
      DeviceLaunch &l = step.launch;
      uint32_t n;
      if (!cursor.u32(l.kernel))
        return false;
      for (uint32_t *dims : {l.grid, l.block})
        for (int d = 0; d < 3; ++d)
          if (!cursor.u32(dims[d]))
            return false;
      if (!cursor.u32(l.sharedBytes) || !cursor.count(n, 9))
        return false;
      if (l.kernel >= plan.kernels.size())
        return cursor.fail(what + ": unknown kernel " +
                           std::to_string(l.kernel));
      uint64_t threads = uint64_t(l.block[0]) * l.block[1] * l.block[2];
      if (!threads || threads > 1024 || !l.grid[0] || !l.grid[1] ||
          !l.grid[2] || l.grid[1] > 65535 || l.grid[2] > 65535 ||
          l.sharedBytes > 48 * 1024)
        return cursor.fail(what + ": bad launch configuration");
      l.args.resize(n);
      for (DeviceArg &arg : l.args)
        if (!readDeviceArg(cursor, arg, 0, plan.arenaBytes, b.weightsSize,
                           what))
          return false;
      break;
    }
    case StepGemm:
      if (!readGemm(cursor, step.gemm, plan.arenaBytes, b.weightsSize, what,
                    shared))
        return false;
      break;
    case StepCopy:
      if (!cursor.u8(step.copy.dst.kind) || !cursor.u64(step.copy.dst.value))
        return false;
      if (!cursor.u8(step.copy.src.kind) || !cursor.u64(step.copy.src.value) ||
          !cursor.u64(step.copy.bytes))
        return false;
      // Into the arena from any region, or out of the arena into the
      // pinned host region (offload).
      if (!step.copy.src.isPointer() ||
          !(step.copy.dst.kind == ArgArena ||
            (step.copy.dst.kind == ArgHost && step.copy.src.kind == ArgArena)))
        return cursor.fail(what + ": copy must go into the arena, or from "
                                  "it into the pinned host region");
      for (const DeviceArg *arg : {&step.copy.dst, &step.copy.src}) {
        uint64_t space = arg->kind == ArgArena    ? plan.arenaBytes
                         : arg->kind == ArgWeight ? b.weightsSize
                                                  : b.hostSize;
        if (arg->value > space || step.copy.bytes > space - arg->value)
          return cursor.fail(what + ": copy of " +
                             std::to_string(step.copy.bytes) +
                             " bytes lies outside its region");
      }
      // cuMemcpy of overlapping ranges is undefined.
      if (step.copy.src.kind == step.copy.dst.kind && step.copy.bytes &&
          step.copy.src.value != step.copy.dst.value &&
          step.copy.src.value < step.copy.dst.value + step.copy.bytes &&
          step.copy.dst.value < step.copy.src.value + step.copy.bytes)
        return cursor.fail(what + ": copy of " +
                           std::to_string(step.copy.bytes) +
                           " bytes overlaps its source");
      break;
    default:
      return cursor.fail(what + ": unknown step kind " +
                         std::to_string(step.kind));
    }
  }
  return true;
}

bool readKernelImages(Cursor &cursor, Bundle &b) {
  uint32_t count;
  if (!cursor.count(count, 13))
    return false;
  b.kernelImages.resize(count);
  for (KernelImageRef &image : b.kernelImages) {
    uint64_t size;
    if (!cursor.u8(image.kind) || !cursor.u32(image.arch) ||
        !cursor.u64(size) || !cursor.bytes(image.data, size))
      return false;
    image.size = size;
    if (image.kind != ImageCubin && image.kind != ImagePtx)
      return cursor.fail("unknown kernel image kind " +
                         std::to_string(image.kind));
    if (image.kind == ImagePtx && (!size || image.data[size - 1] != 0))
      return cursor.fail("PTX image is not NUL-terminated");
  }
  return true;
}

} // namespace

/// Checks `size` bytes at `data` (the storage of `result`) and decodes them
/// into `result`.
/// Maps the external weights file an ExternalWeights section names, beside
/// the bundle `bundlePath`, and checks its size and SHA-256.
static Status mapExternalWeights(Cursor &cursor, const std::string &bundlePath,
                                 Bundle &b, const uint8_t *&weights,
                                 void *&map, size_t &mapSize) {
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
  if (size) {
    map = mmap(nullptr, size_t(size), PROT_READ, MAP_PRIVATE, input.getFd(), 0);
    int mapError = errno;
    if (map == MAP_FAILED) {
      map = nullptr;
      return Status(SNUG_ERROR_IO, "cannot map weights file '" + path +
                                       "': " + std::strerror(mapError));
    }
    mapSize = size_t(size);
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
    if (Status s = mapExternalWeights(external, name, b, b.weights,
                                      b.weightsMap, b.weightsMapSize))
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
  file.close();
  if (map == MAP_FAILED)
    return Status(SNUG_ERROR_IO, "cannot map bundle '" + path +
                                     "': " + std::strerror(mapError));
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
