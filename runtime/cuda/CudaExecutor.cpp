//===- CudaExecutor.cpp - Running a device plan on a CUDA device ----------===//
//
// Creation order matters for "nothing leaked, nothing allocated on
// failure": every check that can refuse the session (device, plan, image,
// GEMM limits, free memory) runs before the first allocation, and every
// resource lands in a member at once, so the destructor releases whatever
// a failed creation had acquired.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaExecutor.h"

#include "runtime/LabelCheck.h"
#include "runtime/cuda/DeviceChecks.h"

#include <algorithm>
#include <cstring>

namespace snug {
namespace rt {
namespace cuda {

using bundle::DeviceArg;
using bundle::DevicePlan;
using bundle::DeviceStep;

// Makes the session's context current until the end of the enclosing
// block; returns from the enclosing function when it cannot.
#define SNUG_ENTER_CONTEXT(scope)                                              \
  ContextScope scope(driver, context->get());                                  \
  if (scope.getResult())                                                       \
    return Status(SNUG_ERROR_RUNTIME,                                          \
                  "cannot make the session's CUDA context current: " +         \
                      driver.describe(scope.getResult()));

Status CudaExecutor::create(const Bundle &bundle,
                            const CudaSessionOptions &options,
                            std::unique_ptr<CudaExecutor> &out) {
  // Argument errors first: they are the caller's, on any machine.
  if (Status s =
          checkCallerDeviceArena(bundle, options.arena, options.arenaBytes))
    return s;
  const CudaDriver *driver;
  if (Status s = getCudaDriver(driver))
    return s;
  // Before anything is acquired: a driver older than the bundle's kernels
  // need would refuse them at load (PTX of a newer ISA, cubins of a newer
  // major release) with a less telling error, after the allocations.
  if (Status s = checkDriverVersion(bundle, driver->queryVersion()))
    return s;
  std::unique_ptr<CudaExecutor> executor(new CudaExecutor(bundle, *driver));
  if (Status s = executor->setUp(options))
    return s; // the destructor releases what setUp acquired
  out = std::move(executor);
  return Status::ok();
}

Status CudaExecutor::setUp(const CudaSessionOptions &options) {
  if (Status s = CudaContext::acquire(driver, context))
    return s;
  SNUG_ENTER_CONTEXT(scope);
  CUdevice device = context->getDevice();
  char name[256] = {};
  if (driver.DeviceGetName(name, sizeof name - 1, device) == CUDA_SUCCESS)
    deviceName = name;
  else
    deviceName = "device " + std::to_string(int(device));
  int major = 0, minor = 0;
  if (CUresult r = driver.DeviceGetAttribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device))
    return Status(SNUG_ERROR_NO_DEVICE,
                  "no CUDA device: cannot read the compute capability of '" +
                      deviceName + "': " + driver.describe(r));
  (void)driver.DeviceGetAttribute(
      &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  arch = uint32_t(major * 10 + minor);

  if (!bundle.hasDevicePlan)
    return Status(SNUG_ERROR_UNSUPPORTED,
                  "bundle '" + bundle.path +
                      "' was compiled for the host only; compile it with "
                      "--target=cuda");
  const DevicePlan &plan = bundle.devicePlan;
  const KernelImageRef *image = nullptr;
  if (!plan.kernels.empty()) {
    Status why;
    image = selectKernelImage(bundle, arch, deviceName, why);
    if (!image)
      return why;
  }
  if (Status s = checkGemmLimits(bundle))
    return s;
  // Plain GEMMs run through cuBLAS, those with an epilogue through
  // cuBLASLt: each library is loaded only when the plan has its kind.
  auto hasGemm = [&](bool withEpilogue) {
    return std::any_of(plan.steps.begin(), plan.steps.end(),
                       [&](const DeviceStep &step) {
                         return step.kind == bundle::StepGemm &&
                                (step.gemm.epilogue !=
                                 bundle::GemmEpilogueNone) == withEpilogue;
                       });
  };
  std::vector<int> cublasMajors =
      getCublasMajors(bundle, driver.queryVersion());
  if (hasGemm(false))
    if (Status s = getCublas(cublasMajors, cublas))
      return Status(s.getCode(), s.getMessage() + "; the plan of '" +
                                     bundle.path + "' has GEMMs");
  if (hasGemm(true))
    if (Status s = getCublasLt(cublasMajors, cublasLt))
      return Status(s.getCode(), s.getMessage() + "; the plan of '" +
                                     bundle.path +
                                     "' has GEMMs with an epilogue");

  // The memory check, before anything is allocated.
  size_t freeBefore = 0, total = 0;
  if (CUresult r = driver.MemGetInfo(&freeBefore, &total))
    return runtimeError("cuMemGetInfo", r);
  bool allocateArena = options.arena == nullptr;
  uint64_t arenaToAllocate = allocateArena ? plan.arenaBytes : 0;
  if (Status s = checkDeviceMemory(bundle, bundle.weightsSize, arenaToAllocate,
                                   freeBefore, total, deviceName))
    return s;

  if (options.stream) {
    stream = static_cast<CUstream>(options.stream);
  } else {
    // Non-blocking: the legacy default stream of other libraries in the
    // process must not serialize with the session's runs.
    if (CUresult r = driver.StreamCreate(&stream, CU_STREAM_NON_BLOCKING))
      return runtimeError("cuStreamCreate", r);
    ownsStream = true;
  }
  // The legacy default stream cannot be captured.
  graphs = options.graphs && stream != CU_STREAM_LEGACY;
  if (CUresult r = driver.EventCreate(&startEvent, CU_EVENT_DEFAULT))
    return runtimeError("cuEventCreate", r);
  if (CUresult r = driver.EventCreate(&endEvent, CU_EVENT_DEFAULT))
    return runtimeError("cuEventCreate", r);

  // The only two allocations of the session, exactly the planned sizes (so
  // the prediction weights + device arena equals allocated_bytes).
  auto allocate = [&](CUdeviceptr &into, uint64_t bytes, bool &owns,
                      const char *what) {
    if (CUresult r = driver.MemAlloc(&into, bytes))
      return Status(r == CUDA_ERROR_OUT_OF_MEMORY ? SNUG_ERROR_OUT_OF_MEMORY
                                                  : SNUG_ERROR_RUNTIME,
                    "bundle '" + bundle.path + "': cannot allocate the " +
                        what + " (" + std::to_string(bytes) + " bytes) on '" +
                        deviceName + "': " + driver.describe(r));
    owns = true;
    stats.allocatedBytes += bytes;
    ++stats.allocations;
    return Status::ok();
  };
  if (bundle.weightsSize)
    if (Status s =
            allocate(weights, bundle.weightsSize, ownsWeights, "weights"))
      return s;
  if (allocateArena) {
    if (plan.arenaBytes)
      if (Status s =
              allocate(arena, plan.arenaBytes, ownsArena, "device arena"))
        return s;
  } else {
    arena = reinterpret_cast<CUdeviceptr>(options.arena);
  }
  stats.arenaBytes = plan.arenaBytes;
  stats.weightsBytes = bundle.weightsSize;
  // Host memory, not device memory: not in allocatedBytes (the device
  // prediction), reported on its own.
  if (bundle.hostSize) {
    if (CUresult r = driver.MemHostAlloc(&pinned, bundle.hostSize, 0))
      return Status(r == CUDA_ERROR_OUT_OF_MEMORY ? SNUG_ERROR_OUT_OF_MEMORY
                                                  : SNUG_ERROR_RUNTIME,
                    "bundle '" + bundle.path +
                        "': cannot allocate the pinned host region (" +
                        std::to_string(bundle.hostSize) + " bytes): " +
                        driver.describe(r));
    stats.pinnedHostBytes = bundle.hostSize;
  }

  // Straight from the mapped bundle, in bounded chunks: no second host copy
  // of the weights, and the driver stages at most one chunk at a time.
  const uint8_t *source = bundle.getWeights();
  for (uint64_t at = 0; at < bundle.weightsSize; at += kUploadChunkBytes) {
    uint64_t bytes = std::min(kUploadChunkBytes, bundle.weightsSize - at);
    if (CUresult r =
            driver.MemcpyHtoDAsync(weights + at, source + at, bytes, stream))
      return runtimeError("uploading the weights", r);
  }
  if (CUresult r = driver.StreamSynchronize(stream))
    return runtimeError("uploading the weights", r);

  if (image)
    if (Status s = loadKernels(*image))
      return s;
  if (Status s = resolveSteps())
    return s;
  if (cublas)
    if (Status s = setUpCublas())
      return s;
  if (cublasLt)
    if (Status s = setUpCublasLt())
      return s;
  if (Status s = warmUpCublas())
    return s;

  size_t freeAfter = 0;
  if (CUresult r = driver.MemGetInfo(&freeAfter, &total))
    return runtimeError("cuMemGetInfo", r);
  stats.deviceUsedBytes = freeAfter < freeBefore ? freeBefore - freeAfter : 0;
  return Status::ok();
}

Status CudaExecutor::loadKernels(const KernelImageRef &image) {
  const DevicePlan &plan = bundle.devicePlan;
  // The JIT's log says why PTX does not compile (or a cubin does not load).
  std::string log(8192, '\0');
  CUjit_option keys[] = {CU_JIT_ERROR_LOG_BUFFER,
                         CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log.data(), reinterpret_cast<void *>(log.size() - 1)};
  // Images sit at odd offsets inside the bundle; the driver reads a cubin
  // as an ELF file, so give it an 8-byte aligned copy when needed (kernel
  // code is small next to the weights, which are never copied).
  const void *data = image.data;
  std::vector<uint64_t> aligned;
  if (reinterpret_cast<uintptr_t>(data) % alignof(uint64_t)) {
    aligned.resize((image.size + 7) / 8);
    std::memcpy(aligned.data(), image.data, image.size);
    data = aligned.data();
  }
  if (CUresult r = driver.ModuleLoadDataEx(&module, data, 2, keys, values)) {
    log.resize(std::strlen(log.c_str()));
    std::string kind = image.kind == bundle::ImagePtx
                           ? "PTX compute_" + std::to_string(image.arch)
                           : "cubin " + smName(image.arch);
    module = nullptr;
    return Status(SNUG_ERROR_UNSUPPORTED,
                  "bundle '" + bundle.path + "': the driver (version " +
                      std::to_string(driver.version) + ") cannot load its " +
                      kind + " kernels on '" + deviceName + "' (" +
                      smName(arch) + "): " + driver.describe(r) +
                      (log.empty() ? "" : "\n" + log));
  }
  functions.resize(plan.kernels.size());
  for (size_t i = 0; i < plan.kernels.size(); ++i) {
    const std::string &symbol = plan.kernels[i];
    if (CUresult r =
            driver.ModuleGetFunction(&functions[i], module, symbol.c_str()))
      return Status(SNUG_ERROR_INVALID_BUNDLE,
                    "bundle '" + bundle.path + "': kernel '" + symbol +
                        "' is not in its image: " + driver.describe(r));
    // Under lazy module loading (the default since CUDA 12.2) a function's
    // code is loaded, and device memory taken, at its first launch; load it
    // now so that runs allocate nothing.
    if (driver.FuncLoad)
      if (CUresult r = driver.FuncLoad(functions[i]))
        return runtimeError("loading kernel '" + symbol + "'", r);
  }
  // A launch's block must fit what the compiled kernel allows (registers
  // limit it below 1024); refusing here beats a launch failure mid-run.
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const DeviceStep &step = plan.steps[i];
    if (step.kind != bundle::StepLaunch)
      continue;
    int limit = 0;
    if (CUresult r = driver.FuncGetAttribute(
            &limit, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            functions[step.launch.kernel]))
      return runtimeError("cuFuncGetAttribute", r);
    if (Status s = checkLaunchArguments(i))
      return s;
    const uint32_t *block = step.launch.block;
    uint64_t threads = uint64_t(block[0]) * block[1] * block[2];
    if (threads > uint64_t(limit))
      return Status(
          SNUG_ERROR_UNSUPPORTED,
          "bundle '" + bundle.path + "': device step " + std::to_string(i) +
              " of " + bundle.ops[step.op].describe(step.op) +
              " launches kernel '" + plan.kernels[step.launch.kernel] +
              "' with " + std::to_string(threads) + " threads per block; on '" +
              deviceName + "' it allows " + std::to_string(limit));
  }
  return Status::ok();
}

Status CudaExecutor::checkLaunchArguments(size_t index) const {
  // cuLaunchKernel reads as many parameters as the kernel has, each of its
  // size, from the argument array: a plan with one too few or too many, or
  // one of the wrong width, would launch with garbage. The driver knows the
  // kernel's parameters from its image (12.4 and newer).
  if (!driver.FuncGetParamInfo)
    return Status::ok();
  const DevicePlan &plan = bundle.devicePlan;
  const DeviceStep &step = plan.steps[index];
  const bundle::DeviceLaunch &l = step.launch;
  CUfunction function = functions[l.kernel];
  auto refuse = [&](const std::string &what) {
    return Status(SNUG_ERROR_INVALID_BUNDLE,
                  "bundle '" + bundle.path + "': device step " +
                      std::to_string(index) + " of " +
                      bundle.ops[step.op].describe(step.op) +
                      " launches kernel '" + plan.kernels[l.kernel] + "' " +
                      what);
  };
  size_t count = 0;
  for (size_t offset, size;
       driver.FuncGetParamInfo(function, count, &offset, &size) ==
       CUDA_SUCCESS;
       ++count) {
    if (count >= l.args.size())
      continue;
    const DeviceArg &arg = l.args[count];
    size_t given = arg.isPointer() || arg.kind == bundle::ArgI64 ? 8 : 4;
    if (size != given)
      return refuse("with a " + std::to_string(given) +
                    "-byte argument " + std::to_string(count) +
                    "; the kernel's parameter has " + std::to_string(size) +
                    " bytes");
  }
  if (count != l.args.size())
    return refuse("with " + std::to_string(l.args.size()) +
                  " arguments; the kernel takes " + std::to_string(count));
  return Status::ok();
}

Status CudaExecutor::setUpCublas() {
  auto failed = [&](const char *what, cublasStatus_t status) {
    return Status(status == CUBLAS_STATUS_ALLOC_FAILED
                      ? SNUG_ERROR_OUT_OF_MEMORY
                      : SNUG_ERROR_RUNTIME,
                  std::string(what) + " failed on '" + deviceName + "' (" +
                      cublas->library + "): " + cublasStatusName(status));
  };
  if (cublasStatus_t s = cublas->Create(&cublasHandle)) {
    cublasHandle = nullptr;
    return failed("cublasCreate", s);
  }
  if (cublasStatus_t s = cublas->SetStream(cublasHandle, stream))
    return failed("cublasSetStream", s);
  // Each GEMM's workspace lives in the arena (plan-memory placed it at that
  // GEMM's step): cuBLAS then allocates nothing while a graph is captured or
  // replayed, and never touches its default pool (cublasSetStream above
  // reset the handle to it). The first GEMM's is set now; useWorkspace
  // switches before a GEMM whose workspace differs.
  for (const Step &step : steps)
    if (step.kind == bundle::StepGemm && step.ltGemm == kNoLtGemm) {
      if (Status s = useWorkspace(step))
        return s;
      break;
    }
  // Exactness first: no TF32 or other reduced-precision tensor-op math.
  if (cublasStatus_t s = cublas->SetMathMode(cublasHandle, CUBLAS_DEFAULT_MATH))
    return failed("cublasSetMathMode", s);
  return Status::ok();
}

Status CudaExecutor::useWorkspace(const Step &step) {
  if (workspaceSet && step.workspace == currentWorkspace &&
      step.workspaceBytes == currentWorkspaceBytes)
    return Status::ok();
  // A host-side setting of the handle, not a stream operation: legal while
  // a graph is captured, and the captured kernels keep the (fixed) address.
  // Without a workspace (0 bytes), cuBLAS runs algorithms that need none.
  void *workspace = step.workspaceBytes
                        ? reinterpret_cast<void *>(step.workspace)
                        : nullptr;
  if (cublasStatus_t s = cublas->SetWorkspace(cublasHandle, workspace,
                                              step.workspaceBytes))
    return Status(SNUG_ERROR_RUNTIME,
                  "bundle '" + bundle.path + "' on '" + deviceName +
                      "': " + describeStep(step) +
                      ": cublasSetWorkspace failed: " + cublasStatusName(s));
  currentWorkspace = step.workspace;
  currentWorkspaceBytes = step.workspaceBytes;
  workspaceSet = true;
  return Status::ok();
}

Status CudaExecutor::setUpCublasLt() {
  if (cublasStatus_t s = cublasLt->Create(&ltHandle)) {
    ltHandle = nullptr;
    return Status(s == CUBLAS_STATUS_ALLOC_FAILED ? SNUG_ERROR_OUT_OF_MEMORY
                                                  : SNUG_ERROR_RUNTIME,
                  "cublasLtCreate failed on '" + deviceName + "' (" +
                      cublasLt->library + "): " + cublasStatusName(s));
  }
  // Each step's descriptors and algorithm, once: a run only enqueues.
  for (Step &step : steps) {
    if (step.kind != bundle::StepGemm ||
        bundle.devicePlan.steps[step.index].gemm.epilogue ==
            bundle::GemmEpilogueNone)
      continue;
    const bundle::DeviceGemm &g = bundle.devicePlan.steps[step.index].gemm;
    step.ltGemm = ltGemms.size();
    ltGemms.emplace_back();
    const void *bias = bundle::gemmEpilogueHasBias(g.epilogue)
                           ? reinterpret_cast<const void *>(resolve(g.bias))
                           : nullptr;
    // The operands' real alignment, from the pointers they resolved to
    // (arena and weights bases are 256-aligned, so this is their planned
    // offsets' alignment) and their batch strides.
    uint64_t element = step.dataType == CUDA_R_64F   ? 8
                       : step.dataType == CUDA_R_32F ? 4
                                                     : 2;
    LtAlignments alignments;
    alignments.a = getLtAlignment(step.a, uint64_t(g.strideA) * element,
                                  g.batch);
    alignments.b = getLtAlignment(step.b, uint64_t(g.strideB) * element,
                                  g.batch);
    alignments.c = getLtAlignment(step.c, uint64_t(g.strideC) * element,
                                  g.batch);
    if (Status s = ltGemms.back().create(*cublasLt, ltHandle, g, step.dataType,
                                         step.computeType, bias,
                                         step.workspaceBytes, alignments))
      return Status(s.getCode(), "bundle '" + bundle.path + "' on '" +
                                     deviceName + "': " + describeStep(step) +
                                     ": " + s.getMessage());
  }
  return Status::ok();
}

Status CudaExecutor::warmUpCublas() {
  // cuBLAS chooses and loads its kernels at a GEMM shape's first call, and
  // loading takes device memory: calling every GEMM once now keeps that out
  // of the runs (and shows a GEMM cuBLAS refuses at creation). A GEMM
  // cannot fault on the arena's undefined contents. A caller's arena may
  // already hold inputs, so it is left alone.
  if ((!cublas && !cublasLt) || !ownsArena)
    return Status::ok();
  for (const Step &step : steps)
    if (step.kind == bundle::StepGemm)
      if (Status s = enqueueStep(step))
        return s;
  if (CUresult r = driver.StreamSynchronize(stream))
    return runtimeError("warming up cuBLAS", r);
  return Status::ok();
}

CUdeviceptr CudaExecutor::resolve(const DeviceArg &arg) const {
  if (arg.kind == bundle::ArgHost)
    return reinterpret_cast<CUdeviceptr>(pinned) + arg.value;
  return (arg.kind == bundle::ArgArena ? arena : weights) + arg.value;
}

Status CudaExecutor::resolveSteps() {
  const DevicePlan &plan = bundle.devicePlan;
  steps.resize(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const DeviceStep &from = plan.steps[i];
    Step &step = steps[i];
    step.kind = from.kind;
    step.index = i;
    switch (from.kind) {
    case bundle::StepLaunch: {
      const bundle::DeviceLaunch &l = from.launch;
      step.function = functions[l.kernel];
      std::copy(l.grid, l.grid + 3, step.grid);
      std::copy(l.block, l.block + 3, step.block);
      step.sharedBytes = l.sharedBytes;
      step.firstParam = paramValues.size();
      step.paramCount = l.args.size();
      // A parameter's bytes are the low bytes of its slot (little-endian):
      // 8 for pointers and i64, 4 for i32 and f32, whose bits `value` holds.
      for (const DeviceArg &arg : l.args)
        paramValues.push_back(arg.isPointer() ? uint64_t(resolve(arg))
                                              : arg.value);
      break;
    }
    case bundle::StepGemm: {
      const bundle::DeviceGemm &g = from.gemm;
      step.transA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
      step.transB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
      step.m = g.m, step.n = g.n, step.k = g.k, step.batch = g.batch;
      step.lda = int(g.lda), step.ldb = int(g.ldb), step.ldc = int(g.ldc);
      step.strideA = g.strideA, step.strideB = g.strideB;
      step.strideC = g.strideC;
      switch (g.dtype) {
      case bundle::DTypeF16:
        step.dataType = CUDA_R_16F;
        break;
      case bundle::DTypeBF16:
        step.dataType = CUDA_R_16BF;
        break;
      case bundle::DTypeF64:
        step.dataType = CUDA_R_64F;
        break;
      default:
        step.dataType = CUDA_R_32F;
        break;
      }
      // TF32 through the compute type, not the handle's math mode (which
      // stays CUBLAS_DEFAULT_MATH): per GEMM, only those marked.
      step.computeType = g.dtype == bundle::DTypeF64 ? CUBLAS_COMPUTE_64F
                         : g.math == bundle::GemmMathTf32
                             ? CUBLAS_COMPUTE_32F_FAST_TF32
                             : CUBLAS_COMPUTE_32F;
      step.alpha32 = g.alpha, step.beta32 = g.beta;
      step.alpha64 = g.alpha, step.beta64 = g.beta;
      step.a = resolve(g.a), step.b = resolve(g.b), step.c = resolve(g.c);
      step.workspace = arena + g.workspaceOffset;
      step.workspaceBytes = g.workspaceBytes;
      break;
    }
    case bundle::StepCopy:
      step.a = resolve(from.copy.src);
      step.c = resolve(from.copy.dst);
      step.bytes = from.copy.bytes;
      step.copyDirection = from.copy.dst.kind == bundle::ArgHost
                               ? Step::Direction::DeviceToHost
                           : from.copy.src.kind == bundle::ArgHost
                               ? Step::Direction::HostToDevice
                               : Step::Direction::DeviceToDevice;
      break;
    case bundle::StepBranch:
      // Which steps run depends on data the device computes: the plan
      // runs step by step (a graph would fix one path).
      step.a = resolve(from.branch.condition);
      step.bytes = from.branch.count;
      step.when = from.branch.when != 0;
      graphs = false;
      break;
    }
  }
  // Persistent state: its weights live in the device weights buffer,
  // allocated and uploaded once; after the plan's last step one
  // device-to-device copy per state writes the step's output over it, so
  // the copies are captured into the graph with the rest of the step.
  for (size_t i = 0; i < bundle.state.size(); ++i) {
    const StateDesc &entry = bundle.state[i];
    Step step;
    step.kind = bundle::StepCopy;
    step.index = plan.steps.size() + i;
    step.a = arena + bundle.outputs[entry.output].location.offset;
    step.c = weights + entry.weightOffset;
    step.bytes = entry.bytes;
    steps.push_back(step);
  }
  if (plan.hasCheckRecord())
    checkRecord = arena + plan.checkRecordOffset;
  // Pointers into paramValues only now that it no longer grows.
  params.resize(paramValues.size());
  for (size_t i = 0; i < paramValues.size(); ++i)
    params[i] = &paramValues[i];
  return Status::ok();
}

CudaExecutor::~CudaExecutor() {
  if (!context)
    return;
  ContextScope scope(driver, context->get());
  if (scope.getResult())
    return; // the context is gone; so is everything in it
  if (stream)
    (void)driver.StreamSynchronize(stream);
  if (graphExec)
    (void)driver.GraphExecDestroy(graphExec);
  if (cublasHandle)
    (void)cublas->Destroy(cublasHandle);
  for (LtGemm &lt : ltGemms)
    lt.destroy(*cublasLt);
  if (ltHandle)
    (void)cublasLt->Destroy(ltHandle);
  if (module)
    (void)driver.ModuleUnload(module);
  if (ownsWeights)
    (void)driver.MemFree(weights);
  if (ownsArena)
    (void)driver.MemFree(arena);
  if (pinned)
    (void)driver.MemFreeHost(pinned);
  if (startEvent)
    (void)driver.EventDestroy(startEvent);
  if (endEvent)
    (void)driver.EventDestroy(endEvent);
  if (ownsStream)
    (void)driver.StreamDestroy(stream);
}

std::string CudaExecutor::describeStep(const Step &step) const {
  size_t planSteps = bundle.devicePlan.steps.size();
  if (step.index >= planSteps)
    return "the write-back of state '" +
           bundle.state[step.index - planSteps].name + "'";
  uint32_t op = bundle.devicePlan.steps[step.index].op;
  return "device step " + std::to_string(step.index) + " of " +
         bundle.ops[op].describe(op);
}

Status CudaExecutor::runtimeError(const std::string &what,
                                  CUresult result) const {
  return Status(result == CUDA_ERROR_OUT_OF_MEMORY ? SNUG_ERROR_OUT_OF_MEMORY
                                                   : SNUG_ERROR_RUNTIME,
                "bundle '" + bundle.path + "' on '" + deviceName +
                    "': " + what + ": " + driver.describe(result));
}

Status CudaExecutor::enqueueStep(const Step &step) {
  switch (step.kind) {
  case bundle::StepLaunch: {
    CUresult r = driver.LaunchKernel(
        step.function, step.grid[0], step.grid[1], step.grid[2], step.block[0],
        step.block[1], step.block[2], step.sharedBytes, stream,
        step.paramCount ? params.data() + step.firstParam : nullptr, nullptr);
    if (r) {
      const DeviceStep &from = bundle.devicePlan.steps[step.index];
      return runtimeError(describeStep(step) + ": launching kernel '" +
                              bundle.devicePlan.kernels[from.launch.kernel] +
                              "'",
                          r);
    }
    return Status::ok();
  }
  case bundle::StepGemm: {
    if (step.ltGemm != kNoLtGemm) {
      // C is also D: the epilogue's result overwrites it (beta 0 reads
      // nothing). The workspace is the step's own, as planned.
      const LtGemm &lt = ltGemms[step.ltGemm];
      void *c = reinterpret_cast<void *>(step.c);
      void *workspace = step.workspaceBytes
                            ? reinterpret_cast<void *>(step.workspace)
                            : nullptr;
      cublasStatus_t s = cublasLt->Matmul(
          ltHandle, lt.desc, &step.alpha32,
          reinterpret_cast<const void *>(step.a), lt.a,
          reinterpret_cast<const void *>(step.b), lt.b, &step.beta32, c, lt.c,
          c, lt.c, &lt.algo, workspace, step.workspaceBytes, stream);
      if (s)
        return Status(SNUG_ERROR_RUNTIME,
                      "bundle '" + bundle.path + "' on '" + deviceName +
                          "': " + describeStep(step) +
                          ": cublasLtMatmul failed: " + cublasStatusName(s));
      return Status::ok();
    }
    if (Status s = useWorkspace(step))
      return s;
    bool f64 = step.computeType == CUBLAS_COMPUTE_64F;
    const void *alpha = f64 ? static_cast<const void *>(&step.alpha64)
                            : static_cast<const void *>(&step.alpha32);
    const void *beta = f64 ? static_cast<const void *>(&step.beta64)
                           : static_cast<const void *>(&step.beta32);
    cublasStatus_t s = cublas->GemmStridedBatchedEx(
        cublasHandle, step.transA, step.transB, step.m, step.n, step.k, alpha,
        reinterpret_cast<const void *>(step.a), step.dataType, step.lda,
        step.strideA, reinterpret_cast<const void *>(step.b), step.dataType,
        step.ldb, step.strideB, beta, reinterpret_cast<void *>(step.c),
        step.dataType, step.ldc, step.strideC, step.batch, step.computeType,
        CUBLAS_GEMM_DEFAULT);
    if (s)
      return Status(
          SNUG_ERROR_RUNTIME,
          "bundle '" + bundle.path + "' on '" + deviceName +
              "': " + describeStep(step) +
              ": cublasGemmStridedBatchedEx failed: " + cublasStatusName(s));
    return Status::ok();
  }
  case bundle::StepCopy:
    switch (step.copyDirection) {
    case Step::Direction::DeviceToHost:
      if (CUresult r = driver.MemcpyDtoHAsync(
              reinterpret_cast<void *>(step.c), step.a, step.bytes, stream))
        return runtimeError(describeStep(step) + ": offload to pinned host", r);
      return Status::ok();
    case Step::Direction::HostToDevice:
      if (CUresult r = driver.MemcpyHtoDAsync(
              step.c, reinterpret_cast<const void *>(step.a), step.bytes,
              stream))
        return runtimeError(describeStep(step) + ": reload from pinned host",
                            r);
      return Status::ok();
    case Step::Direction::DeviceToDevice:
      if (CUresult r =
              driver.MemcpyDtoDAsync(step.c, step.a, step.bytes, stream))
        return runtimeError(describeStep(step) + ": device-to-device copy", r);
      return Status::ok();
    }
    return Status::ok();
  }
  return Status::ok();
}

Status CudaExecutor::enqueueSteps(size_t first, size_t last) {
  for (size_t i = first; i < last; ++i) {
    if (steps[i].kind == bundle::StepBranch) {
      // The condition is computed by the steps before: wait for them.
      uint8_t condition = 0;
      if (CUresult r =
              driver.MemcpyDtoHAsync(&condition, steps[i].a, 1, stream))
        return runtimeError(describeStep(steps[i]) + ": reading a condition",
                            r);
      if (CUresult r = driver.StreamSynchronize(stream))
        return runtimeError(describeStep(steps[i]) +
                                ": a kernel before the branch failed",
                            r);
      if ((condition != 0) == steps[i].when)
        i += steps[i].bytes;
      continue;
    }
    if (Status s = enqueueStep(steps[i]))
      return s;
  }
  return Status::ok();
}

size_t CudaExecutor::getGraphSteps() const {
  return checkRecord ? bundle.devicePlan.steps.size() : steps.size();
}

Status CudaExecutor::resetCheckRecord() {
  if (!checkRecord)
    return Status::ok();
  if (CUresult r = driver.MemcpyHtoDAsync(checkRecord, checkRecordZeros,
                                          sizeof checkRecordZeros, stream))
    return runtimeError("clearing the check record", r);
  return Status::ok();
}

Status CudaExecutor::readCheckRecord() {
  if (!checkRecord)
    return Status::ok();
  uint64_t record[bundle::kCheckRecordWords] = {};
  if (CUresult r =
          driver.MemcpyDtoHAsync(record, checkRecord, sizeof record, stream))
    return runtimeError("reading the check record", r);
  if (CUresult r = driver.StreamSynchronize(stream))
    return runtimeError("a kernel failed during the run (run with "
                        "cuda_graphs = 0 and CUDA_LAUNCH_BLOCKING=1 to name "
                        "the op)",
                        r);
  return checkRecordStatus(bundle, record);
}

Status CudaExecutor::captureGraph() {
  // Thread-local mode: only this thread's unsafe calls (a synchronous
  // copy, say) interfere with the capture, not other threads'.
  if (CUresult r = driver.StreamBeginCapture(
          stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
    return runtimeError("cuStreamBeginCapture", r);
  Status enqueued = enqueueSteps(0, getGraphSteps());
  CUgraph graph = nullptr;
  CUresult ended = driver.StreamEndCapture(stream, &graph);
  if (enqueued || ended) {
    if (graph)
      (void)driver.GraphDestroy(graph);
    return enqueued ? enqueued : runtimeError("cuStreamEndCapture", ended);
  }
  CUresult r = driver.GraphInstantiateWithFlags(&graphExec, graph, 0);
  (void)driver.GraphDestroy(graph); // the executable graph is independent
  if (r) {
    graphExec = nullptr;
    return runtimeError("cuGraphInstantiate", r);
  }
  return Status::ok();
}

Status CudaExecutor::run(double *milliseconds) {
  SNUG_ENTER_CONTEXT(scope);
  if (milliseconds)
    if (CUresult r = driver.EventRecord(startEvent, stream))
      return runtimeError("cuEventRecord", r);
  // The first run goes step by step: it names the op of any launch error,
  // and lets cuBLAS pick and load its kernels before a capture.
  bool replay = graphs && completedRuns > 0;
  if (replay && !graphExec) {
    if (Status s = captureGraph()) {
      // Later runs go step by step, so the session stays usable.
      graphs = false;
      return Status(s.getCode(),
                    s.getMessage() +
                        " (while capturing the plan into a CUDA graph; "
                        "nothing ran; turn graphs off with cuda_graphs = 0 "
                        "or snug-run --no-graphs)");
    }
  }
  if (Status s = resetCheckRecord())
    return s;
  size_t inGraph = getGraphSteps();
  if (replay) {
    if (CUresult r = driver.GraphLaunch(graphExec, stream))
      return runtimeError("cuGraphLaunch", r);
  } else if (Status s = enqueueSteps(0, inGraph)) {
    (void)driver.StreamSynchronize(stream);
    return s;
  }
  // A failed check fails the run here, the state as it was.
  if (Status s = readCheckRecord())
    return s;
  if (Status s = enqueueSteps(inGraph, steps.size())) {
    (void)driver.StreamSynchronize(stream);
    return s;
  }
  if (milliseconds)
    if (CUresult r = driver.EventRecord(endEvent, stream))
      return runtimeError("cuEventRecord", r);
  if (CUresult r = driver.StreamSynchronize(stream))
    return runtimeError(
        replay ? "a kernel failed during CUDA graph replay (run with "
                 "cuda_graphs = 0 and CUDA_LAUNCH_BLOCKING=1 to name the op)"
               : "a kernel failed after the steps were enqueued (run with "
                 "CUDA_LAUNCH_BLOCKING=1 to name the op)",
        r);
  if (milliseconds) {
    float elapsed = 0;
    if (CUresult r = driver.EventElapsedTime(&elapsed, startEvent, endEvent))
      return runtimeError("cuEventElapsedTime", r);
    *milliseconds = elapsed;
  }
  ++completedRuns;
  return Status::ok();
}

Status CudaExecutor::write(uint64_t arenaOffset, const void *data,
                           uint64_t bytes) {
  SNUG_ENTER_CONTEXT(scope);
  // On the session's stream, so the copy is ordered with the runs even on
  // a non-blocking stream, then waited for: the caller may reuse `data`.
  if (CUresult r =
          driver.MemcpyHtoDAsync(arena + arenaOffset, data, bytes, stream))
    return runtimeError("copying an input to the device", r);
  if (CUresult r = driver.StreamSynchronize(stream))
    return runtimeError("copying an input to the device", r);
  return Status::ok();
}

Status CudaExecutor::read(const Location &location, void *data,
                          uint64_t bytes) {
  SNUG_ENTER_CONTEXT(scope);
  CUdeviceptr from =
      (location.kind == bundle::Weight ? weights : arena) + location.offset;
  if (CUresult r = driver.MemcpyDtoHAsync(data, from, bytes, stream))
    return runtimeError("copying an output from the device", r);
  if (CUresult r = driver.StreamSynchronize(stream))
    return runtimeError("copying an output from the device", r);
  return Status::ok();
}

void *CudaExecutor::getDevicePointer(const Location &location) const {
  CUdeviceptr base = location.kind == bundle::Weight ? weights : arena;
  return reinterpret_cast<void *>(base + location.offset);
}

} // namespace cuda
} // namespace rt
} // namespace snug
