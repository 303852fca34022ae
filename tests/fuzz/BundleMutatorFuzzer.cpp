//===- BundleMutatorFuzzer.cpp - Structure-aware libFuzzer bundle target --===//
//
// The bundle reader and the host executor behind a hash that always
// matches: LLVMFuzzerCustomMutator decodes the input bundle's sections and
// mutates ops, attributes, dims, dtypes, locations, counts and the device
// plan's integers (tests/fuzz/BundleMutator.h), then seals it; a third of
// the time it first lets libFuzzer mutate the bytes. Each input is sealed
// again and loaded and run through the C API (tests/fuzz/HostRun.h). A
// crash or a sanitizer report is a finding. Seeded with compiled bundles.
//
//===----------------------------------------------------------------------===//
#include "core/BundleFormat.h"
#include "tests/fuzz/BundleMutator.h"
#include "tests/fuzz/HostRun.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size,
                                   size_t maxSize);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  std::vector<uint8_t> input(data, data + size);
  if (seed % 3 == 0) {
    input.resize(maxSize);
    input.resize(LLVMFuzzerMutate(input.data(), size, maxSize));
  }
  std::string description;
  std::vector<uint8_t> mutant =
      snug::fuzz::mutateBundle(input, snug::fuzz::mixSeed(seed), description);
  if (mutant.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, mutant.data(), mutant.size());
  return mutant.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
  std::vector<uint8_t> bytes(input, input + size);
  if (size >= snug::bundle::kHashOffset + 8)
    snug::bundle::sealBundle(bytes.data(), size);
  std::string message;
  (void)snug::fuzz::loadAndRunBytesOnHost(bytes.data(), size, message);
  return 0;
}
