//===- Api.cpp - The C API over the bundle reader and executors -----------===//
//
// Thin: checks arguments, turns rt::Status into snug_status plus a
// thread-local message. The CUDA executor is not built in this version:
// SNUG_DEVICE_CUDA fails with SNUG_ERROR_NO_DEVICE and says so.
//
//===----------------------------------------------------------------------===//
#include "snug/snug.h"

#include "runtime/BundleReader.h"
#include "runtime/host/HostExecutor.h"

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
  std::unique_ptr<HostExecutor> executor;
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
  // An op the host cannot run is a load-time error (the CUDA executor will
  // have its own check when it exists).
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
  const TensorDesc &desc = list[index];
  std::memset(info, 0, sizeof *info);
  info->name = desc.name.c_str();
  info->dtype = snug_dtype(desc.location.dtype);
  info->rank = uint32_t(desc.location.dims.size());
  for (size_t d = 0; d < desc.location.dims.size() && d < SNUG_MAX_RANK; ++d)
    info->dims[d] = desc.location.dims[d];
  info->bytes = desc.location.bytes;
  info->arena_offset = desc.location.offset;
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
  if (options)
    std::memset(options, 0, sizeof *options);
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
  if (options->device == SNUG_DEVICE_CUDA)
    return fail(SNUG_ERROR_NO_DEVICE,
                "CUDA executor not built in this version of the snug "
                "runtime; use the host device");
  if (options->device != SNUG_DEVICE_HOST)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "unknown device " + std::to_string(int(options->device)));
  auto session = std::make_unique<snug_session>();
  session->bundle = handle;
  if (Status s = HostExecutor::create(*handle->bundle, options->arena,
                                      options->arena_bytes,
                                      options->poison != 0, session->executor))
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
  if (bytes != desc.location.bytes || (!data && bytes))
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "input '" + desc.name + "' takes " +
                    std::to_string(desc.location.bytes) + " bytes, got " +
                    std::to_string(bytes));
  if (bytes)
    std::memcpy(session->executor->getArena() + desc.location.offset, data,
                bytes);
  session->inputSet[index] = true;
  return SNUG_OK;
}

snug_status snug_session_input_data(snug_session *session, size_t index,
                                    void **data) {
  if (snug_status s = checkIndex(session, index, true))
    return s;
  if (!data)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null data pointer");
  *data = session->executor->getArena() +
          session->bundle->bundle->inputs[index].location.offset;
  session->inputSet[index] = true;
  return SNUG_OK;
}

snug_status snug_session_run(snug_session *session) {
  if (!session)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null session");
  const Bundle &b = *session->bundle->bundle;
  for (size_t i = 0; i < b.inputs.size(); ++i)
    if (!session->inputSet[i])
      return fail(SNUG_ERROR_INPUT_NOT_SET,
                  "input '" + b.inputs[i].name +
                      "' is not set (inputs must be set before every run)");
  session->hasRun = false;
  if (Status s = session->executor->run())
    return report(s);
  // The plan may have reused the inputs' memory.
  session->inputSet.assign(b.inputs.size(), false);
  session->hasRun = true;
  return SNUG_OK;
}

static const uint8_t *outputPointer(snug_session *session, size_t index) {
  const Location &location = session->bundle->bundle->outputs[index].location;
  if (location.kind == bundle::Weight)
    return session->bundle->bundle->getWeights() + location.offset;
  return session->executor->getArena() + location.offset;
}

snug_status snug_session_get_output(snug_session *session, size_t index,
                                    void *data, size_t bytes) {
  if (snug_status s = checkIndex(session, index, false))
    return s;
  const TensorDesc &desc = session->bundle->bundle->outputs[index];
  if (!session->hasRun)
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "no successful run yet to read output '" + desc.name + "' of");
  if (bytes != desc.location.bytes || (!data && bytes))
    return fail(SNUG_ERROR_INVALID_ARGUMENT,
                "output '" + desc.name + "' has " +
                    std::to_string(desc.location.bytes) + " bytes, got " +
                    std::to_string(bytes));
  if (bytes)
    std::memcpy(data, outputPointer(session, index), bytes);
  return SNUG_OK;
}

snug_status snug_session_output_data(snug_session *session, size_t index,
                                     const void **data) {
  if (snug_status s = checkIndex(session, index, false))
    return s;
  if (!data)
    return fail(SNUG_ERROR_INVALID_ARGUMENT, "null data pointer");
  *data = outputPointer(session, index);
  return SNUG_OK;
}

} // extern "C"
