//===- SnugRun.cpp - Run a bundle and compare with reference data ---------===//
//
//   snug-run model.snug [--device host|cuda] [--input NAME=@x.npy|@x.pb|random]
//            [--output-dir DIR] [--check DIR] [--rtol R] [--atol A]
//            [--poison] [--seed N] [--describe] [--runs N] [--warmup W]
//            [--no-graphs] [--steps N] [--state-dir DIR]
//
// Loads a bundle through the C API, sets every input (from a file, random,
// or, with --check DIR, from DIR/input_N.pb or DIR/NAME.npy), runs once,
// writes outputs as NAME.npy to --output-dir, and with --check compares each
// output with DIR/output_N.pb or DIR/NAME.npy: |a - b| <= atol + rtol * |b|
// elementwise, NaN matching NaN. --describe prints the bundle's sizes, the
// toolchain of its CUDA kernels (and the oldest driver that loads them) and
// inputs/outputs (dtype, dims, arena offset, bytes) and runs nothing.
//
// On --device cuda it also prints the device memory the bundle predicts
// (weights + device arena) against what the session allocated ("match" or
// "MISMATCH") and what its creation took from the device, then times
// --warmup (3) + --runs (20) runs (the second captures a CUDA graph, the
// rest replay it; --no-graphs runs step by step) and prints the median, min
// and max latency. The outputs checked are those of the last run, which
// must equal the first run's bit for bit. On the host, runs are timed only
// when --runs or --warmup is given (the reference kernels are slow).
//
// A training step (a bundle with persistent state, snugc train) runs
// --steps N times on the same inputs, each run the next step, and prints
// each step's loss; the outputs written and checked are the last step's,
// and --state-dir DIR gets every state's final value (NAME.npy). Such a
// bundle is not timed: its repeated runs are different steps.
// Runtime only: no LLVM, no protobuf.
// Exit codes: 0 ok (and every output matches), 1 user error or mismatch,
// 2 internal error.
//
//===----------------------------------------------------------------------===//
#include "snug/snug.h"

#include "ir/Float16.h"
#include "core/BundleFormat.h"
#include "core/DevicePlan.h"
#include "core/FileAccess.h"
#include "core/SignalCleanup.h"
#include "tools/snug-run/RunFlags.h"
#include "tools/snug-run/TensorFiles.h"

#include <algorithm>
#include <cerrno>
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

struct Options : RunFlags {
  std::string device = "host";
  bool poison = false;
  bool describe = false;
  uint32_t runs = 20, warmup = 3;
  bool timingGiven = false; // --runs or --warmup on the command line
  bool graphs = true;
};

const char *const usageText =
    "usage: snug-run MODEL.snug [--device host|cuda] "
    "[--input NAME=@FILE|random]... [--output-dir DIR] "
    "[--check DIR] [--rtol R] [--atol A] [--poison] [--seed N] "
    "[--describe] [--runs N] [--warmup W] [--no-graphs] [--steps N] "
    "[--state-dir DIR]\n";

int usage(const char *message) {
  std::fprintf(stderr, "error: %s\n%s", message, usageText);
  return 1;
}

std::string typeString(uint8_t dtype, const std::vector<int64_t> &dims) {
  return tensorTypeString(dtype, dims);
}

int apiError(const char *what, snug_status status) {
  // "no CUDA device: ..." says all there is to say.
  if (status == SNUG_ERROR_NO_DEVICE)
    std::fprintf(stderr, "error: %s\n", snug_last_error());
  else
    std::fprintf(stderr, "error: %s: %s\n", what, snug_last_error());
  // A plan larger than this machine's memory is the bundle's and the
  // machine's matter, not snug's (exit 1); a kernel failing is snug's.
  bool internal = status == SNUG_ERROR_RUNTIME;
  return internal ? 2 : 1;
}

/// "CUDA kernels: NVRTC 12.0, nvJitLink 12.0, PTX ISA 8.0; needs a CUDA
/// 12.0 or newer driver", or that none is recorded (bundles before format 8).
void printToolchain(const snug_bundle *loaded) {
  snug_kernel_toolchain t;
  if (snug_bundle_kernel_toolchain(loaded, &t) != SNUG_OK)
    return;
  if (!t.min_driver_version) {
    std::printf("CUDA kernels: toolchain not recorded\n");
    return;
  }
  std::printf("CUDA kernels: NVRTC %s, nvJitLink %s, PTX ISA %s; needs a "
              "CUDA %s or newer driver\n",
              bundle::cudaVersionString(t.nvrtc_version).c_str(),
              bundle::cudaVersionString(t.nvjitlink_version).c_str(),
              bundle::ptxIsaString(t.ptx_isa).c_str(),
              bundle::cudaVersionString(t.min_driver_version).c_str());
}

