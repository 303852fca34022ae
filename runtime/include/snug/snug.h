/*===- snug.h - The snug runtime C API ---------------------------*- C -*-===*
 *
 * Load a compiled bundle (.snug), describe its inputs and outputs, create a
 * session on a device, copy inputs in, run, copy outputs out. A session owns
 * (or borrows, when the caller passes one) exactly one arena of the planned
 * size; every intermediate tensor and, by default, every graph input and
 * output lives at a fixed offset inside it. Nothing is allocated during a run.
 *
 * Errors: every call returns a snug_status; the message of the last failed
 * call on this thread is snug_last_error() (valid until the next failing
 * call on the thread). Handles are not thread-safe: one thread per session.
 *
 * Inputs: the plan may reuse an input's memory once the input is dead, so
 * every input must be set (snug_session_set_input, or written through
 * snug_session_input_data) before each run; run fails otherwise.
 *
 * CUDA sessions (SNUG_DEVICE_CUDA) run the bundle's device plan; the bundle
 * must have been compiled with --target=cuda. The runtime loads the NVIDIA
 * driver (libcuda.so.1) and cuBLAS only when such a session is created, so
 * it starts on machines without them (SNUG_ERROR_NO_DEVICE then). The
 * session works in the calling thread's current CUDA context if there is
 * one (an application of the CUDA runtime has its device's primary context
 * current), else in device 0's primary context; it makes that context
 * current only during its own calls. It allocates the weights and the
 * device arena once, at creation, after checking them against the free
 * device memory; a run allocates nothing. The first run executes the plan
 * step by step, the second captures it into a CUDA graph, later runs replay
 * the graph. Every call returns once its work on the device is done.
 *
 *===----------------------------------------------------------------------===*/
#ifndef SNUG_SNUG_H
#define SNUG_SNUG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* SNUG_API marks the exported C API. The shared runtime (libsnugrt) is
   compiled with -fvisibility=hidden and linked with a version script, so
   only these functions are visible to an application. */
#ifndef SNUG_API
#if defined(__GNUC__) && !defined(_WIN32)
#define SNUG_API __attribute__((visibility("default")))
#else
#define SNUG_API
#endif
#endif

/* 2: CUDA sessions; snug_sizes.device_arena and .workspace;
   snug_session_options.stream and .cuda_graphs; snug_session_memory and
   snug_session_benchmark. 3: snug_bundle_kernel_toolchain and
   SNUG_ERROR_DRIVER_TOO_OLD. 4: snug_session_uses_cuda_graphs. */
#define SNUG_API_VERSION 4

typedef enum snug_status {
  SNUG_OK = 0,
  SNUG_ERROR_INVALID_ARGUMENT = 1, /* null handle, bad index, wrong size */
  SNUG_ERROR_IO = 2,               /* cannot open or read a file */
  SNUG_ERROR_INVALID_BUNDLE = 3,   /* corrupt, truncated, hash mismatch */
  SNUG_ERROR_UNSUPPORTED = 4,      /* newer format, op without a kernel */
  SNUG_ERROR_OUT_OF_MEMORY = 5,
  SNUG_ERROR_NO_DEVICE = 6,        /* CUDA executor or device unavailable */
  SNUG_ERROR_RUNTIME = 7,          /* a kernel failed during a run */
  SNUG_ERROR_INPUT_NOT_SET = 8,
  SNUG_ERROR_DRIVER_TOO_OLD = 9    /* the bundle's kernels need a newer
                                      CUDA driver (both versions named) */
} snug_status;

/* ONNX TensorProto.DataType numbers. */
typedef enum snug_dtype {
  SNUG_DTYPE_F32 = 1,
  SNUG_DTYPE_U8 = 2,
  SNUG_DTYPE_I8 = 3,
  SNUG_DTYPE_U16 = 4,
  SNUG_DTYPE_I16 = 5,
  SNUG_DTYPE_I32 = 6,
  SNUG_DTYPE_I64 = 7,
  SNUG_DTYPE_BOOL = 9,
  SNUG_DTYPE_F16 = 10,
  SNUG_DTYPE_F64 = 11,
  SNUG_DTYPE_U32 = 12,
  SNUG_DTYPE_U64 = 13,
  SNUG_DTYPE_BF16 = 16
} snug_dtype;

typedef enum snug_device { SNUG_DEVICE_HOST = 0, SNUG_DEVICE_CUDA = 1 } snug_device;

typedef struct snug_bundle snug_bundle;
typedef struct snug_session snug_session;

#define SNUG_MAX_RANK 16

typedef struct snug_tensor_info {
  const char *name;  /* owned by the bundle */
  snug_dtype dtype;
  uint32_t rank;
  int64_t dims[SNUG_MAX_RANK];
  uint64_t bytes;
  uint64_t arena_offset; /* where the tensor lives in the arena */
} snug_tensor_info;

