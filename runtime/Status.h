//===- Status.h - The runtime's small error type ----------------*- C++ -*-===//
//
// The runtime has no LLVM, so it carries errors in this: a code (the C API's
// snug_status values) and a message that names the file, op or value at
// fault. Ok statuses carry no message. No exceptions.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_STATUS_H
#define SNUG_RUNTIME_STATUS_H

#include "snug/snug.h"

#include <string>
#include <utility>

namespace snug {
namespace rt {

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(snug_status code, std::string message)
      : code(code), message(std::move(message)) {}
  static Status ok() { return Status(); }

  bool isOk() const { return code == SNUG_OK; }
  explicit operator bool() const { return !isOk(); } // true on error
  snug_status getCode() const { return code; }
  const std::string &getMessage() const { return message; }

private:
  snug_status code = SNUG_OK;
  std::string message;
};

inline Status invalidBundle(std::string message) {
  return Status(SNUG_ERROR_INVALID_BUNDLE, std::move(message));
}
inline Status invalidArgument(std::string message) {
  return Status(SNUG_ERROR_INVALID_ARGUMENT, std::move(message));
}

} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_STATUS_H
