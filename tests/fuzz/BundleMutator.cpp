//===- BundleMutator.cpp - Structure-aware mutations of .snug bundles -----===//
//
// Decode (a forgiving mirror of runtime/BundleReader.cpp's stream: it reads
// whatever is there and checks nothing beyond the bytes), mutate the decoded
// fields, encode (sections re-laid out on 64-byte boundaries, sizes and the
// section table recomputed), seal. Values chosen for mutations lean to the
// extremes that break size arithmetic: 0, -1, 1, INT64_MIN/MAX, 2^31, 2^32,
// 2^62, and "just past" values (the arena size, a dim plus one).
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/BundleMutator.h"

#include "core/BundleFormat.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace snug {
namespace fuzz {
namespace {

using namespace snug::bundle;

// Every op and attribute name the IR knows (core/Ops.def), so that an op's
// name can become another real op's and an attribute another real one.
const char *const kOpNames[] = {
#define OP(ID, NAME, MIN_OPERANDS, MAX_OPERANDS, MIN_RESULTS, MAX_RESULTS,     \
           FAMILY, TRAITS, DTYPES)                                             \
  NAME,
#include "core/Ops.def"
    "NoSuchOp", ""};
const char *const kAttrNames[] = {
#define ATTR(OP_ID, NAME, KIND, DEFAULT) NAME,
#include "core/Ops.def"
    "no_such_attr"};
const char *const kStrings[] = {"",        "constant", "reflect", "edge",
                                "NOTSET",  "SAME_UPPER", "VALID", "linear",
                                "nearest", "cubic",    "half_pixel",
                                "asymmetric", "tanh",  "none",    "x"};
const uint8_t kDTypes[] = {DTypeF32, DTypeU8,   DTypeI8,  DTypeI16,
                           DTypeI32, DTypeI64,  DTypeBool, DTypeF16,
                           DTypeF64, DTypeBF16, DTypeU16, DTypeU32,
                           DTypeU64, 0,         8,        14,
                           255};

template <typename T, size_t N> constexpr size_t countOf(const T (&)[N]) {
  return N;
}

struct Location {
  uint8_t kind = Absent, dtype = DTypeF32;
  uint16_t reserved = 0;
  std::vector<int64_t> dims;
  uint64_t offset = 0;
};

struct Attr {
  std::string name;
  uint8_t kind = AttrInt;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  uint8_t tensorDType = 0;
  std::vector<int64_t> tensorDims;
  std::vector<uint8_t> tensorBytes;
};

struct BodyType {
  uint8_t dtype = DTypeF32, reserved8 = 0;
  uint16_t reserved16 = 0;
  std::vector<int64_t> dims;
};

struct BodyOp {
  std::string opName, nodeName;
  std::vector<Attr> attributes;
  std::vector<uint32_t> operands;
  std::vector<BodyType> results;
};

struct Op {
  std::string opName, nodeName;
  std::vector<Attr> attributes;
  std::vector<Location> operands, results;
  uint8_t hasBody = 0;
  std::vector<BodyType> arguments;
  std::vector<BodyOp> bodyOps;
  std::vector<uint32_t> yield;
};

struct TensorDesc {
  std::string name;
  Location location;
};

struct Section {
  uint32_t kind = 0, flags = 0;
  std::vector<uint8_t> bytes;
};

/// A decoded bundle: the sections it does not decode stay as bytes.
struct Decoded {
  uint32_t version = kBundleVersion;
  std::vector<Section> sections;
  std::string compilerVersion, pipeline, moduleName;
  uint64_t arenaSize = 0, alignment = 0, weightsSize = 0, lowerBound = 0;
  std::vector<TensorDesc> inputs, outputs;
  std::vector<Op> ops;
};

uint64_t readLE(const uint8_t *p, unsigned size) {
  uint64_t v = 0;
  for (unsigned i = 0; i < size; ++i)
    v |= uint64_t(p[i]) << (8 * i);
  return v;
}

class Reader {
public:
  Reader(const std::vector<uint8_t> &bytes) : bytes(bytes) {}
  bool ok() const { return good; }
  bool atEnd() const { return at == bytes.size(); }
  uint64_t get(unsigned size) {
    if (!good || bytes.size() - at < size) {
      good = false;
      return 0;
    }
    uint64_t v = readLE(bytes.data() + at, size);
    at += size;
    return v;
  }
  uint8_t u8() { return uint8_t(get(1)); }
  uint16_t u16() { return uint16_t(get(2)); }
  uint32_t u32() { return uint32_t(get(4)); }
  uint64_t u64() { return get(8); }
  int64_t i64() { return int64_t(get(8)); }
  float f32() {
    uint32_t v = u32();
    float f;
    std::memcpy(&f, &v, 4);
    return f;
  }
  /// A count of elements of at least `minSize` bytes each that fit.
  uint32_t count(unsigned minSize) {
    uint32_t n = u32();
    if (good && uint64_t(n) * minSize > bytes.size() - at)
      good = false;
    return good ? n : 0;
  }
  std::string string() {
    uint32_t n = count(1);
    if (!good)
      return {};
    std::string s(reinterpret_cast<const char *>(bytes.data() + at), n);
    at += n;
    return s;
  }
  std::vector<uint8_t> raw(uint64_t n) {
    if (!good || bytes.size() - at < n) {
      good = false;
      return {};
    }
    std::vector<uint8_t> v(bytes.begin() + at, bytes.begin() + at + n);
    at += n;
    return v;
  }

private:
  const std::vector<uint8_t> &bytes;
  size_t at = 0;
  bool good = true;
};

class Writer {
public:
  std::vector<uint8_t> bytes;
  void put(uint64_t v, unsigned size) {
    for (unsigned i = 0; i < size; ++i)
      bytes.push_back(uint8_t(v >> (8 * i)));
  }
  void u8(uint8_t v) { put(v, 1); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void i64(int64_t v) { put(uint64_t(v), 8); }
  void f32(float f) {
    uint32_t v;
    std::memcpy(&v, &f, 4);
    u32(v);
  }
  void string(const std::string &s) {
    u32(uint32_t(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
};

//===-- Decoding ----------------------------------------------------------===//

Location readLocation(Reader &r) {
  Location l;
  l.kind = r.u8();
  l.dtype = r.u8();
  l.reserved = r.u16();
  uint32_t rank = r.count(8);
  for (uint32_t k = 0; k < rank && r.ok(); ++k)
    l.dims.push_back(r.i64());
  l.offset = r.u64();
  return l;
}

BodyType readBodyType(Reader &r) {
  BodyType t;
  t.dtype = r.u8();
  t.reserved8 = r.u8();
  t.reserved16 = r.u16();
  uint32_t rank = r.count(8);
  for (uint32_t k = 0; k < rank && r.ok(); ++k)
    t.dims.push_back(r.i64());
  return t;
}

Attr readAttr(Reader &r) {
  Attr a;
  a.name = r.string();
  a.kind = r.u8();
  uint32_t n;
  switch (a.kind) {
  case AttrInt: a.i = r.i64(); break;
  case AttrFloat: a.f = r.f32(); break;
  case AttrString: a.s = r.string(); break;
  case AttrInts:
    n = r.count(8);
    for (uint32_t k = 0; k < n && r.ok(); ++k)
      a.ints.push_back(r.i64());
    break;
  case AttrFloats:
    n = r.count(4);
    for (uint32_t k = 0; k < n && r.ok(); ++k)
      a.floats.push_back(r.f32());
    break;
  case AttrStrings:
    n = r.count(4);
    for (uint32_t k = 0; k < n && r.ok(); ++k)
      a.strings.push_back(r.string());
    break;
  case AttrTensor: {
    a.tensorDType = r.u8();
    n = r.count(8);
    for (uint32_t k = 0; k < n && r.ok(); ++k)
      a.tensorDims.push_back(r.i64());
    uint64_t size = r.u64();
    a.tensorBytes = r.raw(size);
    break;
  }
  default:
    r.get(~0u); // an unknown kind cannot be skipped: stop decoding
  }
  return a;
}

std::vector<Attr> readAttrs(Reader &r) {
  std::vector<Attr> attrs;
  uint32_t n = r.count(6);
  for (uint32_t k = 0; k < n && r.ok(); ++k)
    attrs.push_back(readAttr(r));
  return attrs;
}

bool readManifest(const std::vector<uint8_t> &bytes, Decoded &d) {
  Reader r(bytes);
  d.compilerVersion = r.string();
  d.pipeline = r.string();
  d.moduleName = r.string();
  d.arenaSize = r.u64();
  d.alignment = r.u64();
  d.weightsSize = r.u64();
  d.lowerBound = r.u64();
  for (auto *list : {&d.inputs, &d.outputs}) {
    uint32_t n = r.count(20);
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
      TensorDesc desc;
      desc.name = r.string();
      desc.location = readLocation(r);
      list->push_back(desc);
    }
  }
  return r.ok() && r.atEnd();
}

bool readHostPlan(const std::vector<uint8_t> &bytes, Decoded &d) {
  Reader r(bytes);
  uint32_t count = r.count(20);
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    Op op;
    op.opName = r.string();
    op.nodeName = r.string();
    op.attributes = readAttrs(r);
    for (auto *list : {&op.operands, &op.results}) {
      uint32_t n = r.count(16);
      for (uint32_t k = 0; k < n && r.ok(); ++k)
        list->push_back(readLocation(r));
    }
    if (d.version >= kFirstVersionWithBodies) {
      op.hasBody = r.u8();
      if (op.hasBody == 1) {
        uint32_t n = r.count(8);
        for (uint32_t k = 0; k < n && r.ok(); ++k)
          op.arguments.push_back(readBodyType(r));
        n = r.count(20);
        for (uint32_t k = 0; k < n && r.ok(); ++k) {
          BodyOp inner;
          inner.opName = r.string();
          inner.nodeName = r.string();
          inner.attributes = readAttrs(r);
          uint32_t m = r.count(4);
          for (uint32_t j = 0; j < m && r.ok(); ++j)
            inner.operands.push_back(r.u32());
          m = r.count(8);
          for (uint32_t j = 0; j < m && r.ok(); ++j)
            inner.results.push_back(readBodyType(r));
          op.bodyOps.push_back(std::move(inner));
        }
        n = r.count(4);
        for (uint32_t k = 0; k < n && r.ok(); ++k)
          op.yield.push_back(r.u32());
      } else if (op.hasBody != 0) {
        return false;
      }
    }
    d.ops.push_back(std::move(op));
  }
  return r.ok() && r.atEnd();
}

bool decode(const std::vector<uint8_t> &file, Decoded &d) {
  if (file.size() < kLegacyHeaderSize || std::memcmp(file.data(), kMagic, 8))
    return false;
  d.version = uint32_t(readLE(&file[8], 4));
  const uint64_t header = headerSize(d.version);
  uint64_t count = readLE(&file[12], 4);
  if (file.size() < header || count > kMaxSections ||
      header + count * kSectionEntrySize > file.size())
    return false;
  bool manifest = false, plan = false;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t *entry = &file[header + i * kSectionEntrySize];
    Section s;
    s.kind = uint32_t(readLE(entry, 4));
    s.flags = uint32_t(readLE(entry + 4, 4));
    uint64_t offset = readLE(entry + 8, 8), size = readLE(entry + 16, 8);
    if (offset > file.size() || size > file.size() - offset)
      return false;
    s.bytes.assign(file.begin() + offset, file.begin() + offset + size);
    if (s.kind == Manifest && !manifest)
      manifest = readManifest(s.bytes, d);
    if (s.kind == HostPlan && !plan)
      plan = readHostPlan(s.bytes, d);
    d.sections.push_back(std::move(s));
  }
  return manifest && plan;
}

//===-- Encoding ----------------------------------------------------------===//

void writeLocation(Writer &w, const Location &l) {
  w.u8(l.kind);
  w.u8(l.dtype);
  w.u16(l.reserved);
  w.u32(uint32_t(l.dims.size()));
  for (int64_t dim : l.dims)
    w.i64(dim);
  w.u64(l.offset);
}

void writeBodyType(Writer &w, const BodyType &t) {
  w.u8(t.dtype);
  w.u8(t.reserved8);
  w.u16(t.reserved16);
  w.u32(uint32_t(t.dims.size()));
  for (int64_t dim : t.dims)
    w.i64(dim);
}

void writeAttrs(Writer &w, const std::vector<Attr> &attrs) {
  w.u32(uint32_t(attrs.size()));
  for (const Attr &a : attrs) {
    w.string(a.name);
    w.u8(a.kind);
    switch (a.kind) {
    case AttrInt: w.i64(a.i); break;
    case AttrFloat: w.f32(a.f); break;
    case AttrString: w.string(a.s); break;
    case AttrInts:
      w.u32(uint32_t(a.ints.size()));
      for (int64_t v : a.ints)
        w.i64(v);
      break;
    case AttrFloats:
      w.u32(uint32_t(a.floats.size()));
      for (float v : a.floats)
        w.f32(v);
      break;
    case AttrStrings:
      w.u32(uint32_t(a.strings.size()));
      for (const std::string &v : a.strings)
        w.string(v);
      break;
    case AttrTensor:
      w.u8(a.tensorDType);
      w.u32(uint32_t(a.tensorDims.size()));
      for (int64_t dim : a.tensorDims)
        w.i64(dim);
      w.u64(a.tensorBytes.size());
      w.bytes.insert(w.bytes.end(), a.tensorBytes.begin(), a.tensorBytes.end());
      break;
    default:
      break; // the kind byte alone: the reader refuses it
    }
  }
}

std::vector<uint8_t> writeManifest(const Decoded &d) {
  Writer w;
  w.string(d.compilerVersion);
  w.string(d.pipeline);
  w.string(d.moduleName);
  w.u64(d.arenaSize);
  w.u64(d.alignment);
  w.u64(d.weightsSize);
  w.u64(d.lowerBound);
  for (auto *list : {&d.inputs, &d.outputs}) {
    w.u32(uint32_t(list->size()));
    for (const TensorDesc &desc : *list) {
      w.string(desc.name);
      writeLocation(w, desc.location);
    }
  }
  return std::move(w.bytes);
}

std::vector<uint8_t> writeHostPlan(const Decoded &d) {
  Writer w;
  w.u32(uint32_t(d.ops.size()));
  for (const Op &op : d.ops) {
    w.string(op.opName);
    w.string(op.nodeName);
    writeAttrs(w, op.attributes);
    for (auto *list : {&op.operands, &op.results}) {
      w.u32(uint32_t(list->size()));
      for (const Location &l : *list)
        writeLocation(w, l);
    }
    if (d.version < kFirstVersionWithBodies)
      continue;
    w.u8(op.hasBody);
    if (op.hasBody != 1)
      continue;
    w.u32(uint32_t(op.arguments.size()));
    for (const BodyType &t : op.arguments)
      writeBodyType(w, t);
    w.u32(uint32_t(op.bodyOps.size()));
    for (const BodyOp &inner : op.bodyOps) {
      w.string(inner.opName);
      w.string(inner.nodeName);
      writeAttrs(w, inner.attributes);
      w.u32(uint32_t(inner.operands.size()));
      for (uint32_t v : inner.operands)
        w.u32(v);
      w.u32(uint32_t(inner.results.size()));
      for (const BodyType &t : inner.results)
        writeBodyType(w, t);
    }
    w.u32(uint32_t(op.yield.size()));
    for (uint32_t v : op.yield)
      w.u32(v);
  }
  return std::move(w.bytes);
}

std::vector<uint8_t> encode(const Decoded &d) {
  std::vector<Section> sections = d.sections;
  for (Section &s : sections) {
    if (s.kind == Manifest)
      s.bytes = writeManifest(d);
    else if (s.kind == HostPlan)
      s.bytes = writeHostPlan(d);
  }
  const uint64_t header = headerSize(d.version);
  uint64_t at = alignTo(header + sections.size() * kSectionEntrySize,
                        kSectionAlignment);
  std::vector<uint64_t> offsets;
  for (const Section &s : sections) {
    offsets.push_back(at);
    at = alignTo(at + s.bytes.size(), kSectionAlignment);
  }
  Writer w;
  w.bytes.reserve(at);
  w.bytes.insert(w.bytes.end(), kMagic, kMagic + 8);
  w.u32(d.version);
  w.u32(uint32_t(sections.size()));
  w.u64(0); // file size, below
  w.bytes.resize(header, 0); // the digest field (and v4's padding), sealed below
  for (size_t i = 0; i < sections.size(); ++i) {
    w.u32(sections[i].kind);
    w.u32(sections[i].flags);
    w.u64(offsets[i]);
    w.u64(sections[i].bytes.size());
  }
  for (size_t i = 0; i < sections.size(); ++i) {
    w.bytes.resize(offsets[i], 0);
    w.bytes.insert(w.bytes.end(), sections[i].bytes.begin(),
                   sections[i].bytes.end());
  }
  // The last section ends the file (no padding after it).
  uint64_t size = w.bytes.size();
  for (int i = 0; i < 8; ++i)
    w.bytes[16 + i] = uint8_t(size >> (8 * i));
  return std::move(w.bytes);
}

//===-- Mutations ---------------------------------------------------------===//

class Mutator {
public:
  Mutator(uint64_t seed, std::string &log) : state(seed), log(log) {}

