//===- MakeGpuTestBundles.cpp - The bundles snug-gpu-tests runs -----------===//
//
//   snug-gpu-test-bundles OUT_DIR
//
// Writes small bundles compiled for CUDA to OUT_DIR, at build time, on the
// build machine: the GPU machine needs neither LLVM nor NVRTC to run
// snug-gpu-tests, only the runtime and these files. Each is textual IR with
// a hand-written device plan (cuBLAS and cuBLASLt GEMMs, two kernels
// compiled here with NVRTC, a copy), so the executor is tested independently of the CUDA
// emitters. Inputs and weights are small integers, so every GEMM sum is
// exact in every dtype and the device must match the host bit for bit.
//
//   mlp_f32       y = LeakyRelu(x[64,128] w[128,96] + b), z = Identity(y):
//                 GEMM, launches with i32/i64/f32 scalars, a copy; y reuses
//                 the input's bytes
//   mlp_f32_ptx   the same with PTX compute_80 only (the driver JITs it)
//   mlp_f32_sm80  the same with an sm_80 cubin only (no image for sm_90)
//   mlp_f32_lt    the same with the bias Add in the GEMM: a cuBLASLt step
//                 with the bias epilogue (no snug_add_bias launch)
//   bmm_f32       a batch of 3 GEMMs (strides), with cuBLAS's 16 KiB
//                 minimum workspace (what snugc gives a GEMM that splits
//                 nothing)
//   matmul_f16, matmul_bf16, matmul_f64   one GEMM in each dtype
//   huge          a 1 TiB device arena: creation fails with out-of-memory
//   host_only     mlp_f32 without a device plan
//
//===----------------------------------------------------------------------===//
#include "compiler/bundle/BundleWriter.h"
#include "compiler/cuda/Nvrtc.h"
#include "ir/Parser.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace snug;
using namespace snug::bundle;

namespace {

const char *kKernels = R"(
extern "C" __global__ void snug_add_bias(const float *a, const float *bias,
                                         float *c, int rows, int cols) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols)
    c[i] = a[i] + bias[i % cols];
}
extern "C" __global__ void snug_leaky(const float *x, float *y, long long n,
                                      float alpha) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v < 0 ? alpha * v : v;
  }
}
)";

constexpr uint64_t kWorkspace = 4u << 20;

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/// A deterministic list of n values in {-1, 0, 1} (or {-0.5, 0.5}).
std::string values(size_t n, uint32_t seed, bool halves = false) {
  std::string out = "[";
  uint32_t state = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    state = state * 1664525u + 1013904223u;
    int v = int(state >> 16) % 3 - 1;
    const char *text = halves ? (v < 0 ? "-0.5" : "0.5")
                              : (v < 0   ? "-1.0"
                                 : v > 0 ? "1.0"
                                         : "0.0");
    out += (i ? ", " : "") + std::string(text);
  }
  return out + "]";
}

std::string dims(std::initializer_list<int64_t> list) {
  std::string out = "[";
  for (int64_t d : list)
    out += (out.size() > 1 ? "," : "") + std::to_string(d);
  return out + "]";
}

/// Row-major y[b][M,N] = x[b][M,K] w[b][K,N] as a column-major GEMM:
/// y^T = w^T x^T, so A = w (N x K, ld N), B = x (K x M, ld K).
DeviceStep rowMajorGemm(uint8_t dtype, uint32_t op, int64_t batch, int64_t m,
                        int64_t k, int64_t n, DeviceArg x, DeviceArg w,
                        DeviceArg y) {
  DeviceStep step;
  step.kind = StepGemm;
  step.op = op;
  DeviceGemm &g = step.gemm;
  g.dtype = dtype;
  g.m = int32_t(n), g.n = int32_t(m), g.k = int32_t(k),
  g.batch = int32_t(batch);
  g.lda = n, g.ldb = k, g.ldc = n;
  g.strideA = k * n, g.strideB = m * k, g.strideC = m * n;
  g.a = w, g.b = x, g.c = y;
  return step;
}

DeviceStep launch(uint32_t op, uint32_t kernel, uint64_t work,
                  std::vector<DeviceArg> args) {
  DeviceStep step;
  step.kind = StepLaunch;
  step.op = op;
  step.launch.kernel = kernel;
  step.launch.block[0] = 256;
  step.launch.grid[0] = uint32_t((work + 255) / 256);
  step.launch.args = std::move(args);
  return step;
}

DeviceArg scalar(DeviceArgKind kind, uint64_t bits) { return {kind, bits}; }

uint64_t floatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

