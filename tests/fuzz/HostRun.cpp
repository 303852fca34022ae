//===- HostRun.cpp - Load a bundle and run it on the host executor --------===//
//
// Through the public C API only (snug/snug.h), so that the checks a user's
// load goes through are the ones exercised: snug_bundle_load (the reader and
// the executor's kernel lookup), snug_session_create, snug_session_run.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/HostRun.h"

#include "snug/snug.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

// For every program that runs bundles this way (the bundle fuzzers and
// snug-bundle-mutants), under the sanitizers: a UBSan report is a finding
// like an ASan one, so stop at the first; and a malloc the sanitizer cannot
// serve (a plan's 1 PiB arena) returns null as it can outside it, so that
// the runtime's own out-of-memory path is what runs, not a sanitizer abort.
// So does one over 2 GiB (a mutated plan's 20 GiB arena): libFuzzer counts
// a malloc of its -rss_limit_mb (4 GiB in bench/fuzz/run.sh) as a finding,
// a limit of the harness, not of the runtime, which allocates what the plan
// says.
extern "C" const char *__ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}
extern "C" const char *__asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=2048";
}

namespace snug {
namespace fuzz {

static std::string lastError() {
  const char *message = snug_last_error();
  return message ? message : "";
}

HostRunOutcome loadAndRunOnHost(const std::string &path,
                                std::string &message) {
  snug_bundle *bundle = nullptr;
  if (snug_bundle_load(path.c_str(), &bundle) != SNUG_OK) {
    message = lastError();
    return HostRunOutcome::Refused;
  }
  snug_session_options options;
  snug_session_options_init(&options);
  options.device = SNUG_DEVICE_HOST;
  snug_session *session = nullptr;
  HostRunOutcome outcome = HostRunOutcome::RunFailed;
  if (snug_session_create(bundle, &options, &session) == SNUG_OK) {
    size_t inputs = 0;
    (void)snug_bundle_input_count(bundle, &inputs);
    for (size_t i = 0; i < inputs; ++i) {
      void *data = nullptr;
      snug_tensor_info info;
      if (snug_bundle_input_info(bundle, i, &info) == SNUG_OK &&
          snug_session_input_data(session, i, &data) == SNUG_OK && data)
        std::fill_n(static_cast<uint8_t *>(data), info.bytes, 0);
    }
    if (snug_session_run(session) == SNUG_OK)
      outcome = HostRunOutcome::Ran;
    else
      message = lastError();
    snug_session_destroy(session);
  } else {
    message = lastError();
  }
  snug_bundle_destroy(bundle);
  return outcome;
}

const char *outcomeName(HostRunOutcome outcome) {
  switch (outcome) {
  case HostRunOutcome::Refused: return "refused";
  case HostRunOutcome::RunFailed: return "run failed";
  case HostRunOutcome::Ran: return "ran";
  }
  return "?";
}

HostRunOutcome loadAndRunBytesOnHost(const uint8_t *data, size_t size,
                                     std::string &message) {
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
  return loadAndRunOnHost(path, message);
}

} // namespace fuzz
} // namespace snug
