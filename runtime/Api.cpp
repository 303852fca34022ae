//===- Api.cpp - The C API over the bundle reader and executors -----------===//
//
// Thin: checks arguments, dispatches to the host or the CUDA executor,
// turns rt::Status into snug_status plus a thread-local message. The CUDA
// executor is built when CMake found the CUDA toolkit's headers
// (SNUG_HAVE_CUDA); without them SNUG_DEVICE_CUDA fails with
// SNUG_ERROR_NO_DEVICE and says so.
//
//===----------------------------------------------------------------------===//
#include "snug/snug.h"

#include "runtime/BundleReader.h"
#include "runtime/host/HostExecutor.h"
#ifdef SNUG_HAVE_CUDA
#include "runtime/cuda/CudaExecutor.h"
#endif

#include <chrono>
#include <cstring>
#include <string>

using namespace snug;
using namespace snug::rt;

#ifndef SNUG_VERSION
#define SNUG_VERSION "unknown"
#endif

struct snug_bundle {
  std::unique_ptr<Bundle> bundle;
};

struct snug_session {
  const snug_bundle *bundle;
  snug_device device = SNUG_DEVICE_HOST;
  std::unique_ptr<HostExecutor> host;
  bool ownsHostArena = false;
#ifdef SNUG_HAVE_CUDA
  std::unique_ptr<cuda::CudaExecutor> cuda;
#endif
  std::vector<bool> inputSet;
  bool hasRun = false;
};

static thread_local std::string lastError;

static snug_status report(const Status &status) {
  if (!status.isOk())
    lastError = status.getMessage();
  return status.getCode();
}

static snug_status fail(snug_status code, const std::string &message) {
  lastError = message;
  return code;
}

// What differs between the executors: where the arena is, how bytes get in
// and out of it, and how a run is timed.

/// Whether the files the bundle maps are still the ones it loaded, for a
/// session that has just read weights from the mapping: a host session at
/// every run and weight output, any session while it is created (the CUDA
/// executor uploads the weights then and reads the mapping no more). A
/// bundle written in place in the meantime would have fed it other
/// weights than its hash checked; checking after the reads counts a
/// change during them too.
static Status checkMappedFiles(const snug_session *session,
                               bool readsAtRunTime) {
#ifdef SNUG_HAVE_CUDA
  if (readsAtRunTime && session->cuda)
    return Status::ok();
#endif
  (void)readsAtRunTime;
  return session->bundle->bundle->checkFilesUnchanged();
}

static Status writeArena(snug_session *session, uint64_t offset,
                         const void *data, uint64_t bytes) {
#ifdef SNUG_HAVE_CUDA
  if (session->cuda)
    return session->cuda->write(offset, data, bytes);
#endif
  std::memcpy(session->host->getArena() + offset, data, bytes);
  return Status::ok();
}

static Status readLocation(snug_session *session, const Location &location,
                           void *data, uint64_t bytes) {
#ifdef SNUG_HAVE_CUDA
  if (session->cuda)
    return session->cuda->read(location, data, bytes);
#endif
  const uint8_t *from = location.kind == bundle::Weight
                            ? session->bundle->bundle->getWeights()
                            : session->host->getArena();
  std::memcpy(data, from + location.offset, bytes);
  if (location.kind == bundle::Weight)
    return checkMappedFiles(session, true);
  return Status::ok();
}

/// Host memory for a host session, device memory for a CUDA one.
static const void *pointerTo(snug_session *session, const Location &location) {
#ifdef SNUG_HAVE_CUDA
  if (session->cuda)
    return session->cuda->getDevicePointer(location);
#endif
  const uint8_t *base = location.kind == bundle::Weight
                            ? session->bundle->bundle->getWeights()
                            : session->host->getArena();
  return base + location.offset;
}

static Status runOnce(snug_session *session, double *milliseconds) {
#ifdef SNUG_HAVE_CUDA
  if (session->cuda)
    return session->cuda->run(milliseconds);
#endif
  auto start = std::chrono::steady_clock::now();
  Status status = session->host->run();
  if (milliseconds)
    *milliseconds = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  return status;
}

