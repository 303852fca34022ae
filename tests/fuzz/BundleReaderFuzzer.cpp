//===- BundleReaderFuzzer.cpp - libFuzzer target over the bundle reader ---===//
//
// Each input is decoded as a .snug bundle. The reader must accept it or
// reject it with a status; a crash or a sanitizer report is a finding. A
// bundle that loads is also run once on the host executor through the C API
// (zero inputs, tests/fuzz/HostRun.h), since a reader that lets bad offsets through would show up
// there. Built only with clang (-DSNUG_FUZZ=ON); bench/fuzz/run.sh drives it.
//
//===----------------------------------------------------------------------===//
#include "core/BundleFormat.h"
#include "runtime/BundleReader.h"
#include "tests/fuzz/HostRun.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
  // Half the inputs get a correct plan hash, so that mutations reach the
  // decoding behind the hash check instead of all dying at it.
  std::vector<uint8_t> bytes(input, input + size);
  if (size >= snug::bundle::kHashOffset + 8 && (size % 2 == 0))
    snug::bundle::sealBundle(bytes.data(), size);
  const uint8_t *data = bytes.data();
  std::unique_ptr<snug::rt::Bundle> bundle;
  if (!snug::rt::parseBundle(data, size, "fuzz-input", bundle).isOk())
    return 0;
  std::string message;
  (void)snug::fuzz::loadAndRunBytesOnHost(bytes.data(), size, message);
  return 0;
}
