//===- HostRun.h - Load a bundle and run it on the host executor -*- C++ -*-===//
//
// What the bundle fuzzers and the mutation runner do with an input that
// might be a bundle: load it through the C API as an application would,
// create a host session, fill every input with zeros and run once. The
// outcome says how far it got; a crash or a sanitizer report is the
// caller's finding (the process dies).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_FUZZ_HOSTRUN_H
#define SNUG_TESTS_FUZZ_HOSTRUN_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace snug {
namespace fuzz {

enum class HostRunOutcome {
  Refused,    ///< snug_bundle_load returned an error
  RunFailed,  ///< loaded, but the session or the run returned an error
  Ran,        ///< ran to completion
};

/// Loads the bundle at `path` and runs it once; `message` gets the C API's
/// last error where there is one.
HostRunOutcome loadAndRunOnHost(const std::string &path, std::string &message);

/// The same for bundle bytes: the C API loads from paths, as a user's
/// application does, so they go to a temporary file first (one per
/// process, reused).
HostRunOutcome loadAndRunBytesOnHost(const uint8_t *data, size_t size,
                                     std::string &message);

const char *outcomeName(HostRunOutcome outcome);

} // namespace fuzz
} // namespace snug

#endif // SNUG_TESTS_FUZZ_HOSTRUN_H
