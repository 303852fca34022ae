//===- BundleReaderDevicePlan.cpp - Decoding a bundle's device plan -------===//
//
// The device plan section (the steps a CUDA executor runs: kernel launches
// with their arguments, copies and GEMMs with their workspace, math mode
// and epilogue, each checked to read and write inside the regions it
// names) and the kernel images section (cubins and NUL-terminated PTX).
// Older format versions are read as they were written (a version-1 plan's
// one shared GEMM workspace; the math and epilogue bytes from versions 5
// and 6).
//
//===----------------------------------------------------------------------===//
#include "runtime/BundleReaderInternal.h"
#include "core/CheckedArithmetic.h"

#include <algorithm>
#include <cstring>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

bool readDeviceArg(Cursor &cursor, DeviceArg &arg, uint64_t bytes,
                   uint64_t arenaSize, uint64_t weightsSize,
                   const std::string &what) {
  if (!cursor.u8(arg.kind) || !cursor.u64(arg.value))
    return false;
  if (arg.kind < ArgArena || arg.kind > ArgF32)
    return cursor.fail(what + ": unknown argument kind " +
                       std::to_string(arg.kind));
  if (!arg.isPointer())
    return true;
  uint64_t space = arg.kind == ArgArena ? arenaSize : weightsSize;
  if (arg.value > space || bytes > space - arg.value)
    return cursor.fail(what + ": " + std::to_string(bytes) +
                       " bytes at offset " + std::to_string(arg.value) +
                       " lie outside the device " +
                       (arg.kind == ArgArena ? "arena" : "weights") + " (" +
                       std::to_string(space) + " bytes)");
  return true;
}

/// The workspace a version-1 plan gave every GEMM; whether GEMMs carry a
/// math byte (from version 5) and an epilogue byte (from version 6).
struct SharedWorkspace {
  bool legacy = false;
  uint64_t offset = 0, bytes = 0;
  bool withMath = true;
  bool withEpilogue = true;
};

/// Reads a GEMM's epilogue byte and bias (format v6) after its math byte:
/// a known epilogue, on a dtype cuBLASLt's epilogues take, its bias m
/// elements inside the arena or the weights and clear of C (cuBLASLt
/// reads the bias while it writes C). `biasBytes` is set to the bias's size.
bool readGemmEpilogue(Cursor &cursor, DeviceGemm &g, uint64_t cBytes,
                      uint64_t arenaSize, uint64_t weightsSize,
                      const std::string &what, uint64_t &biasBytes) {
  biasBytes = 0;
  if (!cursor.u8(g.epilogue))
    return false;
  if (g.epilogue > GemmEpilogueLast)
    return cursor.fail(what + ": unknown GEMM epilogue " +
                       std::to_string(g.epilogue));
  if (g.epilogue != GemmEpilogueNone && g.dtype == DTypeF64)
    return cursor.fail(what + ": GEMM epilogue " +
                       gemmEpilogueName(g.epilogue) +
                       " on an f64 GEMM (cuBLASLt's epilogues take f32, "
                       "f16 and bf16)");
  if (!gemmEpilogueHasBias(g.epilogue))
    return true;
  biasBytes = uint64_t(g.m) * dtypeSize(g.dtype);
  if (!readDeviceArg(cursor, g.bias, biasBytes, arenaSize, weightsSize,
                     what + " bias"))
    return false;
  if (g.bias.kind != ArgArena && g.bias.kind != ArgWeight)
    return cursor.fail(what + ": GEMM bias is not in the device arena or "
                              "the weights (argument kind " +
                       std::to_string(g.bias.kind) + ")");
  if (g.bias.kind == ArgArena && biasBytes && cBytes &&
      g.bias.value < g.c.value + cBytes && g.c.value < g.bias.value + biasBytes)
    return cursor.fail(what + ": GEMM bias (" + std::to_string(biasBytes) +
                       " bytes at offset " + std::to_string(g.bias.value) +
                       ") overlaps its result C");
  return true;
}

