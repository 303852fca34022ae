//===- CudaEmitterTest.cpp - The CUDA emitter's driver and NVRTC ----------===//
#include "RuntimeTestUtil.h"

#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/CudaEmitter.h"
#include "compiler/cuda/Nvrtc.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace snug;
using namespace snug::testing;

namespace {

llvm::Expected<cuda::CudaProgram>
emit(const std::string &text,
     const cuda::CudaOptions &options = cuda::CudaOptions()) {
  auto module = parseOrDie(text);
  if (!module)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "parse");
  return cuda::emitCuda(*module, computeWeightsLayout(*module), options);
}

// Two Relus of one shape: one kernel, launched twice at different places.
const char *kTwoRelus =
    "func @f(%x: f32[4,64] {offset = 0}) -> f32[4,64] "
    "attributes {alignment = 256, arena = 2048} {\n"
    "  %a = Relu(%x) : f32[4,64] {offset = 1024}\n"
    "  %b = Relu(%a) : f32[4,64] {offset = 0}\n"
    "  return %b\n"
    "}\n";

} // namespace

TEST(CudaEmitterTest, IdenticalKernelsAreEmittedOnce) {
  auto program = emit(kTwoRelus);
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  ASSERT_EQ(program->plan.kernels.size(), 1u);
  ASSERT_EQ(program->plan.steps.size(), 2u);
  for (const bundle::DeviceStep &step : program->plan.steps) {
    EXPECT_EQ(step.kind, bundle::StepLaunch);
    EXPECT_EQ(step.launch.kernel, 0u);
  }
  EXPECT_EQ(program->plan.steps[0].launch.args[0].value, 0u);
  EXPECT_EQ(program->plan.steps[0].launch.args[1].value, 1024u);
  EXPECT_EQ(program->plan.steps[1].launch.args[0].value, 1024u);
  // No GEMM, no workspace: the device arena is the plan's.
  EXPECT_EQ(program->plan.arenaBytes, 2048u);
  EXPECT_EQ(program->plan.getLargestWorkspaceBytes(), 0u);
  const std::string &symbol = program->plan.kernels[0];
  EXPECT_NE(program->source.find("void __launch_bounds__"), std::string::npos);
  EXPECT_NE(program->source.find(symbol + "("), std::string::npos);
  EXPECT_NE(program->source.find(symbol + "_sim(void **args)"),
            std::string::npos);
}

// KernelEmitter.h's index rule at its boundary: a 256-thread grid-stride
// loop steps by at most kMaxGridBlocks * 256 = 268431360, so a loop over
// `count` items reaches count - 1 + 268431360; int holds it up to
// 2^31 - 1, and so every offset below the extent.
TEST(CudaEmitterTest, TheIndexRuleWidensWhereAnIndexCouldPass2To31) {
  using cuda::codegen::gridStride;
  using cuda::codegen::indexTypeFor;
  int64_t step = int64_t(cuda::kMaxGridBlocks) * 256;
  EXPECT_EQ(step, 268431360);
  int64_t widest32 = int64_t(INT32_MAX) - step + 1; // about 1.88e9
  EXPECT_EQ(gridStride(widest32, 256), step);
  EXPECT_STREQ(indexTypeFor(widest32, widest32), "int");
  EXPECT_STREQ(indexTypeFor(widest32 + 1, widest32 + 1), "int64_t");
  // A small loop steps by its own grid; its offsets decide.
  EXPECT_EQ(gridStride(1000, 256), 1024);
  EXPECT_STREQ(indexTypeFor(1000, INT32_MAX), "int");
  EXPECT_STREQ(indexTypeFor(1000, int64_t(INT32_MAX) + 1), "int64_t");
  // No loop at all (tiled kernels): only the offsets.
  EXPECT_STREQ(indexTypeFor(0, INT32_MAX), "int");
}

// CudaOptions::index32Limit reaches every emitter: at 0 even a small Relu
// indexes in 64 bits (the tests' way onto the 64-bit code).
TEST(CudaEmitterTest, TheIndexLimitOptionForcesTheWideIndex) {
  auto narrow = emit(kTwoRelus);
  ASSERT_TRUE(bool(narrow)) << toString(narrow.takeError());
  EXPECT_NE(narrow->source.find("for (int i = "), std::string::npos);
  cuda::CudaOptions options;
  options.index32Limit = 0;
  auto wide = emit(kTwoRelus, options);
  ASSERT_TRUE(bool(wide)) << toString(wide.takeError());
  EXPECT_EQ(wide->source.find("for (int i = "), std::string::npos);
  EXPECT_NE(wide->source.find("for (int64_t i = "), std::string::npos);
}

