//===- BundleReaderFuzzer.cpp - libFuzzer target over the bundle reader ---===//
//
// Each input is decoded as a .snug bundle. The reader must accept it or
// reject it with a status; a crash or a sanitizer report is a finding. A
// bundle that loads is also run once on the host executor through the C API
// (zero inputs), since a reader that lets bad offsets through would show up
// there. Built only with clang (-DSNUG_FUZZ=ON); bench/fuzz/run.sh drives it.
//
//===----------------------------------------------------------------------===//
#include "runtime/BundleFormat.h"
#include "runtime/BundleReader.h"
#include "snug/snug.h"

#include <cstdio>
#include <algorithm>
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
  // The C API loads from paths: run what decoded through it as a user would.
  static const std::string path = [] {
    char name[] = "/tmp/snug-fuzz-XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0)
      std::abort();
    close(fd);
    return std::string(name);
  }();
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    std::abort();
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  snug_bundle *loaded = nullptr;
  if (snug_bundle_load(path.c_str(), &loaded) != SNUG_OK)
    return 0;
  snug_session_options options;
  snug_session_options_init(&options);
  snug_session *session = nullptr;
  if (snug_session_create(loaded, &options, &session) == SNUG_OK) {
    size_t inputs = 0;
    (void)snug_bundle_input_count(loaded, &inputs);
    for (size_t i = 0; i < inputs; ++i) {
      void *input = nullptr;
      snug_tensor_info info;
      if (snug_bundle_input_info(loaded, i, &info) == SNUG_OK &&
          snug_session_input_data(session, i, &input) == SNUG_OK && input)
        std::fill_n(static_cast<uint8_t *>(input), info.bytes, 0);
    }
    (void)snug_session_run(session);
    snug_session_destroy(session);
  }
  snug_bundle_destroy(loaded);
  return 0;
}
