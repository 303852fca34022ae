//===- BundleMutatorTest.cpp - The bundle mutator follows the format ------===//
//
// The structured mutator is only as good as its decoder: these tests hold it
// to the format on the default model's bundle (compiled by the ctest
// fixture bundle-mutants/compile-default): decoding and re-encoding gives
// the writer's bytes back, a mutant is deterministic in its seed, differs
// from the original, carries a matching plan hash and says what it changed,
// and different seeds reach different fields.
//
//===----------------------------------------------------------------------===//
#include "core/BundleFormat.h"
#include "tests/fuzz/BundleMutator.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>

using namespace snug;

static std::vector<uint8_t> defaultBundle() {
  std::ifstream in(SNUG_MUTANTS_BUNDLE, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in),
                              std::istreambuf_iterator<char>());
}

TEST(BundleMutatorTest, ReencodingGivesTheWritersBytesBack) {
  std::vector<uint8_t> original = defaultBundle();
  ASSERT_GT(original.size(), bundle::kHeaderSize) << SNUG_MUTANTS_BUNDLE;
  std::vector<uint8_t> again;
  ASSERT_TRUE(fuzz::reencodeBundle(original, again));
  EXPECT_EQ(again, original);
}

TEST(BundleMutatorTest, MutantsAreSealedDeterministicAndDescribed) {
  std::vector<uint8_t> original = defaultBundle();
  ASSERT_GT(original.size(), bundle::kHeaderSize);
  std::set<std::string> descriptions;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    std::string first, second;
    std::vector<uint8_t> mutant = fuzz::mutateBundle(original, seed, first);
    EXPECT_EQ(fuzz::mutateBundle(original, seed, second), mutant) << seed;
    EXPECT_EQ(first, second);
    EXPECT_FALSE(first.empty()) << seed;
    ASSERT_GE(mutant.size(), bundle::kHeaderSize);
    EXPECT_TRUE(bundle::isSealed(mutant.data(), mutant.size()))
        << seed;
    descriptions.insert(first);
  }
  // Not one field over and over: most seeds change something else.
  EXPECT_GT(descriptions.size(), 48u);
}

TEST(BundleMutatorTest, BytesThatDoNotDecodeStillGetASealedMutant) {
  std::vector<uint8_t> garbage(200, 0xab);
  EXPECT_FALSE(fuzz::reencodeBundle(garbage, garbage));
  std::string description;
  std::vector<uint8_t> mutant = fuzz::mutateBundle(garbage, 7, description);
  ASSERT_EQ(mutant.size(), garbage.size());
  EXPECT_NE(mutant, garbage);
  EXPECT_TRUE(bundle::isSealed(mutant.data(), mutant.size()));
}