  uint64_t next() { return state = mixSeed(state); }
  size_t pick(size_t bound) { return bound ? size_t(next() % bound) : 0; }
  bool chance(unsigned percent) { return pick(100) < percent; }

  void note(const std::string &what) {
    if (!log.empty())
      log += "; ";
    log += what;
  }

  /// An integer at an extreme, or near `near` (a current value).
  int64_t extremeInt(int64_t near) {
    switch (pick(13)) {
    case 0: return 0;
    case 1: return -1;
    case 2: return 1;
    case 3: return std::numeric_limits<int64_t>::min();
    case 4: return std::numeric_limits<int64_t>::max();
    case 5: return int64_t(1) << 31;
    case 6: return int64_t(1) << 32;
    case 7: return int64_t(1) << 62;
    // Unsigned arithmetic: the mutator itself runs under UBSan.
    case 8: return int64_t(uint64_t(near) + 1);
    case 9: return int64_t(uint64_t(near) - 1);
    case 10: return int64_t(0 - uint64_t(near));
    case 11: return int64_t(uint64_t(near) * 1000);
    default: return int64_t(next() % 64) - 16;
    }
  }
  float extremeFloat() {
    const float values[] = {0.0f, -0.0f, -1.0f, 1e38f, -1e38f, 1e-45f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), 65536.0f};
    return values[pick(countOf(values))];
  }
  static std::string intName(int64_t v) {
    if (v == std::numeric_limits<int64_t>::min())
      return "INT64_MIN";
    if (v == std::numeric_limits<int64_t>::max())
      return "INT64_MAX";
    return std::to_string(v);
  }

