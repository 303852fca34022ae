//===- RuntimeTestUtil.cpp - Textual IR to bundle to host run, for tests --===//
#include "RuntimeTestUtil.h"

#include "core/BundleFormat.h"

namespace snug {
namespace testing {

namespace {

/// A little-endian encoder of the host plan (core/BundleFormat.h), so
/// the test can edit the decoded plan and write it back.
struct Encoder {
  std::vector<uint8_t> bytes;
  template <typename T> void put(T value) {
    const uint8_t *p = reinterpret_cast<const uint8_t *>(&value);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void string(const std::string &s) {
    put<uint32_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void attr(const rt::Attr &a) {
    put<uint8_t>(a.kind);
    switch (a.kind) {
    case bundle::AttrInt: put<int64_t>(a.i); break;
    case bundle::AttrFloat: put<float>(a.f); break;
    case bundle::AttrString: string(a.s); break;
    case bundle::AttrInts:
      put<uint32_t>(a.ints.size());
      for (int64_t v : a.ints)
        put<int64_t>(v);
      break;
    case bundle::AttrFloats:
      put<uint32_t>(a.floats.size());
      for (float v : a.floats)
        put<float>(v);
      break;
    case bundle::AttrStrings:
      put<uint32_t>(a.strings.size());
      for (const std::string &v : a.strings)
        string(v);
      break;
    case bundle::AttrTensor:
      put<uint8_t>(a.tensorDType);
      put<uint32_t>(a.tensorDims.size());
      for (int64_t d : a.tensorDims)
        put<int64_t>(d);
      put<uint64_t>(a.tensorBytes.size());
      bytes.insert(bytes.end(), a.tensorBytes.begin(), a.tensorBytes.end());
      break;
    }
  }
  void attrs(const std::vector<std::pair<std::string, rt::Attr>> &list) {
    put<uint32_t>(list.size());
    for (const auto &entry : list) {
      string(entry.first);
      attr(entry.second);
    }
  }
  void type(uint8_t dtype, const std::vector<int64_t> &dims) {
    put<uint8_t>(dtype), put<uint8_t>(0), put<uint16_t>(0);
    put<uint32_t>(dims.size());
    for (int64_t d : dims)
      put<int64_t>(d);
  }
  void location(const rt::Location &l) {
    put<uint8_t>(l.kind), put<uint8_t>(l.dtype), put<uint16_t>(0);
    put<uint32_t>(l.dims.size());
    for (int64_t d : l.dims)
      put<int64_t>(d);
    put<uint64_t>(l.offset);
  }
  void op(const rt::PlanOp &op) {
    string(op.opName), string(op.nodeName);
    attrs(op.attributes);
    for (const auto *list : {&op.operands, &op.results}) {
      put<uint32_t>(list->size());
      for (const rt::Location &l : *list)
        location(l);
    }
    put<uint8_t>(op.hasBody);
    if (!op.hasBody)
      return;
    put<uint32_t>(op.body.arguments.size());
    for (const rt::BodyType &t : op.body.arguments)
      type(t.dtype, t.dims);
    put<uint32_t>(op.body.ops.size());
    for (const rt::BodyOp &inner : op.body.ops) {
      string(inner.opName), string(inner.nodeName);
      attrs(inner.attributes);
      put<uint32_t>(inner.operands.size());
      for (uint32_t index : inner.operands)
        put<uint32_t>(index);
      put<uint32_t>(inner.results.size());
      for (const rt::BodyType &t : inner.results)
        type(t.dtype, t.dims);
    }
    put<uint32_t>(op.body.yield.size());
    for (uint32_t index : op.body.yield)
      put<uint32_t>(index);
  }
};

} // namespace

std::pair<uint64_t, uint64_t> findSection(const std::vector<uint8_t> &bytes,
                                          uint32_t kind) {
  uint32_t count;
  std::memcpy(&count, bytes.data() + 12, 4);
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t *entry =
        bytes.data() + bundle::kHeaderSize + i * bundle::kSectionEntrySize;
    uint32_t k;
    uint64_t offset, size;
    std::memcpy(&k, entry, 4);
    std::memcpy(&offset, entry + 8, 8);
    std::memcpy(&size, entry + 16, 8);
    if (k == kind)
      return {offset, size};
  }
  ADD_FAILURE() << "no section " << kind;
  return {0, 0};
}

std::vector<uint8_t> withHostPlan(const std::vector<uint8_t> &bytes,
                                  const std::vector<rt::PlanOp> &ops) {
  auto [offset, size] = findSection(bytes, bundle::HostPlan);
  EXPECT_EQ(offset + size, bytes.size()) << "the host plan must come last";
  Encoder plan;
  plan.put<uint32_t>(ops.size());
  for (const rt::PlanOp &op : ops)
    plan.op(op);
  std::vector<uint8_t> out(bytes.begin(), bytes.begin() + offset);
  out.insert(out.end(), plan.bytes.begin(), plan.bytes.end());
  uint32_t count;
  std::memcpy(&count, out.data() + 12, 4);
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t *entry =
        out.data() + bundle::kHeaderSize + i * bundle::kSectionEntrySize;
    uint32_t kind;
    std::memcpy(&kind, entry, 4);
    if (kind == bundle::HostPlan) {
      uint64_t length = plan.bytes.size();
      std::memcpy(entry + 16, &length, 8);
    }
  }
  fixUpHeader(out);
  return out;
}

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
