//===- RuntimeTestUtil.h - Textual IR to bundle to host run, for tests ----===//
//
// Helpers shared by the bundle and runtime tests: parse textual IR (with
// hand-written offsets and `attributes {arena = N}`), serialize it, and run
// it through the C API on the host.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_UNIT_RUNTIMETESTUTIL_H
#define SNUG_TESTS_UNIT_RUNTIMETESTUTIL_H

#include "compiler/bundle/BundleWriter.h"
#include "ir/Float16.h"
#include "ir/Parser.h"
#include "core/BundleFormat.h"
#include "runtime/BundleReader.h"
#include "snug/snug.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace snug {
namespace testing {

/// A planned MatMul -> Add -> LeakyRelu with its weights inline: the small
/// bundle the runtime API and plan-verifier tests load, run and mutate.
inline const char *const kMlpPlan =
    "func @mlp(%x: f32[1,4] {offset = 0}, %w: f32[4,2] weight = [1.0, 0.0, "
    "0.0, 1.0, 1.0, 1.0, -1.0, 2.0], %b: f32[2] weight = [0.5, -0.5]) -> "
    "f32[1,2] attributes {alignment = 64, arena = 192} {\n"
    "  %0 = MatMul(%x, %w) : f32[1,2] {offset = 64}\n"
    "  %1 = Add(%0, %b) : f32[1,2] {offset = 128}\n"
    "  %y = LeakyRelu(%1) {alpha = 0.25} : f32[1,2] {offset = 0}\n"
    "  return %y\n"
    "}\n";

inline std::unique_ptr<ir::Module> parseOrDie(const std::string &text) {
  auto module = ir::parseModule(text, "test.ir");
  if (!module) {
    ADD_FAILURE() << toString(module.takeError());
    return nullptr;
  }
  return std::move(*module);
}

inline std::vector<uint8_t> bundleOf(const std::string &text) {
  auto module = parseOrDie(text);
  if (!module)
    return {};
  BundleOptions options;
  options.pipeline = "test-pipeline";
  options.compilerVersion = "0.test";
  auto bytes = serializeBundle(*module, options);
  if (!bytes) {
    ADD_FAILURE() << toString(bytes.takeError());
    return {};
  }
  return std::move(*bytes);
}

/// `bytes` with the one occurrence of op name `from` replaced by `to` (of
/// the same length) and the digest recomputed: how a test makes a bundle
/// naming an op that no module can hold.
inline std::vector<uint8_t> renameOp(std::vector<uint8_t> bytes,
                                     const std::string &from,
                                     const std::string &to) {
  EXPECT_EQ(from.size(), to.size());
  auto it = std::search(bytes.begin(), bytes.end(), from.begin(), from.end());
  EXPECT_NE(it, bytes.end()) << from;
  if (it == bytes.end())
    return bytes;
  EXPECT_EQ(std::search(it + 1, bytes.end(), from.begin(), from.end()),
            bytes.end())
      << from << " occurs twice";
  std::copy(to.begin(), to.end(), it);
  bundle::sealBundle(bytes.data(), bytes.size());
  return bytes;
}

/// A temporary file path that is removed when the object dies.
class TempFile {
public:
  explicit TempFile(const char *suffix = "snug") {
    llvm::SmallString<128> model;
    llvm::sys::path::system_temp_directory(true, model);
    llvm::sys::path::append(model, "snug-test-%%%%%%%%." + std::string(suffix));
    llvm::SmallString<128> out;
    llvm::sys::fs::createUniquePath(model, out, false);
    path = std::string(out);
  }
  ~TempFile() { llvm::sys::fs::remove(path); }
  std::string path;
};

inline void writeFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  FILE *file = fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  fwrite(bytes.data(), 1, bytes.size(), file);
  fclose(file);
}

/// A bundle written to a temporary file and loaded through the C API.
struct Loaded {
  TempFile file;
  snug_bundle *bundle = nullptr;
  explicit Loaded(const std::vector<uint8_t> &bytes) {
    writeFile(file.path, bytes);
    EXPECT_EQ(snug_bundle_load(file.path.c_str(), &bundle), SNUG_OK)
        << snug_last_error();
  }
  ~Loaded() { snug_bundle_destroy(bundle); }
};

/// Recomputes the size and hash fields after a test edits a bundle.
void fixUpHeader(std::vector<uint8_t> &bytes);

/// Turns a current bundle's header into the 32-byte header of `version`
/// (< 4: the section table moves up, every section stays where it is) and
/// reseals it, for tests of older formats.
void toLegacyHeader(std::vector<uint8_t> &bytes, uint32_t version);

template <typename T> std::vector<uint8_t> toBytes(const std::vector<T> &v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  if (!v.empty())
    std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

template <typename T> std::vector<T> fromBytes(const std::vector<uint8_t> &b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

/// Where the section of `kind` lies in a current (v4) bundle: offset, size.
std::pair<uint64_t, uint64_t> findSection(const std::vector<uint8_t> &bytes,
                                          uint32_t kind);

/// `bytes` (a current host-only bundle, whose host plan comes last) with its
/// host plan replaced by `ops`, encoded as the writer does and resealed: how
/// a test edits a decoded plan (runtime/BundleReader.h) and writes it back
/// without the compiler's checks.
std::vector<uint8_t> withHostPlan(const std::vector<uint8_t> &bytes,
                                  const std::vector<rt::PlanOp> &ops);

/// Runs IR text on the host: inputs in order, outputs in order. Fails the
/// test (and returns {}) on any error.
std::vector<std::vector<uint8_t>>
runOnHost(const std::string &text,
          const std::vector<std::vector<uint8_t>> &inputs, bool poison = true);

/// runOnHost for f32 in, f32 out.
std::vector<std::vector<float>>
runF32(const std::string &text, const std::vector<std::vector<float>> &inputs);

} // namespace testing
} // namespace snug

#endif // SNUG_TESTS_UNIT_RUNTIMETESTUTIL_H
