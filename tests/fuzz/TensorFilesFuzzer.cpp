//===- TensorFilesFuzzer.cpp - libFuzzer target over snug-run's tensor files ===//
//
// Each input is read both as a .npy file and as an ONNX TensorProto (.pb)
// by snug-run's readers (tools/snug-run/TensorFiles.h), from bytes. Each
// reader must succeed or fail with a message; on success the tensor must
// be self-consistent: a known dtype, non-negative dims, and exactly
// product(dims) x dtype size bytes (what snug-run then copies into an
// input of that type). A crash, a sanitizer report or an inconsistent
// tensor is a finding (abort). Seeded with small .npy and .pb files
// (bench/fuzz/run.sh writes them).
//
//===----------------------------------------------------------------------===//
#include "core/BundleFormat.h"
#include "core/CheckedArithmetic.h"
#include "tools/snug-run/TensorFiles.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

static void check(const char *reader, const snug::HostTensor &tensor) {
  unsigned elementSize = snug::bundle::dtypeSize(tensor.dtype);
  for (int64_t dim : tensor.dims) {
    if (dim < 0) {
      std::fprintf(stderr, "finding: %s accepted a negative dim\n", reader);
      std::abort();
    }
  }
  // A zero dim makes the tensor empty however large the others are (the
  // partial product of the others may overflow; that is not a finding).
  std::optional<uint64_t> bytes = snug::checkedByteSize(
      tensor.dims.data(), tensor.dims.size(), elementSize, ~uint64_t(0));
  if (!elementSize || !bytes || *bytes != tensor.bytes.size()) {
    std::fprintf(stderr,
                 "finding: %s accepted dtype %u, %zu dims and %zu bytes that "
                 "do not agree\n",
                 reader, unsigned(tensor.dtype), tensor.dims.size(),
                 tensor.bytes.size());
    std::abort();
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> file(data, data + size);
  std::string error;
  snug::HostTensor npy;
  if (snug::readNpy(file, npy, error))
    check("readNpy", npy);
  snug::HostTensor proto;
  error.clear();
  if (snug::readTensorProto(file, proto, error))
    check("readTensorProto", proto);
  return 0;
}
