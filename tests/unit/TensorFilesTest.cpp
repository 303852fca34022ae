//===- TensorFilesTest.cpp - snug-run's .npy and TensorProto readers ------===//
#include "RuntimeTestUtil.h"

#include "core/BundleFormat.h"
#include "tools/snug-run/TensorFiles.h"

using namespace snug;
using namespace snug::testing;

namespace {

std::vector<uint8_t> varint(uint64_t value) {
  std::vector<uint8_t> out;
  do {
    uint8_t byte = value & 0x7f;
    value >>= 7;
    out.push_back(byte | (value ? 0x80 : 0));
  } while (value);
  return out;
}

void append(std::vector<uint8_t> &to, const std::vector<uint8_t> &bytes) {
  to.insert(to.end(), bytes.begin(), bytes.end());
}

} // namespace

TEST(TensorFilesTest, NpyRoundTrip) {
  HostTensor tensor;
  tensor.dtype = bundle::DTypeI64;
  tensor.dims = {2, 1, 3};
  tensor.bytes = toBytes(std::vector<int64_t>{1, -2, 3, 4, 5, -6});
  TempFile file("npy");
  std::string error;
  ASSERT_TRUE(writeNpy(file.path, tensor, error)) << error;
  HostTensor back;
  ASSERT_TRUE(readTensorFile(file.path, back, error)) << error;
  EXPECT_EQ(back.dtype, tensor.dtype);
  EXPECT_EQ(back.dims, tensor.dims);
  EXPECT_EQ(back.bytes, tensor.bytes);
  // A scalar and a 1-d tensor keep their shapes.
  tensor.dims = {};
  tensor.bytes = toBytes(std::vector<int64_t>{7});
  ASSERT_TRUE(writeNpy(file.path, tensor, error));
  ASSERT_TRUE(readTensorFile(file.path, back, error)) << error;
  EXPECT_TRUE(back.dims.empty());
  tensor.dims = {1};
  ASSERT_TRUE(writeNpy(file.path, tensor, error));
  ASSERT_TRUE(readTensorFile(file.path, back, error)) << error;
  EXPECT_EQ(back.dims, (std::vector<int64_t>{1}));
}

TEST(TensorFilesTest, NpyRejectsBadFiles) {
  HostTensor tensor;
  std::string error;
  EXPECT_FALSE(readNpy({1, 2, 3}, tensor, error));
  std::string header = "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }";
  std::string text = std::string("\x93NUMPY\x01\x00", 8) +
                     char(header.size()) + '\0' + header;
  std::vector<uint8_t> file(text.begin(), text.end());
  EXPECT_FALSE(readNpy(file, tensor, error));
  EXPECT_NE(error.find("unsupported"), std::string::npos) << error;
}

static std::vector<uint8_t> npyFile(const std::string &header,
                                    size_t dataBytes) {
  std::string text = std::string("\x93NUMPY\x01\x00", 8) +
                     char(header.size()) + '\0' + header +
                     std::string(dataBytes, '\0');
  return std::vector<uint8_t>(text.begin(), text.end());
}

TEST(TensorFilesTest, NpyHeaderMustBeWellFormed) {
  HostTensor tensor;
  std::string error;
  // fortran_order followed only by spaces: an error, not an exception.
  EXPECT_FALSE(readNpy(
      npyFile("{'descr': '<f4', 'shape': (1, 4), 'fortran_order':    ", 16),
      tensor, error));
  EXPECT_NE(error.find("'fortran_order' has no value"), std::string::npos)
      << error;
  EXPECT_FALSE(readNpy(npyFile("{'descr': '<f4', 'fortran_order': Maybe, "
                               "'shape': (4,), }",
                               16),
                       tensor, error));
  EXPECT_NE(error.find("not True or False"), std::string::npos) << error;
  EXPECT_FALSE(readNpy(npyFile("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (4, x), }",
                               16),
                       tensor, error));
  EXPECT_NE(error.find("bad .npy shape"), std::string::npos) << error;
  // A NUL inside a dim is not a dim of 0 (found by the tensor-files fuzzer:
  // strtoll stopped at it).
  EXPECT_FALSE(readNpy(npyFile(std::string("{'descr': '<f4', 'fortran_order': "
                                           "False, 'shape': (4, \0\t), }",
                                           60),
                               0),
                       tensor, error));
  EXPECT_NE(error.find("bad .npy shape"), std::string::npos) << error;
  EXPECT_FALSE(readNpy(npyFile(std::string("{'descr': '<f4', 'fortran_order': "
                                           "False, 'shape': (4\0\0, 1), }",
                                           61),
                               64),
                       tensor, error));
  EXPECT_NE(error.find("bad .npy shape"), std::string::npos) << error;
  // 2^62 elements: too large, refused before anything is allocated.
  EXPECT_FALSE(readNpy(npyFile("{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (4611686018427387904,), }",
                               0),
                       tensor, error));
  EXPECT_NE(error.find("too large"), std::string::npos) << error;
}

