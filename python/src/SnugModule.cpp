//===- SnugModule.cpp - snug._snug, the Python package's native part ------===//
//
// nanobind bindings over the C++ libraries, no logic of their own: planning
// and bundling through compiler/Driver.h (what snugc runs), the report as
// the JSON and table MemoryReport.cpp prints, the timeline from
// PlanTimeline.cpp, bundles and sessions through the runtime's C API
// (runtime/include/snug/snug.h). The typed Python API is python/snug/.
//
// Errors: compiler errors become the exception classes of snug._errors,
// built here with their fields (UnsupportedOpError from the importer's
// UnsupportedOpsError, BindingError from InputBindingError, BudgetError
// from MemoryBudgetError, snug.Error otherwise). Runtime failures raise
// snug._errors._RuntimeStatus(status, message), which the Python Session
// and load() turn into BundleError, OutOfMemoryError, DeviceError, ...
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"
#include "compiler/MemoryReport.h"
#include "compiler/PlanTimeline.h"
#include "compiler/cuda/Nvrtc.h"
#include "compiler/onnx/OnnxImporter.h"
#include "snug/snug.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>

#ifndef SNUG_VERSION
#define SNUG_VERSION "unknown"
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace {

nb::object errorClass(const char *name) {
  return nb::module_::import_("snug._errors").attr(name);
}

[[noreturn]] void raise(nb::object exception) {
  PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exception.ptr())),
                  exception.ptr());
  throw nb::python_error();
}

nb::dict liveTensor(const snug::LiveTensor &tensor) {
  nb::dict record;
  record["name"] = tensor.name;
  record["op"] = tensor.op;
  record["bytes"] = tensor.bytes;
  return record;
}

/// Raises the snug._errors class for `error`.
[[noreturn]] void raiseError(llvm::Error error) {
  nb::object exception;
  llvm::Error rest = llvm::handleErrors(
      std::move(error),
      [&](const snug::UnsupportedOpsError &unsupported) {
        nb::list ops;
        for (const snug::UnsupportedOp &op : unsupported.getOps()) {
          nb::dict record;
          record["op_type"] = op.opType;
          record["domain"] = op.domain;
          record["opset"] = op.opset;
          record["node"] = op.nodeName;
          ops.append(record);
        }
        std::string text;
        llvm::raw_string_ostream os(text);
        unsupported.log(os);
        exception = errorClass("UnsupportedOpError")(os.str(), "ops"_a = ops);
      },
      [&](const snug::InputBindingError &binding) {
        nb::object dimIndex = binding.getDimIndex() < 0
                                  ? nb::none()
                                  : nb::cast(binding.getDimIndex());
        std::string text;
        llvm::raw_string_ostream os(text);
        binding.log(os);
        exception = errorClass("BindingError")(
            os.str(),
            "input"_a = binding.getInput().empty()
                            ? nb::none()
                            : nb::cast(binding.getInput()),
            "dim"_a = dimIndex,
            "symbol"_a = binding.getSymbol().empty()
                             ? nb::none()
                             : nb::cast(binding.getSymbol()));
      },
      [&](const snug::MemoryBudgetError &budget) {
        std::string text;
        llvm::raw_string_ostream os(text);
        budget.log(os);
        nb::list live;
        for (const snug::LiveTensor &tensor : budget.getReport().liveAtPeak)
          live.append(liveTensor(tensor));
        std::string json;
        llvm::raw_string_ostream jsonOs(json);
        snug::printMemoryReportJson(budget.getReport(), jsonOs);
        exception = errorClass("BudgetError")(
            os.str(), "budget"_a = budget.getBudget(),
            "peak"_a = budget.getPeak(), "live_at_peak"_a = live,
            "report_json"_a = jsonOs.str());
      });
  if (rest) {
    std::string message = llvm::toString(std::move(rest));
    exception = errorClass("Error")(message);
  }
  raise(exception);
}

/// A planned model, kept for its report, timeline and bundle.
struct Planned {
  snug::PlannedModel model;
  std::vector<unsigned> archs;
};

template <class T> T optionOr(const nb::dict &options, const char *key,
                              T fallback) {
  if (!options.contains(key))
    return fallback;
  return nb::cast<T>(options[key]);
}