bool readGemm(Cursor &cursor, DeviceGemm &g, uint64_t arenaSize,
              uint64_t weightsSize, const std::string &what,
              const SharedWorkspace &shared) {
  uint32_t m, n, k, batch;
  if (!cursor.u8(g.dtype) || !cursor.u8(g.transA) || !cursor.u8(g.transB) ||
      !cursor.u32(m) || !cursor.u32(n) || !cursor.u32(k) ||
      !cursor.u32(batch) || !cursor.i64(g.lda) || !cursor.i64(g.ldb) ||
      !cursor.i64(g.ldc) || !cursor.i64(g.strideA) || !cursor.i64(g.strideB) ||
      !cursor.i64(g.strideC) || !cursor.f32(g.alpha) || !cursor.f32(g.beta))
    return false;
  g.m = int32_t(m), g.n = int32_t(n), g.k = int32_t(k), g.batch = int32_t(batch);
  unsigned size = dtypeSize(g.dtype);
  if (g.dtype != DTypeF32 && g.dtype != DTypeF16 && g.dtype != DTypeBF16 &&
      g.dtype != DTypeF64)
    return cursor.fail(what + ": GEMM on unsupported dtype " +
                       std::to_string(g.dtype));
  if (g.m < 0 || g.n < 0 || g.k < 0 || g.batch < 1 || g.transA > 1 ||
      g.transB > 1 || g.strideA < 0 || g.strideB < 0 || g.strideC < 0)
    return cursor.fail(what + ": bad GEMM shape");
  // Operand shapes before op(): A is m x k (k x m transposed), B k x n.
  int64_t aRows = g.transA ? g.k : g.m, aCols = g.transA ? g.m : g.k;
  int64_t bRows = g.transB ? g.n : g.k, bCols = g.transB ? g.k : g.n;
  if (g.lda < std::max<int64_t>(1, aRows) ||
      g.ldb < std::max<int64_t>(1, bRows) || g.ldc < std::max<int64_t>(1, g.m))
    return cursor.fail(what + ": GEMM leading dimension too small");
  const int64_t limit = int64_t(1) << 40;
  for (int64_t v : {g.lda, g.ldb, g.ldc, g.strideA, g.strideB, g.strideC})
    if (v > limit)
      return cursor.fail(what + ": GEMM stride too large");
  uint64_t aBytes = gemmOperandBytes(aRows, aCols, g.lda, g.strideA, g.batch, size);
  uint64_t bBytes = gemmOperandBytes(bRows, bCols, g.ldb, g.strideB, g.batch, size);
  uint64_t cBytes = gemmOperandBytes(g.m, g.n, g.ldc, g.strideC, g.batch, size);
  if (!readDeviceArg(cursor, g.a, aBytes, arenaSize, weightsSize, what + " A") ||
      !readDeviceArg(cursor, g.b, bBytes, arenaSize, weightsSize, what + " B") ||
      !readDeviceArg(cursor, g.c, cBytes, arenaSize, weightsSize, what + " C"))
    return false;
  if (g.c.kind != ArgArena)
    return cursor.fail(what + ": GEMM writes outside the arena");
  // cuBLAS leaves C over A or B undefined (C over itself, for beta, is fine).
  for (const auto &[arg, bytes, name] :
       {std::tuple<const DeviceArg &, uint64_t, const char *>{g.a, aBytes, "A"},
        {g.b, bBytes, "B"}})
    if (arg.kind == ArgArena && bytes && cBytes && arg.value < g.c.value + cBytes &&
        g.c.value < arg.value + bytes)
      return cursor.fail(what + ": GEMM result C (" + std::to_string(cBytes) +
                         " bytes at offset " + std::to_string(g.c.value) +
                         ") overlaps its operand " + name);
  if (shared.legacy) {
    g.workspaceOffset = shared.offset, g.workspaceBytes = shared.bytes;
  } else if (!cursor.u64(g.workspaceOffset) ||
             !cursor.u64(g.workspaceBytes)) {
    return false;
  }
  g.math = GemmMathDefault;
  if (shared.withMath) {
    if (!cursor.u8(g.math))
      return false;
    if (g.math > GemmMathTf32)
      return cursor.fail(what + ": unknown GEMM math " +
                         std::to_string(g.math));
    if (g.math == GemmMathTf32 && g.dtype != DTypeF32)
      return cursor.fail(what + ": TF32 math on a GEMM of dtype " +
                         std::to_string(g.dtype) + " (it takes f32 only)");
  }
  g.epilogue = GemmEpilogueNone;
  g.bias = DeviceArg();
  uint64_t biasBytes = 0;
  if (shared.withEpilogue && !readGemmEpilogue(cursor, g, cBytes, arenaSize,
                                               weightsSize, what, biasBytes))
    return false;
  if (!g.workspaceBytes)
    return true;
  std::string range = std::to_string(g.workspaceBytes) +
                      " bytes of cuBLAS workspace at offset " +
                      std::to_string(g.workspaceOffset);
  if (g.workspaceOffset > arenaSize ||
      g.workspaceBytes > arenaSize - g.workspaceOffset)
    return cursor.fail(what + ": " + range + " lie outside the device arena (" +
                       std::to_string(arenaSize) + " bytes)");
  // cublasSetWorkspace wants 256-byte alignment; the arena's base has it.
  if (g.workspaceOffset % 256)
    return cursor.fail(what + ": " + range +
                       " are not 256-byte aligned (cublasSetWorkspace "
                       "refuses them)");
  // cuBLAS writes its workspace while it reads A and B and writes C.
  const std::pair<const DeviceArg *, uint64_t> operands[] = {
      {&g.a, aBytes}, {&g.b, bBytes}, {&g.c, cBytes}, {&g.bias, biasBytes}};
  const char *names[] = {"A", "B", "C", "bias"};
  for (int i = 0; i < 4; ++i) {
    const DeviceArg &arg = *operands[i].first;
    uint64_t bytes = operands[i].second;
    if (arg.kind == ArgArena && bytes &&
        arg.value < g.workspaceOffset + g.workspaceBytes &&
        g.workspaceOffset < arg.value + bytes)
      return cursor.fail(what + ": " + range + " overlap its operand " +
                         names[i] + " (" + std::to_string(bytes) +
                         " bytes at offset " + std::to_string(arg.value) +
                         ")");
  }
  return true;
}

} // namespace