typedef struct snug_sizes {
  uint64_t arena;     /* bytes of the one arena (inputs and outputs inside) */
  uint64_t alignment; /* the plan's alignment of arena offsets */
  uint64_t weights;   /* bytes of the weights section */
  uint64_t io;        /* bytes of all inputs and outputs (inside the arena) */
  uint64_t lower_bound; /* the planner's lower bound for the arena (0: none) */
  /* The CUDA device arena: the arena followed by the cuBLAS workspace (0
     without a device plan). A CUDA session allocates weights +
     device_arena bytes of device memory, nothing else. */
  uint64_t device_arena;
  uint64_t workspace; /* bytes of the largest cuBLAS workspace (one GEMM's),
                         inside device_arena */
} snug_sizes;

/* Initialize with snug_session_options_init: later versions add fields at
   the end, and it sets their defaults. */
typedef struct snug_session_options {
  snug_device device;
  /* Optional caller-owned arena. Host: at least snug_sizes.arena bytes,
     aligned to min(alignment, 64). CUDA: a device pointer to at least
     snug_sizes.device_arena bytes, aligned to 256 bytes. NULL: the session
     allocates its own. */
  void *arena;
  uint64_t arena_bytes;
  /* Host only: fill the arena with a NaN pattern (0xFF bytes) before each
     run, except the inputs, so a read of never-written memory shows. */
  int poison;
  /* CUDA only: the CUstream (cudaStream_t) to run on, of the context the
     session works in; the session synchronizes it at the end of each call.
     NULL: the session creates its own non-blocking stream. */
  void *stream;
  /* CUDA only: capture the plan into a CUDA graph on the second run and
     replay it afterwards (1, the default), or run step by step (0). */
  int cuda_graphs;
} snug_session_options;

/* What a session holds in memory (snug_session_memory). */
typedef struct snug_memory_stats {
  snug_device device;
  /* Bytes and count of the session's own allocations: CUDA, the weights
     and (unless the caller owns it) the device arena, exactly
     snug_sizes.weights + snug_sizes.device_arena; host, the arena unless
     the caller owns it (the weights are used from the mapped bundle). */
  uint64_t allocated_bytes;
  uint64_t allocations;
  /* CUDA: how much the device's free memory (cuMemGetInfo) fell while the
     session was created: the allocations plus the stream, module and cuBLAS
     overheads (not the context's own, which exists before the first
     measurement; another process allocating meanwhile skews it). Host: 0. */
  uint64_t device_used_bytes;
  uint64_t arena_bytes;   /* the arena the session runs in, owned or not */
  uint64_t weights_bytes; /* CUDA: the device copy of the weights; host: 0 */
} snug_memory_stats;

/* Message of the last failed call on this thread ("" when none). */
SNUG_API const char *snug_last_error(void);
SNUG_API const char *snug_status_name(snug_status status);
/* "0.2.0"; the runtime's version. */
SNUG_API const char *snug_version(void);

SNUG_API snug_status snug_bundle_load(const char *path, snug_bundle **bundle);
SNUG_API void snug_bundle_destroy(snug_bundle *bundle);
SNUG_API snug_status snug_bundle_sizes(const snug_bundle *bundle,
                                       snug_sizes *sizes);
/* Bytes of pinned host memory the plan uses for offloaded values (snugc
   --allow-offload): a CUDA session allocates exactly this with
   cuMemHostAlloc besides its device memory; 0 without offload. */
SNUG_API snug_status snug_bundle_pinned_host_bytes(const snug_bundle *bundle,
                                                   uint64_t *bytes);
SNUG_API snug_status snug_bundle_input_count(const snug_bundle *bundle,
                                             size_t *count);
SNUG_API snug_status snug_bundle_output_count(const snug_bundle *bundle,
                                              size_t *count);
SNUG_API snug_status snug_bundle_input_info(const snug_bundle *bundle,
                                            size_t index,
                                            snug_tensor_info *info);
SNUG_API snug_status snug_bundle_output_info(const snug_bundle *bundle,
                                             size_t index,
                                             snug_tensor_info *info);
/* Index of the input or output called `name`. */
SNUG_API snug_status snug_bundle_find_input(const snug_bundle *bundle,
                                            const char *name, size_t *index);
SNUG_API snug_status snug_bundle_find_output(const snug_bundle *bundle,
                                             const char *name, size_t *index);
/* Persistent state (a training step's parameters and optimizer state, see
   snugc train): mutable weights that each run updates, so that running a
   session again runs the next step. `info` of state `index`: its name, and
   the dtype, dims and bytes of its value; arena_offset is that of the
   output whose value is written back into it after each run. */
SNUG_API snug_status snug_bundle_state_count(const snug_bundle *bundle,
                                             size_t *count);
