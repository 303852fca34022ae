//===- SnugRun.cpp - Run a bundle and compare with reference data ---------===//
//
//   snug-run model.snug [--device host|cuda] [--input NAME=@x.npy|@x.pb|random]
//            [--output-dir DIR] [--check DIR] [--rtol R] [--atol A]
//            [--poison] [--seed N] [--describe]
//
// Loads a bundle through the C API, sets every input (from a file, random,
// or, with --check DIR, from DIR/input_N.pb or DIR/NAME.npy), runs once,
// writes outputs as NAME.npy to --output-dir, and with --check compares each
// output with DIR/output_N.pb or DIR/NAME.npy: |a - b| <= atol + rtol * |b|
// elementwise, NaN matching NaN. --describe prints the bundle's sizes and
// inputs/outputs (dtype, dims, arena offset, bytes) and runs nothing.
// Runtime only: no LLVM, no protobuf.
// Exit codes: 0 ok (and every output matches), 1 user error or mismatch,
// 2 internal error.
//
//===----------------------------------------------------------------------===//
#include "snug/snug.h"

#include "ir/Float16.h"
#include "runtime/BundleFormat.h"
#include "tools/snug-run/TensorFiles.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace snug;

namespace {

struct Options {
  std::string bundle;
  std::string device = "host";
  std::map<std::string, std::string> inputs; // name -> "@path" or "random"
  std::string outputDir, checkDir;
  double rtol = 1e-3, atol = 1e-4;
  bool poison = false;
  bool describe = false;
  uint64_t seed = 1;
};

int usage(const char *message) {
  std::fprintf(stderr,
               "error: %s\nusage: snug-run MODEL.snug [--device host|cuda] "
               "[--input NAME=@FILE|random]... [--output-dir DIR] "
               "[--check DIR] [--rtol R] [--atol A] [--poison] [--seed N] "
               "[--describe]\n",
               message);
  return 1;
}

bool fileExists(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

std::string dimsString(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string typeString(uint8_t dtype, const std::vector<int64_t> &dims) {
  return std::string(bundle::dtypeName(dtype)) + dimsString(dims);
}

double elementAt(const HostTensor &t, size_t i) {
  const uint8_t *p = t.bytes.data() + i * bundle::dtypeSize(t.dtype);
  switch (t.dtype) {
  case bundle::DTypeF32: { float v; std::memcpy(&v, p, 4); return v; }
  case bundle::DTypeF64: { double v; std::memcpy(&v, p, 8); return v; }
  case bundle::DTypeF16: { uint16_t v; std::memcpy(&v, p, 2); return f16ToFloat(v); }
  case bundle::DTypeBF16: { uint16_t v; std::memcpy(&v, p, 2); return bf16ToFloat(v); }
  case bundle::DTypeI64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
  case bundle::DTypeI32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case bundle::DTypeI16: { int16_t v; std::memcpy(&v, p, 2); return v; }
  case bundle::DTypeI8: return int8_t(*p);
  case bundle::DTypeU8: return *p;
  case bundle::DTypeBool: return *p != 0;
  }
  return 0;
}

void fillRandom(HostTensor &t, uint64_t &state) {
  size_t size = bundle::dtypeSize(t.dtype), count = t.bytes.size() / size;
  for (size_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double unit = double(state >> 11) / double(uint64_t(1) << 53); // [0, 1)
    uint8_t *p = t.bytes.data() + i * size;
    switch (t.dtype) {
    case bundle::DTypeF32: { float v = float(2 * unit - 1); std::memcpy(p, &v, 4); break; }
    case bundle::DTypeF64: { double v = 2 * unit - 1; std::memcpy(p, &v, 8); break; }
    case bundle::DTypeF16: { uint16_t v = floatToF16(float(2 * unit - 1)); std::memcpy(p, &v, 2); break; }
    case bundle::DTypeBF16: { uint16_t v = floatToBf16(float(2 * unit - 1)); std::memcpy(p, &v, 2); break; }
    case bundle::DTypeBool: *p = unit < 0.5; break;
    default: { // small non-negative integers: safe as indices into dim >= 10
      int64_t v = int64_t(unit * 10);
      std::memcpy(p, &v, size); // little-endian: low bytes first
    }
    }
  }
}

/// Reads an input or expected-output file and checks it against `info`.
bool loadTensor(const std::string &path, const snug_tensor_info &info,
                HostTensor &tensor, std::string &error) {
  if (!readTensorFile(path, tensor, error))
    return false;
  std::vector<int64_t> dims(info.dims, info.dims + info.rank);
  if (tensor.dtype != info.dtype || tensor.dims != dims) {
    error = "'" + path + "' holds " + typeString(tensor.dtype, tensor.dims) +
            ", '" + info.name + "' is " + typeString(uint8_t(info.dtype), dims);
    return false;
  }
  return true;
}

/// The file for tensor `name` (index `index`) in a test-data directory.
std::string findDataFile(const std::string &dir, const char *kind,
                         size_t index, const std::string &name) {
  for (const std::string &candidate :
       {dir + "/" + kind + "_" + std::to_string(index) + ".pb",
        dir + "/" + name + ".npy",
        dir + "/" + kind + "_" + std::to_string(index) + ".npy"})
    if (fileExists(candidate))
      return candidate;
  return "";
}

std::string fileName(const std::string &name) {
  std::string out = name.empty() ? "output" : name;
  for (char &c : out)
    if (c == '/' || c == '\\' || c == ':')
      c = '_';
  return out;
}

int apiError(const char *what, snug_status status) {
  std::fprintf(stderr, "error: %s: %s\n", what, snug_last_error());
  bool internal = status == SNUG_ERROR_RUNTIME ||
                  status == SNUG_ERROR_OUT_OF_MEMORY;
  return internal ? 2 : 1;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string &into) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        into = arg.substr(eq + 1);
        return true;
      }
      if (i + 1 >= argc)
        return false;
      into = argv[++i];
      return true;
    };
    auto is = [&](const char *flag) {
      return arg == flag || arg.rfind(std::string(flag) + "=", 0) == 0;
    };
    std::string text;
    if (is("--device")) {
      if (!value(options.device))
        return usage("--device needs a value");
    } else if (is("--input")) {
      if (!value(text))
        return usage("--input needs NAME=@FILE or NAME=random");
      size_t eq = text.find('=');
      if (eq == std::string::npos)
        return usage(("--input '" + text + "' is not NAME=@FILE|random").c_str());
      options.inputs[text.substr(0, eq)] = text.substr(eq + 1);
    } else if (is("--output-dir")) {
      if (!value(options.outputDir))
        return usage("--output-dir needs a value");
    } else if (is("--check")) {
      if (!value(options.checkDir))
        return usage("--check needs a directory");
    } else if (is("--rtol") || is("--atol") || is("--seed")) {
      if (!value(text))
        return usage("a value is missing");
      char *end;
      double number = std::strtod(text.c_str(), &end);
      if (*end || number < 0)
        return usage(("bad number '" + text + "'").c_str());
      if (is("--rtol"))
        options.rtol = number;
      else if (is("--atol"))
        options.atol = number;
      else
        options.seed = uint64_t(number);
    } else if (arg == "--poison") {
      options.poison = true;
    } else if (arg == "--describe") {
      options.describe = true;
    } else if (arg == "--help" || arg == "-h") {
      usage("help");
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      return usage(("unknown option '" + arg + "'").c_str());
    } else if (options.bundle.empty()) {
      options.bundle = arg;
    } else {
      return usage("more than one bundle given");
    }
  }
  std::printf("snug-run %s (git %s) device %s\n", SNUG_VERSION, SNUG_GIT_HASH,
              options.device.c_str());
  if (options.bundle.empty())
    return usage("no bundle given");
  snug_device device;
  if (options.device == "host")
    device = SNUG_DEVICE_HOST;
  else if (options.device == "cuda")
    device = SNUG_DEVICE_CUDA;
  else
    return usage(("unknown device '" + options.device + "'").c_str());

  snug_bundle *bundle = nullptr;
  if (snug_status s = snug_bundle_load(options.bundle.c_str(), &bundle))
    return apiError("cannot load bundle", s);
  snug_sizes sizes;
  (void)snug_bundle_sizes(bundle, &sizes);
  std::printf("bundle %s: arena %llu bytes, weights %llu bytes, compiled by "
              "snug %s\n",
              options.bundle.c_str(), (unsigned long long)sizes.arena,
              (unsigned long long)sizes.weights,
              snug_bundle_compiler_version(bundle));
  if (options.describe) {
    std::printf("pipeline '%s', arena alignment %llu, io %llu bytes, lower "
                "bound %llu bytes\n",
                snug_bundle_pipeline(bundle),
                (unsigned long long)sizes.alignment,
                (unsigned long long)sizes.io,
                (unsigned long long)sizes.lower_bound);
    for (int list = 0; list < 2; ++list) {
      size_t count = 0;
      (void)(list ? snug_bundle_output_count(bundle, &count)
                  : snug_bundle_input_count(bundle, &count));
      for (size_t i = 0; i < count; ++i) {
        snug_tensor_info info;
        (void)(list ? snug_bundle_output_info(bundle, i, &info)
                    : snug_bundle_input_info(bundle, i, &info));
        std::vector<int64_t> dims(info.dims, info.dims + info.rank);
        std::printf("%-6s %zu %-20s %-24s offset %-10llu %llu bytes\n",
                    list ? "output" : "input", i, info.name,
                    typeString(uint8_t(info.dtype), dims).c_str(),
                    (unsigned long long)info.arena_offset,
                    (unsigned long long)info.bytes);
      }
    }
    snug_bundle_destroy(bundle);
    return 0;
  }
  snug_session_options sessionOptions;
  snug_session_options_init(&sessionOptions);
  sessionOptions.device = device;
  sessionOptions.poison = options.poison;
  snug_session *session = nullptr;
  if (snug_status s = snug_session_create(bundle, &sessionOptions, &session)) {
    int code = apiError("cannot create a session", s);
    snug_bundle_destroy(bundle);
    return code;
  }
  auto cleanup = [&](int code) {
    snug_session_destroy(session);
    snug_bundle_destroy(bundle);
    return code;
  };

  size_t inputCount = 0, outputCount = 0;
  (void)snug_bundle_input_count(bundle, &inputCount);
  (void)snug_bundle_output_count(bundle, &outputCount);
  for (const auto &entry : options.inputs) {
    size_t index;
    if (snug_bundle_find_input(bundle, entry.first.c_str(), &index))
      return cleanup(usage(snug_last_error()));
  }
  uint64_t state = options.seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < inputCount; ++i) {
    snug_tensor_info info;
    (void)snug_bundle_input_info(bundle, i, &info);
    HostTensor tensor;
    tensor.dtype = uint8_t(info.dtype);
    tensor.dims.assign(info.dims, info.dims + info.rank);
    std::string source;
    auto given = options.inputs.find(info.name);
    if (given != options.inputs.end())
      source = given->second;
    else if (!options.checkDir.empty()) {
      std::string path = findDataFile(options.checkDir, "input", i, info.name);
      if (path.empty()) {
        std::fprintf(stderr, "error: no data for input '%s' in '%s'\n",
                     info.name, options.checkDir.c_str());
        return cleanup(1);
      }
      source = "@" + path;
    } else {
      std::fprintf(stderr, "error: input '%s' needs --input %s=@FILE|random\n",
                   info.name, info.name);
      return cleanup(1);
    }
    std::string error;
    if (source == "random") {
      tensor.bytes.assign(info.bytes, 0);
      fillRandom(tensor, state);
    } else if (source.size() > 1 && source[0] == '@') {
      if (!loadTensor(source.substr(1), info, tensor, error)) {
        std::fprintf(stderr, "error: input '%s': %s\n", info.name, error.c_str());
        return cleanup(1);
      }
    } else {
      std::fprintf(stderr, "error: input '%s': '%s' is not @FILE or random\n",
                   info.name, source.c_str());
      return cleanup(1);
    }
    if (snug_status s = snug_session_set_input(session, i, tensor.bytes.data(),
                                               tensor.bytes.size()))
      return cleanup(apiError("cannot set input", s));
  }

  if (snug_status s = snug_session_run(session))
    return cleanup(apiError("run failed", s));

  if (!options.outputDir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.outputDir, error);
    if (error) {
      std::fprintf(stderr, "error: cannot create '%s': %s\n",
                   options.outputDir.c_str(), error.message().c_str());
      return cleanup(1);
    }
  }
  bool allMatch = true;
  for (size_t i = 0; i < outputCount; ++i) {
    snug_tensor_info info;
    (void)snug_bundle_output_info(bundle, i, &info);
    HostTensor actual;
    actual.name = info.name;
    actual.dtype = uint8_t(info.dtype);
    actual.dims.assign(info.dims, info.dims + info.rank);
    actual.bytes.resize(info.bytes);
    if (snug_status s = snug_session_get_output(session, i, actual.bytes.data(),
                                                actual.bytes.size()))
      return cleanup(apiError("cannot read output", s));
    std::string error;
    if (!options.outputDir.empty() &&
        !writeNpy(options.outputDir + "/" + fileName(info.name) + ".npy",
                  actual, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return cleanup(1);
    }
    std::string type = typeString(actual.dtype, actual.dims);
    if (options.checkDir.empty()) {
      std::printf("output %s %s\n", info.name, type.c_str());
      continue;
    }
    std::string path = findDataFile(options.checkDir, "output", i, info.name);
    if (path.empty()) {
      std::fprintf(stderr, "error: no expected data for output '%s' in '%s'\n",
                   info.name, options.checkDir.c_str());
      return cleanup(1);
    }
    HostTensor expected;
    if (!readTensorFile(path, expected, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return cleanup(1);
    }
    if (expected.dims != actual.dims ||
        expected.bytes.size() / bundle::dtypeSize(expected.dtype) !=
            actual.bytes.size() / bundle::dtypeSize(actual.dtype)) {
      std::printf("output %s %s: MISMATCH, expected shape %s\n", info.name,
                  type.c_str(),
                  typeString(expected.dtype, expected.dims).c_str());
      allMatch = false;
      continue;
    }
    double maxAbs = 0, maxRel = 0;
    size_t bad = 0, count = actual.bytes.size() / bundle::dtypeSize(actual.dtype);
    for (size_t k = 0; k < count; ++k) {
      double a = elementAt(actual, k), b = elementAt(expected, k);
      if (std::isnan(a) || std::isnan(b)) {
        if (std::isnan(a) != std::isnan(b))
          ++bad, maxAbs = INFINITY, maxRel = INFINITY;
        continue;
      }
      if (a == b) // equal infinities too
        continue;
      double diff = std::fabs(a - b);
      maxAbs = std::max(maxAbs, diff);
      if (b != 0)
        maxRel = std::max(maxRel, diff / std::fabs(b));
      if (!(diff <= options.atol + options.rtol * std::fabs(b)))
        ++bad;
    }
    std::printf("output %s %s: max abs %.3g, max rel %.3g: %s", info.name,
                type.c_str(), maxAbs, maxRel, bad ? "MISMATCH" : "ok");
    if (bad)
      std::printf(" (%zu of %zu elements)", bad, count);
    std::printf("\n");
    allMatch = allMatch && !bad;
  }
  if (!options.checkDir.empty())
    std::printf("%s (rtol %g, atol %g)\n",
                allMatch ? "all outputs match" : "outputs differ", options.rtol,
                options.atol);
  return cleanup(allMatch ? 0 : 1);
}