TEST(CudaEmitterTest, ViewsOnTheirOperandsBytesEmitNothing) {
  auto program = emit(
      "func @f(%x: f32[4,64] {offset = 0}) -> f32[256] "
      "attributes {alignment = 256, arena = 2048} {\n"
      "  %v = Reshape(%x) {shape = [256]} : f32[256] {offset = 0}\n"
      "  %w = Reshape(%x) {shape = [256]} : f32[256] {offset = 1024}\n"
      "  %y = Add(%v, %w) : f32[256] {offset = 1024}\n"
      "  return %y\n"
      "}\n");
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  // The first view shares the input's bytes: no step. The second is a copy.
  ASSERT_EQ(program->plan.steps.size(), 2u);
  const bundle::DeviceStep &copy = program->plan.steps[0];
  EXPECT_EQ(copy.kind, bundle::StepCopy);
  EXPECT_EQ(copy.op, 1u);
  EXPECT_EQ(copy.copy.src.value, 0u);
  EXPECT_EQ(copy.copy.dst.value, 1024u);
  EXPECT_EQ(copy.copy.bytes, 1024u);
  EXPECT_EQ(program->plan.steps[1].kind, bundle::StepLaunch);
}

TEST(CudaEmitterTest, EachGemmGetsItsNodesPlannedScratch) {
  // The plan gives the MatMul (step 1) 16 KiB of scratch at 1024: its GEMM
  // step carries it as the cuBLAS workspace, and the device arena is the
  // planned arena, not one byte more.
  auto program = emit(
      "func @f(%x: f32[8,16] {offset = 0}, %w: f32[16,4] weight) -> "
      "f32[8,4] attributes {alignment = 256, arena = 17408, "
      "scratch = [1, 1024, 16384]} {\n"
      "  %t = Relu(%x) : f32[8,16] {offset = 0}\n"
      "  %y = MatMul(%t, %w) : f32[8,4] {offset = 512}\n"
      "  return %y\n"
      "}\n");
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  EXPECT_EQ(program->plan.arenaBytes, 17408u);
  size_t gemms = 0;
  for (const bundle::DeviceStep &step : program->plan.steps) {
    if (step.kind != bundle::StepGemm)
      continue;
    ++gemms;
    EXPECT_EQ(step.op, 1u);
    EXPECT_EQ(step.gemm.workspaceOffset, 1024u);
    EXPECT_EQ(step.gemm.workspaceBytes, 16384u);
  }
  EXPECT_EQ(gemms, 1u);
  EXPECT_EQ(program->plan.getLargestWorkspaceBytes(), 16384u);
  EXPECT_NE(cuda::describeDevicePlan(program->plan)
                .find("workspace=arena+1024 16384 bytes"),
            std::string::npos);
}

TEST(CudaEmitterTest, AGemmWithoutScratchRunsWithoutWorkspace) {
  auto program = emit(
      "func @f(%x: f32[8,16] {offset = 0}, %w: f32[16,4] weight) -> "
      "f32[8,4] attributes {alignment = 256, arena = 1000} {\n"
      "  %y = MatMul(%x, %w) : f32[8,4] {offset = 512}\n"
      "  return %y\n"
      "}\n");
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  EXPECT_EQ(program->plan.arenaBytes, 1000u);
  ASSERT_EQ(program->plan.steps.size(), 1u);
  EXPECT_EQ(program->plan.steps[0].kind, bundle::StepGemm);
  EXPECT_EQ(program->plan.steps[0].gemm.workspaceBytes, 0u);
}

TEST(CudaEmitterTest, AMalformedScratchAttributeIsAnError) {
  auto program = emit(
      "func @f(%x: f32[8,16] {offset = 0}, %w: f32[16,4] weight) -> "
      "f32[8,4] attributes {alignment = 256, arena = 1000, "
      "scratch = [3, 0]} {\n"
      "  %y = MatMul(%x, %w) : f32[8,4] {offset = 512}\n"
      "  return %y\n"
      "}\n");
  ASSERT_FALSE(bool(program));
  EXPECT_NE(toString(program.takeError()).find("three per scratch buffer"),
            std::string::npos);
}