bool readDevicePlan(Cursor &cursor, Bundle &b) {
  DevicePlan &plan = b.devicePlan;
  uint32_t count;
  SharedWorkspace shared;
  shared.legacy = b.version < 2;
  shared.withMath = b.version >= kFirstVersionWithGemmMath;
  shared.withEpilogue = b.version >= kFirstVersionWithGemmEpilogue;
  if (!cursor.u64(plan.arenaBytes))
    return false;
  if (shared.legacy && (!cursor.u64(shared.offset) || !cursor.u64(shared.bytes)))
    return false;
  if (plan.arenaBytes > kMaxTensorBytes)
    return cursor.fail("device arena of " + std::to_string(plan.arenaBytes) +
                       " bytes exceeds the limit of " +
                       std::to_string(kMaxTensorBytes));
  if (plan.arenaBytes < b.arenaSize)
    return cursor.fail("device arena of " + std::to_string(plan.arenaBytes) +
                       " bytes does not hold the host arena (" +
                       std::to_string(b.arenaSize) + " bytes)");
  if (b.version >= kFirstVersionWithCheckRecord) {
    if (!cursor.u64(plan.checkRecordOffset))
      return false;
    // Aligned, inside the arena, clear of every tensor the host plan
    // places there (kernels write it while those are live).
    uint64_t at = plan.checkRecordOffset;
    if (plan.hasCheckRecord() &&
        (at % kCheckRecordAlignment || at > plan.arenaBytes ||
         plan.arenaBytes - at < kCheckRecordBytes))
      return cursor.fail("check record at offset " + std::to_string(at) +
                         " does not lie, aligned to " +
                         std::to_string(kCheckRecordAlignment) +
                         ", inside the device arena (" +
                         std::to_string(plan.arenaBytes) + " bytes)");
    if (plan.hasCheckRecord())
      for (size_t i = 0; i < b.ops.size(); ++i)
        for (const auto *locations : {&b.ops[i].operands, &b.ops[i].results})
          for (const Location &place : *locations)
            if (place.kind == Arena && place.bytes &&
                place.offset < at + kCheckRecordBytes &&
                at < place.offset + place.bytes)
              return cursor.fail(
                  "check record at offset " + std::to_string(at) +
                  " overlaps a tensor of " + b.ops[i].describe(i) + " (" +
                  std::to_string(place.bytes) + " bytes at offset " +
                  std::to_string(place.offset) + ")");
  }
  if (!cursor.count(count, 4))
    return false;
  plan.kernels.resize(count);
  for (std::string &kernel : plan.kernels)
    if (!cursor.string(kernel))
      return false;
  if (!cursor.count(count, 5))
    return false;
  plan.steps.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    DeviceStep &step = plan.steps[i];
    if (!cursor.u8(step.kind) || !cursor.u32(step.op))
      return false;
    if (step.op >= b.ops.size())
      return cursor.fail("device step " + std::to_string(i) +
                         " names op " + std::to_string(step.op) +
                         " of " + std::to_string(b.ops.size()));
    std::string what = "device step " + std::to_string(i) + " of " +
                       b.ops[step.op].describe(step.op);
    switch (step.kind) {
    case StepLaunch: {
      DeviceLaunch &l = step.launch;
      uint32_t n;
      if (!cursor.u32(l.kernel))
        return false;
      for (uint32_t *dims : {l.grid, l.block})
        for (int d = 0; d < 3; ++d)
          if (!cursor.u32(dims[d]))
            return false;
      if (!cursor.u32(l.sharedBytes) || !cursor.count(n, 9))
        return false;
      if (l.kernel >= plan.kernels.size())
        return cursor.fail(what + ": unknown kernel " +
                           std::to_string(l.kernel));
      // CUDA's limits on every architecture the bundle targets (sm_75 and
      // newer): a block of at most 1024 threads, (1024, 1024, 64) in each
      // dim; a grid of (2^31 - 1, 65535, 65535); 48 KiB of static shared
      // memory without the opt-in. The driver refuses the rest at launch.
      uint64_t threads = uint64_t(l.block[0]) * l.block[1] * l.block[2];
      auto dims = [](const uint32_t *d) {
        return "(" + std::to_string(d[0]) + ", " + std::to_string(d[1]) +
               ", " + std::to_string(d[2]) + ")";
      };
      if (!threads || threads > 1024 || l.block[0] > 1024 ||
          l.block[1] > 1024 || l.block[2] > 64)
        return cursor.fail(what + ": bad launch configuration: block " +
                           dims(l.block) +
                           " is over CUDA's limits (1024 threads; 1024, "
                           "1024, 64 in x, y, z)");
      if (!l.grid[0] || !l.grid[1] || !l.grid[2] || l.grid[0] > 0x7fffffffu ||
          l.grid[1] > 65535 || l.grid[2] > 65535)
        return cursor.fail(what + ": bad launch configuration: grid " +
                           dims(l.grid) +
                           " is empty or over CUDA's limits (2^31 - 1, "
                           "65535, 65535 in x, y, z)");
      if (l.sharedBytes > 48 * 1024)
        return cursor.fail(what + ": bad launch configuration: " +
                           std::to_string(l.sharedBytes) +
                           " bytes of shared memory, over 48 KiB");
      l.args.resize(n);
      for (DeviceArg &arg : l.args)
        if (!readDeviceArg(cursor, arg, 0, plan.arenaBytes, b.weightsSize,
                           what))
          return false;
      break;
    }
    case StepGemm:
      if (!readGemm(cursor, step.gemm, plan.arenaBytes, b.weightsSize, what,
                    shared))
        return false;
      break;
    case StepCopy:
      if (!cursor.u8(step.copy.dst.kind) || !cursor.u64(step.copy.dst.value))
        return false;
      if (!cursor.u8(step.copy.src.kind) || !cursor.u64(step.copy.src.value) ||
          !cursor.u64(step.copy.bytes))
        return false;
      // Into the arena from any region, or out of the arena into the
      // pinned host region (offload).
      if (!step.copy.src.isPointer() ||
          !(step.copy.dst.kind == ArgArena ||
            (step.copy.dst.kind == ArgHost && step.copy.src.kind == ArgArena)))
        return cursor.fail(what + ": copy must go into the arena, or from "
                                  "it into the pinned host region");
      for (const DeviceArg *arg : {&step.copy.dst, &step.copy.src}) {
        uint64_t space = arg->kind == ArgArena    ? plan.arenaBytes
                         : arg->kind == ArgWeight ? b.weightsSize
                                                  : b.hostSize;
        if (arg->value > space || step.copy.bytes > space - arg->value)
          return cursor.fail(what + ": copy of " +
                             std::to_string(step.copy.bytes) +
                             " bytes lies outside its region");
      }
      // cuMemcpy of overlapping ranges is undefined.
      if (step.copy.src.kind == step.copy.dst.kind && step.copy.bytes &&
          step.copy.src.value != step.copy.dst.value &&
          step.copy.src.value < step.copy.dst.value + step.copy.bytes &&
          step.copy.dst.value < step.copy.src.value + step.copy.bytes)
        return cursor.fail(what + ": copy of " +
                           std::to_string(step.copy.bytes) +
                           " bytes overlaps its source");
      break;
    case StepBranch: {
      DeviceBranch &branch = step.branch;
      if (b.version < kFirstVersionWithBranches)
        return cursor.fail(what + ": a branch step in a version " +
                           std::to_string(b.version) + " bundle");
      if (!cursor.u8(branch.condition.kind) ||
          !cursor.u64(branch.condition.value) || !cursor.u8(branch.when) ||
          !cursor.u32(branch.count))
        return false;
      if (branch.condition.kind != ArgArena ||
          branch.condition.value >= plan.arenaBytes || branch.when > 1)
        return cursor.fail(what + ": a branch must read a byte of the arena "
                                  "and skip when it is 0 or 1");
      // The steps it skips are of this plan; `count` is what the step
      // list holds after it.
      if (branch.count > count - 1 - i)
        return cursor.fail(what + ": a branch skips " +
                           std::to_string(branch.count) + " steps, " +
                           std::to_string(count - 1 - i) + " follow it");
      break;
    }
    default:
      return cursor.fail(what + ": unknown step kind " +
                         std::to_string(step.kind));
    }
  }
  return true;
}