/// Parses `text` and writes it as DIR/NAME.snug with the device plan and
/// images (both null: a host-only bundle).
bool write(const std::string &dir, const std::string &name,
           const std::string &text, const DevicePlan *plan,
           const std::vector<KernelImage> *images) {
  auto module = ir::parseModule(text, name + ".ir");
  if (!module) {
    std::fprintf(stderr, "error: %s: %s\n", name.c_str(),
                 llvm::toString(module.takeError()).c_str());
    return false;
  }
  BundleOptions options{"gpu-test", "0.test", plan, images};
  // The toolchain record, so that the device checks the driver as it does
  // for snugc's bundles.
  if (images) {
    auto toolchain = cuda::getKernelToolchain(*images);
    if (!toolchain) {
      std::fprintf(stderr, "error: %s: %s\n", name.c_str(),
                   llvm::toString(toolchain.takeError()).c_str());
      return false;
    }
    options.toolchain = *toolchain;
  }
  if (llvm::Error error =
          writeBundle(**module, dir + "/" + name + ".snug", options)) {
    std::fprintf(stderr, "error: %s: %s\n", name.c_str(),
                 llvm::toString(std::move(error)).c_str());
    return false;
  }
  return true;
}

/// The weights' offsets as the writer lays them out (64-byte boundaries in
/// argument order).
std::vector<uint64_t> weightOffsets(std::initializer_list<uint64_t> bytes) {
  std::vector<uint64_t> offsets;
  uint64_t at = 0;
  for (uint64_t b : bytes) {
    offsets.push_back(at);
    at = alignUp(at + b, 64);
  }
  return offsets;
}

bool writeMlps(const std::string &dir, const std::vector<KernelImage> &images,
               const std::vector<KernelImage> &images80) {
  const int64_t M = 64, K = 128, N = 96;
  uint64_t xBytes = M * K * 4, yBytes = M * N * 4;
  uint64_t o0 = xBytes, o1 = o0 + yBytes, arena = o1 + yBytes;
  std::string text =
      "func @mlp(%x: f32" + dims({M, K}) + " {offset = 0}, %w: f32" +
      dims({K, N}) + " weight = " + values(K * N, 1) + ", %b: f32" + dims({N}) +
      " weight = " + values(N, 2, true) + ") -> (f32" + dims({M, N}) + ", f32" +
      dims({M, N}) +
      ") attributes {alignment = 256, arena = " + std::to_string(arena) +
      "} {\n"
      "  %0 = MatMul(%x, %w) : f32" +
      dims({M, N}) + " {offset = " + std::to_string(o0) +
      "}\n"
      "  %1 = Add(%0, %b) : f32" +
      dims({M, N}) + " {offset = " + std::to_string(o1) +
      "}\n"
      "  %y = LeakyRelu(%1) {alpha = 0.25} : f32" +
      dims({M, N}) +
      " {offset = 0}\n"
      "  %z = Identity(%y) : f32" +
      dims({M, N}) + " {offset = " + std::to_string(o0) +
      "}\n"
      "  return %y, %z\n}\n";
  std::vector<uint64_t> w =
      weightOffsets({uint64_t(K * N * 4), uint64_t(N * 4)});
  DevicePlan plan;
  uint64_t workspace = alignUp(arena, 256);
  plan.arenaBytes = workspace + kWorkspace;
  plan.kernels = {"snug_add_bias", "snug_leaky"};
  DeviceStep copy;
  copy.kind = StepCopy;
  copy.op = 3;
  copy.copy = {DeviceArg::arena(o0), DeviceArg::arena(0), yBytes};
  plan.steps = {
      rowMajorGemm(DTypeF32, 0, 1, M, K, N, DeviceArg::arena(0),
                   DeviceArg::weight(w[0]), DeviceArg::arena(o0)),
      launch(1, 0, M * N,
             {DeviceArg::arena(o0), DeviceArg::weight(w[1]),
              DeviceArg::arena(o1), scalar(ArgI32, M), scalar(ArgI32, N)}),
      launch(2, 1, M * N,
             {DeviceArg::arena(o1), DeviceArg::arena(0), scalar(ArgI64, M * N),
              scalar(ArgF32, floatBits(0.25f))}),
      copy};
  plan.steps[0].gemm.workspaceOffset = workspace;
  plan.steps[0].gemm.workspaceBytes = kWorkspace;
  // From the sm_80 compilation: its PTX (compute_80, which the driver JITs
  // for newer devices) and its cubin (which runs on sm_80 only).
  std::vector<KernelImage> ptx, sm80;
  for (const KernelImage &image : images80)
    (image.kind == ImagePtx ? ptx : sm80).push_back(image);
  // The bias Add in the GEMM: a cuBLASLt step with CUBLASLT_EPILOGUE_BIAS
  // (DevicePlan.h) that writes the Add's result; then the same leaky ReLU
  // and copy.
  DevicePlan lt = plan;
  lt.steps.erase(lt.steps.begin() + 1);
  lt.steps[0].gemm.c = DeviceArg::arena(o1);
  lt.steps[0].gemm.epilogue = GemmEpilogueBias;
  lt.steps[0].gemm.bias = DeviceArg::weight(w[1]);
  return write(dir, "host_only", text, nullptr, nullptr) &&
         write(dir, "mlp_f32", text, &plan, &images) &&
         write(dir, "mlp_f32_lt", text, &lt, &images) &&
         write(dir, "mlp_f32_ptx", text, &plan, &ptx) &&
         write(dir, "mlp_f32_sm80", text, &plan, &sm80);
}

