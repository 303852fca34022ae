//===- ConformanceDriver.cpp - Import every ONNX backend test -------------===//
//
// snug-conformance DIR...: for every test directory under each DIR (one
// holding model.onnx, in the ONNX backend-test layout), binds the graph
// inputs to the shapes of test_data_set_0/input_N.pb, imports the model with
// the default pipeline and tallies the outcome. Prints `imported N / TOTAL`
// per root and overall, the unsupported ops by how many tests they block,
// and the other failures (with --verbose, each message). Importing is the
// tier's first stage; running the host executor against output_N.pb joins
// when the executor exists.
//
// Exit status: 1 when an import hit an internal error (a module that does
// not verify) or fewer than --min-imported tests imported; 0 otherwise.
// Unsupported ops and rejected models are listed, not failures.
//
//===----------------------------------------------------------------------===//
#include "compiler/Pipeline.h"
#include "compiler/onnx/OnnxImporter.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#define ONNX_ML 1
#include "onnx/onnx_pb.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

namespace cl = llvm::cl;
using namespace snug;

static cl::list<std::string> roots(cl::Positional, cl::OneOrMore,
                                   cl::desc("<test root>..."));
static cl::opt<bool> verbose("verbose", cl::desc("Print every failure"));
static cl::opt<unsigned> minImported("min-imported",
                                     cl::desc("Fail when fewer tests import"),
                                     cl::init(0));

/// Element size of the integer and bool ONNX types the driver freezes.
static llvm::Optional<std::pair<ir::DType, unsigned>> frozenType(int type) {
  switch (type) {
  case onnx::TensorProto::INT64:
    return std::make_pair(ir::DType::I64, 8u);
  case onnx::TensorProto::INT32:
    return std::make_pair(ir::DType::I32, 4u);
  case onnx::TensorProto::BOOL:
    return std::make_pair(ir::DType::Bool, 1u);
  case onnx::TensorProto::FLOAT:
    return std::make_pair(ir::DType::F32, 4u);
  default:
    return llvm::None;
  }
}

/// Integer and bool inputs are shape parameters, indices or flags in the
/// node tests (Reshape's shape, Slice's starts, Dropout's training_mode):
/// snug compiles for known values of those, so the driver freezes them to
/// their test data, as a deployment would.
/// Float scalars and vectors after the first input are parameters too
/// (Clip's bounds, Resize's scales, Range's start).
static bool isParameter(const onnx::TensorProto &tensor, unsigned index) {
  if (tensor.data_type() != onnx::TensorProto::FLOAT)
    return frozenType(tensor.data_type()).hasValue();
  return index > 0 && tensor.dims_size() <= 1;
}

static void freezeInput(const onnx::TensorProto &tensor,
                        const std::string &name, ImportOptions &options) {
  auto type = frozenType(tensor.data_type());
  if (!type)
    return;
  ir::TensorType tensorType(type->first,
                            llvm::SmallVector<int64_t, 4>(tensor.dims().begin(),
                                                          tensor.dims().end()));
  std::vector<uint8_t> bytes;
  if (tensor.has_raw_data()) {
    bytes.assign(tensor.raw_data().begin(), tensor.raw_data().end());
  } else {
    for (int64_t value : tensor.int64_data())
      bytes.insert(bytes.end(), reinterpret_cast<uint8_t *>(&value),
                   reinterpret_cast<uint8_t *>(&value) + 8);
    for (float value : tensor.float_data())
      bytes.insert(bytes.end(), reinterpret_cast<uint8_t *>(&value),
                   reinterpret_cast<uint8_t *>(&value) + 4);
    for (int32_t value : tensor.int32_data())
      bytes.insert(bytes.end(), reinterpret_cast<uint8_t *>(&value),
                   reinterpret_cast<uint8_t *>(&value) + type->second);
  }
  if (bytes.size() == tensorType.getByteSize())
    options.frozenInputs[name] = {tensorType, bytes};
}