/// The SM a cubin is for, from its ELF e_flags: bits 0-7 in ELF ABI
/// version 7 (CUDA 12's ptxas), bits 8-15 in version 8 (CUDA 13's).
static unsigned cubinArch(const std::vector<uint8_t> &cubin) {
  return cubin.at(8) >= 8 ? cubin.at(0x31) : cubin.at(0x30);
}

TEST(CudaEmitterTest, NvrtcCompilesCubinsAndPtx) {
  if (!cuda::isNvrtcAvailable())
    GTEST_SKIP() << "built without NVRTC";
  auto program = emit(kTwoRelus);
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  auto images = cuda::compileCudaProgram(*program, {80, 90});
  ASSERT_TRUE(bool(images)) << toString(images.takeError());
  // sm_80 and sm_90 compile the same code (the prelude tests only
  // __CUDA_ARCH__ >= 800), so both cubins come from one compute_80 PTX.
  ASSERT_EQ(images->size(), 3u);
  EXPECT_EQ((*images)[0].kind, bundle::ImageCubin);
  EXPECT_EQ((*images)[0].arch, 80u);
  EXPECT_EQ((*images)[1].arch, 90u);
  EXPECT_EQ((*images)[2].kind, bundle::ImagePtx);
  EXPECT_EQ((*images)[2].arch, 80u);
  // Cubins are ELF files for their own SM, in CUDA 12's cubin layout (ELF
  // ABI version 7, which CUDA 12.0 drivers load; CUDA 13's ptxas writes
  // version 8); PTX is NUL-terminated text naming the kernel.
  for (size_t i = 0; i < 2; ++i) {
    const std::vector<uint8_t> &cubin = (*images)[i].bytes;
    ASSERT_GT(cubin.size(), 52u);
    EXPECT_EQ(std::string(cubin.begin(), cubin.begin() + 4), "\x7f" "ELF");
    EXPECT_EQ(cubin[8], 7) << "cubin " << i;
    EXPECT_EQ(cubinArch(cubin), (*images)[i].arch) << "cubin " << i;
  }
  const std::vector<uint8_t> &ptx = (*images)[2].bytes;
  ASSERT_FALSE(ptx.empty());
  EXPECT_EQ(ptx.back(), 0);
  std::string text(ptx.begin(), ptx.end());
  EXPECT_NE(text.find(program->plan.kernels[0]), std::string::npos);
  EXPECT_NE(text.find(".target sm_80"), std::string::npos);
  // PTX ISA 8.0, what a CUDA 12.0 driver compiles (NVRTC 12.0: the build's
  // pinned compiler), and the record that says so.
  EXPECT_EQ(cuda::getPtxIsa(ptx), llvm::Optional<unsigned>(80u));
  auto toolchain = cuda::getKernelToolchain(*images);
  ASSERT_TRUE(bool(toolchain)) << toString(toolchain.takeError());
  EXPECT_EQ(toolchain->ptxIsa, 80u);
  EXPECT_EQ(toolchain->nvrtcVersion, 12000u);
  EXPECT_EQ(toolchain->jitLinkVersion, 12000u);
  EXPECT_EQ(toolchain->minDriverVersion, 12000u);
}