Planned planModel(const std::string &path, const std::string &modelName,
                  const std::vector<std::string> &inputs,
                  const std::map<std::string, int64_t> &dims,
                  const nb::dict &options) {
  snug::DriverOptions driver;
  for (const std::string &text : inputs) {
    auto binding = snug::parseInputBinding(text);
    if (!binding)
      raiseError(binding.takeError());
    driver.import.inputs.push_back(std::move(*binding));
  }
  for (const auto &[symbol, value] : dims)
    if (llvm::Error error = snug::parseDimBinding(
            symbol + "=" + std::to_string(value), driver.import))
      raiseError(std::move(error));
  driver.import.allowExternalDataOutsideModelDir = optionOr<bool>(
      options, "allow_external_data_outside_model_dir", false);
  snug::PlanningOptions &planning = driver.planning;
  planning.planner = optionOr<std::string>(options, "planner", "best");
  planning.alignment = optionOr<uint64_t>(options, "alignment", 256);
  planning.timeLimitSeconds = optionOr<double>(options, "time_limit", 2.0);
  planning.schedule = optionOr<bool>(options, "schedule", true);
  planning.verifyPlan = optionOr<bool>(options, "verify_plan",
                                       planning.verifyPlan);
  planning.target = optionOr<std::string>(
      options, "target", snug::cuda::isNvrtcAvailable() ? "cuda" : "host");
  planning.cublasWorkspaceBytes =
      optionOr<uint64_t>(options, "cublas_workspace", uint64_t(4) << 20);
  driver.archs = optionOr<std::vector<unsigned>>(options, "archs", {80, 90});
  driver.pipeline = optionOr<std::string>(
      options, "passes", "import");
  planning.precision = optionOr<std::string>(options, "precision", "fp32");
  planning.keepFp32 = optionOr<std::string>(options, "keep_fp32", "");
  planning.ioPrecision =
      optionOr<std::string>(options, "io_precision", "model");
  driver.passes.disabledPasses = optionOr<std::vector<std::string>>(
      options, "disable_pass", {});
  driver.memoryBudgetBytes = optionOr<uint64_t>(options, "memory_budget", 0);
  planning.allowMicroBatches =
      optionOr<bool>(options, "allow_micro_batches", false);
  planning.allowOffload = optionOr<bool>(options, "allow_offload", false);
  planning.offloadBandwidthGBs =
      optionOr<double>(options, "offload_bandwidth", 25.0);
  // Given means passed (snug/__init__.py drops the keywords left None):
  // planModel refuses one that acts only beside another, as snugc does.
  if (options.contains("memory_budget"))
    driver.given.memoryBudget = std::to_string(driver.memoryBudgetBytes);
  driver.given.offloadBandwidth = options.contains("offload_bandwidth");
  driver.given.keepFp32 = options.contains("keep_fp32");
  driver.given.ioPrecision = options.contains("io_precision");
  if (planning.target == "cuda" && !snug::cuda::isNvrtcAvailable())
    raiseError(llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "target='cuda': this snug was built without NVRTC (no CUDA "
        "toolkit); use target='host'"));
  llvm::Expected<snug::PlannedModel> planned =
      [&]() -> llvm::Expected<snug::PlannedModel> {
    nb::gil_scoped_release release;
    return snug::planModel(path, modelName, driver);
  }();
  if (!planned)
    raiseError(planned.takeError());
  return Planned{std::move(*planned), driver.archs};
}

// The runtime, through its C API.
[[noreturn]] void raiseStatus(snug_status status) {
  raise(errorClass("_RuntimeStatus")(int(status),
                                     std::string(snug_last_error())));
}

void check(snug_status status) {
  if (status != SNUG_OK)
    raiseStatus(status);
}

struct Bundle {
  snug_bundle *handle = nullptr;
  explicit Bundle(const std::string &path) {
    check(snug_bundle_load(path.c_str(), &handle));
  }
  ~Bundle() { snug_bundle_destroy(handle); }
  Bundle(const Bundle &) = delete;
  Bundle &operator=(const Bundle &) = delete;
};

nb::dict tensorInfo(const snug_tensor_info &info) {
  nb::dict record;
  record["name"] = std::string(info.name);
  record["dtype"] = int(info.dtype);
  record["shape"] = std::vector<int64_t>(info.dims, info.dims + info.rank);
  record["bytes"] = info.bytes;
  record["arena_offset"] = info.arena_offset;
  return record;
}

nb::list tensorInfos(const Bundle &bundle, bool inputs) {
  size_t count = 0;
  check(inputs ? snug_bundle_input_count(bundle.handle, &count)
               : snug_bundle_output_count(bundle.handle, &count));
  nb::list list;
  for (size_t i = 0; i < count; ++i) {
    snug_tensor_info info;
    check(inputs ? snug_bundle_input_info(bundle.handle, i, &info)
                 : snug_bundle_output_info(bundle.handle, i, &info));
    list.append(tensorInfo(info));
  }
  return list;
}

struct Session {
  snug_session *handle = nullptr;
  nb::object bundle; // keeps the bundle alive
  nb::object arena;  // keeps a caller arena alive
  Session(nb::object bundleObject, int device, uintptr_t arenaPointer,
          uint64_t arenaBytes, nb::object arenaOwner)
      : bundle(bundleObject), arena(arenaOwner) {
    snug_session_options options;
    snug_session_options_init(&options);
    options.device = device ? SNUG_DEVICE_CUDA : SNUG_DEVICE_HOST;
    options.arena = reinterpret_cast<void *>(arenaPointer);
    options.arena_bytes = arenaBytes;
    const Bundle &native = nb::cast<const Bundle &>(bundle);
    check(snug_session_create(native.handle, &options, &handle));
  }
  ~Session() { snug_session_destroy(handle); }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
};