  std::string describeOp(const Decoded &d, size_t i) {
    return "op #" + std::to_string(i) + " '" + d.ops[i].nodeName + "' (" +
           d.ops[i].opName + ")";
  }

  /// Every location in the bundle, with a name for the log.
  std::vector<std::pair<Location *, std::string>> locations(Decoded &d) {
    std::vector<std::pair<Location *, std::string>> all;
    for (size_t k = 0; k < d.inputs.size(); ++k)
      all.push_back({&d.inputs[k].location,
                     "input '" + d.inputs[k].name + "'"});
    for (size_t k = 0; k < d.outputs.size(); ++k)
      all.push_back({&d.outputs[k].location,
                     "output '" + d.outputs[k].name + "'"});
    for (size_t i = 0; i < d.ops.size(); ++i) {
      for (size_t k = 0; k < d.ops[i].operands.size(); ++k)
        all.push_back({&d.ops[i].operands[k],
                       describeOp(d, i) + " operand " + std::to_string(k)});
      for (size_t k = 0; k < d.ops[i].results.size(); ++k)
        all.push_back({&d.ops[i].results[k],
                       describeOp(d, i) + " result " + std::to_string(k)});
    }
    return all;
  }

  /// Every attribute list (ops and body ops), with a name for the log.
  std::vector<std::pair<std::vector<Attr> *, std::string>>
  attributeLists(Decoded &d) {
    std::vector<std::pair<std::vector<Attr> *, std::string>> all;
    for (size_t i = 0; i < d.ops.size(); ++i) {
      all.push_back({&d.ops[i].attributes, describeOp(d, i)});
      for (size_t k = 0; k < d.ops[i].bodyOps.size(); ++k)
        all.push_back({&d.ops[i].bodyOps[k].attributes,
                       describeOp(d, i) + " body op " + std::to_string(k) +
                           " (" + d.ops[i].bodyOps[k].opName + ")"});
    }
    return all;
  }