extern "C" {

const char *snug_last_error(void) { return lastError.c_str(); }

const char *snug_status_name(snug_status status) {
  switch (status) {
  case SNUG_OK: return "ok";
  case SNUG_ERROR_INVALID_ARGUMENT: return "invalid argument";
  case SNUG_ERROR_IO: return "i/o error";
  case SNUG_ERROR_INVALID_BUNDLE: return "invalid bundle";
  case SNUG_ERROR_UNSUPPORTED: return "unsupported";
  case SNUG_ERROR_OUT_OF_MEMORY: return "out of memory";
  case SNUG_ERROR_NO_DEVICE: return "no device";
  case SNUG_ERROR_RUNTIME: return "runtime error";
  case SNUG_ERROR_INPUT_NOT_SET: return "input not set";
  case SNUG_ERROR_DRIVER_TOO_OLD: return "driver too old";
  }
  return "unknown status";
}

const char *snug_version(void) { return SNUG_VERSION; }

snug_status snug_bundle_load(const char *path, snug_bundle **out) {
  if (!path || !out)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "snug_bundle_load: null argument");
  *out = nullptr;
  auto handle = std::make_unique<snug_bundle>();
  if (Status s = readBundle(path, handle->bundle))
    return report(s);
  // An op the host cannot run is a load-time error for a host-only bundle;
  // a bundle with a device plan may hold ops only the device runs, and a
  // host session checks them when it is created.
  if (!handle->bundle->hasDevicePlan)
    if (Status s = checkHostSupport(*handle->bundle))
      return report(s);
  *out = handle.release();
  return SNUG_OK;
}

void snug_bundle_destroy(snug_bundle *bundle) { delete bundle; }

snug_status snug_bundle_sizes(const snug_bundle *handle, snug_sizes *sizes) {
  if (!handle || !sizes)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "snug_bundle_sizes: null argument");
  const Bundle &b = *handle->bundle;
  sizes->arena = b.arenaSize;
  sizes->alignment = b.alignment;
  sizes->weights = b.weightsSize;
  sizes->lower_bound = b.lowerBound;
  sizes->io = 0;
  for (const auto *list : {&b.inputs, &b.outputs})
    for (const TensorDesc &desc : *list)
      sizes->io += desc.location.bytes;
  sizes->device_arena = b.hasDevicePlan ? b.devicePlan.arenaBytes : 0;
  sizes->workspace =
      b.hasDevicePlan ? b.devicePlan.getLargestWorkspaceBytes() : 0;
  return SNUG_OK;
}

snug_status snug_bundle_pinned_host_bytes(const snug_bundle *handle,
                                          uint64_t *bytes) {
  if (!handle || !bytes)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "snug_bundle_pinned_host_bytes: null argument");
  *bytes = handle->bundle->hostSize;
  return SNUG_OK;
}

snug_status snug_bundle_kernel_toolchain(const snug_bundle *handle,
                                         snug_kernel_toolchain *toolchain) {
  if (!handle || !toolchain)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "snug_bundle_kernel_toolchain: null argument");
  const bundle::KernelToolchain &t = handle->bundle->toolchain;
  toolchain->nvrtc_version = t.nvrtcVersion;
  toolchain->nvjitlink_version = t.jitLinkVersion;
  toolchain->ptx_isa = t.ptxIsa;
  toolchain->min_driver_version = t.minDriverVersion;
  return SNUG_OK;
}

static const std::vector<TensorDesc> *ioList(const snug_bundle *handle,
                                             bool inputs) {
  return inputs ? &handle->bundle->inputs : &handle->bundle->outputs;
}

static snug_status countOf(const snug_bundle *handle, size_t *count,
                           bool inputs) {
  if (!handle || !count)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null argument");
  *count = ioList(handle, inputs)->size();
  return SNUG_OK;
}

snug_status snug_bundle_input_count(const snug_bundle *b, size_t *count) {
  return countOf(b, count, true);
}
snug_status snug_bundle_output_count(const snug_bundle *b, size_t *count) {
  return countOf(b, count, false);
}