bool writeBmm(const std::string &dir, const std::vector<KernelImage> &images) {
  const int64_t B = 3, M = 16, K = 32, N = 8;
  uint64_t o = B * M * K * 4, arena = o + B * M * N * 4;
  std::string text =
      "func @bmm(%x: f32" + dims({B, M, K}) + " {offset = 0}, %w: f32" +
      dims({B, K, N}) + " weight = " + values(B * K * N, 3) + ") -> f32" +
      dims({B, M, N}) +
      " attributes {alignment = 256, arena = " + std::to_string(arena) +
      "} {\n  %y = MatMul(%x, %w) : f32" + dims({B, M, N}) +
      " {offset = " + std::to_string(o) + "}\n  return %y\n}\n";
  // cublasSetWorkspace: below 16 KiB "some routines" fail with
  // CUBLAS_STATUS_ALLOC_FAILED; so no GEMM of snugc's gets less.
  const uint64_t minWorkspace = 16u << 10;
  uint64_t workspace = alignUp(arena, 256);
  DevicePlan plan;
  plan.arenaBytes = workspace + minWorkspace;
  plan.steps = {rowMajorGemm(DTypeF32, 0, B, M, K, N, DeviceArg::arena(0),
                             DeviceArg::weight(0), DeviceArg::arena(o))};
  plan.steps[0].gemm.workspaceOffset = workspace;
  plan.steps[0].gemm.workspaceBytes = minWorkspace;
  return write(dir, "bmm_f32", text, &plan, &images);
}

bool writeMatMul(const std::string &dir, const char *type, uint8_t dtype,
                 unsigned size, const std::vector<KernelImage> &images) {
  const int64_t M = 32, K = 64, N = 48;
  uint64_t o = alignUp(M * K * size, 256),
           arena = o + alignUp(M * N * size, 256);
  std::string t = type;
  std::string text =
      "func @mm(%x: " + t + dims({M, K}) + " {offset = 0}, %w: " + t +
      dims({K, N}) + " weight = " + values(K * N, 4) + ") -> " + t +
      dims({M, N}) +
      " attributes {alignment = 256, arena = " + std::to_string(arena) +
      "} {\n  %y = MatMul(%x, %w) : " + t + dims({M, N}) +
      " {offset = " + std::to_string(o) + "}\n  return %y\n}\n";
  DevicePlan plan;
  plan.arenaBytes = arena + kWorkspace;
  plan.steps = {rowMajorGemm(dtype, 0, 1, M, K, N, DeviceArg::arena(0),
                             DeviceArg::weight(0), DeviceArg::arena(o))};
  plan.steps[0].gemm.workspaceOffset = arena;
  plan.steps[0].gemm.workspaceBytes = kWorkspace;
  return write(dir, std::string("matmul_") + type, text, &plan, &images);
}

bool writeHuge(const std::string &dir, const std::vector<KernelImage> &images) {
  uint64_t arena = uint64_t(1) << 40;
  std::string text = "func @huge(%x: f32[4] {offset = 0}) -> f32[4] attributes "
                     "{alignment = 256, arena = " +
                     std::to_string(arena) +
                     "} {\n  %y = Relu(%x) : f32[4] {offset = 256}\n"
                     "  return %y\n}\n";
  DevicePlan plan;
  plan.arenaBytes = arena;
  plan.kernels = {"snug_leaky"};
  plan.steps = {launch(0, 0, 4,
                       {DeviceArg::arena(0), DeviceArg::arena(256),
                        scalar(ArgI64, 4), scalar(ArgF32, 0)})};
  return write(dir, "huge", text, &plan, &images);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: snug-gpu-test-bundles OUT_DIR\n");
    return 1;
  }
  std::string dir = argv[1];
  cuda::CudaProgram program;
  program.source = kKernels;
  auto images = cuda::compileCudaProgram(program, {80, 90});
  auto images80 = cuda::compileCudaProgram(program, {80});
  for (auto *result : {&images, &images80})
    if (!*result) {
      std::fprintf(stderr, "error: %s\n",
                   llvm::toString(result->takeError()).c_str());
      return 1;
    }
  bool ok = writeMlps(dir, *images, *images80) && writeBmm(dir, *images) &&
            writeMatMul(dir, "f16", DTypeF16, 2, *images) &&
            writeMatMul(dir, "bf16", DTypeBF16, 2, *images) &&
            writeMatMul(dir, "f64", DTypeF64, 8, *images) &&
            writeHuge(dir, *images);
  return ok ? 0 : 1;
}