  void mutateOpName(Decoded &d) {
    if (d.ops.empty())
      return;
    size_t i = pick(d.ops.size());
    std::string name = kOpNames[pick(countOf(kOpNames))];
    Op &op = d.ops[i];
    if (!op.bodyOps.empty() && chance(40)) {
      BodyOp &inner = op.bodyOps[pick(op.bodyOps.size())];
      note(describeOp(d, i) + " body op (" + inner.opName + "): name -> " +
           name);
      inner.opName = name;
      return;
    }
    note(describeOp(d, i) + ": op name -> '" + name + "'");
    op.opName = name;
  }

  void mutateAttrValue(Decoded &d) {
    auto lists = attributeLists(d);
    std::vector<std::pair<Attr *, std::string>> attrs;
    for (auto &list : lists)
      for (Attr &a : *list.first)
        attrs.push_back({&a, list.second});
    if (attrs.empty())
      return mutateLocationDim(d);
    auto [a, where] = attrs[pick(attrs.size())];
    std::string what = where + ": attribute '" + a->name + "'";
    switch (a->kind) {
    case AttrInt:
      a->i = extremeInt(a->i);
      note(what + " = " + intName(a->i));
      break;
    case AttrFloat:
      a->f = extremeFloat();
      note(what + " = " + std::to_string(a->f));
      break;
    case AttrString:
      a->s = kStrings[pick(countOf(kStrings))];
      note(what + " = '" + a->s + "'");
      break;
    case AttrInts:
      if (a->ints.empty() || chance(25)) {
        switch (pick(3)) {
        case 0: a->ints.clear(); note(what + " emptied"); break;
        case 1:
          a->ints.push_back(extremeInt(0));
          note(what + " appended " + intName(a->ints.back()));
          break;
        default:
          if (!a->ints.empty())
            a->ints.pop_back();
          note(what + " lost its last element");
        }
      } else {
        size_t k = pick(a->ints.size());
        a->ints[k] = extremeInt(a->ints[k]);
        note(what + "[" + std::to_string(k) + "] = " + intName(a->ints[k]));
      }
      break;
    case AttrFloats:
      if (a->floats.empty() || chance(25)) {
        a->floats.resize(pick(3) == 0 ? 0 : a->floats.size() + 1, 1.0f);
        note(what + " resized to " + std::to_string(a->floats.size()));
      } else {
        size_t k = pick(a->floats.size());
        a->floats[k] = extremeFloat();
        note(what + "[" + std::to_string(k) + "] = " +
             std::to_string(a->floats[k]));
      }
      break;
    case AttrStrings:
      a->strings.push_back(kStrings[pick(countOf(kStrings))]);
      note(what + " appended a string");
      break;
    case AttrTensor:
      if (!a->tensorDims.empty() && chance(50)) {
        size_t k = pick(a->tensorDims.size());
        a->tensorDims[k] = extremeInt(a->tensorDims[k]);
        note(what + " tensor dim " + std::to_string(k) + " = " +
             intName(a->tensorDims[k]));
      } else {
        a->tensorDType = kDTypes[pick(countOf(kDTypes))];
        note(what + " tensor dtype = " + std::to_string(a->tensorDType));
      }
      break;
    default:
      break;
    }
  }

