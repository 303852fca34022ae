//===- OnnxWeights.cpp - TensorProto data into the weight blob ------------===//
//
// Reads the data of an initializer or tensor attribute from wherever the
// model keeps it: raw_data (moved into a buffer the blob shares, no copy),
// the typed repeated fields (float_data, int32_data for the narrow types and
// f16/bf16 bit patterns, int64_data, double_data: converted once), or an
// external file (data_location EXTERNAL, location relative to the model's
// directory, optional offset and length), mapped once per file and shared by
// all its tensors. An external file must be a regular file (no FIFO, no
// /dev/zero: core/FileAccess.h) whose real path, symlinks resolved, lies
// inside the model's real directory unless the importer is told otherwise. Every path checks that the byte count matches the shape,
// and names the model, the tensor and what disagrees.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"

#include "ir/ShapeFunctions.h"
#include "core/FileAccess.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstring>
#include <iterator>

namespace snug {
namespace onnx_import {

using ir::DType;

llvm::Optional<DType> convertDType(int onnxType) {
  switch (onnxType) {
  case onnx::TensorProto::FLOAT:
    return DType::F32;
  case onnx::TensorProto::FLOAT16:
    return DType::F16;
  case onnx::TensorProto::BFLOAT16:
    return DType::BF16;
  case onnx::TensorProto::DOUBLE:
    return DType::F64;
  case onnx::TensorProto::INT64:
    return DType::I64;
  case onnx::TensorProto::INT32:
    return DType::I32;
  case onnx::TensorProto::INT16:
    return DType::I16;
  case onnx::TensorProto::INT8:
    return DType::I8;
  case onnx::TensorProto::UINT8:
    return DType::U8;
  case onnx::TensorProto::UINT16:
    return DType::U16;
  case onnx::TensorProto::UINT32:
    return DType::U32;
  case onnx::TensorProto::UINT64:
    return DType::U64;
  case onnx::TensorProto::BOOL:
    return DType::Bool;
  default:
    return llvm::None;
  }
}

std::string onnxDTypeName(int onnxType) {
  if (onnx::TensorProto_DataType_IsValid(onnxType))
    return onnx::TensorProto_DataType_Name(
        static_cast<onnx::TensorProto_DataType>(onnxType));
  // Types of newer onnx.proto than the one snug builds with (Debian's ends
  // at BFLOAT16), which opsets 19 to 25 admit: named, so that a refusal says
  // which type rather than its number.
  static const char *const kNewer[] = {
      "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",        "INT4",           "FLOAT4E2M1", "FLOAT8E8M0",
      "UINT2",        "INT2"};
  constexpr int kFirstNewer = 17;
  if (onnxType >= kFirstNewer &&
      onnxType < kFirstNewer + int(std::size(kNewer)))
    return kNewer[onnxType - kFirstNewer];
  return "type " + std::to_string(onnxType);
}

namespace {
/// A MemoryBuffer that owns a string (a tensor's raw_data, swapped out of
/// the parsed model), so the weight blob can share it like a mapped file.
class StringBuffer : public llvm::MemoryBuffer {
public:
  explicit StringBuffer(std::string &&bytes) : bytes(std::move(bytes)) {
    init(this->bytes.data(), this->bytes.data() + this->bytes.size(),
         /*RequiresNullTerminator=*/false);
  }
  BufferKind getBufferKind() const override { return MemoryBuffer_Malloc; }

private:
  std::string bytes;
};
} // namespace

/// `path` with every symlink resolved, or None when it does not exist.
static llvm::Optional<std::string> realPath(llvm::StringRef path) {
  llvm::SmallString<256> real;
  if (llvm::sys::fs::real_path(path, real, /*expand_tilde=*/false))
    return llvm::None;
  return real.str().str();
}

llvm::Expected<std::shared_ptr<llvm::MemoryBuffer>>
Importer::openExternal(llvm::StringRef location, llvm::StringRef context) {
  const char *allowFlag = "--allow-external-data-outside-model-dir";
  if (!allowExternalDataOutsideModelDir &&
      (llvm::sys::path::is_absolute(location) || location.contains("..")))
    return error(context + ": external data location '" + location +
                 "' must be a relative path inside the model's directory (" +
                 allowFlag + " allows others)");
  llvm::StringRef modelDir = llvm::sys::path::parent_path(path);
  llvm::SmallString<256> file = modelDir;
  llvm::sys::path::append(file, location);
  llvm::Optional<std::string> real = realPath(file);
  if (!real)
    return error(context + ": cannot open external data file '" + file +
                 "': No such file or directory");
  // The text check above cannot see symlinks: the file itself or a folder
  // on the way may point anywhere (the password file, say). What is read
  // must really lie under the model's real directory.
  if (!allowExternalDataOutsideModelDir) {
    llvm::Optional<std::string> realDir =
        realPath(modelDir.empty() ? "." : modelDir);
    if (!realDir || !llvm::StringRef(*real).startswith(
                        llvm::StringRef(*realDir).rtrim('/').str() + "/"))
      return error(context + ": external data file '" + file +
                   "' resolves to '" + *real +
                   "', outside the model's directory (" + allowFlag +
                   " allows it)");
  }
  auto found = externalFiles.find(*real);
  if (found != externalFiles.end())
    return found->second;
  InputFile input;
  std::string why;
  if (!input.open(*real, why))
    return error(context + ": cannot open external data file '" + file +
                 "': " + input.getFailureReason());
  auto buffer = llvm::MemoryBuffer::getOpenFile(
      input.getFd(), *real, input.getSize(), /*RequiresNullTerminator=*/false);
  if (!buffer)
    return error(context + ": cannot open external data file '" + file +
                 "': " + buffer.getError().message());
  std::shared_ptr<llvm::MemoryBuffer> shared = std::move(*buffer);
  externalFiles[*real] = shared;
  if (externalFilesRead)
    externalFilesRead->push_back(*real);
  return shared;
}

/// The type of `tensor`, checked.
static llvm::Expected<ir::TensorType>
readTensorType(const Importer &importer, const onnx::TensorProto &tensor,
               llvm::StringRef context) {
  auto dtype = convertDType(tensor.data_type());
  if (!dtype)
    return importer.error(context + ": element type " +
                          onnxDTypeName(tensor.data_type()) +
                          " is not supported");
  llvm::SmallVector<int64_t, 4> dims;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0)
      return importer.error(context + ": dim " + llvm::Twine(dim) +
                            " is negative");
    dims.push_back(dim);
  }
  ir::TensorType type(*dtype, dims);
  if (!getCheckedByteSize(type))
    return importer.error(context + ": shape " + type.str() + " is too large");
  return type;
}

