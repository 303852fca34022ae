//===- CubinInfo.cpp - What each kernel of a cubin needs on the device ----===//
//
// A reader of just the ELF64 a cubin is: the section headers, the section
// name table, the symbol table and the `.nv.info` attribute records. The
// record layout (a format byte, an attribute byte, then by format: nothing
// (EIFMT_NVAL), a byte (BVAL) or a half (HVAL) in the next two bytes, or a
// 16-bit size and that many bytes (SVAL)) and the attribute numbers are
// those cuobjdump -elf prints by name; per-function values in `.nv.info`
// are SVAL records {u32 symbol index, u32 value}.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CubinInfo.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Optional.h"

#include <cstring>

namespace snug {
namespace cuda {

namespace {

// ELF constants (the System V gABI).
constexpr unsigned kElfClass64 = 2, kElfData2Lsb = 1;
constexpr uint32_t kShtSymtab = 2, kShtNobits = 8;
constexpr uint64_t kElfHeaderBytes = 64, kSectionHeaderBytes = 64,
                   kSymbolBytes = 24;

// .nv.info record formats and the attributes read here.
constexpr uint8_t kFormatNone = 1, kFormatByte = 2, kFormatHalf = 3,
                  kFormatSized = 4;
constexpr uint8_t kAttrMaxThreads = 0x05, kAttrFrameSize = 0x11,
                  kAttrMinStackSize = 0x12, kAttrMaxStackSize = 0x23,
                  kAttrRegCount = 0x2f;

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "cubin: " + message.str());
}

/// Little-endian reads that fail instead of reading past the image.
class Bytes {
public:
  explicit Bytes(llvm::ArrayRef<uint8_t> bytes) : bytes(bytes) {}

  bool has(uint64_t offset, uint64_t size) const {
    return offset <= bytes.size() && size <= bytes.size() - offset;
  }
  template <typename T> bool read(uint64_t offset, T &value) const {
    if (!has(offset, sizeof(T)))
      return false;
    std::memcpy(&value, bytes.data() + offset, sizeof(T));
    return true;
  }
  /// The NUL-terminated string at `offset` of the table [start, start+size).
  llvm::Optional<llvm::StringRef> string(uint64_t start, uint64_t size,
                                         uint64_t offset) const {
    if (!has(start, size) || offset >= size)
      return llvm::None;
    llvm::StringRef table(reinterpret_cast<const char *>(bytes.data()) + start,
                          size_t(size));
    size_t end = table.find('\0', size_t(offset));
    if (end == llvm::StringRef::npos)
      return llvm::None;
    return table.slice(size_t(offset), end);
  }

private:
  llvm::ArrayRef<uint8_t> bytes;
};

struct Section {
  std::string name;
  uint32_t nameOffset = 0, type = 0, link = 0, info = 0;
  uint64_t offset = 0, size = 0;
};

llvm::Expected<std::vector<Section>> readSections(const Bytes &image) {
  uint8_t ident[6];
  for (unsigned i = 0; i < 6; ++i)
    if (!image.read(i, ident[i]))
      return makeError("shorter than an ELF header");
  if (std::memcmp(ident, "\x7f" "ELF", 4) != 0)
    return makeError("not an ELF image");
  if (ident[4] != kElfClass64 || ident[5] != kElfData2Lsb)
    return makeError("not a 64-bit little-endian ELF image");
  uint64_t tableOffset;
  uint16_t entryBytes, count, namesIndex;
  if (!image.has(0, kElfHeaderBytes) || !image.read(0x28, tableOffset) ||
      !image.read(0x3a, entryBytes) || !image.read(0x3c, count) ||
      !image.read(0x3e, namesIndex))
    return makeError("shorter than an ELF header");
  if (entryBytes < kSectionHeaderBytes ||
      !image.has(tableOffset, uint64_t(entryBytes) * count))
    return makeError("the section headers reach past the image");
  std::vector<Section> sections(count);
  for (unsigned i = 0; i < count; ++i) {
    uint64_t at = tableOffset + uint64_t(i) * entryBytes;
    Section &section = sections[i];
    image.read(at, section.nameOffset);
    image.read(at + 4, section.type);
    image.read(at + 24, section.offset);
    image.read(at + 32, section.size);
    image.read(at + 40, section.link);
    image.read(at + 44, section.info);
    if (section.type != kShtNobits && !image.has(section.offset, section.size))
      return makeError("section " + llvm::Twine(i) + " reaches past the image");
  }
  if (namesIndex >= count)
    return makeError("no section name table");
  const Section &names = sections[namesIndex];
  for (Section &section : sections) {
    auto name = image.string(names.offset, names.size, section.nameOffset);
    if (!name)
      return makeError("a section name lies outside the name table");
    section.name = name->str();
  }
  return sections;
}

/// Symbol index -> name, from the symbol table (and its string table).
llvm::Expected<std::vector<std::string>>
readSymbolNames(const Bytes &image, const std::vector<Section> &sections) {
  std::vector<std::string> names;
  for (const Section &table : sections) {
    if (table.type != kShtSymtab)
      continue;
    if (table.link >= sections.size() || table.type == kShtNobits)
      return makeError("the symbol table or its string table is missing");
    const Section &strings = sections[table.link];
    for (uint64_t at = 0; at + kSymbolBytes <= table.size; at += kSymbolBytes) {
      uint32_t nameOffset = 0;
      image.read(table.offset + at, nameOffset); // inside: checked above
      auto name = image.string(strings.offset, strings.size, nameOffset);
      if (!name)
        return makeError("a symbol name lies outside its string table");
      names.push_back(name->str());
    }
    break;
  }
  return names;
}

/// One .nv.info record: its attribute and, for SVAL, its payload.
struct Record {
  uint8_t attribute;
  uint64_t payload, payloadBytes;
};

/// Calls `visit` for each record of the `.nv.info*` section.
template <typename Visit>
llvm::Error forEachRecord(const Bytes &image, const Section &section,
                          Visit visit) {
  if (section.type == kShtNobits)
    return makeError(section.name + ": no bytes in the image");
  uint64_t end = section.offset + section.size;
  for (uint64_t at = section.offset; at < end;) {
    uint8_t format, attribute;
    if (end - at < 4 || !image.read(at, format) ||
        !image.read(at + 1, attribute))
      return makeError(section.name + ": a truncated record");
    Record record{attribute, at + 2, 2};
    if (format == kFormatSized) {
      uint16_t size = 0;
      image.read(at + 2, size); // inside: end - at >= 4
      if (end - at - 4 < size)
        return makeError(section.name + ": a record reaches past the section");
      record.payload = at + 4;
      record.payloadBytes = size;
      at += 4 + uint64_t(size);
    } else if (format == kFormatNone || format == kFormatByte ||
               format == kFormatHalf) {
      at += 4;
    } else {
      return makeError(section.name + ": unknown record format " +
                       llvm::Twine(unsigned(format)));
    }
    visit(record);
  }
  return llvm::Error::success();
}

/// Per-function figures from `.nv.info`, by symbol name.
struct FunctionRecords {
  uint64_t frame = 0, minStack = 0, maxStack = 0;
  bool hasMaxStack = false, hasMinStack = false;
  uint32_t registers = 0;
  bool hasRegisters = false;
  uint64_t get() const {
    return hasMaxStack ? maxStack : hasMinStack ? minStack : frame;
  }
};

} // namespace