using HostArray = nb::ndarray<nb::c_contig, nb::device::cpu>;
using ReadOnlyHostArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

} // namespace

NB_MODULE(_snug, m) {
  m.doc() = "snug's native part: use the snug package, not this module.";
  m.attr("version") = SNUG_VERSION;
  m.def("default_target", []() {
    return std::string(snug::cuda::isNvrtcAvailable() ? "cuda" : "host");
  });
  m.def("parse_byte_size", [](const std::string &text, const std::string &name) {
    auto bytes = snug::parseByteSize(text, name);
    if (!bytes)
      raiseError(bytes.takeError());
    return *bytes;
  });

  nb::class_<Planned>(m, "Planned")
      .def("report_json",
           [](const Planned &planned) {
             std::string text;
             llvm::raw_string_ostream os(text);
             snug::printMemoryReportJson(planned.model.report, os);
             return os.str();
           })
      .def("report_pretty",
           [](const Planned &planned) {
             std::string text;
             llvm::raw_string_ostream os(text);
             snug::printMemoryReportPretty(planned.model.report, os);
             return os.str();
           })
      .def("timeline_html",
           [](const Planned &planned) {
             std::string html;
             llvm::raw_string_ostream os(html);
             if (llvm::Error error = snug::writePlanTimeline(
                     *planned.model.module, planned.model.report.model, os))
               raiseError(std::move(error));
             return os.str();
           })
      .def("bundle_bytes", [](const Planned &planned) {
        llvm::Expected<std::vector<uint8_t>> bytes = [&]() {
          nb::gil_scoped_release release;
          return snug::serializePlannedModel(planned.model, planned.archs,
                                             SNUG_VERSION);
        }();
        if (!bytes)
          raiseError(bytes.takeError());
        return nb::bytes(reinterpret_cast<const char *>(bytes->data()),
                         bytes->size());
      });
  m.def("plan_model", &planModel, "path"_a, "model_name"_a, "inputs"_a,
        "dims"_a, "options"_a);

  nb::class_<Bundle>(m, "Bundle")
      .def(nb::init<const std::string &>())
      .def("inputs", [](const Bundle &b) { return tensorInfos(b, true); })
      .def("outputs", [](const Bundle &b) { return tensorInfos(b, false); })
      .def("sizes",
           [](const Bundle &b) {
             snug_sizes sizes;
             check(snug_bundle_sizes(b.handle, &sizes));
             nb::dict record;
             record["arena"] = sizes.arena;
             record["alignment"] = sizes.alignment;
             record["weights"] = sizes.weights;
             record["io"] = sizes.io;
             record["lower_bound"] = sizes.lower_bound;
             record["device_arena"] = sizes.device_arena;
             record["workspace"] = sizes.workspace;
             return record;
           })
      .def("pipeline",
           [](const Bundle &b) {
             return std::string(snug_bundle_pipeline(b.handle));
           })
      .def("compiler_version", [](const Bundle &b) {
        return std::string(snug_bundle_compiler_version(b.handle));
      });

  nb::class_<Session>(m, "Session")
      .def(nb::init<nb::object, int, uintptr_t, uint64_t, nb::object>(),
           "bundle"_a, "device"_a, "arena_pointer"_a, "arena_bytes"_a,
           "arena_owner"_a.none())
      .def("set_input",
           [](Session &s, size_t index, ReadOnlyHostArray array) {
             check(snug_session_set_input(s.handle, index, array.data(),
                                          array.nbytes()));
           })
      .def("run",
           [](Session &s) {
             snug_status status;
             {
               nb::gil_scoped_release release;
               status = snug_session_run(s.handle);
             }
             check(status);
           })
      .def("get_output",
           [](Session &s, size_t index, HostArray array) {
             check(snug_session_get_output(s.handle, index, array.data(),
                                           array.nbytes()));
           })
      .def("memory", [](const Session &s) {
        snug_memory_stats stats;
        check(snug_session_memory(s.handle, &stats));
        nb::dict record;
        record["allocated_bytes"] = stats.allocated_bytes;
        record["allocations"] = stats.allocations;
        record["device_used_bytes"] = stats.device_used_bytes;
        record["arena_bytes"] = stats.arena_bytes;
        record["weights_bytes"] = stats.weights_bytes;
        return record;
      })
      .def("uses_cuda_graphs", [](const Session &s) {
        int uses = 0;
        check(snug_session_uses_cuda_graphs(s.handle, &uses));
        return uses != 0;
      });
}
