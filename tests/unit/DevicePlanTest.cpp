//===- DevicePlanTest.cpp - Device plan sections: round trip, rejections --===//
#include "RuntimeTestUtil.h"

#include "runtime/BundleReader.h"

#include <cstring>
#include <random>

using namespace snug;
using namespace snug::testing;
using namespace snug::bundle;

namespace {

const char *kModule =
    "func @m(%x: f32[4,4] {offset = 0}, %w: f32[4,4] weight = [1.0, 0.0, "
    "0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]) "
    "-> f32[4,4] attributes {alignment = 64, arena = 128} {\n"
    "  %y = MatMul(%x, %w) : f32[4,4] {offset = 64}\n"
    "  return %y\n"
    "}\n";

DevicePlan makePlan() {
  DevicePlan plan;
  plan.arenaBytes = 512;
  plan.kernels = {"snug_fill_0"};
  DeviceStep launch;
  launch.kind = StepLaunch;
  launch.launch.kernel = 0;
  launch.launch.grid[0] = 2;
  launch.launch.block[0] = 64;
  launch.launch.args = {DeviceArg::arena(64), DeviceArg::weight(0),
                        {ArgF32, 0x3f800000u}};
  DeviceStep gemm;
  gemm.kind = StepGemm;
  gemm.gemm.dtype = DTypeF32;
  gemm.gemm.m = gemm.gemm.n = gemm.gemm.k = 4;
  gemm.gemm.lda = gemm.gemm.ldb = gemm.gemm.ldc = 4;
  gemm.gemm.a = DeviceArg::weight(0);
  gemm.gemm.b = DeviceArg::arena(0);
  gemm.gemm.c = DeviceArg::arena(64);
  gemm.gemm.workspaceOffset = 256;
  gemm.gemm.workspaceBytes = 256;
  DeviceStep copy;
  copy.kind = StepCopy;
  copy.copy = {DeviceArg::arena(0), DeviceArg::arena(64), 64};
  plan.steps = {launch, gemm, copy};
  return plan;
}

std::vector<KernelImage> makeImages() {
  return {{ImageCubin, 80, {1, 2, 3}}, {ImagePtx, 90, {'.', 'v', 0}}};
}

std::vector<uint8_t> bundleWith(const DevicePlan &plan,
                                const std::vector<KernelImage> &images) {
  auto module = parseOrDie(kModule);
  if (!module)
    return {};
  BundleOptions options{"p", "0.test"};
  options.devicePlan = &plan;
  options.kernelImages = &images;
  auto bytes = serializeBundle(*module, options);
  if (!bytes) {
    ADD_FAILURE() << toString(bytes.takeError());
    return {};
  }
  return std::move(*bytes);
}

/// The section table entry of the section of `wanted` kind (nullptr if
/// none).
uint8_t *sectionEntry(std::vector<uint8_t> &bytes, uint32_t wanted) {
  uint32_t sections;
  std::memcpy(&sections, bytes.data() + 12, 4);
  for (uint32_t i = 0; i < sections; ++i) {
    uint8_t *entry = bytes.data() + kHeaderSize + i * kSectionEntrySize;
    uint32_t kind;
    std::memcpy(&kind, entry, 4);
    if (kind == wanted)
      return entry;
  }
  return nullptr;
}

/// The section table entry of the DevicePlan section (nullptr if none).
uint8_t *devicePlanEntry(std::vector<uint8_t> &bytes) {
  return sectionEntry(bytes, DevicePlanSection);
}

/// Where makePlan's GEMM step ends before its math byte (format v5) and
/// epilogue byte (v6) in the DevicePlan section: u64 arena, u64 check
/// record offset (v7), kernels "snug_fill_0" (4 + 4 + 11), u32 steps, the
/// launch (u8 kind, u32 op, u32 kernel, 6 x u32 dims, u32 shared, u32
/// count, 3 args of 9), then the GEMM: u8 kind, u32 op, 3 x u8, 4 x u32,
/// 6 x i64, 2 x f32, 3 args, u64 workspace offset and bytes.
constexpr size_t kLaunchBytes = 1 + 4 + 4 + 24 + 4 + 4 + 27;
constexpr size_t kGemmEnd =
    8 + 8 + 19 + 4 + kLaunchBytes + 5 + 3 + 16 + 48 + 8 + 27 + 16;

/// Drops `count` bytes at `from` in the section of `kind` (the section
/// that much shorter, the bytes left as padding so that every offset
/// stays), for the formats without them; dropPlanBytes: in the DevicePlan
/// section.
void dropSectionBytes(std::vector<uint8_t> &bytes, uint32_t kind,
                      size_t from, size_t count) {
  uint8_t *entry = sectionEntry(bytes, kind);
  ASSERT_NE(entry, nullptr);
  uint64_t at, size;
  std::memcpy(&at, entry + 8, 8);
  std::memcpy(&size, entry + 16, 8);
  size_t start = at + from;
  std::copy(bytes.begin() + start + count, bytes.begin() + at + size,
            bytes.begin() + start);
  std::fill(bytes.begin() + at + size - count, bytes.begin() + at + size, 0);
  size -= count;
  std::memcpy(entry + 16, &size, 8);
}

void dropPlanBytes(std::vector<uint8_t> &bytes, size_t from, size_t count) {
  dropSectionBytes(bytes, DevicePlanSection, from, count);
}

/// Drops the kernel images' toolchain record (format v8: 4 x u32 before
/// the image list), for the formats before it.
void dropToolchain(std::vector<uint8_t> &bytes) {
  dropSectionBytes(bytes, KernelImages, 0, 16);
}

/// Drops `count` bytes at kGemmEnd + `from` from a bundle of makePlan, for
/// the formats before the math (v5) or epilogue (v6) byte.
void dropGemmBytes(std::vector<uint8_t> &bytes, size_t from, size_t count) {
  dropPlanBytes(bytes, kGemmEnd + from, count);
}

/// Drops the check record offset (format v7) from a bundle of makePlan,
/// after any dropGemmBytes (whose offsets count it).
void dropCheckRecordOffset(std::vector<uint8_t> &bytes) {
  dropPlanBytes(bytes, 8, 8);
}

std::string parseError(const std::vector<uint8_t> &bytes) {
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status = rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle);
  return status ? status.getMessage() : "";
}

} // namespace

