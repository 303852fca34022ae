//===- snug.hpp - A thin C++ wrapper over the snug C API --------*- C++ -*-===//
//
// RAII handles over snug.h; errors stay status codes (no exceptions, as in
// the rest of snug): every call returns a Status holding the code and the
// message of snug_last_error().
//
//   snug::Bundle bundle;
//   if (snug::Status s = bundle.load("model.snug")) { puts(s.message.c_str()); }
//   snug::Session session;
//   s = session.create(bundle);               // host, own arena
//   (or: snug_session_options o; snug_session_options_init(&o);
//        o.device = SNUG_DEVICE_CUDA; s = session.create(bundle, &o);)
//   s = session.setInput(0, x.data(), x.size() * sizeof(float));
//   s = session.run();
//   s = session.getOutput(0, y.data(), y.size() * sizeof(float));
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_SNUG_HPP
#define SNUG_SNUG_HPP

#include "snug/snug.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace snug {

struct Status {
  snug_status code = SNUG_OK;
  std::string message;
  explicit operator bool() const { return code != SNUG_OK; } // true on error
  static Status from(snug_status code) {
    return code == SNUG_OK ? Status() : Status{code, snug_last_error()};
  }
};

class Bundle {
public:
  Bundle() = default;
  Bundle(const Bundle &) = delete;
  Bundle &operator=(const Bundle &) = delete;
  Bundle(Bundle &&other) noexcept : handle(std::exchange(other.handle, nullptr)) {}
  ~Bundle() { snug_bundle_destroy(handle); }

  Status load(const std::string &path) {
    snug_bundle_destroy(std::exchange(handle, nullptr));
    return Status::from(snug_bundle_load(path.c_str(), &handle));
  }
  Status sizes(snug_sizes &out) const {
    return Status::from(snug_bundle_sizes(handle, &out));
  }
  size_t inputCount() const {
    size_t n = 0;
    (void)snug_bundle_input_count(handle, &n);
    return n;
  }
  size_t outputCount() const {
    size_t n = 0;
    (void)snug_bundle_output_count(handle, &n);
    return n;
  }
  Status inputInfo(size_t index, snug_tensor_info &info) const {
    return Status::from(snug_bundle_input_info(handle, index, &info));
  }
  Status outputInfo(size_t index, snug_tensor_info &info) const {
    return Status::from(snug_bundle_output_info(handle, index, &info));
  }
  const snug_bundle *get() const { return handle; }

private:
  snug_bundle *handle = nullptr;
};

class Session {
public:
  Session() = default;
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  Session(Session &&other) noexcept : handle(std::exchange(other.handle, nullptr)) {}
  ~Session() { snug_session_destroy(handle); }

  /// `bundle` must outlive the session.
  Status create(const Bundle &bundle, const snug_session_options *options = nullptr) {
    snug_session_destroy(std::exchange(handle, nullptr));
    return Status::from(snug_session_create(bundle.get(), options, &handle));
  }
  Status setInput(size_t index, const void *data, size_t bytes) {
    return Status::from(snug_session_set_input(handle, index, data, bytes));
  }
  Status run() { return Status::from(snug_session_run(handle)); }
  Status getOutput(size_t index, void *data, size_t bytes) {
    return Status::from(snug_session_get_output(handle, index, data, bytes));
  }
  /// Host pointers for a host session, device pointers for a CUDA one.
  Status inputData(size_t index, void *&data) {
    return Status::from(snug_session_input_data(handle, index, &data));
  }
  Status outputData(size_t index, const void *&data) {
    return Status::from(snug_session_output_data(handle, index, &data));
  }
  Status memory(snug_memory_stats &stats) const {
    return Status::from(snug_session_memory(handle, &stats));
  }
  /// Whether runs replay a CUDA graph (snug_session_uses_cuda_graphs).
  Status usesCudaGraphs(bool &uses) const {
    int value = 0;
    Status status = Status::from(snug_session_uses_cuda_graphs(handle, &value));
    uses = value != 0;
    return status;
  }
  /// `warmup` untimed runs, then one time in milliseconds per entry of
  /// `milliseconds` (its size is the number of timed runs).
  Status benchmark(uint32_t warmup, std::vector<double> &milliseconds) {
    return Status::from(snug_session_benchmark(
        handle, warmup, uint32_t(milliseconds.size()), milliseconds.data()));
  }
  snug_session *get() { return handle; }

private:
  snug_session *handle = nullptr;
};

} // namespace snug

#endif // SNUG_SNUG_HPP