static void fillInfo(const std::string &name, const Location &location,
                     snug_tensor_info *info) {
  std::memset(info, 0, sizeof *info);
  info->name = name.c_str();
  info->dtype = snug_dtype(location.dtype);
  info->rank = uint32_t(location.dims.size());
  for (size_t d = 0; d < location.dims.size() && d < SNUG_MAX_RANK; ++d)
    info->dims[d] = location.dims[d];
  info->bytes = location.bytes;
  info->arena_offset = location.offset;
}

static snug_status infoOf(const snug_bundle *handle, size_t index,
                          snug_tensor_info *info, bool inputs) {
  if (!handle || !info)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null argument");
  const auto &list = *ioList(handle, inputs);
  if (index >= list.size())
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                std::string(inputs ? "input" : "output") + " index " +
                    std::to_string(index) + " out of range (" +
                    std::to_string(list.size()) + ")");
  fillInfo(list[index].name, list[index].location, info);
  return SNUG_OK;
}

snug_status snug_bundle_state_count(const snug_bundle *handle, size_t *count) {
  if (!handle || !count)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null argument");
  *count = handle->bundle->state.size();
  return SNUG_OK;
}

snug_status snug_bundle_state_info(const snug_bundle *handle, size_t index,
                                   snug_tensor_info *info) {
  if (!handle || !info)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null argument");
  const Bundle &b = *handle->bundle;
  if (index >= b.state.size())
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "state index " + std::to_string(index) + " out of range (" +
                    std::to_string(b.state.size()) + ")");
  const StateDesc &entry = b.state[index];
  fillInfo(entry.name, b.outputs[entry.output].location, info);
  return SNUG_OK;
}

snug_status snug_bundle_input_info(const snug_bundle *b, size_t index,
                                   snug_tensor_info *info) {
  return infoOf(b, index, info, true);
}
snug_status snug_bundle_output_info(const snug_bundle *b, size_t index,
                                    snug_tensor_info *info) {
  return infoOf(b, index, info, false);
}

static snug_status findIn(const snug_bundle *handle, const char *name,
                          size_t *index, bool inputs) {
  if (!handle || !name || !index)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null argument");
  const auto &list = *ioList(handle, inputs);
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].name == name) {
      *index = i;
      return SNUG_OK;
    }
  return fail(SNUG_ERROR_INVALID_ARGUMENT,
              "bundle '" + handle->bundle->path + "' has no " +
                  (inputs ? "input" : "output") + " named '" + name + "'");
}

snug_status snug_bundle_find_input(const snug_bundle *b, const char *name,
                                   size_t *index) {
  return findIn(b, name, index, true);
}
snug_status snug_bundle_find_output(const snug_bundle *b, const char *name,
                                    size_t *index) {
  return findIn(b, name, index, false);
}

const char *snug_bundle_pipeline(const snug_bundle *b) {
  return b ? b->bundle->pipeline.c_str() : "";
}
const char *snug_bundle_compiler_version(const snug_bundle *b) {
  return b ? b->bundle->compilerVersion.c_str() : "";
}

void snug_session_options_init(snug_session_options *options) {
  if (!options)
    return;
  std::memset(options, 0, sizeof *options);
  options->cuda_graphs = 1;
}

snug_status snug_session_create(const snug_bundle *handle,
                                const snug_session_options *options,
                                snug_session **out) {
  if (!handle || !out)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "snug_session_create: null argument");
  *out = nullptr;
  snug_session_options defaults;
  snug_session_options_init(&defaults);
  if (!options)
    options = &defaults;
  if (options->device != SNUG_DEVICE_HOST &&
      options->device != SNUG_DEVICE_CUDA)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "unknown device " + std::to_string(int(options->device)));
  auto session = std::make_unique<snug_session>();
  session->bundle = handle;
  session->device = options->device;
  if (options->device == SNUG_DEVICE_CUDA) {
#ifdef SNUG_HAVE_CUDA
    cuda::CudaSessionOptions cudaOptions;
    cudaOptions.arena = options->arena;
    cudaOptions.arenaBytes = options->arena_bytes;
    cudaOptions.stream = options->stream;
    cudaOptions.graphs = options->cuda_graphs != 0;
    if (Status s = cuda::CudaExecutor::create(*handle->bundle, cudaOptions,
                                              session->cuda))
      return report(s);
#else
    return fail(SNUG_ERROR_NO_DEVICE,
                "this runtime was built without CUDA (no CUDA toolkit "
                "headers at build time); use the host device");
#endif
  } else {
    if (Status s = HostExecutor::create(*handle->bundle, options->arena,
                                        options->arena_bytes,
                                        options->poison != 0, session->host))
      return report(s);
    session->ownsHostArena = options->arena == nullptr;
  }
  if (Status s = checkMappedFiles(session.get(), false))
    return report(s);
  session->inputSet.assign(handle->bundle->inputs.size(), false);
  *out = session.release();
  return SNUG_OK;
}