// The compile holds every PTX it returns to ISA 8.0, those from the kernel
// cache too: a cached PTX edited to claim ISA 9.0 (what NVRTC 13.0 writes)
// fails the compile, naming the group, the ISA and the fix.
TEST(CudaEmitterTest, PtxNewerThanIsaEightIsRefused) {
  if (!cuda::isNvrtcAvailable())
    GTEST_SKIP() << "built without NVRTC";
  auto program = emit(kTwoRelus);
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("snug-kernel-cache", dir));
  cuda::KernelCache cache(dir.str().str());
  auto images = cuda::compileCudaProgram(*program, {80, 90}, cache);
  ASSERT_TRUE(bool(images)) << toString(images.takeError());
  unsigned edited = 0;
  std::error_code error;
  for (llvm::sys::fs::directory_iterator it(dir, error), end;
       it != end && !error; it.increment(error)) {
    // Entries are named by their key in hex.
    std::string raw = llvm::fromHex(llvm::sys::path::stem(it->path()));
    cuda::KernelCache::Key key;
    ASSERT_EQ(raw.size(), key.size()) << it->path();
    std::memcpy(key.data(), raw.data(), key.size());
    auto bytes = cache.lookup(key);
    ASSERT_TRUE(bool(bytes)) << it->path();
    std::string text(bytes->begin(), bytes->end());
    size_t at = text.find("\n.version 8.0\n");
    if (at == std::string::npos)
      continue;
    (*bytes)[at + 10] = '9';
    ASSERT_TRUE(cache.store(key, *bytes));
    ++edited;
  }
  EXPECT_EQ(edited, 1u);
  cuda::CompileStatistics statistics;
  auto refused =
      cuda::compileCudaProgram(*program, {80, 90}, cache, &statistics);
  ASSERT_FALSE(bool(refused));
  std::string message = toString(refused.takeError());
  EXPECT_NE(message.find("the PTX of compute_80 (kernels for sm_80, sm_90) "
                         "is PTX ISA 9.0, newer than ISA 8.0, which every "
                         "CUDA 12.0 or newer driver loads: NVRTC 12.0 ("),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("run tools/install-deps.sh"), std::string::npos)
      << message;
  EXPECT_EQ(message.find("internal error"), std::string::npos) << message;
  llvm::sys::fs::remove_directories(dir);
}

// The ISA of a PTX and the oldest driver that compiles it, without NVRTC.
TEST(CudaEmitterTest, PtxIsaAndTheDriverItNeeds) {
  auto bytes = [](const std::string &text) {
    return std::vector<uint8_t>(text.begin(), text.end());
  };
  EXPECT_EQ(cuda::getPtxIsa(bytes("//\n// .version 9.9 in a comment\n"
                                  ".version 8.0\n.target sm_80\n")),
            llvm::Optional<unsigned>(80u));
  EXPECT_EQ(cuda::getPtxIsa(bytes(".version 7.8\n")),
            llvm::Optional<unsigned>(78u));
  EXPECT_EQ(cuda::getPtxIsa(bytes("// no directive\n")), llvm::None);
  EXPECT_EQ(cuda::getDriverVersionForPtxIsa(78), 11080u);
  EXPECT_EQ(cuda::getDriverVersionForPtxIsa(80), 12000u);
  EXPECT_EQ(cuda::getDriverVersionForPtxIsa(85), 12050u);
  EXPECT_EQ(cuda::getDriverVersionForPtxIsa(86), 12070u);
  EXPECT_EQ(cuda::getDriverVersionForPtxIsa(88), 12090u);
  EXPECT_EQ(cuda::getDriverVersionForPtxIsa(90), 13000u);
}

// An arch on the other side of the prelude's __CUDA_ARCH__ >= 800 test
// gets a PTX of its own: sm_75 from compute_75, sm_80 and sm_90 from
// compute_80; both PTX go into the bundle.
TEST(CudaEmitterTest, NvrtcCompilesOnePtxPerArchGroup) {
  if (!cuda::isNvrtcAvailable())
    GTEST_SKIP() << "built without NVRTC";
  auto program = emit(kTwoRelus);
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  auto images = cuda::compileCudaProgram(*program, {75, 80, 90});
  ASSERT_TRUE(bool(images)) << toString(images.takeError());
  std::vector<std::pair<uint8_t, unsigned>> kinds;
  for (const bundle::KernelImage &image : *images)
    kinds.push_back({image.kind, image.arch});
  EXPECT_EQ(kinds, (std::vector<std::pair<uint8_t, unsigned>>{
                       {bundle::ImageCubin, 75},
                       {bundle::ImageCubin, 80},
                       {bundle::ImageCubin, 90},
                       {bundle::ImagePtx, 75},
                       {bundle::ImagePtx, 80}}));
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(cubinArch((*images)[i].bytes), (*images)[i].arch);
}