  void mutateAttrShape(Decoded &d) {
    auto lists = attributeLists(d);
    if (lists.empty())
      return;
    auto [list, where] = lists[pick(lists.size())];
    if (list->empty() || chance(20)) {
      Attr a;
      a.name = kAttrNames[pick(countOf(kAttrNames))];
      a.kind = uint8_t(AttrInt + pick(5));
      a.i = extremeInt(0);
      a.f = extremeFloat();
      a.ints = {extremeInt(1), extremeInt(1)};
      a.floats = {extremeFloat()};
      a.s = kStrings[pick(countOf(kStrings))];
      note(where + ": added attribute '" + a.name + "' of kind " +
           std::to_string(a.kind));
      list->insert(list->begin() + pick(list->size() + 1), a);
      return;
    }
    size_t k = pick(list->size());
    Attr &a = (*list)[k];
    switch (pick(4)) {
    case 0:
      note(where + ": dropped attribute '" + a.name + "'");
      list->erase(list->begin() + k);
      break;
    case 1: {
      std::string name = kAttrNames[pick(countOf(kAttrNames))];
      note(where + ": attribute '" + a.name + "' renamed '" + name + "'");
      a.name = name;
      break;
    }
    case 2: {
      // Another kind with this kind's value where one converts.
      uint8_t kind = uint8_t(AttrInt + pick(5));
      note(where + ": attribute '" + a.name + "' kind " +
           std::to_string(a.kind) + " -> " + std::to_string(kind));
      if (kind == AttrInts && a.kind == AttrInt)
        a.ints = {a.i};
      if (kind == AttrInt && !a.ints.empty())
        a.i = a.ints[0];
      if (kind == AttrFloats && a.kind == AttrFloat)
        a.floats = {a.f};
      a.kind = kind;
      break;
    }
    default:
      note(where + ": attribute '" + a.name + "' duplicated");
      list->insert(list->begin() + k, Attr(a));
      break;
    }
  }