void snug_session_destroy(snug_session *session) { delete session; }

static snug_status checkIndex(const snug_session *session, size_t index,
                              bool inputs) {
  if (!session)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null session");
  size_t count = ioList(session->bundle, inputs)->size();
  if (index >= count)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                std::string(inputs ? "input" : "output") + " index " +
                    std::to_string(index) + " out of range (" +
                    std::to_string(count) + ")");
  return SNUG_OK;
}

snug_status snug_session_set_input(snug_session *session, size_t index,
                                   const void *data, size_t bytes) {
  if (snug_status s = checkIndex(session, index, true))
    return s;
  const TensorDesc &desc = session->bundle->bundle->inputs[index];
  if (!data && bytes)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "input '" + desc.name + "': null data pointer for " +
                    std::to_string(bytes) + " bytes");
  if (bytes != desc.location.bytes)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "input '" + desc.name + "' takes " +
                    std::to_string(desc.location.bytes) + " bytes, got " +
                    std::to_string(bytes));
  if (bytes)
    if (Status s = writeArena(session, desc.location.offset, data, bytes))
      return report(s);
  session->inputSet[index] = true;
  return SNUG_OK;
}

snug_status snug_session_input_data(snug_session *session, size_t index,
                                    void **data) {
  if (snug_status s = checkIndex(session, index, true))
    return s;
  if (!data)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null data pointer");
  *data = const_cast<void *>(
      pointerTo(session, session->bundle->bundle->inputs[index].location));
  session->inputSet[index] = true;
  return SNUG_OK;
}

static snug_status checkInputsSet(const snug_session *session) {
  const Bundle &b = *session->bundle->bundle;
  for (size_t i = 0; i < b.inputs.size(); ++i)
    if (!session->inputSet[i])
      return fail(SNUG_ERROR_INPUT_NOT_SET,
                  "input '" + b.inputs[i].name +
                      "' is not set (inputs must be set before every run)");
  return SNUG_OK;
}

snug_status snug_session_run(snug_session *session) {
  if (!session)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null session");
  const Bundle &b = *session->bundle->bundle;
  if (snug_status s = checkInputsSet(session))
    return s;
  session->hasRun = false;
  if (Status s = runOnce(session, nullptr))
    return report(s);
  if (Status s = checkMappedFiles(session, true))
    return report(s);
  // The plan may have reused the inputs' memory.
  session->inputSet.assign(b.inputs.size(), false);
  session->hasRun = true;
  return SNUG_OK;
}

snug_status snug_session_get_output(snug_session *session, size_t index,
                                    void *data, size_t bytes) {
  if (snug_status s = checkIndex(session, index, false))
    return s;
  const TensorDesc &desc = session->bundle->bundle->outputs[index];
  if (!session->hasRun)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "no successful run yet to read output '" + desc.name + "' of");
  if (!data && bytes)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "output '" + desc.name + "': null data pointer for " +
                    std::to_string(bytes) + " bytes");
  if (bytes != desc.location.bytes)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "output '" + desc.name + "' has " +
                    std::to_string(desc.location.bytes) + " bytes, got " +
                    std::to_string(bytes));
  if (bytes)
    if (Status s = readLocation(session, desc.location, data, bytes))
      return report(s);
  return SNUG_OK;
}

