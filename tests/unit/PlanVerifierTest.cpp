//===- PlanVerifierTest.cpp - Crafted and mutated plans at load time ------===//
//
// The bundle digest (SHA-256 against the FIPS 180-4 vectors), the crafted
// bundles of issue 12 item 6 (each resealed, so only the plan verifier can
// refuse them), and a structured mutation test: the host plan of a few
// small bundles is decoded, edited field by field (op names, operands,
// locations, dims, offsets, dtypes, attributes), re-encoded and resealed;
// each mutant is refused at load or runs on the host executor, under ASan
// and UBSan in `make test`.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"

#include "runtime/BundleReader.h"
#include "runtime/PlanVerifier.h"
#include "core/Sha256.h"
#include "runtime/host/HostExecutor.h"

#include <limits>
#include <random>

using namespace snug;
using namespace snug::testing;

namespace {

std::string hex(const Sha256::Digest &digest) {
  std::string text;
  char buffer[3];
  for (uint8_t byte : digest) {
    std::snprintf(buffer, sizeof buffer, "%02x", byte);
    text += buffer;
  }
  return text;
}

Sha256::Digest sha(const std::string &text) {
  return Sha256::of(reinterpret_cast<const uint8_t *>(text.data()),
                    text.size());
}

const char *kConvPool =
    "func @cp(%x: f32[1,1,4,4] {offset = 0}, %w: f32[1,1,2,2] weight = [1.0, "
    "0.5, -0.5, 1.0]) -> (f32[1,1,3,3], f32[1,1,2,2]) attributes {arena = "
    "256} {\n"
    "  %c = Conv(%x, %w) {kernel_shape = [2, 2], pads = [0, 0, 0, 0], "
    "strides = [1, 1], dilations = [1, 1]} : f32[1,1,3,3] {offset = 64}\n"
    "  %m = MaxPool(%x) {kernel_shape = [2, 2], pads = [0, 0, 0, 0], strides "
    "= [2, 2]} : f32[1,1,2,2] {offset = 128}\n"
    "  return %c, %m\n}\n";

const char *kGather =
    "func @g(%x: f32[4,3] {offset = 0}, %i: i64[2] {offset = 64}) -> "
    "f32[2,3] attributes {arena = 192} {\n"
    "  %y = Gather(%x, %i) {axis = 0} : f32[2,3] {offset = 128}\n"
    "  return %y\n}\n";


const char *kMisc =
    "func @m(%a: f32[2,3] {offset = 0}, %b: f32[2,3] {offset = 64}) -> "
    "(f32[3,4], f32[4,3]) attributes {arena = 320} {\n"
    "  %0 = Concat(%a, %b) {axis = 0} : f32[4,3] {offset = 128}\n"
    "  %1 = Transpose(%0) {perm = [1, 0]} : f32[3,4] {offset = 192}\n"
    "  %2 = Softmax(%0) {axis = 1} : f32[4,3] {offset = 256}\n"
    "  return %1, %2\n}\n";

std::unique_ptr<rt::Bundle> decode(const std::vector<uint8_t> &bytes,
                                   std::string *error = nullptr) {
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status =
      rt::parseBundle(bytes.data(), bytes.size(), "crafted.snug", bundle);
  if (error)
    *error = status.getMessage();
  return status ? nullptr : std::move(bundle);
}

/// The load error of `bytes` with the plan of `text` edited by `edit`.
template <typename Edit> std::string craftedError(const char *text, Edit edit) {
  std::vector<uint8_t> bytes = bundleOf(text);
  auto bundle = decode(bytes);
  if (!bundle) {
    ADD_FAILURE() << "the seed does not load";
    return "";
  }
  std::vector<rt::PlanOp> ops = bundle->ops;
  edit(ops);
  std::string error;
  EXPECT_FALSE(decode(withHostPlan(bytes, ops), &error))
      << "crafted plan loaded";
  return error;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST(Sha256Test, StandardVectors) {
  EXPECT_EQ(hex(sha("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(
      hex(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Fed in pieces that straddle the 64-byte blocks: the same digest.
  std::string text(1000, 'a');
  Sha256 hasher;
  for (size_t at = 0; at < text.size(); at += 7)
    hasher.update(reinterpret_cast<const uint8_t *>(text.data()) + at,
                  std::min<size_t>(7, text.size() - at));
  EXPECT_EQ(hex(hasher.finish()), hex(sha(text)));
  // FIPS 180-4's long message: a million 'a's.
  std::string million(1000000, 'a');
  EXPECT_EQ(hex(sha(million)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// The SHA-extension path (where the CPU has it) and the portable code give
// the same digest for every length around the block and padding edges and
// for pseudo-random bytes.
TEST(Sha256Test, AcceleratedPathMatchesThePortableOne) {
  std::vector<uint8_t> bytes(70000);
  uint64_t x = 0x9E3779B97F4A7C15ULL;
  for (uint8_t &byte : bytes) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    byte = uint8_t(x >> 24);
  }
  for (size_t size : {0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 1000, 4096,
                      65537, 70000})
    EXPECT_EQ(hex(Sha256::of(bytes.data(), size)),
              hex(Sha256::portableOf(bytes.data(), size)))
        << size << " bytes; SHA extensions "
        << (Sha256::usesShaExtensions() ? "used" : "absent");
}

TEST(PlanVerifierTest, DigestIsSha256OfTheFile) {
  std::vector<uint8_t> bytes = bundleOf(kMlpPlan);
  ASSERT_GE(bytes.size(), bundle::kHeaderSize);
  EXPECT_EQ(bytes[8], bundle::kBundleVersion);
  std::vector<uint8_t> rest(bytes.begin(), bytes.begin() + 24);
  rest.insert(rest.end(), bytes.begin() + 56, bytes.end());
  Sha256::Digest digest = Sha256::of(rest.data(), rest.size());
  EXPECT_TRUE(std::equal(digest.begin(), digest.end(), bytes.begin() + 24));
  // One changed weight byte, not resealed, is caught by the digest.
  auto [offset, size] = findSection(bytes, bundle::Weights);
  ASSERT_GT(size, 0u);
  bytes[offset] ^= 1;
  std::string error;
  EXPECT_FALSE(decode(bytes, &error));
  EXPECT_TRUE(contains(error, "SHA-256 hash mismatch")) << error;
}

TEST(PlanVerifierTest, RefusesAHugeManifestArena) {
  std::vector<uint8_t> bytes = bundleOf(kMlpPlan);
  auto [offset, size] = findSection(bytes, bundle::Manifest);
  ASSERT_GT(size, 0u);
  // Three strings (compiler version, pipeline, module name), then the arena.
  uint64_t at = offset;
  for (int i = 0; i < 3; ++i) {
    uint32_t length;
    std::memcpy(&length, bytes.data() + at, 4);
    at += 4 + length;
  }
  uint64_t arena;
  std::memcpy(&arena, bytes.data() + at, 8);
  ASSERT_EQ(arena, 192u);
  arena = std::numeric_limits<uint64_t>::max();
  std::memcpy(bytes.data() + at, &arena, 8);
  fixUpHeader(bytes);
  std::string error;
  EXPECT_FALSE(decode(bytes, &error));
  EXPECT_TRUE(contains(error, "arena of 18446744073709551615 bytes exceeds"))
      << error;
}

TEST(PlanVerifierTest, RefusesAnAbsentResult) {
  std::string error = craftedError(kMlpPlan, [](std::vector<rt::PlanOp> &ops) {
    ops[1].results[0].kind = bundle::Absent;
  });
  EXPECT_TRUE(contains(error, "(Add): result 0 has no arena location"))
      << error;
}

TEST(PlanVerifierTest, RefusesARenamedOp) {
  std::string error = craftedError(
      kMlpPlan, [](std::vector<rt::PlanOp> &ops) { ops[1].opName = "Adx"; });
  EXPECT_TRUE(contains(error, "(Adx): unknown op 'Adx'")) << error;
  // Renamed to a real op whose arity the operands do not fit.
  error = craftedError(
      kMlpPlan, [](std::vector<rt::PlanOp> &ops) { ops[2].opName = "Where"; });
  EXPECT_TRUE(contains(error, "(Where): has 1 operands, expects 3")) << error;
}

TEST(PlanVerifierTest, RefusesADroppedOperand) {
  std::string error = craftedError(
      kMlpPlan, [](std::vector<rt::PlanOp> &ops) { ops[1].operands.pop_back(); });
  EXPECT_TRUE(contains(error, "(Add): has 1 operands, expects 2")) << error;
  error = craftedError(kGather, [](std::vector<rt::PlanOp> &ops) {
    ops[0].operands[1].kind = bundle::Absent;
  });
  EXPECT_TRUE(contains(error, "(Gather): operand 1 is required but absent"))
      << error;
}

TEST(PlanVerifierTest, RefusesExtremeWindows) {
  auto setInts = [](rt::PlanOp &op, const char *name,
                    std::vector<int64_t> values) {
    for (auto &entry : op.attributes)
      if (entry.first == name)
        entry.second.ints = std::move(values);
  };
  const int64_t max = std::numeric_limits<int64_t>::max();
  std::string error =
      craftedError(kConvPool, [&](std::vector<rt::PlanOp> &ops) {
        setInts(ops[0], "strides", {max, 1});
      });
  EXPECT_TRUE(contains(error, "(Conv): strides[0] = 9223372036854775807 is "
                              "out of range"))
      << error;
  error = craftedError(kConvPool, [&](std::vector<rt::PlanOp> &ops) {
    setInts(ops[1], "pads", {0, std::numeric_limits<int64_t>::min(), 0, 0});
  });
  EXPECT_TRUE(contains(error, "(MaxPool): pads[1] = ")) << error;
  error = craftedError(kConvPool, [&](std::vector<rt::PlanOp> &ops) {
    setInts(ops[1], "kernel_shape", {2, 2, 2});
  });
  EXPECT_TRUE(
      contains(error, "(MaxPool): kernel_shape has 3 values, expects 2"))
      << error;
  error = craftedError(kConvPool, [&](std::vector<rt::PlanOp> &ops) {
    setInts(ops[0], "dilations", {1, 0});
  });
  EXPECT_TRUE(contains(error, "(Conv): dilations[1] = 0 is out of range"))
      << error;
}

TEST(PlanVerifierTest, RefusesBadGathersAndAttributeKinds) {
  std::string error = craftedError(kGather, [](std::vector<rt::PlanOp> &ops) {
    ops[0].operands[1].dtype = bundle::DTypeF64;
  });
  EXPECT_TRUE(contains(error, "(Gather): indices must be i32 or i64, not f64"))
      << error;
  error = craftedError(kGather, [](std::vector<rt::PlanOp> &ops) {
    ops[0].attributes[0].second.i = 2;
  });
  EXPECT_TRUE(contains(error, "(Gather): axis 2 is out of range for rank 2"))
      << error;
  error = craftedError(kMisc, [](std::vector<rt::PlanOp> &ops) {
    ops[0].attributes[0].second.kind = bundle::AttrFloat;
  });
  EXPECT_TRUE(contains(error, "(Concat): attribute 'axis' must be an int"))
      << error;
  error = craftedError(kMlpPlan, [](std::vector<rt::PlanOp> &ops) {
    ops[1].operands[1].dims = {3};
    ops[1].operands[1].offset = 0;
  });
  EXPECT_TRUE(contains(error, "(Add): operand 1 [3] does not broadcast to the "
                              "result [1,2]"))
      << error;
  // The family's type rules of Ops.def.
  error = craftedError(kMlpPlan, [](std::vector<rt::PlanOp> &ops) {
    ops[1].results[0].dtype = bundle::DTypeI64;
  });
  EXPECT_TRUE(contains(error, "(Add): result 0 has dtype i64, expects f32"))
      << error;
  error = craftedError(kMlpPlan, [](std::vector<rt::PlanOp> &ops) {
    ops[2].results[0].dims = {2, 1};
  });
  EXPECT_TRUE(contains(error, "(LeakyRelu): result 0 (f32[2,1]) differs from "
                              "operand 0 (f32[1,2])"))
      << error;
  error = craftedError(kGather, [](std::vector<rt::PlanOp> &ops) {
    ops[0].opName = "Softmax";
    ops[0].operands.pop_back();
    ops[0].operands[0].dtype = bundle::DTypeI32;
  });
  EXPECT_TRUE(contains(error, "(Softmax): operand 0 has dtype i32, which the "
                              "op does not take"))
      << error;
}

/// snug.check_labels needs its class count: without it the host would
/// refuse every label at run time (an internal error), with one below 1 too.
TEST(PlanVerifierTest, RefusesALabelCheckWithoutClasses) {
  const char *check =
      "func @c(%l: i64[4] {offset = 0}) -> i64[4] attributes {arena = 128} "
      "{\n"
      "  %y = snug.check_labels(%l) {classes = 3, input = \"l\"} : i64[4] "
      "{offset = 64}\n"
      "  return %y\n}\n";
  std::string error = craftedError(check, [](std::vector<rt::PlanOp> &ops) {
    for (auto &attribute : ops[0].attributes)
      if (attribute.first == "classes")
        attribute.second.i = 0;
  });
  EXPECT_TRUE(contains(error, "(snug.check_labels): classes 0 is out of range "
                              "[1, "))
      << error;
  error = craftedError(check, [](std::vector<rt::PlanOp> &ops) {
    ops[0].attributes.erase(ops[0].attributes.begin());
  });
  EXPECT_TRUE(contains(error, "(snug.check_labels): classes is required"))
      << error;
}

/// A data-movement op's result of another dtype than its operand: the host
/// kernel copies by the result's element size, so an f64 result of an f32
/// Resize read past the operand (found by make fuzz's structured bundle
/// target); Concat's operands likewise.
TEST(PlanVerifierTest, RefusesADataMovementResultOfAnotherDType) {
  const char *resize =
      "func @r(%x: f32[2,3] {offset = 0}) -> f32[4,6] attributes {arena = "
      "512} {\n"
      "  %y = Resize(%x, _, _, _) {mode = \"nearest\", sizes = [4, 6]} : "
      "f32[4,6] {offset = 64}\n"
      "  return %y\n}\n";
  std::string error = craftedError(resize, [](std::vector<rt::PlanOp> &ops) {
    ops[0].results[0].dtype = bundle::DTypeF64;
  });
  EXPECT_TRUE(contains(error, "(Resize): result 0 has dtype f64, operand 0 "
                              "f32 (the op moves its elements)"))
      << error;
  const char *concat =
      "func @c(%a: f32[2] {offset = 0}, %b: f32[2] {offset = 64}) -> f32[4] "
      "attributes {arena = 192} {\n"
      "  %y = Concat(%a, %b) {axis = 0} : f32[4] {offset = 128}\n"
      "  return %y\n}\n";
  error = craftedError(concat, [](std::vector<rt::PlanOp> &ops) {
    ops[0].operands[1].dtype = bundle::DTypeF16;
  });
  EXPECT_TRUE(contains(error, "(Concat): operand 1 has dtype f16, operand 0 "
                              "f32"))
      << error;
}

/// Resize's nearest mode converts about o / scale to an index: a tiny scale
/// would leave int64_t.
TEST(PlanVerifierTest, RefusesResizeScalesThatOverflow) {
  const char *resize =
      "func @r(%x: f32[2,3] {offset = 0}) -> f32[4,6] attributes {arena = "
      "192} {\n"
      "  %y = Resize(%x, _, _, _) {mode = \"nearest\", scales = [2.0, 2.0], "
      "sizes = [4, 6]} : f32[4,6] {offset = 64}\n"
      "  return %y\n}\n";
  ASSERT_TRUE(decode(bundleOf(resize)));
  std::string error = craftedError(resize, [](std::vector<rt::PlanOp> &ops) {
    for (auto &entry : ops[0].attributes)
      if (entry.first == "scales")
        entry.second.floats[1] = 1e-30f;
  });
  EXPECT_TRUE(contains(error, "(Resize): scale ")) << error;
  EXPECT_TRUE(contains(error, " of dim 1 is out of range")) << error;
}

/// Kernels that copy with memcpy (Transpose, Slice, ...) must not find
/// their result over their operand; in-place ops may sit exactly on it.
TEST(PlanVerifierTest, RefusesResultsOverTheirOperands) {
  std::string error = craftedError(kMisc, [](std::vector<rt::PlanOp> &ops) {
    ops[1].results[0].offset = ops[1].operands[0].offset + 8;
  });
  EXPECT_TRUE(contains(error, "(Transpose): result 0 (48 bytes at arena "
                              "offset 136) overlaps operand 0 (48 bytes at "
                              "offset 128)"))
      << error;
  error = craftedError(kMlpPlan, [](std::vector<rt::PlanOp> &ops) {
    ops[2].results[0].offset = ops[2].operands[0].offset + 4;
  });
  EXPECT_TRUE(contains(error, "(LeakyRelu): result 0 (8 bytes at arena "
                              "offset 132) overlaps operand 0"))
      << error;
  // Exactly in place is what the planner does for elementwise ops.
  std::vector<uint8_t> bytes = bundleOf(kMlpPlan);
  auto bundle = decode(bytes);
  ASSERT_TRUE(bundle);
  std::vector<rt::PlanOp> ops = bundle->ops;
  ops[2].results[0].offset = ops[2].operands[0].offset;
  std::string message;
  EXPECT_TRUE(decode(withHostPlan(bytes, ops), &message)) << message;
}

/// Structured mutants of a few small plans: each is refused at load with a
/// message naming the bundle, or runs on the host without touching memory
/// outside its buffers (ASan and UBSan watch in `make test`).
TEST(PlanVerifierTest, StructuredMutantsAreRefusedOrRun) {
  const char *seeds[] = {kMlpPlan, kConvPool, kGather, kMisc};
  const char *names[] = {"Add",    "Conv",      "MaxPool", "Gather",
                         "Concat", "Transpose", "Softmax", "MatMul",
                         "Split",  "Slice",     "Relu",    "AveragePool",
                         "Where",  "Gemm",      "Reshape", "Nope"};
  const int64_t extremes[] = {0,
                              1,
                              -1,
                              2,
                              int64_t(1) << 31,
                              int64_t(1) << 40,
                              std::numeric_limits<int64_t>::max(),
                              std::numeric_limits<int64_t>::min()};
  const uint8_t dtypes[] = {bundle::DTypeF32,
                            bundle::DTypeI64,
                            bundle::DTypeU8,
                            bundle::DTypeU64,
                            bundle::DTypeF16,
                            bundle::DTypeF64,
                            0,
                            200};
  std::mt19937 random(2024);
  int loaded = 0, refused = 0;
  for (const char *seed : seeds) {
    std::vector<uint8_t> bytes = bundleOf(seed);
    auto original = decode(bytes);
    ASSERT_TRUE(original);
    for (int round = 0; round < 80; ++round) {
      std::vector<rt::PlanOp> ops = original->ops;
      for (int edits = 0; edits < 1 + round % 3; ++edits) {
        rt::PlanOp &op = ops[random() % ops.size()];
        auto pickLocation = [&]() -> rt::Location * {
          size_t total = op.operands.size() + op.results.size();
          if (!total)
            return nullptr;
          size_t k = random() % total;
          return k < op.operands.size() ? &op.operands[k]
                                        : &op.results[k - op.operands.size()];
        };
        rt::Location *location = pickLocation();
        int64_t extreme = extremes[random() % 8];
        switch (random() % 9) {
        case 0:
          op.opName = names[random() % 16];
          break;
        case 1:
          if (!op.operands.empty())
            op.operands.erase(op.operands.begin() +
                              random() % op.operands.size());
          break;
        case 2:
          if (!op.operands.empty())
            op.operands.push_back(op.operands[random() % op.operands.size()]);
          break;
        case 3:
          if (location)
            location->kind = bundle::Absent;
          break;
        case 4:
          if (location && !location->dims.empty()) {
            int64_t &dim = location->dims[random() % location->dims.size()];
            dim = random() % 2 ? extreme : int64_t(random() % 8);
          }
          break;
        case 5:
          if (location)
            location->offset =
                random() % 2 ? uint64_t(extreme) : location->offset + 4;
          break;
        case 6:
          if (location)
            location->dtype = dtypes[random() % 7];
          break;
        case 7:
          if (!op.attributes.empty()) {
            rt::Attr &attr =
                op.attributes[random() % op.attributes.size()].second;
            attr.i = extreme;
            for (int64_t &v : attr.ints)
              if (random() % 2)
                v = extreme;
          }
          break;
        case 8:
          if (location && !location->dims.empty() && random() % 2)
            location->dims.pop_back();
          else if (location)
            location->dims.push_back(1 + random() % 3);
          break;
        }
      }
      std::string error;
      auto bundle = decode(withHostPlan(bytes, ops), &error);
      if (!bundle) {
        ++refused;
        EXPECT_TRUE(contains(error, "crafted.snug")) << error;
        continue;
      }
      ++loaded;
      if (rt::checkHostSupport(*bundle))
        continue;
      std::unique_ptr<rt::HostExecutor> executor;
      ASSERT_FALSE(
          rt::HostExecutor::create(*bundle, nullptr, 0, true, executor));
      (void)executor->run();
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(loaded, 0);
  ::testing::Test::RecordProperty("loaded", loaded);
}

// The indexing ops' invariants (runtime/PlanVerifier.cpp checkIndexing): an
// axis within the rank, and index shapes that keep every offset the host
// kernels compute inside the data.
TEST(PlanVerifierTest, RefusesIndexingOpsAddressingOutsideTheData) {
  const char *seed =
      "func @ix(%x: f32[2,3] {offset = 0}, %i: i64[2,2] {offset = 64}, "
      "%u: f32[2,2] {offset = 128}, %t: i64[1,1] {offset = 192}, "
      "%v: f32[1,3] {offset = 256}) -> (f32[2,3], f32[2,3], f32[2,3]) "
      "attributes {arena = 512} {\n"
      "  %c = CumSum(%x) {axis = 1} : f32[2,3] {offset = 320}\n"
      "  %s = ScatterElements(%x, %i, %u) {axis = 1} : f32[2,3] "
      "{offset = 384}\n"
      "  %n = ScatterND(%x, %t, %v) : f32[2,3] {offset = 448}\n"
      "  return %c, %s, %n\n}\n";
  auto reshape = [](rt::Location &location, std::vector<int64_t> dims) {
    location.numElements = 1;
    for (int64_t d : dims)
      location.numElements *= d;
    location.bytes = uint64_t(location.numElements) * 8;
    location.dims = std::move(dims);
  };
  std::string error = craftedError(seed, [](std::vector<rt::PlanOp> &ops) {
    ops[0].attributes[0].second.i = 2;
  });
  EXPECT_TRUE(contains(error, "(CumSum): axis 2 is out of range for rank 2"))
      << error;
  error = craftedError(seed, [&](std::vector<rt::PlanOp> &ops) {
    reshape(ops[1].operands[1], {3, 2});
  });
  EXPECT_TRUE(contains(error, "(ScatterElements): indices exceed the data in "
                              "dim 0"))
      << error;
  error = craftedError(seed, [&](std::vector<rt::PlanOp> &ops) {
    reshape(ops[2].operands[1], {1, 3});
  });
  EXPECT_TRUE(contains(error, "(ScatterND): index tuples of 3 do not fit the "
                              "data's rank"))
      << error;
  error = craftedError(seed, [](std::vector<rt::PlanOp> &ops) {
    ops[2].operands[1].dtype = bundle::DTypeF64;
  });
  EXPECT_TRUE(contains(error, "(ScatterND): indices must be i32 or i64, not "
                              "f64"))
      << error;
}
