//===- Pass.h - The pass interface ------------------------------*- C++ -*-===//
//
// A pass transforms a module in place and says whether it changed it, or
// fails with an error a user can read (naming the node and the reason). Each
// pass has a kebab-case name (its flag in pipelines), optional key=value
// options given in the pipeline string (`plan-memory{alignment=256}`), and
// named counters the pass manager prints with --pass-statistics.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_PASS_H
#define SNUG_PASSES_PASS_H

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace snug {
namespace ir {
class Module;
} // namespace ir

class Pass {
public:
  virtual ~Pass() = default;
  virtual llvm::StringRef getName() const = 0;
  /// Changed (true), unchanged (false), or an error.
  virtual llvm::Expected<bool> run(ir::Module &module) = 0;
  /// Sets an option from the pipeline string; the default knows none.
  virtual llvm::Error setOption(llvm::StringRef key, llvm::StringRef value);

  /// Counters in the order they were first touched.
  using Statistics =
      llvm::MapVector<std::string, int64_t, std::map<std::string, unsigned>>;
  const Statistics &getStatistics() const {
    return statistics;
  }

protected:
  void addStatistic(llvm::StringRef counter, int64_t delta = 1) {
    statistics[counter.str()] += delta;
  }

private:
  Statistics statistics;
};

} // namespace snug

#endif // SNUG_PASSES_PASS_H