/// Input bindings from the model's graph inputs and input_N.pb files.
static ImportOptions readBindings(llvm::StringRef dir) {
  ImportOptions options;
  std::vector<InputBinding> &bindings = options.inputs;
  llvm::SmallString<256> modelPath(dir);
  llvm::sys::path::append(modelPath, "model.onnx");
  auto buffer = llvm::MemoryBuffer::getFile(modelPath);
  onnx::ModelProto model;
  if (!buffer || !model.ParseFromArray((*buffer)->getBufferStart(),
                                       (*buffer)->getBufferSize()))
    return options;
  std::set<std::string> initializers;
  for (const onnx::TensorProto &tensor : model.graph().initializer())
    initializers.insert(tensor.name());
  unsigned index = 0;
  for (const onnx::ValueInfoProto &input : model.graph().input()) {
    if (initializers.count(input.name()))
      continue;
    llvm::SmallString<256> dataPath(dir);
    llvm::sys::path::append(dataPath, "test_data_set_0",
                            "input_" + std::to_string(index++) + ".pb");
    auto data = llvm::MemoryBuffer::getFile(dataPath);
    onnx::TensorProto tensor;
    if (!data || !tensor.ParseFromArray((*data)->getBufferStart(),
                                        (*data)->getBufferSize()))
      continue;
    if (isParameter(tensor, index - 1)) {
      freezeInput(tensor, input.name(), options);
      continue;
    }
    InputBinding binding;
    binding.name = input.name();
    binding.dims.assign(tensor.dims().begin(), tensor.dims().end());
    bindings.push_back(binding);
  }
  return options;
}

namespace {
struct Tally {
  unsigned total = 0, imported = 0, unsupported = 0, rejected = 0, internal = 0;
};
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::ParseCommandLineOptions(argc, argv,
                              "snug-conformance: import ONNX backend tests\n");
  Tally overall;
  std::map<std::string, unsigned> unsupportedOps;
  std::vector<std::string> failures;
  auto start = std::chrono::steady_clock::now();
  for (const std::string &root : roots) {
    std::vector<std::string> dirs;
    std::error_code errorCode;
    for (llvm::sys::fs::directory_iterator it(root, errorCode), end;
         it != end && !errorCode; it.increment(errorCode)) {
      llvm::SmallString<256> model(it->path());
      llvm::sys::path::append(model, "model.onnx");
      if (llvm::sys::fs::exists(model))
        dirs.push_back(it->path());
    }
    std::sort(dirs.begin(), dirs.end());
    Tally tally;
    for (const std::string &dir : dirs) {
      ++tally.total;
      ImportOptions options = readBindings(dir);
      llvm::SmallString<256> model(dir);
      llvm::sys::path::append(model, "model.onnx");
      auto module = importAndRunPipeline(model, options);
      if (module) {
        ++tally.imported;
        continue;
      }
      std::string message;
      bool unsupported = false;
      llvm::handleAllErrors(
          module.takeError(),
          [&](const UnsupportedOpsError &error) {
            unsupported = true;
            std::set<std::string> ops;
            for (const UnsupportedOp &op : error.getOps())
              ops.insert(op.domain == "ai.onnx" ? op.opType
                                                : op.domain + "::" + op.opType);
            for (const std::string &op : ops)
              ++unsupportedOps[op];
            message = error.message();
          },
          [&](const llvm::ErrorInfoBase &error) { message = error.message(); });
      if (unsupported) {
        ++tally.unsupported;
      } else if (llvm::StringRef(message).contains("internal error") ||
                 llvm::StringRef(message).contains("does not verify")) {
        ++tally.internal;
        failures.push_back("INTERNAL " + message);
      } else {
        ++tally.rejected;
        failures.push_back(message);
      }
      if (verbose)
        llvm::errs() << message << "\n";
    }
    llvm::outs() << root << ": imported " << tally.imported << " / "
                 << tally.total << " (unsupported ops " << tally.unsupported
                 << ", rejected " << tally.rejected << ", internal errors "
                 << tally.internal << ")\n";
    overall.total += tally.total;
    overall.imported += tally.imported;
    overall.unsupported += tally.unsupported;
    overall.rejected += tally.rejected;
    overall.internal += tally.internal;
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  llvm::outs() << "imported " << overall.imported << " / " << overall.total
               << " in " << llvm::format("%.1f", seconds) << " s\n";
  std::vector<std::pair<unsigned, std::string>> byCount;
  for (const auto &entry : unsupportedOps)
    byCount.push_back({entry.second, entry.first});
  std::sort(byCount.begin(), byCount.end(), [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  llvm::outs() << "unsupported ops (tests blocked):";
  for (const auto &entry : byCount)
    llvm::outs() << " " << entry.second << "(" << entry.first << ")";
  llvm::outs() << "\n";
  if (!verbose && !failures.empty()) {
    llvm::outs() << "other failures (first line each; --verbose for all):\n";
    for (const std::string &failure : failures)
      llvm::outs() << "  " << llvm::StringRef(failure).split('\n').first
                   << "\n";
  }
  if (overall.internal)
    return 1;
  return overall.imported < minImported ? 1 : 0;
}
