/*===- main.c - A C application of the snug runtime -----------------------===*
 *
 *   snug-c-app MODEL.snug [INPUT_0.raw [INPUT_1.raw ...]]
 *
 * Loads a compiled bundle, prints its inputs and outputs, fills input i from
 * the raw file given for it (exactly the input's bytes, in its dtype, row
 * major) or with zeros, runs once on the host device, and prints the first
 * values of the first output, their sum and a checksum that also sees the
 * order (sum over i of (i % 97 + 1) * x[i]), in double. Exits 1 with
 * snug_last_error()'s message on any failure.
 *
 * Build against an installed runtime, either with CMake (CMakeLists.txt
 * here: find_package(snug) and snug::runtime) or with pkg-config:
 *   cc main.c $(pkg-config --cflags --libs snug) -o snug-c-app
 *
 *===----------------------------------------------------------------------===*/
#include <snug/snug.h>

#include <stdio.h>
#include <string.h>

#define FIRST_VALUES 8

static const char *dtypeName(snug_dtype dtype) {
  switch (dtype) {
  case SNUG_DTYPE_F32:
    return "f32";
  case SNUG_DTYPE_U8:
    return "u8";
  case SNUG_DTYPE_U16:
    return "u16";
  case SNUG_DTYPE_U32:
    return "u32";
  case SNUG_DTYPE_U64:
    return "u64";
  case SNUG_DTYPE_I8:
    return "i8";
  case SNUG_DTYPE_I16:
    return "i16";
  case SNUG_DTYPE_I32:
    return "i32";
  case SNUG_DTYPE_I64:
    return "i64";
  case SNUG_DTYPE_BOOL:
    return "bool";
  case SNUG_DTYPE_F16:
    return "f16";
  case SNUG_DTYPE_F64:
    return "f64";
  case SNUG_DTYPE_BF16:
    return "bf16";
  }
  return "?";
}

static size_t dtypeSize(snug_dtype dtype) {
  switch (dtype) {
  case SNUG_DTYPE_U8:
  case SNUG_DTYPE_I8:
  case SNUG_DTYPE_BOOL:
    return 1;
  case SNUG_DTYPE_I16:
  case SNUG_DTYPE_U16:
  case SNUG_DTYPE_F16:
  case SNUG_DTYPE_BF16:
    return 2;
  case SNUG_DTYPE_F32:
  case SNUG_DTYPE_I32:
  case SNUG_DTYPE_U32:
    return 4;
  case SNUG_DTYPE_I64:
  case SNUG_DTYPE_U64:
  case SNUG_DTYPE_F64:
    return 8;
  }
  return 1;
}

static float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff, bits;
  float f;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13); /* inf, nan */
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else { /* zero or subnormal: mant * 2^-24 */
    f = (float)mant / 16777216.0f;
    return sign ? -f : f;
  }
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Element i of a tensor of `dtype` at `data`, as a double. */
static double elementAt(const void *data, snug_dtype dtype, size_t i) {
  const unsigned char *p = (const unsigned char *)data + i * dtypeSize(dtype);
/* memcpy, not a cast: `p` need not be aligned for the type. */
#define LOAD_AS(type)                                                         \
  do {                                                                         \
    type v;                                                                    \
    memcpy(&v, p, sizeof v);                                                   \
    return (double)v;                                                          \
  } while (0)
  switch (dtype) {
  case SNUG_DTYPE_F32:
    LOAD_AS(float);
  case SNUG_DTYPE_F64:
    LOAD_AS(double);
  case SNUG_DTYPE_F16: {
    uint16_t v;
    memcpy(&v, p, 2);
    return halfToFloat(v);
  }
  case SNUG_DTYPE_BF16: {
    uint16_t v;
    uint32_t bits;
    float f;
    memcpy(&v, p, 2);
    bits = (uint32_t)v << 16;
    memcpy(&f, &bits, 4);
    return f;
  }
  case SNUG_DTYPE_I8:
    LOAD_AS(int8_t);
  case SNUG_DTYPE_U8:
  case SNUG_DTYPE_BOOL:
    LOAD_AS(uint8_t);
  case SNUG_DTYPE_I16:
    LOAD_AS(int16_t);
  case SNUG_DTYPE_U16:
    LOAD_AS(uint16_t);
  case SNUG_DTYPE_U32:
    LOAD_AS(uint32_t);
  case SNUG_DTYPE_U64:
    LOAD_AS(uint64_t);
  case SNUG_DTYPE_I32:
    LOAD_AS(int32_t);
  case SNUG_DTYPE_I64:
    LOAD_AS(int64_t);
  }
#undef LOAD_AS
  return 0;
}

