//===- TensorFiles.cpp - .npy and ONNX TensorProto (.pb) files ------------===//
//
// Files are opened through core/FileAccess.h (regular files only, reads
// bounded by the file's size) and written atomically. A .npy header is read
// first and the file must hold exactly the data it declares.
//
//===----------------------------------------------------------------------===//
#include "tools/snug-run/TensorFiles.h"

#include "ir/Float16.h"
#include "core/BundleFormat.h"
#include "core/CheckedArithmetic.h"
#include "core/FileAccess.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>

namespace snug {

using namespace bundle;

/// The largest tensor file snug-run reads (64 GiB).
static constexpr uint64_t kMaxTensorFileBytes = uint64_t(1) << 36;

bool readWholeFile(const std::string &path, std::vector<uint8_t> &bytes) {
  std::string error;
  return readWholeRegularFile(path, bytes, kMaxTensorFileBytes, error);
}

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

static bool readNpyFile(const InputFile &file, HostTensor &tensor,
                        std::string &error);

bool readTensorFile(const std::string &path, HostTensor &tensor,
                    std::string &error, uint64_t expectedBytes) {
  // A regular file only (no FIFO, no /dev/zero), read no further than its
  // size and, for .npy, than its header says.
  InputFile file;
  if (!file.open(path, error))
    return false;
  bool ok;
  if (endsWith(path, ".npy")) {
    ok = readNpyFile(file, tensor, error);
  } else {
    uint64_t limit = kMaxTensorFileBytes;
    if (expectedBytes != UINT64_MAX) {
      std::optional<uint64_t> encoded = checkedMul(expectedBytes, 3);
      if (encoded && *encoded < limit - (1 << 20))
        limit = *encoded + (1 << 20);
    }
    std::vector<uint8_t> bytes;
    if (!file.readAll(bytes, limit, error))
      return false;
    ok = readTensorProto(bytes, tensor, error);
  }
  if (!ok)
    error = "'" + path + "': " + error;
  return ok;
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

static const struct {
  const char *descr;
  uint8_t dtype;
} npyTypes[] = {{"<f4", DTypeF32}, {"<f8", DTypeF64}, {"<f2", DTypeF16},
                {"<i8", DTypeI64}, {"<i4", DTypeI32}, {"<i2", DTypeI16},
                {"|i1", DTypeI8},  {"|u1", DTypeU8},  {"|b1", DTypeBool},
                {"<u2", DTypeU16}, {"<u4", DTypeU32}, {"<u8", DTypeU64},
                // numpy has no bf16: written as raw uint16 bits, and a
                // u16 file is taken for a bf16 tensor (adoptBf16Bits)
                {"<u2", DTypeBF16}};

/// The longest .npy header read (numpy writes a few hundred bytes).
static constexpr size_t kMaxNpyHeader = 1 << 20;

/// The value text of `key` in a .npy header dict ("'<f4'", "False",
/// "(2, 3)"), or false when the key is missing.
static bool npyField(const std::string &header, const std::string &key,
                     std::string &value) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return false;
  size_t colon = header.find(':', at + key.size() + 2);
  if (colon == std::string::npos)
    return false;
  size_t begin = header.find_first_not_of(" ", colon + 1);
  if (begin == std::string::npos)
    return false;
  size_t end = header[begin] == '(' ? header.find(')', begin)
               : header[begin] == '\''
                   ? header.find('\'', begin + 1)
                   : header.find_first_of(",}", begin) - 1;
  if (end == std::string::npos || end < begin)
    return false;
  value = header.substr(begin, end - begin + 1);
  while (!value.empty() && value.back() == ' ')
    value.pop_back();
  return true;
}

/// Parses the prefix and header dict at the start of `bytes` (`size` bytes
/// available): dtype and dims into `tensor`, where the data starts and how
/// many bytes it has.
static bool parseNpyHeader(const uint8_t *bytes, size_t size,
                           HostTensor &tensor, uint64_t &dataStart,
                           uint64_t &dataBytes, std::string &error) {
  auto fail = [&](const std::string &message) {
    error = message;
    return false;
  };
  if (size < 10 || std::memcmp(bytes, "\x93NUMPY", 6))
    return fail("not a .npy file");
  uint8_t major = bytes[6];
  if (major < 1 || major > 3)
    return fail(".npy format version " + std::to_string(major) +
                " is not supported");
  uint64_t headerLength, start;
  if (major == 1) {
    headerLength = bytes[8] | bytes[9] << 8;
    start = 10;
  } else {
    if (size < 12)
      return fail("truncated .npy header");
    headerLength = uint64_t(bytes[8]) | uint64_t(bytes[9]) << 8 |
                   uint64_t(bytes[10]) << 16 | uint64_t(bytes[11]) << 24;
    start = 12;
  }
  if (headerLength > kMaxNpyHeader)
    return fail(".npy header of " + std::to_string(headerLength) +
                " bytes is too long");
  if (!isRangeInside(start, headerLength, size))
    return fail("truncated .npy header");
  std::string header(reinterpret_cast<const char *>(bytes + start),
                     headerLength);
  std::string descr, order, shape;
  if (!npyField(header, "descr", descr) || descr.size() < 2 ||
      descr.front() != '\'' || descr.back() != '\'')
    return fail("bad .npy header: no 'descr'");
  descr = descr.substr(1, descr.size() - 2);
  if (descr.size() == 3 && descr[0] == '=')
    descr[0] = '<';
  if (descr == "<b1" || descr == "=b1")
    descr = "|b1";
  tensor.dtype = 0;
  for (const auto &entry : npyTypes)
    if (descr == entry.descr)
      tensor.dtype = entry.dtype;
  if (!tensor.dtype)
    return fail("unsupported .npy dtype '" + descr + "'");
  if (npyField(header, "fortran_order", order)) {
    if (order == "True")
      return fail("Fortran-order .npy files are not supported");
    if (order != "False")
      return fail("bad .npy header: 'fortran_order' is '" + order +
                  "', not True or False");
  } else if (header.find("'fortran_order'") != std::string::npos) {
    return fail("bad .npy header: 'fortran_order' has no value");
  }
  if (!npyField(header, "shape", shape) || shape.size() < 2 ||
      shape.front() != '(' || shape.back() != ')')
    return fail("bad .npy header: no 'shape' tuple");
  shape = shape.substr(1, shape.size() - 2);
  tensor.dims.clear();
  for (size_t at = 0; at < shape.size();) {
    size_t comma = shape.find(',', at);
    std::string item = shape.substr(
        at, comma == std::string::npos ? std::string::npos : comma - at);
    size_t first = item.find_first_not_of(' ');
    if (first != std::string::npos) {
      item = item.substr(first, item.find_last_not_of(' ') - first + 1);
      // Digits only: strtoll alone would stop at an embedded NUL and read
      // "\0" as a dim of 0 (the tensor-files fuzzer found it).
      bool digits = std::all_of(item.begin(), item.end(), [](char c) {
        return c >= '0' && c <= '9';
      });
      char *end;
      errno = 0;
      long long dim = std::strtoll(item.c_str(), &end, 10);
      if (!digits || end != item.c_str() + item.size() || errno || dim < 0)
        return fail("bad .npy shape '(" + shape + ")'");
      tensor.dims.push_back(dim);
    } else if (comma != std::string::npos) {
      return fail("bad .npy shape '(" + shape + ")'");
    }
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  std::optional<uint64_t> byteSize =
      checkedByteSize(tensor.dims.data(), tensor.dims.size(),
                      dtypeSize(tensor.dtype), kMaxTensorFileBytes);
  if (!byteSize)
    return fail("bad .npy shape: " +
                tensorTypeString(tensor.dtype, tensor.dims) + " is too large");
  dataStart = start + headerLength;
  dataBytes = *byteSize;
  return true;
}

static std::string npySizeMismatch(uint64_t have, uint64_t need,
                                   const HostTensor &tensor) {
  return std::string(have < need ? "truncated .npy data" : "trailing bytes") +
         ": " + std::to_string(have) + " data bytes, " +
         tensorTypeString(tensor.dtype, tensor.dims) + " needs " +
         std::to_string(need);
}

bool readNpy(const std::vector<uint8_t> &file, HostTensor &tensor,
             std::string &error) {
  uint64_t start, bytes;
  if (!parseNpyHeader(file.data(), file.size(), tensor, start, bytes, error))
    return false;
  if (file.size() - start != bytes) {
    error = npySizeMismatch(file.size() - start, bytes, tensor);
    return false;
  }
  const uint8_t *data = file.data() + start;
  tensor.bytes.assign(data, data + bytes);
  return true;
}

/// Reads the header first, checks that the file holds exactly the data it
/// declares, and only then reads (and allocates) that much.
static bool readNpyFile(const InputFile &file, HostTensor &tensor,
                        std::string &error) {
  std::vector<uint8_t> prefix(
      size_t(std::min<uint64_t>(file.getSize(), 12 + kMaxNpyHeader)));
  if (!file.readAt(0, prefix.data(), prefix.size(), error))
    return false;
  uint64_t start, bytes;
  if (!parseNpyHeader(prefix.data(), prefix.size(), tensor, start, bytes,
                      error))
    return false;
  if (file.getSize() - start != bytes) {
    error = npySizeMismatch(file.getSize() - start, bytes, tensor);
    return false;
  }
  tensor.bytes.resize(size_t(bytes));
  return file.readAt(start, tensor.bytes.data(), tensor.bytes.size(), error);
}

bool writeNpy(const std::string &path, const HostTensor &tensor,
              std::string &error) {
  const char *descr = nullptr;
  for (const auto &entry : npyTypes)
    if (entry.dtype == tensor.dtype)
      descr = entry.descr;
  if (!descr) {
    error = "no .npy dtype for this tensor";
    return false;
  }
  std::string shape = "(";
  for (size_t i = 0; i < tensor.dims.size(); ++i)
    shape += std::to_string(tensor.dims[i]) +
             (tensor.dims.size() == 1 || i + 1 < tensor.dims.size() ? "," : "");
  shape += ")";
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  uint8_t prefix[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                        uint8_t(header.size() & 0xff),
                        uint8_t(header.size() >> 8)};
  // Whole or not at all: a full disk leaves no partial .npy behind.
  AtomicFileWriter file;
  return file.open(path, error, LinkPolicy::Replace) &&
         file.write(prefix, 10, error) &&
         file.write(header.data(), header.size(), error) &&
         file.write(tensor.bytes.data(), tensor.bytes.size(), error) &&
         file.commit(error);
}

//===----------------------------------------------------------------------===//
// TensorProto
//===----------------------------------------------------------------------===//

namespace {
class ProtoReader {
public:
  ProtoReader(const uint8_t *data, size_t size) : p(data), end(data + size) {}
  bool atEnd() const { return p >= end; }
  bool varint(uint64_t &value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end)
        return false;
      uint8_t byte = *p++;
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return false;
  }
  bool bytes(const uint8_t *&data, uint64_t &size) {
    if (!varint(size) || size > uint64_t(end - p))
      return false;
    data = p;
    p += size;
    return true;
  }
  bool skip(unsigned wireType) {
    uint64_t value;
    const uint8_t *data;
    switch (wireType) {
    case 0: return varint(value);
    case 1: return advance(8);
    case 2: return bytes(data, value);
    case 5: return advance(4);
    default: return false;
    }
  }
  bool advance(size_t n) {
    if (size_t(end - p) < n)
      return false;
    p += n;
    return true;
  }
  const uint8_t *p, *end;
};
} // namespace

bool readTensorProto(const std::vector<uint8_t> &file, HostTensor &tensor,
                     std::string &error) {
  ProtoReader reader(file.data(), file.size());
  std::vector<uint64_t> ints; // int32_data / int64_data / uint64_data
  std::vector<uint8_t> floats, doubles, raw;
  bool hasRaw = false, hasInts = false, external = false;
  uint64_t dataType = 0;
  tensor.dims.clear();
  while (!reader.atEnd()) {
    uint64_t key;
    if (!reader.varint(key)) {
      error = "corrupt TensorProto";
      return false;
    }
    unsigned field = unsigned(key >> 3), wire = unsigned(key & 7);
    const uint8_t *data;
    uint64_t size, value;
    auto varints = [&](std::vector<uint64_t> &into) {
      if (wire == 0) {
        if (!reader.varint(value))
          return false;
        into.push_back(value);
        return true;
      }
      if (wire != 2 || !reader.bytes(data, size))
        return false;
      ProtoReader packed(data, size);
      while (!packed.atEnd()) {
        if (!packed.varint(value))
          return false;
        into.push_back(value);
      }
      return true;
    };
    auto fixed = [&](std::vector<uint8_t> &into, size_t width) {
      if (wire == 2) {
        if (!reader.bytes(data, size))
          return false;
        into.insert(into.end(), data, data + size);
        return true;
      }
      if ((width == 4 && wire != 5) || (width == 8 && wire != 1))
        return false;
      const uint8_t *at = reader.p;
      if (!reader.advance(width))
        return false;
      into.insert(into.end(), at, at + width);
      return true;
    };
    bool ok = true;
    switch (field) {
    case 1: {
      std::vector<uint64_t> dims;
      ok = varints(dims);
      for (uint64_t d : dims)
        tensor.dims.push_back(int64_t(d));
      break;
    }
    case 2: ok = wire == 0 && reader.varint(dataType); break;
    case 4: ok = fixed(floats, 4); break;
    case 5: case 7: case 11: ok = varints(ints); hasInts = true; break;
    case 8:
      ok = wire == 2 && reader.bytes(data, size);
      if (ok)
        tensor.name.assign(reinterpret_cast<const char *>(data), size);
      break;
    case 9:
      ok = wire == 2 && reader.bytes(data, size);
      if (ok)
        raw.assign(data, data + size), hasRaw = true;
      break;
    case 10: ok = fixed(doubles, 8); break;
    case 14:
      ok = wire == 0 && reader.varint(value);
      external = value == 1;
      break;
    default: ok = reader.skip(wire);
    }
    if (!ok) {
      error = "corrupt TensorProto (field " + std::to_string(field) + ")";
      return false;
    }
  }
  if (external) {
    error = "external data is not supported";
    return false;
  }
  tensor.dtype = uint8_t(dataType);
  unsigned size = dtypeSize(tensor.dtype);
  if (!size || dataType > 255) {
    error = "unsupported data_type " + std::to_string(dataType);
    return false;
  }
  uint64_t elements = 1;
  for (int64_t dim : tensor.dims) {
    if (dim < 0 || (dim && elements > (uint64_t(1) << 40) / uint64_t(dim))) {
      error = "bad dims";
      return false;
    }
    elements *= uint64_t(dim);
  }
  if (hasRaw) {
    tensor.bytes = raw;
  } else if (!floats.empty()) {
    tensor.bytes = floats;
  } else if (!doubles.empty()) {
    tensor.bytes = doubles;
  } else if (hasInts || elements == 0) {
    tensor.bytes.assign(ints.size() * size, 0);
    for (size_t i = 0; i < ints.size(); ++i)
      std::memcpy(tensor.bytes.data() + i * size, &ints[i], size); // LE
  }
  if (tensor.bytes.size() != elements * size) {
    error = "data holds " + std::to_string(tensor.bytes.size()) +
            " bytes, dims need " + std::to_string(elements * size);
    return false;
  }
  return true;
}

std::string tensorTypeString(uint8_t dtype, const std::vector<int64_t> &dims) {
  std::string s = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

bool makeDirectory(const std::string &dir, std::string &error) {
  std::error_code code;
  std::filesystem::create_directories(dir, code);
  if (code)
    error = "cannot create '" + dir + "': " + code.message();
  return !code;
}

std::string formatStepLoss(uint64_t step, const HostTensor &loss) {
  double value;
  if (loss.name != "loss")
    return "";
  if (loss.dtype == bundle::DTypeF32 && loss.bytes.size() == 4) {
    float f;
    std::memcpy(&f, loss.bytes.data(), 4);
    value = f;
  } else if (loss.dtype == bundle::DTypeF64 && loss.bytes.size() == 8) {
    std::memcpy(&value, loss.bytes.data(), 8);
  } else {
    return "";
  }
  char text[64];
  std::snprintf(text, sizeof text, "step %llu: loss %.9g",
                (unsigned long long)step, value);
  return text;
}

std::string tensorFileName(const std::string &name) {
  if (name.empty())
    return "output";
  // Injective: '%' is escaped too, so "a/b" (a%2Fb) and "a_b" stay apart.
  std::string out;
  for (unsigned char c : name) {
    if (c == '/' || c == '\\' || c == ':' || c == '%' || c < 0x20 ||
        c == 0x7f) {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      out += escaped;
    } else {
      out += char(c);
    }
  }
  return out;
}

static double elementAt(const HostTensor &t, size_t i) {
  const uint8_t *p = t.bytes.data() + i * dtypeSize(t.dtype);
  switch (t.dtype) {
  case DTypeF32: { float v; std::memcpy(&v, p, 4); return v; }
  case DTypeF64: { double v; std::memcpy(&v, p, 8); return v; }
  case DTypeF16: { uint16_t v; std::memcpy(&v, p, 2); return f16ToFloat(v); }
  case DTypeBF16: { uint16_t v; std::memcpy(&v, p, 2); return bf16ToFloat(v); }
  case DTypeI64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
  case DTypeI32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case DTypeI16: { int16_t v; std::memcpy(&v, p, 2); return v; }
  case DTypeI8: return int8_t(*p);
  case DTypeU8: return *p;
  case DTypeU16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
  case DTypeU32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
  case DTypeU64: { uint64_t v; std::memcpy(&v, p, 8); return double(v); }
  case DTypeBool: return *p != 0;
  }
  return 0;
}

void fillRandom(HostTensor &t, uint64_t &state) {
  size_t size = dtypeSize(t.dtype), count = t.bytes.size() / size;
  for (size_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double unit = double(state >> 11) / double(uint64_t(1) << 53); // [0, 1)
    uint8_t *p = t.bytes.data() + i * size;
    switch (t.dtype) {
    case DTypeF32: { float v = float(2 * unit - 1); std::memcpy(p, &v, 4); break; }
    case DTypeF64: { double v = 2 * unit - 1; std::memcpy(p, &v, 8); break; }
    case DTypeF16: { uint16_t v = floatToF16(float(2 * unit - 1)); std::memcpy(p, &v, 2); break; }
    case DTypeBF16: { uint16_t v = floatToBf16(float(2 * unit - 1)); std::memcpy(p, &v, 2); break; }
    case DTypeBool: *p = unit < 0.5; break;
    default: { // small non-negative integers: safe as indices into dim >= 10
      int64_t v = int64_t(unit * 10);
      std::memcpy(p, &v, size); // little-endian: low bytes first
    }
    }
  }
}

static bool fileExists(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

std::string findDataFile(const std::string &dir, const char *kind,
                         size_t index, const std::string &name) {
  for (const std::string &candidate :
       {dir + "/" + kind + "_" + std::to_string(index) + ".pb",
        dir + "/" + name + ".npy",
        dir + "/" + kind + "_" + std::to_string(index) + ".npy"})
    if (fileExists(candidate))
      return candidate;
  return "";
}

/// Older ONNX test data stores bfloat16 tensors as UINT16 (4), and numpy
/// has no bf16 (.npy files hold its bits as '<u2'): a u16 file read for a
/// bf16 tensor holds that tensor's bits.
static void adoptBf16Bits(HostTensor &tensor, uint8_t wanted) {
  if (wanted == DTypeBF16 && tensor.dtype == DTypeU16)
    tensor.dtype = DTypeBF16;
}

bool loadInputData(const std::string &name, size_t index, uint8_t dtype,
                   const std::vector<int64_t> &dims, const std::string &given,
                   const std::string &checkDir, uint64_t &randomState,
                   HostTensor &tensor, std::string &error) {
  tensor.name = name;
  tensor.dtype = dtype;
  tensor.dims = dims;
  std::string source = given;
  if (source.empty() && !checkDir.empty()) {
    std::string path = findDataFile(checkDir, "input", index, name);
    if (path.empty()) {
      error = "no data for input '" + name + "' in '" + checkDir + "'";
      return false;
    }
    source = "@" + path;
  } else if (source.empty()) {
    error = "input '" + name + "' needs --input " + name + "=@FILE|random";
    return false;
  }
  if (source == "random") {
    std::optional<uint64_t> bytes = checkedByteSize(
        dims.data(), dims.size(), dtypeSize(dtype), kMaxTensorFileBytes);
    if (!bytes) {
      error = "input '" + name + "': " + tensorTypeString(dtype, dims) +
              " is too large for random data";
      return false;
    }
    tensor.bytes.assign(size_t(*bytes), 0);
    fillRandom(tensor, randomState);
    return true;
  }
  if (source.size() < 2 || source[0] != '@') {
    error = "input '" + name + "': '" + source + "' is not @FILE or random";
    return false;
  }
  std::string path = source.substr(1), why;
  std::optional<uint64_t> expected =
      checkedByteSize(dims.data(), dims.size(), dtypeSize(dtype));
  if (!readTensorFile(path, tensor, why, expected.value_or(UINT64_MAX))) {
    error = "input '" + name + "': " + why;
    return false;
  }
  adoptBf16Bits(tensor, dtype);
  if (tensor.dtype != dtype || tensor.dims != dims) {
    error = "input '" + name + "': '" + path + "' holds " +
            tensorTypeString(tensor.dtype, tensor.dims) + ", '" + name +
            "' is " + tensorTypeString(dtype, dims);
    return false;
  }
  tensor.name = name;
  return true;
}

int checkOutputData(const HostTensor &actual, size_t index,
                    const std::string &checkDir, double rtol, double atol,
                    std::string &report, std::string &error) {
  std::string path = findDataFile(checkDir, "output", index, actual.name);
  if (path.empty()) {
    error = "no expected data for output '" + actual.name + "' in '" +
            checkDir + "'";
    return -1;
  }
  HostTensor expected;
  if (!readTensorFile(path, expected, error, actual.bytes.size()))
    return -1;
  adoptBf16Bits(expected, actual.dtype);
  std::string type = tensorTypeString(actual.dtype, actual.dims);
  if (expected.dims != actual.dims ||
      expected.bytes.size() / dtypeSize(expected.dtype) !=
          actual.bytes.size() / dtypeSize(actual.dtype)) {
    report = "output " + actual.name + " " + type +
             ": MISMATCH, expected shape " +
             tensorTypeString(expected.dtype, expected.dims);
    return 0;
  }
  double maxAbs = 0, maxRel = 0;
  size_t bad = 0, count = actual.bytes.size() / dtypeSize(actual.dtype);
  for (size_t k = 0; k < count; ++k) {
    double a = elementAt(actual, k), b = elementAt(expected, k);
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b))
        ++bad, maxAbs = INFINITY, maxRel = INFINITY;
      continue;
    }
    if (a == b) // equal infinities too
      continue;
    double diff = std::fabs(a - b);
    maxAbs = std::max(maxAbs, diff);
    if (b != 0)
      maxRel = std::max(maxRel, diff / std::fabs(b));
    if (!(diff <= atol + rtol * std::fabs(b)))
      ++bad;
  }
  char line[512];
  std::snprintf(line, sizeof line, "output %s %s: max abs %.3g, max rel %.3g: %s",
                actual.name.c_str(), type.c_str(), maxAbs, maxRel,
                bad ? "MISMATCH" : "ok");
  report = line;
  if (bad)
    report += " (" + std::to_string(bad) + " of " + std::to_string(count) +
              " elements)";
  return bad ? 0 : 1;
}

} // namespace snug