llvm::Expected<std::vector<KernelResources>>
readCubinResources(llvm::ArrayRef<uint8_t> cubin) {
  Bytes image(cubin);
  auto sections = readSections(image);
  if (!sections)
    return sections.takeError();
  auto symbols = readSymbolNames(image, *sections);
  if (!symbols)
    return symbols.takeError();

  llvm::StringMap<FunctionRecords> functions;
  llvm::StringMap<uint64_t> shared;
  llvm::StringMap<uint32_t> maxThreads;
  for (const Section &section : *sections) {
    llvm::StringRef name = section.name;
    if (name.consume_front(".nv.shared.")) {
      shared[name] = section.size;
      continue;
    }
    if (name == ".nv.info") {
      llvm::Error error = forEachRecord(image, section, [&](const Record &r) {
        uint32_t symbol, value;
        if (r.payloadBytes != 8 || !image.read(r.payload, symbol) ||
            !image.read(r.payload + 4, value) || symbol >= symbols->size())
          return;
        FunctionRecords &stack = functions[(*symbols)[symbol]];
        if (r.attribute == kAttrRegCount)
          stack.registers = value, stack.hasRegisters = true;
        else if (r.attribute == kAttrFrameSize)
          stack.frame = value;
        else if (r.attribute == kAttrMinStackSize)
          stack.minStack = value, stack.hasMinStack = true;
        else if (r.attribute == kAttrMaxStackSize)
          stack.maxStack = value, stack.hasMaxStack = true;
      });
      if (error)
        return error;
    } else if (name.consume_front(".nv.info.")) {
      std::string kernel = name.str();
      llvm::Error error = forEachRecord(image, section, [&](const Record &r) {
        uint32_t x = 0, y = 0, z = 0;
        if (r.attribute == kAttrMaxThreads && r.payloadBytes == 12 &&
            image.read(r.payload, x) && image.read(r.payload + 4, y) &&
            image.read(r.payload + 8, z))
          maxThreads[kernel] = uint32_t(std::min<uint64_t>(
              uint64_t(x) * y * z, UINT32_MAX));
      });
      if (error)
        return error;
    }
  }

  std::vector<KernelResources> kernels;
  for (const Section &section : *sections) {
    llvm::StringRef name = section.name;
    if (!name.consume_front(".text.") || name.empty())
      continue;
    KernelResources kernel;
    kernel.name = name.str();
    FunctionRecords records = functions.lookup(name);
    kernel.registers =
        records.hasRegisters ? records.registers : section.info >> 24;
    kernel.sharedBytes = shared.lookup(name);
    kernel.localBytes = records.get();
    kernel.maxThreads = maxThreads.lookup(name);
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}

llvm::StringMap<uint64_t> readSpillBytes(llvm::StringRef log) {
  llvm::StringMap<uint64_t> spills;
  static constexpr llvm::StringLiteral kProperties =
      "Function properties for ";
  llvm::SmallVector<llvm::StringRef, 64> lines;
  log.split(lines, '\n');
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    size_t at = lines[i].find(kProperties);
    if (at == llvm::StringRef::npos)
      continue;
    llvm::StringRef kernel =
        lines[i].substr(at + kProperties.size()).trim().trim("':");
    llvm::StringRef next = lines[i + 1];
    size_t spill = next.find(" bytes spill stores");
    if (spill == llvm::StringRef::npos)
      continue;
    llvm::StringRef before = next.substr(0, spill);
    llvm::StringRef digits = before.substr(before.find_last_of(", .") + 1);
    uint64_t bytes;
    if (!digits.getAsInteger(10, bytes))
      spills[kernel] = bytes;
  }
  return spills;
}

} // namespace cuda
} // namespace snug
