//===- TensorFiles.h - .npy and ONNX TensorProto (.pb) files ----*- C++ -*-===//
//
// snug-run's tensor files, without numpy or protobuf: a .npy reader/writer
// (format 1.0-3.0, little-endian, C order) and a hand decoder for the few
// TensorProto fields the ONNX backend-test data uses (dims, data_type, name,
// raw_data, float/int32/int64/double/uint64_data). Dtypes are ONNX codes.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TOOLS_SNUGRUN_TENSORFILES_H
#define SNUG_TOOLS_SNUGRUN_TENSORFILES_H

#include <cstdint>
#include <string>
#include <vector>

namespace snug {

struct HostTensor {
  std::string name;
  uint8_t dtype = 0; // ONNX TensorProto.DataType
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};

/// Reads `path` (.npy or .pb by extension); false with `error` set on failure.
bool readTensorFile(const std::string &path, HostTensor &tensor,
                    std::string &error);
bool readNpy(const std::vector<uint8_t> &file, HostTensor &tensor,
             std::string &error);
bool readTensorProto(const std::vector<uint8_t> &file, HostTensor &tensor,
                     std::string &error);
/// Writes a .npy file (format 1.0).
bool writeNpy(const std::string &path, const HostTensor &tensor,
              std::string &error);
bool readWholeFile(const std::string &path, std::vector<uint8_t> &bytes);

} // namespace snug

#endif // SNUG_TOOLS_SNUGRUN_TENSORFILES_H
