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

/// Reads `path` (.npy or .pb by extension); false with `error` set on failure
/// (not a regular file, a .npy whose size is not what its header declares).
/// When the caller knows the tensor's byte size, `expectedBytes` bounds
/// what is read: a .pb file larger than any encoding of that many bytes
/// (3x, for varint integers, plus 1 MiB) is refused before it is read.
bool readTensorFile(const std::string &path, HostTensor &tensor,
                    std::string &error,
                    uint64_t expectedBytes = UINT64_MAX);
bool readNpy(const std::vector<uint8_t> &file, HostTensor &tensor,
             std::string &error);
bool readTensorProto(const std::vector<uint8_t> &file, HostTensor &tensor,
                     std::string &error);
/// Writes a .npy file (format 1.0) atomically: on failure nothing is left.
/// Its callers name files inside --output-dir and --state-dir, so a link
/// at `path` is replaced, never written through (LinkPolicy::Replace).
bool writeNpy(const std::string &path, const HostTensor &tensor,
              std::string &error);
bool readWholeFile(const std::string &path, std::vector<uint8_t> &bytes);

// What snug-run and snug-cudasim (tests/cudasim) share: choosing input data,
// and checking outputs against reference files.

/// "f32[1,3]".
std::string tensorTypeString(uint8_t dtype, const std::vector<int64_t> &dims);
/// A file name for tensor `name` ("output" if empty): path separators,
/// ':', '%' and control characters become %XX, so distinct names give
/// distinct file names.
std::string tensorFileName(const std::string &name);

/// Creates `dir` and its parents; false with `error` ("cannot create
/// 'DIR': why") on failure.
bool makeDirectory(const std::string &dir, std::string &error);

/// "step N: loss X" for a training step's one-element float output `loss`
/// (X to 9 significant digits, f32's round trip); "" for any other tensor.
std::string formatStepLoss(uint64_t step, const HostTensor &loss);
/// Reproducible random contents, advancing `state`: floats in [-1, 1),
/// small non-negative integers (safe as indices into a dim >= 10), bools.
void fillRandom(HostTensor &tensor, uint64_t &state);
/// The file for tensor `name` (index `index`) in an ONNX test-data
/// directory: KIND_INDEX.pb, NAME.npy or KIND_INDEX.npy ("" when none
/// exists); `kind` is "input" or "output".
std::string findDataFile(const std::string &dir, const char *kind,
                         size_t index, const std::string &name);
/// The data of input `index` (`name`, dtype[dims]): from `source` when not
/// empty ("@FILE" or "random"), else from `checkDir`'s file for it. False
/// with `error` set (naming the input) on failure.
bool loadInputData(const std::string &name, size_t index, uint8_t dtype,
                   const std::vector<int64_t> &dims, const std::string &source,
                   const std::string &checkDir, uint64_t &randomState,
                   HostTensor &tensor, std::string &error);
/// Compares output `index` (`actual`, named) with `checkDir`'s file for it:
/// |a - b| <= atol + rtol * |b| elementwise, NaN matching NaN. Sets `report`
/// to the line snug-run prints ("output y f32[2]: max abs 0, max rel 0: ok"
/// or "...: MISMATCH (3 of 4 elements)"). Returns 1 on a match, 0 on a
/// mismatch, -1 with `error` set when the reference cannot be read.
int checkOutputData(const HostTensor &actual, size_t index,
                    const std::string &checkDir, double rtol, double atol,
                    std::string &report, std::string &error);

} // namespace snug

#endif // SNUG_TOOLS_SNUGRUN_TENSORFILES_H