snug_status snug_session_get_state(snug_session *session, const char *name,
                                   void *data, size_t bytes) {
  if (!session || !name || (!data && bytes))
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null argument");
  const Bundle &b = *session->bundle->bundle;
  const StateDesc *entry = b.findState(name);
  if (!entry)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "bundle '" + b.path + "' has no state named '" + name + "'");
  if (bytes != entry->bytes)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "state '" + entry->name + "' has " +
                    std::to_string(entry->bytes) + " bytes, got " +
                    std::to_string(bytes));
#ifdef SNUG_HAVE_CUDA
  if (session->cuda) {
    Location location = b.outputs[entry->output].location;
    location.kind = bundle::Weight;
    location.offset = entry->weightOffset;
    return report(session->cuda->read(location, data, bytes));
  }
#endif
  std::memcpy(data, session->host->getState(*entry), bytes);
  return SNUG_OK;
}

snug_status snug_session_output_data(snug_session *session, size_t index,
                                     const void **data) {
  if (snug_status s = checkIndex(session, index, false))
    return s;
  if (!data)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null data pointer");
  *data = pointerTo(session, session->bundle->bundle->outputs[index].location);
  return SNUG_OK;
}

snug_status snug_session_uses_cuda_graphs(const snug_session *session,
                                          int *uses) {
  if (!session || !uses)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "snug_session_uses_cuda_graphs: null argument");
  *uses = 0;
#ifdef SNUG_HAVE_CUDA
  if (session->cuda)
    *uses = session->cuda->usesGraphs() ? 1 : 0;
#endif
  return SNUG_OK;
}

snug_status snug_session_memory(const snug_session *session,
                                snug_memory_stats *stats) {
  if (!session || !stats)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "snug_session_memory: null argument");
  std::memset(stats, 0, sizeof *stats);
  stats->device = session->device;
#ifdef SNUG_HAVE_CUDA
  if (session->cuda) {
    const cuda::CudaMemoryStats &m = session->cuda->getMemoryStats();
    stats->allocated_bytes = m.allocatedBytes;
    stats->allocations = m.allocations;
    stats->device_used_bytes = m.deviceUsedBytes;
    stats->arena_bytes = m.arenaBytes;
    stats->weights_bytes = m.weightsBytes;
    return SNUG_OK;
  }
#endif
  uint64_t arena = session->bundle->bundle->arenaSize;
  stats->arena_bytes = arena;
  if (session->ownsHostArena) {
    stats->allocated_bytes = arena;
    stats->allocations = 1;
  }
  return SNUG_OK;
}

snug_status snug_session_benchmark(snug_session *session, uint32_t warmup,
                                   uint32_t runs, double *milliseconds) {
  if (!session || (runs && !milliseconds))
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "snug_session_benchmark: null argument");
  if (snug_status s = checkInputsSet(session))
    return s;
  const Bundle &b = *session->bundle->bundle;
  // The plan may overwrite an input once it is dead, so every run gets the
  // inputs back; the copies stay outside the timed part.
  std::vector<std::vector<uint8_t>> inputs(b.inputs.size());
  for (size_t i = 0; i < b.inputs.size(); ++i) {
    inputs[i].resize(b.inputs[i].location.bytes);
    if (!inputs[i].empty())
      if (Status s = readLocation(session, b.inputs[i].location,
                                  inputs[i].data(), inputs[i].size()))
        return report(s);
  }
  session->hasRun = false;
  for (uint64_t run = 0; run < uint64_t(warmup) + runs; ++run) {
    if (run)
      for (size_t i = 0; i < b.inputs.size(); ++i)
        if (!inputs[i].empty())
          if (Status s = writeArena(session, b.inputs[i].location.offset,
                                    inputs[i].data(), inputs[i].size()))
            return report(s);
    bool timed = run >= warmup;
    if (Status s = runOnce(session, timed ? &milliseconds[run - warmup]
                                          : nullptr))
      return report(s);
  }
  // Once after the timed runs, so that they time the runs alone.
  if (Status s = checkMappedFiles(session, true))
    return report(s);
  session->inputSet.assign(b.inputs.size(), false);
  session->hasRun = true;
  return SNUG_OK;
}

} // extern "C"