TEST(DevicePlanTest, RoundTrips) {
  std::vector<uint8_t> bytes = bundleWith(makePlan(), makeImages());
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status = rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  ASSERT_TRUE(bundle->hasDevicePlan);
  const DevicePlan &plan = bundle->devicePlan;
  EXPECT_EQ(plan.arenaBytes, 512u);
  EXPECT_EQ(plan.steps[1].gemm.workspaceOffset, 256u);
  EXPECT_EQ(plan.steps[1].gemm.workspaceBytes, 256u);
  EXPECT_EQ(plan.getLargestWorkspaceBytes(), 256u);
  ASSERT_EQ(plan.kernels, std::vector<std::string>{"snug_fill_0"});
  ASSERT_EQ(plan.steps.size(), 3u);
  const DeviceLaunch &launch = plan.steps[0].launch;
  EXPECT_EQ(launch.grid[0], 2u);
  EXPECT_EQ(launch.block[0], 64u);
  ASSERT_EQ(launch.args.size(), 3u);
  EXPECT_EQ(launch.args[0].kind, ArgArena);
  EXPECT_EQ(launch.args[0].value, 64u);
  EXPECT_EQ(launch.args[2].kind, ArgF32);
  EXPECT_EQ(launch.args[2].value, 0x3f800000u);
  EXPECT_EQ(plan.steps[1].gemm.k, 4);
  EXPECT_EQ(plan.steps[1].gemm.a.kind, ArgWeight);
  EXPECT_EQ(plan.steps[2].copy.bytes, 64u);
  ASSERT_EQ(bundle->kernelImages.size(), 2u);
  EXPECT_EQ(bundle->kernelImages[0].arch, 80u);
  EXPECT_EQ(bundle->kernelImages[0].size, 3u);
  EXPECT_EQ(bundle->kernelImages[1].kind, ImagePtx);
}