TEST(CudaEmitterTest, ArchsShareAPtxUnlessTheSourceTellsThemApart) {
  using Groups = std::vector<std::vector<unsigned>>;
  std::vector<unsigned> archs = {75, 80, 86, 90};
  EXPECT_EQ(cuda::groupArchsByPtx(archs, "__global__ void k() {}"),
            (Groups{{75, 80, 86, 90}}));
  EXPECT_EQ(cuda::groupArchsByPtx(
                archs, "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"
                       "#endif\n#ifdef __CUDA_ARCH__\n#endif\n"),
            (Groups{{75}, {80, 86, 90}}));
  EXPECT_EQ(cuda::groupArchsByPtx(archs, "#if __CUDA_ARCH__ < 900\n#endif\n"
                                         "#if __CUDA_ARCH__>=860\n#endif\n"),
            (Groups{{75, 80}, {86}, {90}}));
  // A test the grouping does not read: every arch on its own.
  EXPECT_EQ(cuda::groupArchsByPtx(archs, "#if __CUDA_ARCH__ == 900\n#endif\n"),
            (Groups{{75}, {80}, {86}, {90}}));
  EXPECT_EQ(cuda::groupArchsByPtx(archs, "// __CUDA_ARCH__ matters here\n"),
            (Groups{{75}, {80}, {86}, {90}}));
}

// The tiled GEMM kernel on the tensor cores (an f16 MatMul and a bf16
// Gemm with transA, transB and C, each with an epilogue cuBLASLt does not
// run: a bias Sub, a Relu after C) compiles through
// NVRTC for sm_80 and sm_90, and the mma.sync instruction of each type is
// in the PTX (the cubins hold the same code as SASS).
TEST(CudaEmitterTest, NvrtcCompilesTheTensorCoreGemm) {
  if (!cuda::isNvrtcAvailable())
    GTEST_SKIP() << "built without NVRTC";
  auto program =
      emit("func @f(%a: f16[37,50] {offset = 0}, %b: f16[50,45] weight, "
           "%bias: f16[45] weight, %at: bf16[50,70] {offset = 18432}, "
           "%bt: bf16[130,50] weight, %c: bf16[130] weight) -> "
           "(f16[37,45], bf16[70,130]) attributes {alignment = 256, "
           "arena = 29184} {\n"
           "  %y = MatMul(%a, %b, %bias) : f16[37,45] {offset = 25600} {\n"
           "  ^bb(%0: f16[37,45], %1: f16[45]):\n"
           "    %2 = Sub(%0, %1) : f16[37,45]\n"
           "    yield %2\n"
           "  }\n"
           "  %z = Gemm(%at, %bt, %c) {alpha = 1.0, beta = 1.0, transA = 1, "
           "transB = 1} : bf16[70,130] {offset = 0} {\n"
           "  ^bb(%3: bf16[70,130]):\n"
           "    %4 = Relu(%3) : bf16[70,130]\n"
           "    yield %4\n"
           "  }\n"
           "  return %y, %z\n"
           "}\n");
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  ASSERT_EQ(program->plan.kernels.size(), 2u);
  EXPECT_NE(program->source.find("snug_mma_m16n8k16<snug_half>(acc"),
            std::string::npos);
  EXPECT_NE(program->source.find("snug_mma_m16n8k16<snug_bfloat>(acc"),
            std::string::npos);
  auto images = cuda::compileCudaProgram(*program, {80, 90});
  ASSERT_TRUE(bool(images)) << toString(images.takeError());
  ASSERT_EQ(images->size(), 3u);
  EXPECT_EQ((*images)[0].arch, 80u);
  EXPECT_EQ((*images)[1].arch, 90u);
  ASSERT_EQ((*images)[2].kind, bundle::ImagePtx);
  const std::vector<uint8_t> &bytes = (*images)[2].bytes;
  std::string ptx(bytes.begin(), bytes.end());
  EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
            std::string::npos);
  EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
            std::string::npos);
}

