//===- SnugCudaSim.cpp - Run a bundle's device plan on the host -----------===//
//
//   snug-cudasim BUNDLE --kernels LIB.so [--input NAME=@FILE|random]...
//                [--check DIR] [--rtol R] [--atol A] [--output-dir DIR]
//                [--seed N] [--schedule forward|reverse|shuffle] [--trace]
//                [--stop-after N] [--steps N] [--state-dir DIR]
//
// Runs the CUDA backend's product without a GPU: the bundle's device plan
// (core/DevicePlan.h), step by step, with the emitted kernels compiled
// as host C++ (LIB.so, from tests/cudasim/compile_kernels.sh) and GEMMs by a
// reference implementation of cuBLAS's. The device arena is host memory
// filled with 0xFF (NaN in every float type), weights are a read-only copy.
// Inputs, --check and the exit codes follow snug-run: 0 ok (and every output
// matches), 1 user error or mismatch, 2 internal error, 3 a kernel fault
// (crash, barrier deadlock or divergence, a write out of the arena).
// A training step (persistent state) runs --steps N times as snug-run does:
// after each run every state's output is copied over its weight, each
// step's loss is printed, and --state-dir gets the final state.
//
//===----------------------------------------------------------------------===//
#include "runtime/BundleReader.h"
#include "runtime/LabelCheck.h"
#include "tests/cudasim/SimExecutor.h"
#include "tools/snug-run/RunFlags.h"
#include "tools/snug-run/TensorFiles.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace snug;

namespace {

enum ExitCode { ExitOk = 0, ExitUser = 1, ExitInternal = 2, ExitKernel = 3 };

struct Options : RunFlags {
  std::string kernels;
  cudasim::RunOptions run;
};

int usage(const char *message) {
  std::fprintf(stderr,
               "error: %s\nusage: snug-cudasim BUNDLE --kernels LIB.so "
               "[--input NAME=@FILE|random]... [--check DIR] [--rtol R] "
               "[--atol A] [--output-dir DIR] [--seed N] "
               "[--schedule forward|reverse|shuffle] [--trace] "
               "[--stop-after N]\n",
               message);
  return ExitUser;
}

} // namespace

