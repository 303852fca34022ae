//===- BundleMutator.h - Structure-aware mutations of .snug bundles -*- C++ -*-===//
//
// Decodes a bundle's header, section table, Manifest and HostPlan (the layout
// of core/BundleFormat.h, op bodies included), changes one to three
// fields the way a corrupt or hostile file would (op names to other real op
// names, attribute values to extremes, dims, dtypes, location kinds and
// offsets, operand and result counts, op order, manifest sizes, body value
// indices, and raw integers of the other sections such as the DevicePlan),
// re-encodes it with a consistent section table and file size and seals it
// (bundle::sealBundle), so that the reader's structural checks, not the hash,
// decide. The same seed always gives the same mutant.
//
// Shared by the libFuzzer target (BundleMutatorFuzzer.cpp, as its
// LLVMFuzzerCustomMutator) and the mutation runner (BundleMutants.cpp).
// Depends on the runtime's format header only; it does not check that what
// it writes is valid (that is the reader's job being tested).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_FUZZ_BUNDLEMUTATOR_H
#define SNUG_TESTS_FUZZ_BUNDLEMUTATOR_H

#include <cstdint>
#include <string>
#include <vector>

namespace snug {
namespace fuzz {

/// Returns a sealed mutant of `bundle` chosen by `seed`, and in
/// `description` what was changed ("op #3 'conv1' (Conv): attribute 'pads'
/// [1] = INT64_MIN; ..."). A bundle that does not decode (the fuzzer's own
/// byte-level mutants) gets raw integer mutations of its header and sections
/// instead, then the seal.
std::vector<uint8_t> mutateBundle(const std::vector<uint8_t> &bundle,
                                  uint64_t seed, std::string &description);

/// Decodes and re-encodes `bundle` without a mutation, sealed; false when it
/// does not decode. A bundle the writer made comes back byte for byte, which
/// is how the tests check that the decoder and encoder follow the format.
bool reencodeBundle(const std::vector<uint8_t> &bundle,
                    std::vector<uint8_t> &out);

/// The 64-bit mixer the runner uses to derive mutant seeds (splitmix64).
uint64_t mixSeed(uint64_t value);

} // namespace fuzz
} // namespace snug

#endif // SNUG_TESTS_FUZZ_BUNDLEMUTATOR_H