/// Predicted (from the bundle) against allocated (by the session).
void printDeviceMemory(const snug_sizes &sizes, const snug_session *session) {
  snug_memory_stats stats;
  if (snug_session_memory(session, &stats) != SNUG_OK) {
    std::printf("device memory: unavailable (%s)\n", snug_last_error());
    return;
  }
  uint64_t predicted = sizes.weights + sizes.device_arena;
  std::printf("device memory: predicted %llu bytes (weights %llu + device "
              "arena %llu, cuBLAS workspace %llu inside), allocated %llu "
              "bytes in %llu allocations: %s\n",
              (unsigned long long)predicted, (unsigned long long)sizes.weights,
              (unsigned long long)sizes.device_arena,
              (unsigned long long)sizes.workspace,
              (unsigned long long)stats.allocated_bytes,
              (unsigned long long)stats.allocations,
              predicted == stats.allocated_bytes ? "match" : "MISMATCH");
  std::printf("device memory used by the session: %llu bytes (allocations "
              "plus stream, module and cuBLAS overheads)\n",
              (unsigned long long)stats.device_used_bytes);
}

void printLatency(std::vector<double> milliseconds, const Options &options,
                  const char *clock) {
  if (milliseconds.empty()) {
    std::printf("latency: no timed runs (%u warmup)\n", options.warmup);
    return;
  }
  std::sort(milliseconds.begin(), milliseconds.end());
  size_t n = milliseconds.size();
  double median = n % 2 ? milliseconds[n / 2]
                        : (milliseconds[n / 2 - 1] + milliseconds[n / 2]) / 2;
  std::printf("latency: median %.3f ms, min %.3f ms, max %.3f ms over %zu "
              "runs after %u warmup (%s)\n",
              median, milliseconds.front(), milliseconds.back(), n,
              options.warmup, clock);
}