int main(int argc, char **argv) {
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
    if (cursor.is("--kernels")) {
      if (!cursor.value(options.kernels))
        return usage("--kernels needs a shared object");
    } else if (cursor.is("--schedule")) {
      if (!cursor.value(text))
        return usage("--schedule needs forward, reverse or shuffle");
      if (text == "forward")
        options.run.schedule = 0;
      else if (text == "reverse")
        options.run.schedule = 1;
      else if (text == "shuffle")
        options.run.schedule = 2;
      else
        return usage(("unknown schedule '" + text + "'").c_str());
    } else if (cursor.is("--stop-after")) {
      double number;
      if (!cursor.number(number, error))
        return usage(error.c_str());
      options.run.stopAfter = size_t(number);
    } else if (arg == "--trace") {
      options.run.trace = stdout;
    } else if (arg == "--help" || arg == "-h") {
      usage("help");
      return ExitOk;
    } else {
      return usage(("unknown option '" + arg + "'").c_str());
    }
  }
  if (options.bundle.empty())
    return usage("no bundle given");
  if (options.kernels.empty())
    return usage("no --kernels LIB.so given (tests/cudasim/compile_kernels.sh "
                 "builds it from snugc compile --dump-cuda's source)");

  std::unique_ptr<rt::Bundle> bundle;
  if (rt::Status status = rt::readBundle(options.bundle, bundle)) {
    std::fprintf(stderr, "error: %s\n", status.getMessage().c_str());
    return ExitUser;
  }
  if (!bundle->hasDevicePlan) {
    std::fprintf(stderr,
                 "error: bundle '%s' has no device plan (compiled with "
                 "--target=host?)\n",
                 options.bundle.c_str());
    return ExitUser;
  }
  const bundle::DevicePlan &plan = bundle->devicePlan;
  std::printf("snug-cudasim: bundle %s: device arena %llu bytes, weights "
              "%llu bytes, %zu kernels, %zu steps\n",
              options.bundle.c_str(), (unsigned long long)plan.arenaBytes,
              (unsigned long long)bundle->weightsSize, plan.kernels.size(),
              plan.steps.size());

  std::string error;
  cudasim::KernelLibrary kernels;
  if (!kernels.load(options.kernels, plan.kernels, error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return ExitUser;
  }
  cudasim::DeviceMemory memory;
  if (!memory.allocate(plan.arenaBytes, 0xFF, bundle->getWeights(),
                       bundle->weightsSize, error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return ExitInternal;
  }
  // The pinned host region of offloaded values, poisoned like the arena.
  memory.pinned.assign(bundle->hostSize, 0xFF);
  cudasim::installCrashHandler(ExitKernel);

  for (const auto &entry : options.inputs) {
    bool known = false;
    for (const rt::TensorDesc &input : bundle->inputs)
      known |= input.name == entry.first;
    if (!known)
      return usage(("the bundle has no input '" + entry.first + "'").c_str());
  }
  uint64_t state = options.seed * 0x9e3779b97f4a7c15ull + 1;
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < bundle->inputs.size(); ++i) {
    const rt::TensorDesc &input = bundle->inputs[i];
    const rt::Location &place = input.location;
    auto given = options.inputs.find(input.name);
    HostTensor tensor;
    if (!loadInputData(input.name, i, place.dtype, place.dims,
                       given == options.inputs.end() ? "" : given->second,
                       options.checkDir, state, tensor, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return ExitUser;
    }
    if (place.kind != bundle::Arena || tensor.bytes.size() != place.bytes) {
      std::fprintf(stderr, "error: input '%s' is not %llu bytes in the arena\n",
                   input.name.c_str(), (unsigned long long)place.bytes);
      return ExitInternal;
    }
    inputs.push_back(std::move(tensor));
  }

  auto start = std::chrono::steady_clock::now();
  cudasim::RunStats stats;
  auto describe = [&](uint32_t op) { return bundle->ops[op].describe(op); };
  for (uint64_t step = 1; step <= options.steps; ++step) {
    // The plan may reuse the inputs' memory: each step writes them again.
    for (size_t i = 0; i < inputs.size(); ++i)
      std::memcpy(memory.arena + bundle->inputs[i].location.offset,
                  inputs[i].bytes.data(), inputs[i].bytes.size());
    // The check record, zeroed before each run as the CUDA executor does.
    uint64_t *record = plan.hasCheckRecord()
                           ? reinterpret_cast<uint64_t *>(
                                 memory.arena + plan.checkRecordOffset)
                           : nullptr;
    if (record)
      std::memset(record, 0, bundle::kCheckRecordBytes);
    if (!cudasim::runDevicePlan(plan, kernels, memory, options.run, describe,
                                stats, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return ExitKernel;
    }
    // A failed check (a bad label) is the caller's: no write-back, exit 1.
    if (record && options.run.stopAfter >= plan.steps.size()) {
      uint64_t words[bundle::kCheckRecordWords];
      std::memcpy(words, record, sizeof words);
      if (rt::Status status = rt::checkRecordStatus(*bundle, words)) {
        std::fprintf(stderr, "error: %s\n", status.getMessage().c_str());
        return status.getCode() == SNUG_ERROR_INVALID_ARGUMENT ? ExitUser
                                                               : ExitInternal;
      }
    }
    for (const rt::StateDesc &entry : bundle->state)
      memory.writeBackState(entry.weightOffset,
                            bundle->outputs[entry.output].location.offset,
                            entry.bytes);
    for (const rt::TensorDesc &output : bundle->outputs) {
      if (bundle->state.empty() || output.name != "loss" ||
          output.location.kind != bundle::Arena)
        continue;
      const uint8_t *bytes = memory.arena + output.location.offset;
      HostTensor loss{output.name, output.location.dtype, {},
                      std::vector<uint8_t>(bytes,
                                           bytes + output.location.bytes)};
      std::printf("%s\n", formatStepLoss(step, loss).c_str());
    }
  }
  if (!options.stateDir.empty() && !makeDirectory(options.stateDir, error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return ExitUser;
  }
  if (!options.stateDir.empty()) {
    for (const rt::StateDesc &entry : bundle->state) {
      const rt::Location &place = bundle->outputs[entry.output].location;
      const uint8_t *bytes = memory.weights + entry.weightOffset;
      HostTensor value{entry.name, place.dtype, place.dims,
                       std::vector<uint8_t>(bytes, bytes + entry.bytes)};
      if (!writeNpy(options.stateDir + "/" + tensorFileName(entry.name) +
                        ".npy",
                    value, error)) {
        std::fprintf(stderr, "error: %s\n", error.c_str());
        return ExitUser;
      }
    }
  }
  double elapsed = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  std::printf("ran %zu launches (%llu blocks, %llu threads, %llu barrier "
              "rounds), %zu GEMMs, %zu copies in %.3f s (kernels %.3f s, "
              "GEMMs %.3f s)\n",
              stats.launches, (unsigned long long)stats.blocks,
              (unsigned long long)stats.threads, kernels.rounds(), stats.gemms,
              stats.copies, elapsed, stats.launchSeconds, stats.gemmSeconds);
  if (options.run.stopAfter < plan.steps.size())
    std::printf("stopped after step %zu of %zu\n", options.run.stopAfter,
                plan.steps.size());

  if (!options.outputDir.empty() && !makeDirectory(options.outputDir, error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return ExitUser;
  }
  bool allMatch = true;
  for (size_t i = 0; i < bundle->outputs.size(); ++i) {
    const rt::TensorDesc &output = bundle->outputs[i];
    const rt::Location &place = output.location;
    HostTensor actual;
    actual.name = output.name;
    actual.dtype = place.dtype;
    actual.dims = place.dims;
    const uint8_t *bytes = place.kind == bundle::Weight
                               ? memory.weights + place.offset
                               : memory.arena + place.offset;
    actual.bytes.assign(bytes, bytes + place.bytes);
    if (!options.outputDir.empty() &&
        !writeNpy(options.outputDir + "/" + tensorFileName(output.name) +
                      ".npy",
                  actual, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return ExitUser;
    }
    if (options.checkDir.empty()) {
      std::printf("output %s %s\n", output.name.c_str(),
                  tensorTypeString(actual.dtype, actual.dims).c_str());
      continue;
    }
    std::string report;
    int match = checkOutputData(actual, i, options.checkDir, options.rtol,
                                options.atol, report, error);
    if (match < 0) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return ExitUser;
    }
    std::printf("%s\n", report.c_str());
    allMatch = allMatch && match;
  }
  if (!options.checkDir.empty())
    std::printf("%s (rtol %g, atol %g)\n",
                allMatch ? "all outputs match" : "outputs differ", options.rtol,
                options.atol);
  return allMatch ? ExitOk : ExitUser;
}