  void mutateLocationDim(Decoded &d) {
    auto all = locations(d);
    if (all.empty())
      return;
    auto [l, what] = all[pick(all.size())];
    if (l->dims.empty() || chance(20)) {
      if (!l->dims.empty() && chance(50)) {
        l->dims.erase(l->dims.begin() + pick(l->dims.size()));
        note(what + ": dropped a dim (rank " + std::to_string(l->dims.size()) +
             ")");
      } else {
        size_t rank = chance(10) && l->dims.size() <= kMaxRank
                          ? kMaxRank + 1 - l->dims.size()
                          : 1;
        for (size_t k = 0; k < rank; ++k)
          l->dims.insert(l->dims.begin() + pick(l->dims.size() + 1),
                         chance(70) ? 1 : extremeInt(2));
        note(what + ": rank raised to " + std::to_string(l->dims.size()));
      }
      return;
    }
    size_t k = pick(l->dims.size());
    l->dims[k] = extremeInt(l->dims[k]);
    note(what + ": dim " + std::to_string(k) + " = " + intName(l->dims[k]));
  }

  void mutateLocationDType(Decoded &d) {
    auto all = locations(d);
    if (all.empty())
      return;
    auto [l, what] = all[pick(all.size())];
    l->dtype = kDTypes[pick(countOf(kDTypes))];
    note(what + ": dtype = " + std::to_string(l->dtype) + " (" +
         dtypeName(l->dtype) + ")");
  }

  void mutateLocationKind(Decoded &d) {
    auto all = locations(d);
    if (all.empty())
      return;
    auto [l, what] = all[pick(all.size())];
    l->kind = uint8_t(chance(90) ? pick(3) : 3 + pick(253));
    note(what + ": location kind = " + std::to_string(l->kind));
  }

  void mutateLocationOffset(Decoded &d) {
    auto all = locations(d);
    if (all.empty())
      return;
    auto [l, what] = all[pick(all.size())];
    uint64_t space = l->kind == Weight ? d.weightsSize : d.arenaSize;
    uint64_t bytes = dtypeSize(l->dtype);
    for (int64_t dim : l->dims)
      bytes *= uint64_t(dim);
    switch (pick(9)) {
    case 0: l->offset = 0; break;
    case 1: l->offset = space; break;
    case 2: l->offset = space - bytes; break; // exactly at the end
    case 3: l->offset = space - bytes + 1; break;
    case 4: l->offset = l->offset + 1; break; // misaligned
    case 5: l->offset = ~uint64_t(0); break;
    case 6: l->offset = uint64_t(1) << 63; break;
    case 7: l->offset = ~uint64_t(0) - bytes + 1; break; // wraps to 0
    default:
      l->offset = space ? alignTo(next() % space, 64) : 0;
      break;
    }
    note(what + ": offset = " + std::to_string(l->offset) + " (space " +
         std::to_string(space) + ")");
  }