// Under --precision=tf32 the f32 tiled kernel (a Gemm with transA, transB, C
// and an epilogue) takes the tf32 tensor-core path and compiles through
// NVRTC for sm_80 and sm_90: the PTX has the m16n8k8 tf32 mma.sync and the
// cvt.rna.tf32.f32 operand rounding.
TEST(CudaEmitterTest, NvrtcCompilesTheTf32Gemm) {
  if (!cuda::isNvrtcAvailable())
    GTEST_SKIP() << "built without NVRTC";
  auto program =
      emit("func @f(%at: f32[50,70] {offset = 0}, %bt: f32[130,50] weight, "
           "%c: f32[130] weight) -> f32[70,130] attributes {alignment = 256, "
           "arena = 50688} {\n"
           "  %z = Gemm(%at, %bt, %c) {alpha = 1.0, beta = 1.0, math = "
           "\"tf32\", transA = 1, transB = 1} : f32[70,130] {offset = "
           "14080} {\n"
           "  ^bb(%0: f32[70,130]):\n"
           "    %1 = Relu(%0) : f32[70,130]\n"
           "    yield %1\n"
           "  }\n"
           "  return %z\n"
           "}\n");
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  ASSERT_EQ(program->plan.kernels.size(), 1u);
  EXPECT_NE(program->source.find("snug_mma_m16n8k8_tf32(acc"),
            std::string::npos);
  EXPECT_NE(program->source.find("snug_tf32(az["), std::string::npos);
  auto images = cuda::compileCudaProgram(*program, {80, 90});
  ASSERT_TRUE(bool(images)) << toString(images.takeError());
  ASSERT_EQ(images->size(), 3u);
  ASSERT_EQ((*images)[2].kind, bundle::ImagePtx);
  const std::vector<uint8_t> &bytes = (*images)[2].bytes;
  std::string ptx(bytes.begin(), bytes.end());
  EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
            std::string::npos);
  EXPECT_NE(ptx.find("cvt.rna.tf32.f32"), std::string::npos);
}

TEST(CudaEmitterTest, NvrtcFailuresAreInternalErrorsNamingTheNode) {
  if (!cuda::isNvrtcAvailable())
    GTEST_SKIP() << "built without NVRTC";
  auto program = emit(kTwoRelus);
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  // Break the kernel's body: NVRTC's log points into its lines.
  size_t body = program->source.find("{\n", program->source.find(
                                                 "__launch_bounds__"));
  ASSERT_NE(body, std::string::npos);
  program->source.insert(body + 2, "  this is not C++;\n");
  auto images = cuda::compileCudaProgram(*program, {90});
  ASSERT_FALSE(bool(images));
  std::string message = toString(images.takeError());
  EXPECT_NE(message.find("internal error: NVRTC could not compile"),
            std::string::npos) << message;
  EXPECT_NE(message.find("node #0 (Relu)"), std::string::npos) << message;
  EXPECT_NE(message.find("snug.cu("), std::string::npos) << message;
}

/// A snug.fused region is one kernel, one launch, and NVRTC compiles it for
/// both architectures: every dtype path the emitter writes (f16 rounding of
/// intermediates, a bool compare, Where on stored elements, Clip's bounds
/// from attributes, an i32 op, two results).
TEST(CudaEmitterTest, FusedRegionIsOneKernelAndCompiles) {
  auto program = emit(
      "func @f(%x: f16[2,8] {offset = 0}, %y: f16[8] {offset = 64}, "
      "%k: i32[2,1] {offset = 128}) -> (f16[2,8], i32[2,8]) attributes "
      "{arena = 512} {\n"
      "  %r, %q = snug.fused(%x, %y, %k) : f16[2,8] {offset = 256}, "
      "i32[2,8] {offset = 320} {\n"
      "  ^bb(%a: f16[2,8], %b: f16[8], %c: i32[2,1]):\n"
      "    %t0 = Mul(%a, %b) : f16[2,8]\n"
      "    %t1 = Exp(%t0) : f16[2,8]\n"
      "    %m = Greater(%a, %t0) : bool[2,8]\n"
      "    %t2 = Where(%m, %t1, %a) : f16[2,8]\n"
      "    %t3 = Clip(%t2) {max = 1.5, min = -0.25} : f16[2,8]\n"
      "    %n = Where(%m, %c, %c) : i32[2,8]\n"
      "    %u = Mul(%n, %n) : i32[2,8]\n"
      "    yield %t3, %u\n"
      "  }\n"
      "  return %r, %q\n"
      "}\n");
  ASSERT_TRUE(bool(program)) << toString(program.takeError());
  ASSERT_EQ(program->plan.kernels.size(), 1u);
  ASSERT_EQ(program->plan.steps.size(), 1u);
  EXPECT_EQ(program->plan.kernels[0], "snug_fused_0");
  EXPECT_EQ(program->plan.steps[0].launch.args.size(), 5u);
  if (!cuda::isNvrtcAvailable())
    GTEST_SKIP() << "built without NVRTC";
  auto images = cuda::compileCudaProgram(*program, {80, 90});
  ASSERT_TRUE(bool(images)) << toString(images.takeError());
  EXPECT_EQ(images->size(), 3u);
}