/// 0, or 1 with a message when what was printed could not be written (a
/// full disk behind `> file`): a report that never arrived is no success.
int checkStdout() {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout))
    return 0;
  std::fprintf(stderr, "error: cannot write stdout: %s\n", std::strerror(errno));
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  // A signal removes the .npy temporaries being written; a bundle (or its
  // weights) shrunk under its mapping is an error naming it, exit 1, not
  // a SIGBUS (core/SignalCleanup.h).
  removeTemporariesOnSignals();
  reportFaultsInMappedFiles(1);
  Options options;
  ArgCursor cursor(argc, argv);
  while (cursor.next()) {
    std::string text, error;
    switch (parseRunFlag(cursor, options, error)) {
    case FlagResult::Taken:
      continue;
    case FlagResult::Error:
      return usage(error.c_str());
    case FlagResult::NotMine:
      break;
    }
    const std::string &arg = cursor.current();
    if (cursor.is("--device")) {
      if (!cursor.value(options.device))
        return usage("--device needs a value");
    } else if (cursor.is("--runs") || cursor.is("--warmup")) {
      bool runs = cursor.is("--runs");
      if (!cursor.value(text))
        return usage(runs ? "--runs needs a count" : "--warmup needs a count");
      char *end;
      unsigned long count = std::strtoul(text.c_str(), &end, 10);
      if (text.empty() || *end || text[0] == '-' || count > 1000000)
        return usage(("bad count '" + text + "'").c_str());
      (runs ? options.runs : options.warmup) = uint32_t(count);
      options.timingGiven = true;
    } else if (arg == "--no-graphs") {
      options.graphs = false;
    } else if (arg == "--poison") {
      options.poison = true;
    } else if (arg == "--describe") {
      options.describe = true;
    } else if (arg == "--help" || arg == "-h") {
      std::printf("snug-run: run a .snug bundle and compare its outputs\n%s",
                  usageText);
      return 0;
    } else {
      return usage(("unknown option '" + arg + "'").c_str());
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
    if (sizes.device_arena) {
      std::printf("CUDA device arena %llu bytes (cuBLAS workspace %llu "
                  "inside)\n",
                  (unsigned long long)sizes.device_arena,
                  (unsigned long long)sizes.workspace);
      printToolchain(bundle);
    }
    uint64_t pinned = 0;
    if (snug_bundle_pinned_host_bytes(bundle, &pinned) == SNUG_OK && pinned)
      std::printf("pinned host region %llu bytes (offloaded values; host "
                  "memory)\n",
                  (unsigned long long)pinned);
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
    return checkStdout();
  }
  snug_session_options sessionOptions;
  snug_session_options_init(&sessionOptions);
  sessionOptions.device = device;
  sessionOptions.poison = options.poison;
  sessionOptions.cuda_graphs = options.graphs;
  snug_session *session = nullptr;
  if (snug_status s = snug_session_create(bundle, &sessionOptions, &session)) {
    int code = apiError("cannot create a session", s);
    snug_bundle_destroy(bundle);
    return code;
  }
  auto cleanup = [&](int code) {
    snug_session_destroy(session);
    snug_bundle_destroy(bundle);
    return code ? code : checkStdout();
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
  std::vector<HostTensor> inputs(inputCount);
  for (size_t i = 0; i < inputCount; ++i) {
    snug_tensor_info info;
    (void)snug_bundle_input_info(bundle, i, &info);
    HostTensor tensor;
    std::string source, error;
    auto given = options.inputs.find(info.name);
    if (given != options.inputs.end())
      source = given->second;
    if (!loadInputData(info.name, i, uint8_t(info.dtype),
                       std::vector<int64_t>(info.dims, info.dims + info.rank),
                       source, options.checkDir, state, tensor, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return cleanup(1);
    }
    if (snug_status s = snug_session_set_input(session, i, tensor.bytes.data(),
                                               tensor.bytes.size()))
      return cleanup(apiError("cannot set input", s));
    inputs[i] = std::move(tensor);
  }

  size_t stateCount = 0, lossIndex = 0;
  (void)snug_bundle_state_count(bundle, &stateCount);
  if (stateCount && options.timingGiven)
    return cleanup(usage("--runs and --warmup time repeated runs of one "
                         "step; each run of this bundle is the next training "
                         "step (it has persistent state): use --steps"));
  bool hasLoss = stateCount &&
                 snug_bundle_find_output(bundle, "loss", &lossIndex) == SNUG_OK;
  pauseForTest("run");
  for (uint64_t step = 1; step <= options.steps; ++step) {
    // A run may reuse the inputs' memory: each step sets them again.
    for (size_t i = 0; step > 1 && i < inputCount; ++i)
      if (snug_status s = snug_session_set_input(
              session, i, inputs[i].bytes.data(), inputs[i].bytes.size()))
        return cleanup(apiError("cannot set input", s));
    if (snug_status s = snug_session_run(session))
      return cleanup(apiError("run failed", s));
    if (!hasLoss)
      continue;
    snug_tensor_info info;
    (void)snug_bundle_output_info(bundle, lossIndex, &info);
    HostTensor loss{info.name, uint8_t(info.dtype), {}, {}};
    loss.bytes.resize(info.bytes);
    if (snug_status s = snug_session_get_output(session, lossIndex,
                                                loss.bytes.data(), info.bytes))
      return cleanup(apiError("cannot read output", s));
    std::printf("%s\n", formatStepLoss(step, loss).c_str());
  }
  if (device == SNUG_DEVICE_CUDA)
    printDeviceMemory(sizes, session);
  if (!options.stateDir.empty()) {
    std::string why;
    if (!makeDirectory(options.stateDir, why)) {
      std::fprintf(stderr, "error: %s\n", why.c_str());
      return cleanup(1);
    }
    for (size_t i = 0; i < stateCount; ++i) {
      snug_tensor_info info;
      (void)snug_bundle_state_info(bundle, i, &info);
      HostTensor value{info.name, uint8_t(info.dtype),
                       std::vector<int64_t>(info.dims, info.dims + info.rank),
                       std::vector<uint8_t>(info.bytes)};
      if (snug_status s = snug_session_get_state(
              session, info.name, value.bytes.data(), value.bytes.size()))
        return cleanup(apiError("cannot read state", s));
      if (!writeNpy(options.stateDir + "/" + tensorFileName(info.name) + ".npy",
                    value, why)) {
        std::fprintf(stderr, "error: %s\n", why.c_str());
        return cleanup(1);
      }
    }
  }

  // Timing; the outputs checked below are then the last run's (a CUDA graph
  // replay), which must equal the first run's exactly.
  bool timed =
      (device == SNUG_DEVICE_CUDA || options.timingGiven) && !stateCount;
  std::vector<std::vector<uint8_t>> firstOutputs;
  if (timed && options.warmup + uint64_t(options.runs) > 0) {
    for (size_t i = 0; i < outputCount; ++i) {
      snug_tensor_info info;
      (void)snug_bundle_output_info(bundle, i, &info);
      firstOutputs.emplace_back(info.bytes);
      if (snug_status s = snug_session_get_output(
              session, i, firstOutputs.back().data(), info.bytes))
        return cleanup(apiError("cannot read output", s));
    }
    for (size_t i = 0; i < inputCount; ++i)
      if (snug_status s = snug_session_set_input(
              session, i, inputs[i].bytes.data(), inputs[i].bytes.size()))
        return cleanup(apiError("cannot set input", s));
    std::vector<double> milliseconds(options.runs);
    if (snug_status s = snug_session_benchmark(
            session, options.warmup, options.runs, milliseconds.data()))
      return cleanup(apiError("timed run failed", s));
    // What the session did, not what was asked: a plan with branches runs
    // step by step even with graphs on.
    int graphs = 0;
    (void)snug_session_uses_cuda_graphs(session, &graphs);
    printLatency(milliseconds, options,
                 device != SNUG_DEVICE_CUDA ? "wall clock"
                 : graphs                   ? "CUDA events, graphs on"
                 : options.graphs
                     ? "CUDA events, graphs off: the plan runs step by step"
                     : "CUDA events, graphs off");
  }

  if (!options.outputDir.empty()) {
    std::string why;
    if (!makeDirectory(options.outputDir, why)) {
      std::fprintf(stderr, "error: %s\n", why.c_str());
      return cleanup(1);
    }
  }
  // No output file may be the bundle, an input's file or a reference.
  if (!options.outputDir.empty()) {
    std::vector<NamedPath> read = {{options.bundle, "bundle"}}, written;
    for (const auto &entry : options.inputs)
      if (entry.second.size() > 1 && entry.second[0] == '@')
        read.push_back({entry.second.substr(1), "--input " + entry.first});
    for (size_t i = 0; i < outputCount; ++i) {
      snug_tensor_info info;
      (void)snug_bundle_output_info(bundle, i, &info);
      written.push_back({options.outputDir + "/" + tensorFileName(info.name) +
                             ".npy",
                         std::string("output '") + info.name + "'"});
      if (!options.checkDir.empty())
        read.push_back({findDataFile(options.checkDir, "output", i, info.name),
                        "--check reference"});
    }
    for (size_t i = 0; i < inputCount && !options.checkDir.empty(); ++i) {
      snug_tensor_info info;
      (void)snug_bundle_input_info(bundle, i, &info);
      read.push_back({findDataFile(options.checkDir, "input", i, info.name),
                      "--check input"});
    }
    std::string error;
    if (!checkDistinctFiles(read, written, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
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
    if (!firstOutputs.empty() && firstOutputs[i] != actual.bytes) {
      std::printf("output %s: MISMATCH between the first and the last run "
                  "(a repeated run must give identical bytes)\n",
                  info.name);
      allMatch = false;
    }
    std::string error;
    if (!options.outputDir.empty() &&
        !writeNpy(options.outputDir + "/" + tensorFileName(info.name) + ".npy",
                  actual, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return cleanup(1);
    }
    if (options.checkDir.empty()) {
      std::printf("output %s %s\n", info.name,
                  typeString(actual.dtype, actual.dims).c_str());
      continue;
    }
    std::string report;
    int match = checkOutputData(actual, i, options.checkDir, options.rtol,
                                options.atol, report, error);
    if (match < 0) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return cleanup(1);
    }
    std::printf("%s\n", report.c_str());
    allMatch = allMatch && match;
  }
  if (!options.checkDir.empty())
    std::printf("%s (rtol %g, atol %g)\n",
                allMatch ? "all outputs match" : "outputs differ", options.rtol,
                options.atol);
  return cleanup(allMatch ? 0 : 1);
}