  void mutateOperandCount(Decoded &d) {
    if (d.ops.empty())
      return;
    size_t i = pick(d.ops.size());
    Op &op = d.ops[i];
    bool results = chance(30);
    std::vector<Location> &list = results ? op.results : op.operands;
    std::string what = describeOp(d, i) + (results ? " results" : " operands");
    switch (list.empty() ? 1 : pick(4)) {
    case 0:
      list.erase(list.begin() + pick(list.size()));
      note(what + ": dropped one (now " + std::to_string(list.size()) + ")");
      break;
    case 1:
      list.push_back(Location()); // absent
      note(what + ": appended an absent one");
      break;
    case 2:
      list.push_back(list[pick(list.size())]);
      note(what + ": appended a copy of one");
      break;
    default: {
      // One of another op's, so that counts stay plausible.
      const Op &other = d.ops[pick(d.ops.size())];
      const auto &from = other.operands.empty() ? other.results : other.operands;
      if (!from.empty())
        list[pick(list.size())] = from[pick(from.size())];
      note(what + ": one replaced by another op's location");
    }
    }
  }

  void mutateOpOrder(Decoded &d) {
    if (d.ops.empty())
      return;
    size_t i = pick(d.ops.size()), j = pick(d.ops.size());
    switch (pick(3)) {
    case 0:
      note("ops #" + std::to_string(i) + " and #" + std::to_string(j) +
           " swapped");
      std::swap(d.ops[i], d.ops[j]);
      break;
    case 1:
      note(describeOp(d, i) + ": deleted");
      d.ops.erase(d.ops.begin() + i);
      break;
    default:
      note(describeOp(d, i) + ": duplicated");
      d.ops.insert(d.ops.begin() + i, Op(d.ops[i]));
    }
  }

  void mutateManifest(Decoded &d) {
    switch (pick(6)) {
    case 0: {
      const uint64_t values[] = {0, d.arenaSize / 2, d.arenaSize - 1,
                                 d.arenaSize + 64, ~uint64_t(0),
                                 uint64_t(1) << 50};
      d.arenaSize = values[pick(countOf(values))];
      note("manifest: arena size = " + std::to_string(d.arenaSize));
      break;
    }
    case 1: {
      const uint64_t values[] = {0, 1, 3, 48, uint64_t(1) << 63};
      d.alignment = values[pick(countOf(values))];
      note("manifest: alignment = " + std::to_string(d.alignment));
      break;
    }
    case 2:
      d.lowerBound = chance(50) ? 0 : ~uint64_t(0);
      note("manifest: lower bound = " + std::to_string(d.lowerBound));
      break;
    case 3:
      if (!d.inputs.empty() && chance(50)) {
        d.inputs.pop_back();
        note("manifest: dropped the last input");
      } else if (!d.outputs.empty()) {
        d.outputs.push_back(d.outputs[pick(d.outputs.size())]);
        note("manifest: duplicated an output");
      }
      break;
    case 4:
      if (!d.inputs.empty()) {
        d.inputs[pick(d.inputs.size())].name =
            d.outputs.empty() ? "" : d.outputs[0].name;
        note("manifest: an input renamed to the first output's name");
      }
      break;
    default:
      d.weightsSize = chance(50) ? 0 : d.weightsSize + 64;
      note("manifest: weights size = " + std::to_string(d.weightsSize));
    }
  }

  void mutateBody(Decoded &d) {
    std::vector<size_t> fused;
    for (size_t i = 0; i < d.ops.size(); ++i)
      if (d.ops[i].hasBody == 1)
        fused.push_back(i);
    if (fused.empty())
      return mutateAttrValue(d);
    size_t i = fused[pick(fused.size())];
    Op &op = d.ops[i];
    std::string where = describeOp(d, i);
    size_t values = op.arguments.size();
    for (const BodyOp &inner : op.bodyOps)
      values += inner.results.size();
    const uint32_t indices[] = {kNoValue, uint32_t(values), uint32_t(values - 1),
                                0, uint32_t(next() % (values + 1))};
    switch (pick(5)) {
    case 0:
      if (!op.bodyOps.empty()) {
        BodyOp &inner = op.bodyOps[pick(op.bodyOps.size())];
        if (inner.operands.empty() || chance(20)) {
          inner.operands.push_back(indices[pick(countOf(indices))]);
          note(where + ": body op (" + inner.opName + ") gained operand " +
               std::to_string(inner.operands.back()));
        } else {
          size_t k = pick(inner.operands.size());
          inner.operands[k] = indices[pick(countOf(indices))];
          note(where + ": body op (" + inner.opName + ") operand " +
               std::to_string(k) + " = value " +
               std::to_string(inner.operands[k]));
        }
      }
      break;
    case 1:
      if (!op.yield.empty()) {
        size_t k = pick(op.yield.size());
        op.yield[k] = indices[pick(countOf(indices))];
        note(where + ": yield " + std::to_string(k) + " = value " +
             std::to_string(op.yield[k]));
      }
      break;
    case 2: {
      std::vector<BodyType *> types;
      for (BodyType &t : op.arguments)
        types.push_back(&t);
      for (BodyOp &inner : op.bodyOps)
        for (BodyType &t : inner.results)
          types.push_back(&t);
      if (types.empty())
        break;
      BodyType &t = *types[pick(types.size())];
      if (!t.dims.empty() && chance(60)) {
        size_t k = pick(t.dims.size());
        t.dims[k] = extremeInt(t.dims[k]);
        note(where + ": a body type's dim " + std::to_string(k) + " = " +
             intName(t.dims[k]));
      } else {
        t.dtype = kDTypes[pick(countOf(kDTypes))];
        note(where + ": a body type's dtype = " + std::to_string(t.dtype));
      }
      break;
    }
    case 3:
      if (!op.bodyOps.empty()) {
        size_t k = pick(op.bodyOps.size());
        note(where + ": body op " + std::to_string(k) + " (" +
             op.bodyOps[k].opName + ") deleted");
        op.bodyOps.erase(op.bodyOps.begin() + k);
      }
      break;
    default:
      op.hasBody = 0;
      note(where + ": has-body byte cleared");
    }
  }