/// Converts the typed repeated field of `tensor` to little-endian bytes.
static llvm::Expected<std::vector<uint8_t>>
readTypedData(const Importer &importer, const onnx::TensorProto &tensor,
              const ir::TensorType &type, llvm::StringRef context) {
  int64_t count = type.getNumElements();
  auto mismatch = [&](llvm::StringRef field, int64_t have) {
    return importer.error(context + ": " + field + " has " + llvm::Twine(have) +
                          " elements, shape " + type.str() + " needs " +
                          llvm::Twine(count));
  };
  // The field must hold the element count before anything is allocated: a
  // 95-byte model may declare a 64 GiB tensor and carry no data.
  std::pair<const char *, int64_t> field = {"int32_data",
                                            tensor.int32_data_size()};
  switch (type.getDType()) {
  case DType::F32:
    field = {"float_data", tensor.float_data_size()};
    break;
  case DType::F64:
    field = {"double_data", tensor.double_data_size()};
    break;
  case DType::I64:
    field = {"int64_data", tensor.int64_data_size()};
    break;
  case DType::U32: // onnx.proto: uint64_data holds uint32 and uint64
  case DType::U64:
    field = {"uint64_data", tensor.uint64_data_size()};
    break;
  default:
    break;
  }
  if (field.second != count)
    return mismatch(field.first, field.second);
  std::vector<uint8_t> bytes(type.getByteSize());
  if (count == 0)
    return bytes;
  switch (type.getDType()) {
  case DType::F32:
    std::memcpy(bytes.data(), tensor.float_data().data(), bytes.size());
    return bytes;
  case DType::F64:
    std::memcpy(bytes.data(), tensor.double_data().data(), bytes.size());
    return bytes;
  case DType::I64:
    std::memcpy(bytes.data(), tensor.int64_data().data(), bytes.size());
    return bytes;
  case DType::U64:
    std::memcpy(bytes.data(), tensor.uint64_data().data(), bytes.size());
    return bytes;
  case DType::U32:
    // Little-endian narrowing: the low 4 bytes.
    for (int64_t i = 0; i < count; ++i) {
      uint32_t value = uint32_t(tensor.uint64_data(i));
      std::memcpy(bytes.data() + 4 * i, &value, 4);
    }
    return bytes;
  default:
    break;
  }
  unsigned size = ir::getDTypeSize(type.getDType());
  for (int64_t i = 0; i < count; ++i) {
    int32_t value = tensor.int32_data(i);
    // Little-endian narrowing: the low `size` bytes (f16/bf16 bit patterns,
    // int16, uint16, int8, uint8, bool).
    uint8_t raw[4];
    std::memcpy(raw, &value, 4);
    std::memcpy(bytes.data() + i * size, raw, size);
  }
  return bytes;
}