SNUG_API snug_status snug_bundle_state_info(const snug_bundle *bundle,
                                            size_t index,
                                            snug_tensor_info *info);
/* What compiled the bundle's CUDA kernels and the oldest driver that loads
   them. Versions as cuDriverGetVersion gives them (12000: CUDA 12.0), the
   PTX ISA as 10 * major + minor (80: ISA 8.0). All 0 when not recorded: a
   host-only bundle, or one written before the record (format 8). */
typedef struct snug_kernel_toolchain {
  uint32_t nvrtc_version;
  uint32_t nvjitlink_version;
  uint32_t ptx_isa;
  uint32_t min_driver_version;
} snug_kernel_toolchain;
SNUG_API snug_status snug_bundle_kernel_toolchain(
    const snug_bundle *bundle, snug_kernel_toolchain *toolchain);
/* Pipeline string and snug version the bundle was compiled with. */
SNUG_API const char *snug_bundle_pipeline(const snug_bundle *bundle);
SNUG_API const char *snug_bundle_compiler_version(const snug_bundle *bundle);

/* The defaults: host device, own arena, no poisoning, own stream, CUDA
   graphs on. */
SNUG_API void snug_session_options_init(snug_session_options *options);
/* The bundle must outlive the session. options may be NULL (the defaults).
   A CUDA session fails with SNUG_ERROR_NO_DEVICE without a driver or
   device, SNUG_ERROR_DRIVER_TOO_OLD when the driver is older than the one
   the bundle's kernels need (snug_bundle_kernel_toolchain),
   SNUG_ERROR_UNSUPPORTED for a bundle without a device plan or
   without a kernel image for the device's arch, SNUG_ERROR_OUT_OF_MEMORY
   when weights + arena exceed the free device memory (nothing allocated). */
SNUG_API snug_status snug_session_create(const snug_bundle *bundle,
                                         const snug_session_options *options,
                                         snug_session **session);
SNUG_API void snug_session_destroy(snug_session *session);
/* Copies `bytes` (must equal the input's size) into the input's place
   (host to device for a CUDA session). */
SNUG_API snug_status snug_session_set_input(snug_session *session, size_t index,
                                            const void *data, size_t bytes);
/* Pointer to the input's place in the arena; marks the input as set. For a
   CUDA session a DEVICE pointer: write it on the session's stream, or
   synchronize before the next run. */
SNUG_API snug_status snug_session_input_data(snug_session *session,
                                             size_t index, void **data);
/* SNUG_ERROR_INVALID_ARGUMENT when an input holds a value the bundle cannot
   take (a cross-entropy label outside [0, C)), the message naming the
   input, the value and its position; a training step's state then stays
   as it was. */
SNUG_API snug_status snug_session_run(snug_session *session);
/* Copies the output of the last run out (bytes must equal its size; device
   to host for a CUDA session). */
SNUG_API snug_status snug_session_get_output(snug_session *session,
                                             size_t index, void *data,
                                             size_t bytes);
/* Copies the current value of persistent state `name` out (bytes must equal
   its size): its value after the last run, the bundle's first value before
   any. Device to host for a CUDA session. */
SNUG_API snug_status snug_session_get_state(snug_session *session,
                                            const char *name, void *data,
                                            size_t bytes);
/* Pointer to the output inside the arena; valid until the next run. For a
   CUDA session a DEVICE pointer. */
SNUG_API snug_status snug_session_output_data(snug_session *session,
                                              size_t index, const void **data);
/* The session's memory: its own allocations, and for CUDA the device memory
   its creation took. */
SNUG_API snug_status snug_session_memory(const snug_session *session,
                                         snug_memory_stats *stats);
/* Whether the session's runs replay a CUDA graph (the second run captures
   the plan, later runs replay it): *uses is 1 for a CUDA session whose
   options asked for graphs (cuda_graphs = 1) on a stream a graph can be
   captured from, with a plan that allows one; 0 when it runs step by step
   (graphs turned off, the legacy default stream, a plan with branches that
   skip steps at run time (an If on runtime data), a capture that failed)
   and for a host session. */
SNUG_API snug_status snug_session_uses_cuda_graphs(const snug_session *session,
                                                   int *uses);
/* Times the plan: `warmup` untimed runs, then `runs` timed ones, their
   milliseconds in milliseconds[0 .. runs-1] (CUDA: device time between CUDA
   events around each run; host: wall time). The inputs must be set as for
   snug_session_run; they are restored before every run (the plan may
   overwrite them), outside the timed part, so afterwards the outputs are
   those of a normal run and the inputs must be set again. */
SNUG_API snug_status snug_session_benchmark(snug_session *session,
                                            uint32_t warmup, uint32_t runs,
                                            double *milliseconds);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SNUG_SNUG_H */