TEST(TensorFilesTest, NpyDataMustMatchTheHeader) {
  const std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4), }";
  HostTensor tensor;
  std::string error;
  EXPECT_TRUE(readNpy(npyFile(header, 16), tensor, error)) << error;
  EXPECT_FALSE(readNpy(npyFile(header, 17), tensor, error));
  EXPECT_NE(error.find("trailing bytes: 17 data bytes, f32[1,4] needs 16"),
            std::string::npos)
      << error;
  EXPECT_FALSE(readNpy(npyFile(header, 15), tensor, error));
  EXPECT_NE(error.find("truncated .npy data"), std::string::npos) << error;
  // Through a file: a 12 KiB header-declared tensor in a 1 MiB file.
  TempFile file("npy");
  writeFile(file.path,
            npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': "
                    "(3072,), }",
                    1 << 20));
  EXPECT_FALSE(readTensorFile(file.path, tensor, error));
  EXPECT_NE(error.find("trailing bytes: 1048576 data bytes, f32[3072] needs "
                       "12288"),
            std::string::npos)
      << error;
  EXPECT_FALSE(readTensorFile("/dev/zero", tensor, error));
  EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;
}

TEST(TensorFilesTest, TensorProtoReadIsBoundedByTheExpectedSize) {
  // dims [4], FLOAT, raw_data of 16 bytes, and a 2 MiB name.
  std::vector<uint8_t> pb = {0x08, 0x04, 0x10, 0x01, 0x4a, 0x10};
  pb.resize(pb.size() + 16, 0);
  append(pb, {0x42});
  append(pb, varint(2 << 20));
  pb.resize(pb.size() + (2 << 20), 'n');
  TempFile file("pb");
  writeFile(file.path, pb);
  HostTensor tensor;
  std::string error;
  ASSERT_TRUE(readTensorFile(file.path, tensor, error)) << error;
  EXPECT_EQ(tensor.bytes.size(), 16u);
  // An f32[4] input cannot need 2 MiB: refused before it is read.
  EXPECT_FALSE(readTensorFile(file.path, tensor, error, 16));
  EXPECT_NE(error.find("more than the 1048624 expected"), std::string::npos)
      << error;
}

TEST(TensorFilesTest, DistinctNamesGetDistinctFiles) {
  EXPECT_NE(tensorFileName("a/b"), tensorFileName("a_b"));
  EXPECT_NE(tensorFileName("a%2Fb"), tensorFileName("a/b"));
  EXPECT_NE(tensorFileName("x:0"), tensorFileName("x_0"));
  EXPECT_EQ(tensorFileName("a/b"), "a%2Fb");
  EXPECT_EQ(tensorFileName("plain_name.1"), "plain_name.1");
  EXPECT_EQ(tensorFileName("a/b").find('/'), std::string::npos);
}

TEST(TensorFilesTest, TensorProtoFields) {
  // dims [2], data_type INT64 (7), packed int64_data [-1, 300], name "t".
  std::vector<uint8_t> pb;
  append(pb, {0x08, 0x02});
  append(pb, {0x10, 0x07});
  std::vector<uint8_t> packed = varint(uint64_t(-1));
  append(packed, varint(300));
  pb.push_back(0x3a); // field 7, length-delimited
  append(pb, varint(packed.size()));
  append(pb, packed);
  append(pb, {0x42, 0x01, 't'});
  HostTensor tensor;
  std::string error;
  ASSERT_TRUE(readTensorProto(pb, tensor, error)) << error;
  EXPECT_EQ(tensor.name, "t");
  EXPECT_EQ(tensor.dtype, bundle::DTypeI64);
  EXPECT_EQ(fromBytes<int64_t>(tensor.bytes), (std::vector<int64_t>{-1, 300}));

  // f16 in int32_data (field 5), one unpacked varint per element.
  std::vector<uint8_t> half = {0x08, 0x02, 0x10, 0x0a};
  append(half, {0x28});
  append(half, varint(0x3c00));
  append(half, {0x28});
  append(half, varint(0xc000));
  ASSERT_TRUE(readTensorProto(half, tensor, error)) << error;
  EXPECT_EQ(tensor.dtype, bundle::DTypeF16);
  EXPECT_EQ(fromBytes<uint16_t>(tensor.bytes),
            (std::vector<uint16_t>{0x3c00, 0xc000}));

  // raw_data whose size does not match the dims is an error, as is a cut.
  std::vector<uint8_t> raw = {0x08, 0x03, 0x10, 0x01, 0x4a, 0x04, 0, 0, 0x80, 0x3f};
  EXPECT_FALSE(readTensorProto(raw, tensor, error));
  EXPECT_NE(error.find("dims need 12"), std::string::npos) << error;
  raw.pop_back();
  EXPECT_FALSE(readTensorProto(raw, tensor, error));
  EXPECT_NE(error.find("corrupt"), std::string::npos) << error;
}