static bool isExternal(const onnx::TensorProto &tensor) {
  return tensor.data_location() == onnx::TensorProto::EXTERNAL;
}

llvm::Expected<ir::Value *> Importer::importTensor(onnx::TensorProto &tensor,
                                                   llvm::StringRef name,
                                                   llvm::StringRef context) {
  auto type = readTensorType(*this, tensor, context);
  if (!type)
    return type.takeError();
  uint64_t expected = type->getByteSize();
  ir::WeightBlob &blob = module.getWeightBlob();

  if (isExternal(tensor)) {
    std::string location;
    uint64_t offset = 0;
    llvm::Optional<uint64_t> length;
    for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
      uint64_t number = 0;
      if (entry.key() == "location") {
        location = entry.value();
      } else if (entry.key() == "offset" || entry.key() == "length") {
        if (llvm::StringRef(entry.value()).getAsInteger(10, number))
          return error(context + ": external data " + entry.key() + " '" +
                       entry.value() + "' is not a number");
        if (entry.key() == "offset")
          offset = number;
        else
          length = number;
      }
    }
    if (location.empty())
      return error(context + ": external data has no location");
    auto file = openExternal(location, context);
    if (!file)
      return file.takeError();
    uint64_t fileSize = (*file)->getBufferSize();
    uint64_t size =
        length.getValueOr(offset <= fileSize ? fileSize - offset : 0);
    if (offset > fileSize || size > fileSize - offset)
      return error(context + ": external data [" + llvm::Twine(offset) + ", " +
                   llvm::Twine(offset + size) + ") lies outside '" + location +
                   "' (" + llvm::Twine(fileSize) + " bytes)");
    if (size != expected)
      return error(context + ": external data holds " + llvm::Twine(size) +
                   " bytes, shape " + type->str() + " needs " +
                   llvm::Twine(expected));
    uint64_t at = blob.addMapped(*file, offset, size);
    return module.addWeightAt(name, *type, at);
  }

  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != expected)
      return error(context + ": raw_data holds " +
                   llvm::Twine(tensor.raw_data().size()) + " bytes, shape " +
                   type->str() + " needs " + llvm::Twine(expected));
    // A subgraph's tensor (a Constant in a loop's body) is read again in
    // the next iteration: copied, where the graph's own are moved.
    std::string bytes;
    if (inSubgraph())
      bytes = tensor.raw_data();
    else
      bytes.swap(*tensor.mutable_raw_data());
    auto buffer = std::make_shared<StringBuffer>(std::move(bytes));
    uint64_t at = blob.addMapped(buffer, 0, expected);
    return module.addWeightAt(name, *type, at);
  }

  auto bytes = readTypedData(*this, tensor, *type, context);
  if (!bytes)
    return bytes.takeError();
  return module.addWeight(name, *type, *bytes);
}

llvm::Expected<std::pair<ir::TensorType, std::vector<uint8_t>>>
Importer::readTensorBytes(onnx::TensorProto &tensor, llvm::StringRef context) {
  auto type = readTensorType(*this, tensor, context);
  if (!type)
    return type.takeError();
  if (isExternal(tensor))
    return error(context + ": external data in an attribute is not supported");
  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != type->getByteSize())
      return error(context + ": raw_data holds " +
                   llvm::Twine(tensor.raw_data().size()) + " bytes, shape " +
                   type->str() + " needs " + llvm::Twine(type->getByteSize()));
    const auto *begin =
        reinterpret_cast<const uint8_t *>(tensor.raw_data().data());
    return std::make_pair(
        *type, std::vector<uint8_t>(begin, begin + tensor.raw_data().size()));
  }
  auto bytes = readTypedData(*this, tensor, *type, context);
  if (!bytes)
    return bytes.takeError();
  return std::make_pair(*type, std::move(*bytes));
}

} // namespace onnx_import
} // namespace snug

namespace snug {
llvm::Optional<ir::DType> getDTypeOfOnnxDataType(int onnxType) {
  return onnx_import::convertDType(onnxType);
}
} // namespace snug