static void printTensor(const char *kind, size_t index,
                        const snug_tensor_info *info) {
  uint32_t d;
  printf("%s %zu: %s %s[", kind, index, info->name, dtypeName(info->dtype));
  for (d = 0; d < info->rank; ++d)
    printf("%s%lld", d ? "," : "", (long long)info->dims[d]);
  printf("] %llu bytes\n", (unsigned long long)info->bytes);
}

/* Reads exactly `bytes` bytes of `path` into `data`. */
static int readRaw(const char *path, void *data, uint64_t bytes) {
  FILE *file = fopen(path, "rb");
  long size = 0;
  int ok;
  if (!file) {
    fprintf(stderr, "error: cannot open '%s'\n", path);
    return 0;
  }
  ok = fseek(file, 0, SEEK_END) == 0 && (size = ftell(file)) >= 0;
  if (ok && (uint64_t)size != bytes) {
    fprintf(stderr, "error: '%s' has %ld bytes, the input needs %llu\n", path,
            size, (unsigned long long)bytes);
    ok = 0;
  }
  ok = ok && fseek(file, 0, SEEK_SET) == 0 &&
       fread(data, 1, (size_t)bytes, file) == bytes;
  fclose(file);
  return ok;
}

/* Reports a failed call with the runtime's message; nonzero on failure. */
static int failed(snug_status status, const char *call) {
  if (status == SNUG_OK)
    return 0;
  fprintf(stderr, "error: %s: %s: %s\n", call, snug_status_name(status),
          snug_last_error());
  return 1;
}

int main(int argc, char **argv) {
  snug_bundle *bundle = NULL;
  snug_session *session = NULL;
  snug_session_options options;
  snug_sizes sizes;
  snug_tensor_info info;
  size_t inputs = 0, outputs = 0, i, count;
  const void *output;
  double sum = 0, checksum = 0;
  int rc = 1;

  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.snug [INPUT_0.raw ...]\n", argv[0]);
    return 1;
  }
  printf("snug runtime %s\n", snug_version());
  if (failed(snug_bundle_load(argv[1], &bundle), "snug_bundle_load") ||
      failed(snug_bundle_sizes(bundle, &sizes), "snug_bundle_sizes") ||
      failed(snug_bundle_input_count(bundle, &inputs), "input_count") ||
      failed(snug_bundle_output_count(bundle, &outputs), "output_count"))
    goto done;
  printf("bundle %s: arena %llu bytes, weights %llu bytes, compiled by snug "
         "%s\n",
         argv[1], (unsigned long long)sizes.arena,
         (unsigned long long)sizes.weights,
         snug_bundle_compiler_version(bundle));
  if ((size_t)argc - 2 > inputs) {
    fprintf(stderr, "error: %d input files for %zu inputs\n", argc - 2, inputs);
    goto done;
  }

  snug_session_options_init(&options);
  options.device = SNUG_DEVICE_HOST;
  if (failed(snug_session_create(bundle, &options, &session),
             "snug_session_create"))
    goto done;

  /* Inputs are written in place, in the arena, through input_data. */
  for (i = 0; i < inputs; ++i) {
    void *data;
    if (failed(snug_bundle_input_info(bundle, i, &info), "input_info") ||
        failed(snug_session_input_data(session, i, &data), "input_data"))
      goto done;
    printTensor("input", i, &info);
    if (i + 2 < (size_t)argc) {
      if (!readRaw(argv[i + 2], data, info.bytes))
        goto done;
    } else {
      memset(data, 0, (size_t)info.bytes);
    }
  }
  for (i = 0; i < outputs; ++i) {
    if (failed(snug_bundle_output_info(bundle, i, &info), "output_info"))
      goto done;
    printTensor("output", i, &info);
  }

  if (failed(snug_session_run(session), "snug_session_run"))
    goto done;

  if (outputs == 0) {
    fprintf(stderr, "error: the bundle has no outputs\n");
    goto done;
  }
  if (failed(snug_bundle_output_info(bundle, 0, &info), "output_info") ||
      failed(snug_session_output_data(session, 0, &output), "output_data"))
    goto done;
  count = (size_t)(info.bytes / dtypeSize(info.dtype));
  printf("output 0 first:");
  for (i = 0; i < count && i < FIRST_VALUES; ++i)
    printf(" %.9g", elementAt(output, info.dtype, i));
  printf("\n");
  for (i = 0; i < count; ++i) {
    double v = elementAt(output, info.dtype, i);
    sum += v;
    checksum += (double)(i % 97 + 1) * v;
  }
  printf("output 0 sum: %.9g\n", sum);
  printf("output 0 checksum: %.9g\n", checksum);
  rc = 0;

done:
  snug_session_destroy(session);
  snug_bundle_destroy(bundle);
  return rc;
}
