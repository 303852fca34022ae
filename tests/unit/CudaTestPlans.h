//===- CudaTestPlans.h - A bundle with a hand-written device plan -*- C++
//-*-===//
//
// kMlp with the device plan compiler/cuda would give it (a GEMM with its
// cuBLAS workspace, two launches with i32/i64/f32 scalars, a copy), for the tests that check CUDA sessions without the emitters:
// CudaRuntimeTest (no device) and FakeCudaTest (the fake driver, whose
// host "kernels" snug_add and snug_leaky these launches name).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_UNIT_CUDATESTPLANS_H
#define SNUG_TESTS_UNIT_CUDATESTPLANS_H

#include "RuntimeTestUtil.h"

#include "core/BundleFormat.h"
#include "core/DevicePlan.h"

#include <string>
#include <vector>

namespace snug {
namespace testing {

// y = LeakyRelu(x * w + b), z = Identity(y) (a copy on the device).
inline const char *kMlp =
    "func @mlp(%x: f32[1,4] {offset = 0}, %w: f32[4,2] weight = [1.0, 0.0, "
    "0.0, 1.0, 1.0, 1.0, -1.0, 2.0], %b: f32[2] weight = [0.5, -0.5]) -> "
    "(f32[1,2], f32[1,2]) attributes {alignment = 64, arena = 192} {\n"
    "  %0 = MatMul(%x, %w) : f32[1,2] {offset = 64}\n"
    "  %1 = Add(%0, %b) : f32[1,2] {offset = 128}\n"
    "  %y = LeakyRelu(%1) {alpha = 0.25} : f32[1,2] {offset = 0}\n"
    "  %z = Identity(%y) : f32[1,2] {offset = 128}\n"
    "  return %y, %z\n"
    "}\n";

/// The device plan of kMlp as compiler/cuda would lay it out: a GEMM, two
/// launches, a copy; the GEMM's cuBLAS workspace after the host plan's part
/// of the arena.
inline bundle::DevicePlan mlpPlan() {
  using namespace snug::bundle;
  DevicePlan plan;
  plan.arenaBytes = 256 + 1024;
  plan.kernels = {"snug_add", "snug_leaky"};
  DeviceStep gemm;
  gemm.kind = StepGemm;
  gemm.op = 0;
  // Row-major y[1,2] = x[1,4] w[4,2] is column-major y^T = w^T x^T.
  gemm.gemm.dtype = DTypeF32;
  gemm.gemm.m = 2, gemm.gemm.n = 1, gemm.gemm.k = 4;
  gemm.gemm.lda = 2, gemm.gemm.ldb = 4, gemm.gemm.ldc = 2;
  gemm.gemm.a = DeviceArg::weight(0);
  gemm.gemm.b = DeviceArg::arena(0);
  gemm.gemm.c = DeviceArg::arena(64);
  gemm.gemm.workspaceOffset = 256;
  gemm.gemm.workspaceBytes = 1024;
  DeviceStep add;
  add.kind = StepLaunch;
  add.op = 1;
  add.launch.kernel = 0;
  add.launch.block[0] = 32;
  add.launch.args = {DeviceArg::arena(64),
                     DeviceArg::weight(64),
                     DeviceArg::arena(128),
                     {ArgI32, 2}};
  DeviceStep leaky;
  leaky.kind = StepLaunch;
  leaky.op = 2;
  leaky.launch.kernel = 1;
  leaky.launch.block[0] = 32;
  leaky.launch.args = {DeviceArg::arena(128),
                       DeviceArg::arena(0),
                       {ArgI64, 2},
                       {ArgF32, 0x3e800000u}}; // 0.25f
  DeviceStep copy;
  copy.kind = StepCopy;
  copy.op = 3;
  copy.copy = {DeviceArg::arena(128), DeviceArg::arena(0), 8};
  plan.steps = {gemm, add, leaky, copy};
  return plan;
}

/// mlpPlan with the bias Add in the GEMM: a cuBLASLt step with epilogue
/// `epilogue` (the bias, weight b at offset 64, when it has one) writing
/// the Add's result at 128 directly; the leaky ReLU and the copy as before.
inline bundle::DevicePlan
mlpPlanLt(uint8_t epilogue = bundle::GemmEpilogueBias) {
  bundle::DevicePlan plan = mlpPlan();
  bundle::DeviceStep gemm = plan.steps[0];
  gemm.gemm.c = bundle::DeviceArg::arena(128);
  gemm.gemm.epilogue = epilogue;
  if (bundle::gemmEpilogueHasBias(epilogue))
    gemm.gemm.bias = bundle::DeviceArg::weight(64);
  plan.steps.erase(plan.steps.begin(), plan.steps.begin() + 2);
  plan.steps.insert(plan.steps.begin(), gemm);
  return plan;
}

/// mlpPlan with its GEMM run twice (beta 0: the same result), each time
/// with another workspace (512 bytes at 256, then at 768), so the executor
/// must switch cuBLAS's workspace between them.
inline bundle::DevicePlan mlpPlanTwoWorkspaces() {
  bundle::DevicePlan plan = mlpPlan();
  bundle::DeviceStep first = plan.steps[0], second = plan.steps[0];
  first.gemm.workspaceBytes = second.gemm.workspaceBytes = 512;
  second.gemm.workspaceOffset = 768;
  plan.steps[0] = first;
  plan.steps.insert(plan.steps.begin() + 1, second);
  return plan;
}

inline std::vector<uint8_t>
cudaBundleOf(const std::string &text, const bundle::DevicePlan &plan,
             const std::vector<bundle::KernelImage> &images,
             const bundle::KernelToolchain &toolchain = {}) {
  auto module = parseOrDie(text);
  if (!module)
    return {};
  BundleOptions options{"test-pipeline", "0.test", &plan, &images};
  options.toolchain = toolchain;
  auto bytes = serializeBundle(*module, options);
  if (!bytes) {
    ADD_FAILURE() << toString(bytes.takeError());
    return {};
  }
  return std::move(*bytes);
}

/// A kernel image holding `text` (NUL-terminated, as PTX must be).
inline bundle::KernelImage image(uint8_t kind, uint32_t arch,
                                 std::string text = "") {
  if (text.empty())
    text = kind == bundle::ImagePtx ? "// not real PTX" : "cubin";
  std::vector<uint8_t> bytes(text.begin(), text.end());
  bytes.push_back(0);
  return {kind, arch, bytes};
}

inline std::vector<bundle::KernelImage> someImages() {
  return {image(bundle::ImageCubin, 80), image(bundle::ImageCubin, 90),
          image(bundle::ImagePtx, 90)};
}

} // namespace testing
} // namespace snug

#endif // SNUG_TESTS_UNIT_CUDATESTPLANS_H