bool readKernelImages(Cursor &cursor, Bundle &b) {
  if (b.version >= kFirstVersionWithToolchain) {
    KernelToolchain &t = b.toolchain;
    if (!cursor.u32(t.nvrtcVersion) || !cursor.u32(t.jitLinkVersion) ||
        !cursor.u32(t.ptxIsa) || !cursor.u32(t.minDriverVersion))
      return false;
    // Either nothing is recorded or the driver it needs is: the executor
    // compares that one with the driver's.
    if (!t.isRecorded() &&
        (t.nvrtcVersion || t.jitLinkVersion || t.ptxIsa))
      return cursor.fail("kernel toolchain records compilers but no "
                         "minimum driver version");
  }
  uint32_t count;
  if (!cursor.count(count, 13))
    return false;
  b.kernelImages.resize(count);
  for (KernelImageRef &image : b.kernelImages) {
    uint64_t size;
    if (!cursor.u8(image.kind) || !cursor.u32(image.arch) ||
        !cursor.u64(size) || !cursor.bytes(image.data, size))
      return false;
    image.size = size;
    if (image.kind != ImageCubin && image.kind != ImagePtx)
      return cursor.fail("unknown kernel image kind " +
                         std::to_string(image.kind));
    if (image.kind == ImagePtx && (!size || image.data[size - 1] != 0))
      return cursor.fail("PTX image is not NUL-terminated");
  }
  return true;
}

} // namespace rt
} // namespace snug