// A version-1 bundle (one workspace for every GEMM, in the plan's header)
// still reads: each GEMM step gets that workspace. With one GEMM the v1
// section has the v2 section's size (16 header bytes more, 16 step bytes
// fewer), so the bytes are moved in place and the file rehashed.
TEST(DevicePlanTest, ReadsVersionOnePlans) {
  std::vector<uint8_t> bytes = bundleWith(makePlan(), makeImages());
  dropCheckRecordOffset(bytes);
  dropToolchain(bytes);
  uint32_t sections;
  std::memcpy(&sections, bytes.data() + 12, 4);
  uint64_t at = 0, size = 0;
  for (uint32_t i = 0; i < sections; ++i) {
    const uint8_t *entry = bytes.data() + kHeaderSize + i * kSectionEntrySize;
    uint32_t kind;
    std::memcpy(&kind, entry, 4);
    if (kind == DevicePlanSection) {
      std::memcpy(&at, entry + 8, 8);
      std::memcpy(&size, entry + 16, 8);
    }
  }
  ASSERT_NE(at, 0u);
  std::vector<uint8_t> v2(bytes.begin() + at, bytes.begin() + at + size);
  // The layout of kGemmEnd without the check record offset, up to the
  // GEMM's workspace.
  size_t gemmEnd = kGemmEnd - 8 - 16;
  std::vector<uint8_t> v1(v2.begin(), v2.begin() + 8);
  uint64_t workspace[2] = {256, 256};
  const uint8_t *raw = reinterpret_cast<const uint8_t *>(workspace);
  v1.insert(v1.end(), raw, raw + 16);
  v1.insert(v1.end(), v2.begin() + 8, v2.begin() + gemmEnd);
  uint64_t written[2];
  std::memcpy(written, v2.data() + gemmEnd, 16);
  ASSERT_EQ(written[0], 256u); // the layout above is the writer's
  ASSERT_EQ(written[1], 256u);
  ASSERT_EQ(v2[gemmEnd + 16], GemmMathDefault); // the math byte (v5)
  ASSERT_EQ(v2[gemmEnd + 17], GemmEpilogueNone); // the epilogue byte (v6)
  v1.insert(v1.end(), v2.begin() + gemmEnd + 18, v2.end());
  // Padding for the math and epilogue bytes, which v1 has not.
  v1.insert(v1.end(), 2, 0);
  ASSERT_EQ(v1.size(), v2.size());
  std::copy(v1.begin(), v1.end(), bytes.begin() + at);
  {
    uint64_t shorter = size - 2;
    std::memcpy(devicePlanEntry(bytes) + 16, &shorter, 8);
  }
  // Nor has a v1 host plan the has-body byte (format v3): this plan's one
  // op has it last, so the section ends a byte earlier (the byte becomes
  // padding and every offset stays).
  for (uint32_t i = 0; i < sections; ++i) {
    uint8_t *entry = bytes.data() + kHeaderSize + i * kSectionEntrySize;
    uint32_t kind;
    uint64_t offset, length;
    std::memcpy(&kind, entry, 4);
    std::memcpy(&offset, entry + 8, 8);
    std::memcpy(&length, entry + 16, 8);
    if (kind != HostPlan)
      continue;
    ASSERT_EQ(bytes[offset + length - 1], 0u) << "no body";
    --length;
    std::memcpy(entry + 16, &length, 8);
  }
  // And the header is v1's: 32 bytes, FNV-1a 64.
  toLegacyHeader(bytes, 1);
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status =
      rt::parseBundle(bytes.data(), bytes.size(), "v1.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  EXPECT_EQ(bundle->version, 1u);
  const DeviceGemm &gemm = bundle->devicePlan.steps[1].gemm;
  EXPECT_EQ(gemm.workspaceOffset, 256u);
  EXPECT_EQ(gemm.workspaceBytes, 256u);
  EXPECT_EQ(bundle->devicePlan.steps[2].copy.bytes, 64u);
  // The v1 header's workspace gets the v2 checks: here it overlaps B.
  workspace[0] = 0;
  std::memcpy(bytes.data() + at + 8, workspace, 8);
  sealBundle(bytes.data(), bytes.size());
  EXPECT_NE(parseError(bytes).find("overlap its operand B"), std::string::npos)
      << parseError(bytes);
}

// The GEMM math byte (format v5) round-trips; a version-4 bundle, which has
// none, still reads, its GEMMs at default math.
TEST(DevicePlanTest, GemmMathRoundTripsAndVersionFourReadsAsDefault) {
  DevicePlan plan = makePlan();
  plan.steps[1].gemm.math = GemmMathTf32;
  std::vector<uint8_t> bytes = bundleWith(plan, makeImages());
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status =
      rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  EXPECT_EQ(bundle->devicePlan.steps[1].gemm.math, GemmMathTf32);
  // Without the math and epilogue bytes, the check record offset and the
  // toolchain, but still claiming v8: the sections end early.
  std::vector<uint8_t> v4 = bytes;
  dropGemmBytes(v4, 0, 2);
  dropCheckRecordOffset(v4);
  dropToolchain(v4);
  sealBundle(v4.data(), v4.size());
  EXPECT_NE(parseError(v4), "");
  // As version 4, it reads: the byte is not there to read.
  std::memcpy(v4.data() + 8, "\x04\0\0\0", 4);
  sealBundle(v4.data(), v4.size());
  status = rt::parseBundle(v4.data(), v4.size(), "v4.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  EXPECT_EQ(bundle->version, 4u);
  EXPECT_EQ(bundle->devicePlan.steps[1].gemm.math, GemmMathDefault);
  EXPECT_EQ(bundle->devicePlan.steps[1].gemm.workspaceBytes, 256u);
  EXPECT_EQ(bundle->devicePlan.steps[2].copy.bytes, 64u);
}

// The GEMM epilogue byte and bias (format v6) round-trip, with and
// without a bias; a version-5 bundle, which has no epilogue byte, still
// reads, its GEMMs without an epilogue.
TEST(DevicePlanTest, GemmEpilogueRoundTripsAndVersionFiveReadsAsNone) {
  DevicePlan plan = makePlan();
  plan.steps[1].gemm.epilogue = GemmEpilogueGeluBias;
  plan.steps[1].gemm.bias = DeviceArg::weight(16);
  std::vector<uint8_t> bytes = bundleWith(plan, makeImages());
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status =
      rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  const DeviceGemm &read = bundle->devicePlan.steps[1].gemm;
  EXPECT_EQ(read.epilogue, GemmEpilogueGeluBias);
  EXPECT_EQ(read.bias.kind, ArgWeight);
  EXPECT_EQ(read.bias.value, 16u);
  EXPECT_EQ(bundle->devicePlan.steps[2].copy.bytes, 64u);
  // An epilogue without a bias writes no bias arg.
  plan.steps[1].gemm.epilogue = GemmEpilogueRelu;
  bytes = bundleWith(plan, makeImages());
  status = rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  EXPECT_EQ(bundle->devicePlan.steps[1].gemm.epilogue, GemmEpilogueRelu);
  EXPECT_EQ(bundle->devicePlan.steps[1].gemm.bias.kind, 0u);
  EXPECT_EQ(bundle->devicePlan.steps[2].copy.bytes, 64u);
  // Version 5: no epilogue byte (makePlan's is none, a 0 dropped).
  std::vector<uint8_t> v5 = bundleWith(makePlan(), makeImages());
  dropGemmBytes(v5, 1, 1);
  dropCheckRecordOffset(v5);
  dropToolchain(v5);
  std::memcpy(v5.data() + 8, "\x05\0\0\0", 4);
  sealBundle(v5.data(), v5.size());
  status = rt::parseBundle(v5.data(), v5.size(), "v5.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  EXPECT_EQ(bundle->version, 5u);
  EXPECT_EQ(bundle->devicePlan.steps[1].gemm.epilogue, GemmEpilogueNone);
  EXPECT_EQ(bundle->devicePlan.steps[1].gemm.workspaceBytes, 256u);
  EXPECT_EQ(bundle->devicePlan.steps[2].copy.bytes, 64u);
}

// The check record offset (format v7) round-trips, none by default; a
// version-6 bundle, which has none, still reads, without run-time checks;
// a record over a tensor, misaligned or past the device arena is refused.
TEST(DevicePlanTest, CheckRecordRoundTripsAndVersionSixReadsAsNone) {
  DevicePlan plan = makePlan();
  std::vector<uint8_t> bytes = bundleWith(plan, makeImages());
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status =
      rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  EXPECT_FALSE(bundle->devicePlan.hasCheckRecord());
  plan.arenaBytes = 512 + kCheckRecordBytes;
  plan.checkRecordOffset = 512;
  bytes = bundleWith(plan, makeImages());
  status = rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  EXPECT_EQ(bundle->devicePlan.checkRecordOffset, 512u);
  EXPECT_EQ(bundle->devicePlan.arenaBytes, 512u + kCheckRecordBytes);
  EXPECT_EQ(bundle->devicePlan.steps[2].copy.bytes, 64u);
  // Version 6: no offset (makePlan's has none).
  std::vector<uint8_t> v6 = bundleWith(makePlan(), makeImages());
  dropCheckRecordOffset(v6);
  dropToolchain(v6);
  std::memcpy(v6.data() + 8, "\x06\0\0\0", 4);
  sealBundle(v6.data(), v6.size());
  status = rt::parseBundle(v6.data(), v6.size(), "v6.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  EXPECT_EQ(bundle->version, 6u);
  EXPECT_FALSE(bundle->devicePlan.hasCheckRecord());
  EXPECT_EQ(bundle->devicePlan.steps[1].gemm.workspaceBytes, 256u);
  EXPECT_EQ(bundle->devicePlan.steps[2].copy.bytes, 64u);
  // Where it may not lie: misaligned, past the arena, over a tensor (x is
  // at 0).
  for (uint64_t at : {uint64_t(300), uint64_t(512 + 256)}) {
    plan.checkRecordOffset = at;
    std::string error = parseError(bundleWith(plan, makeImages()));
    EXPECT_NE(error.find("check record at offset " + std::to_string(at) +
                         " does not lie"),
              std::string::npos)
        << error;
  }
  plan.checkRecordOffset = 0;
  std::string error = parseError(bundleWith(plan, makeImages()));
  EXPECT_NE(error.find("check record at offset 0 overlaps a tensor of op #0 "
                       "(MatMul) (64 bytes at offset 0)"),
            std::string::npos)
      << error;
  plan.arenaBytes = 512 + kCheckRecordBytes - 1;
  plan.checkRecordOffset = 512;
  EXPECT_NE(parseError(bundleWith(plan, makeImages())).find("check record"),
            std::string::npos);
}

// The kernel images' toolchain record (format v8) round-trips, all zeros
// (not recorded) by default; a version-7 bundle, which has none, still
// reads as not recorded; a record naming compilers but no minimum driver
// is refused (the executor would compare nothing).
TEST(DevicePlanTest, ToolchainRoundTripsAndVersionSevenReadsAsUnrecorded) {
  std::vector<uint8_t> bytes = bundleWith(makePlan(), makeImages());
  std::unique_ptr<rt::Bundle> bundle;
  rt::Status status =
      rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  EXPECT_FALSE(bundle->toolchain.isRecorded());
  KernelToolchain toolchain;
  toolchain.nvrtcVersion = 12000;
  toolchain.jitLinkVersion = 12010;
  toolchain.ptxIsa = 80;
  toolchain.minDriverVersion = 12000;
  auto module = parseOrDie(kModule);
  ASSERT_TRUE(module);
  DevicePlan plan = makePlan();
  std::vector<KernelImage> images = makeImages();
  BundleOptions options{"p", "0.test", &plan, &images};
  options.toolchain = toolchain;
  auto recorded = serializeBundle(*module, options);
  ASSERT_TRUE(bool(recorded)) << toString(recorded.takeError());
  status = rt::parseBundle(recorded->data(), recorded->size(), "b.snug",
                           bundle);
  ASSERT_FALSE(status) << status.getMessage();
  EXPECT_EQ(bundle->version, bundle::kBundleVersion);
  EXPECT_EQ(bundle->toolchain.nvrtcVersion, 12000u);
  EXPECT_EQ(bundle->toolchain.jitLinkVersion, 12010u);
  EXPECT_EQ(bundle->toolchain.ptxIsa, 80u);
  EXPECT_EQ(bundle->toolchain.minDriverVersion, 12000u);
  ASSERT_EQ(bundle->kernelImages.size(), 2u);
  EXPECT_EQ(bundle->kernelImages[1].kind, ImagePtx);
  // Version 7: the images start with their count.
  std::vector<uint8_t> v7 = *recorded;
  dropToolchain(v7);
  sealBundle(v7.data(), v7.size());
  EXPECT_NE(parseError(v7), "") << "v8 without its record must not read";
  std::memcpy(v7.data() + 8, "\x07\0\0\0", 4);
  sealBundle(v7.data(), v7.size());
  status = rt::parseBundle(v7.data(), v7.size(), "v7.snug", bundle);
  ASSERT_FALSE(status) << status.getMessage();
  EXPECT_EQ(bundle->version, 7u);
  EXPECT_FALSE(bundle->toolchain.isRecorded());
  EXPECT_EQ(bundle->toolchain.nvrtcVersion, 0u);
  ASSERT_EQ(bundle->kernelImages.size(), 2u);
  EXPECT_EQ(bundle->kernelImages[0].arch, 80u);
  // Compilers without the driver they need.
  options.toolchain.minDriverVersion = 0;
  auto partial = serializeBundle(*module, options);
  ASSERT_TRUE(bool(partial)) << toString(partial.takeError());
  EXPECT_NE(parseError(*partial).find("kernel toolchain records compilers "
                                      "but no minimum driver version"),
            std::string::npos)
      << parseError(*partial);
}

TEST(DevicePlanTest, HostOnlyBundlesHaveNoDevicePlan) {
  std::unique_ptr<rt::Bundle> bundle;
  std::vector<uint8_t> bytes = bundleOf(kModule);
  ASSERT_FALSE(rt::parseBundle(bytes.data(), bytes.size(), "b.snug", bundle));
  EXPECT_FALSE(bundle->hasDevicePlan);
}

TEST(DevicePlanTest, ReaderRejectsBadSteps) {
  struct Case {
    const char *expect;
    void (*edit)(DevicePlan &);
  } cases[] = {
      {"unknown kernel", [](DevicePlan &p) { p.steps[0].launch.kernel = 1; }},
      {"outside the device arena",
       [](DevicePlan &p) { p.steps[0].launch.args[0].value = 513; }},
      {"outside the device weights",
       [](DevicePlan &p) { p.steps[0].launch.args[1].value = 65; }},
      {"bad launch configuration: block (2048, 1, 1)",
       [](DevicePlan &p) { p.steps[0].launch.block[0] = 2048; }},
      // Within 1024 threads, past a dim's own limit (blockDim.z <= 64).
      {"bad launch configuration: block (1, 1, 128) is over CUDA's limits",
       [](DevicePlan &p) {
         p.steps[0].launch.block[0] = 1;
         p.steps[0].launch.block[2] = 128;
       }},
      {"bad launch configuration: grid (2147483648, 1, 1) is empty or over "
       "CUDA's limits",
       [](DevicePlan &p) { p.steps[0].launch.grid[0] = 0x80000000u; }},
      {"bad launch configuration: grid (2, 0, 1)",
       [](DevicePlan &p) { p.steps[0].launch.grid[1] = 0; }},
      {"bad launch configuration: 65536 bytes of shared memory",
       [](DevicePlan &p) { p.steps[0].launch.sharedBytes = 65536; }},
      // 4 batches of 16 floats, 192 bytes apart, from offset 64: past 512.
      {"outside the device arena",
       [](DevicePlan &p) {
         p.steps[1].gemm.batch = 4;
         p.steps[1].gemm.strideC = 48;
       }},
      {"leading dimension too small",
       [](DevicePlan &p) { p.steps[1].gemm.lda = 2; }},
      {"GEMM writes outside the arena",
       [](DevicePlan &p) { p.steps[1].gemm.c = DeviceArg::weight(0); }},
      {"copy must go into the arena",
       [](DevicePlan &p) { p.steps[2].copy.dst = DeviceArg::weight(0); }},
      {"lies outside its region",
       [](DevicePlan &p) { p.steps[2].copy.bytes = 500; }},
      // A branch (an If on runtime data) skips steps of this plan only, on
      // a byte of the arena.
      {"a branch skips 3 steps, 2 follow it",
       [](DevicePlan &p) {
         p.steps[0].kind = StepBranch;
         p.steps[0].branch.condition = DeviceArg::arena(0);
         p.steps[0].branch.count = 3;
       }},
      {"a branch must read a byte of the arena",
       [](DevicePlan &p) {
         p.steps[0].kind = StepBranch;
         p.steps[0].branch.condition = DeviceArg::weight(0);
       }},
      {"a branch must read a byte of the arena",
       [](DevicePlan &p) {
         p.steps[0].kind = StepBranch;
         p.steps[0].branch.condition = DeviceArg::arena(512);
       }},
      // The GEMM's workspace: inside the arena, aligned, clear of A, B, C.
      {"512 bytes of cuBLAS workspace at offset 256 lie outside the device "
       "arena (512 bytes)",
       [](DevicePlan &p) { p.steps[1].gemm.workspaceBytes = 512; }},
      {"at offset 320 are not 256-byte aligned",
       [](DevicePlan &p) {
         p.steps[1].gemm.workspaceOffset = 320;
         p.steps[1].gemm.workspaceBytes = 64;
       }},
      {"overlap its operand B (64 bytes at offset 0)",
       [](DevicePlan &p) { p.steps[1].gemm.workspaceOffset = 0; }},
      {"overlap its operand C (64 bytes at offset 64)",
       [](DevicePlan &p) {
         p.steps[1].gemm.b = DeviceArg::weight(0);
         p.steps[1].gemm.workspaceOffset = 0;
       }},
      {"does not hold the host arena",
       [](DevicePlan &p) { p.arenaBytes = 64; }},
      {"names op", [](DevicePlan &p) { p.steps[2].op = 7; }},
      // What cuBLAS and cuMemcpy leave undefined: C over B, a copy over its
      // source.
      {"GEMM result C (64 bytes at offset 64) overlaps its operand B",
       [](DevicePlan &p) { p.steps[1].gemm.b = DeviceArg::arena(96); }},
      {"copy of 64 bytes overlaps its source",
       [](DevicePlan &p) { p.steps[2].copy.dst = DeviceArg::arena(32); }},
      // The math byte: a known mode, TF32 on f32 only.
      {"unknown GEMM math 2", [](DevicePlan &p) { p.steps[1].gemm.math = 2; }},
      {"TF32 math on a GEMM of dtype 10 (it takes f32 only)",
       [](DevicePlan &p) {
         p.steps[1].gemm.dtype = DTypeF16;
         p.steps[1].gemm.math = GemmMathTf32;
       }},
      // The epilogue byte (v6): a known kind; its bias m elements inside
      // a region, a pointer, clear of C and of the workspace.
      {"unknown GEMM epilogue 6",
       [](DevicePlan &p) { p.steps[1].gemm.epilogue = 6; }},
      {"bias: 16 bytes at offset 56 lie outside the device weights (64 bytes)",
       [](DevicePlan &p) {
         p.steps[1].gemm.epilogue = GemmEpilogueBias;
         p.steps[1].gemm.bias = DeviceArg::weight(56);
       }},
      {"GEMM bias is not in the device arena or the weights",
       [](DevicePlan &p) {
         p.steps[1].gemm.epilogue = GemmEpilogueReluBias;
         p.steps[1].gemm.bias = {ArgI32, 0};
       }},
      {"GEMM bias (16 bytes at offset 112) overlaps its result C",
       [](DevicePlan &p) {
         p.steps[1].gemm.epilogue = GemmEpilogueGeluBias;
         p.steps[1].gemm.bias = DeviceArg::arena(112);
       }},
      {"overlap its operand bias (16 bytes at offset 272)",
       [](DevicePlan &p) {
         p.steps[1].gemm.epilogue = GemmEpilogueBias;
         p.steps[1].gemm.bias = DeviceArg::arena(272);
       }},
  };
  for (const Case &c : cases) {
    DevicePlan plan = makePlan();
    c.edit(plan);
    std::string error = parseError(bundleWith(plan, makeImages()));
    EXPECT_NE(error.find(c.expect), std::string::npos)
        << "expected '" << c.expect << "', got '" << error << "'";
  }
}

TEST(DevicePlanTest, ReaderRejectsBadImages) {
  std::vector<KernelImage> images = makeImages();
  images[1].bytes.back() = 'x';
  EXPECT_NE(parseError(bundleWith(makePlan(), images)).find("NUL"),
            std::string::npos);
  images = makeImages();
  images[0].kind = 9;
  EXPECT_NE(parseError(bundleWith(makePlan(), images)).find("image kind"),
            std::string::npos);
}

TEST(DevicePlanTest, MutatedDevicePlansNeverCrash) {
  std::vector<uint8_t> original = bundleWith(makePlan(), makeImages());
  std::mt19937 random(7);
  int rejected = 0;
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> bytes = original;
    // Flip bytes in the last sections (device plan, images) only, then fix
    // the hash so the decoder, not the hash check, meets the damage.
    size_t from = bytes.size() / 2;
    for (int flips = 1 + random() % 4; flips; --flips)
      bytes[from + random() % (bytes.size() - from)] ^= uint8_t(1 + random() % 255);
    fixUpHeader(bytes);
    rejected += !parseError(bytes).empty();
  }
  EXPECT_GT(rejected, 0);
}