  /// An aligned 4- or 8-byte integer of a section the mutator does not
  /// decode (DevicePlan, KernelImages, Weights) set to an extreme; or the
  /// header's version.
  void mutateRaw(Decoded &d) {
    if (chance(10)) {
      d.version = uint32_t(kOldestBundleVersion + pick(kBundleVersion));
      note("header: version = " + std::to_string(d.version));
      return;
    }
    std::vector<Section *> other;
    for (Section &s : d.sections)
      if (s.kind != Manifest && s.kind != HostPlan && s.bytes.size() >= 8)
        other.push_back(&s);
    if (other.empty())
      return mutateLocationOffset(d);
    // The device plan first: its offsets and extents are what matter.
    Section *s = other[pick(other.size())];
    for (Section *candidate : other)
      if (candidate->kind == DevicePlanSection && chance(70))
        s = candidate;
    rawInt(s->bytes, "section kind " + std::to_string(s->kind));
  }

  void rawInt(std::vector<uint8_t> &bytes, const std::string &where) {
    if (bytes.size() < 8)
      return;
    unsigned width = chance(50) ? 4 : 8;
    size_t at = pick((bytes.size() - width) / 4 + 1) * 4;
    int64_t old = int64_t(readLE(&bytes[at], width));
    int64_t v = extremeInt(old);
    for (unsigned i = 0; i < width; ++i)
      bytes[at + i] = uint8_t(uint64_t(v) >> (8 * i));
    note(where + ": u" + std::to_string(width * 8) + " at byte " +
         std::to_string(at) + " = " + intName(v));
  }

  void mutate(Decoded &d) {
    int count = 1 + int(pick(3));
    for (int n = 0; n < count; ++n) {
      switch (pick(12)) {
      case 0: mutateOpName(d); break;
      case 1:
      case 2: mutateAttrValue(d); break;
      case 3: mutateAttrShape(d); break;
      case 4: mutateLocationDim(d); break;
      case 5: mutateLocationDType(d); break;
      case 6: mutateLocationKind(d); break;
      case 7: mutateLocationOffset(d); break;
      case 8: mutateOperandCount(d); break;
      case 9: mutateOpOrder(d); break;
      case 10: chance(50) ? mutateManifest(d) : mutateBody(d); break;
      default: mutateRaw(d); break;
      }
    }
  }

private:
  uint64_t state;
  std::string &log;
};

} // namespace

uint64_t mixSeed(uint64_t value) {
  uint64_t z = value + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool reencodeBundle(const std::vector<uint8_t> &bundle,
                    std::vector<uint8_t> &out) {
  Decoded decoded;
  if (!decode(bundle, decoded))
    return false;
  out = encode(decoded);
  sealBundle(out.data(), out.size());
  return true;
}

std::vector<uint8_t> mutateBundle(const std::vector<uint8_t> &bundle,
                                  uint64_t seed, std::string &description) {
  description.clear();
  Mutator mutator(seed, description);
  Decoded decoded;
  std::vector<uint8_t> result;
  if (decode(bundle, decoded)) {
    mutator.mutate(decoded);
    result = encode(decoded);
  } else {
    // Not a bundle this decoder understands: raw integers, header included.
    result = bundle;
    for (int n = 0; n < 2; ++n)
      mutator.rawInt(result, "undecoded bundle");
  }
  if (result.size() >= kHashOffset + 8)
    sealBundle(result.data(), result.size());
  return result;
}

} // namespace fuzz
} // namespace snug
