//===- RuntimeTestUtil.cpp - Textual IR to bundle to host run, for tests --===//
#include "RuntimeTestUtil.h"

#include "runtime/BundleFormat.h"

namespace snug {
namespace testing {

void fixUpHeader(std::vector<uint8_t> &bytes) {
  uint64_t size = bytes.size();
  for (int i = 0; i < 8; ++i)
    bytes[16 + i] = uint8_t(size >> (8 * i));
  bundle::sealBundle(bytes.data(), size);
}

void toLegacyHeader(std::vector<uint8_t> &bytes, uint32_t version) {
  ASSERT_LT(version, bundle::kFirstVersionWithDigest);
  ASSERT_EQ(bundle::headerVersion(bytes.data()), bundle::kBundleVersion);
  uint32_t count;
  std::memcpy(&count, bytes.data() + 12, 4);
  uint64_t table = count * bundle::kSectionEntrySize;
  std::memmove(bytes.data() + bundle::kLegacyHeaderSize,
               bytes.data() + bundle::kHeaderSize, table);
  std::fill(bytes.begin() + bundle::kLegacyHeaderSize + table,
            bytes.begin() + bundle::kHeaderSize + table, 0);
  std::memcpy(bytes.data() + 8, &version, 4);
  fixUpHeader(bytes);
}

std::vector<std::vector<uint8_t>>
runOnHost(const std::string &text,
          const std::vector<std::vector<uint8_t>> &inputs, bool poison) {
  std::vector<uint8_t> bytes = bundleOf(text);
  if (bytes.empty())
    return {};
  TempFile file;
  writeFile(file.path, bytes);
  snug_bundle *bundle = nullptr;
  if (snug_bundle_load(file.path.c_str(), &bundle)) {
    ADD_FAILURE() << snug_last_error();
    return {};
  }
  snug_session_options options;
  snug_session_options_init(&options);
  options.poison = poison;
  snug_session *session = nullptr;
  std::vector<std::vector<uint8_t>> outputs;
  if (snug_session_create(bundle, &options, &session)) {
    ADD_FAILURE() << snug_last_error();
    snug_bundle_destroy(bundle);
    return {};
  }
  size_t inputCount = 0, outputCount = 0;
  EXPECT_EQ(snug_bundle_input_count(bundle, &inputCount), SNUG_OK);
  EXPECT_EQ(snug_bundle_output_count(bundle, &outputCount), SNUG_OK);
  EXPECT_EQ(inputCount, inputs.size());
  bool ok = true;
  for (size_t i = 0; i < inputs.size() && i < inputCount && ok; ++i)
    if (snug_session_set_input(session, i, inputs[i].data(), inputs[i].size())) {
      ADD_FAILURE() << snug_last_error();
      ok = false;
    }
  if (ok && snug_session_run(session)) {
    ADD_FAILURE() << snug_last_error();
    ok = false;
  }
  for (size_t i = 0; ok && i < outputCount; ++i) {
    snug_tensor_info info;
    EXPECT_EQ(snug_bundle_output_info(bundle, i, &info), SNUG_OK);
    std::vector<uint8_t> out(info.bytes);
    EXPECT_EQ(snug_session_get_output(session, i, out.data(), out.size()),
              SNUG_OK);
    outputs.push_back(std::move(out));
  }
  snug_session_destroy(session);
  snug_bundle_destroy(bundle);
  return outputs;
}

std::vector<std::vector<float>>
runF32(const std::string &text, const std::vector<std::vector<float>> &inputs) {
  std::vector<std::vector<uint8_t>> raw;
  for (const auto &input : inputs)
    raw.push_back(toBytes(input));
  std::vector<std::vector<float>> result;
  for (const auto &output : runOnHost(text, raw))
    result.push_back(fromBytes<float>(output));
  return result;
}

} // namespace testing
} // namespace snug
