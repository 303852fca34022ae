//===- PassManager.h - Pipelines of passes ----------------------*- C++ -*-===//
//
// A pipeline is a string: pass names separated by commas, each optionally
// with options in braces, e.g. "dce,plan-memory{alignment=256 planner=search}".
// The pass manager runs the passes in order, verifies the module after each
// (on by default in builds with assertions), dumps IR after chosen passes,
// times them and collects their statistics. snugc and snug-opt share it.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_PASSMANAGER_H
#define SNUG_PASSES_PASSMANAGER_H

#include "ir/Printer.h"
#include "passes/Pass.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <utility>
#include <vector>

namespace snug {

/// One element of a pipeline: a pass and its options in the order they are
/// written, `pass{key=value key=value}` in the text. What builds pipelines
/// in code (compiler/Pipeline.cpp) edits a list of these and prints it
/// once, rather than splicing text.
struct PipelineStep {
  std::string pass;
  std::vector<std::pair<std::string, std::string>> options;
};
using PipelineSteps = std::vector<PipelineStep>;

/// The text PassManager::addPipeline reads: steps joined by ',', each
/// step's options in braces joined by ' ' (no braces without options).
std::string printPipeline(llvm::ArrayRef<PipelineStep> steps);

/// Inserts `step` before the first step that runs `pass`; false (and
/// `steps` unchanged) when none does.
bool insertStepBefore(PipelineSteps &steps, llvm::StringRef pass,
                      PipelineStep step);

/// Removes every step that runs `pass`; how many there were.
size_t removeSteps(PipelineSteps &steps, llvm::StringRef pass);

struct PassManagerOptions {
  bool verifyEach = defaultVerifyEach();
  std::vector<std::string> printIrAfter;
  bool printIrAfterAll = false;
  bool timePasses = false;
  bool statistics = false;
  /// Passes named here are left out of the pipeline.
  std::vector<std::string> disabledPasses;
  /// Where IR dumps, timings and statistics go (stderr by default).
  llvm::raw_ostream *diagnostics = nullptr;
  ir::PrintOptions printOptions;

  static bool defaultVerifyEach();
};

class PassManager {
public:
  explicit PassManager(PassManagerOptions options = {})
      : options(std::move(options)) {}

  void addPass(std::unique_ptr<Pass> pass) { passes.push_back(std::move(pass)); }
  /// Appends the passes of a pipeline string; errors name the bad element.
  llvm::Error addPipeline(llvm::StringRef pipeline);
  /// Runs every pass not disabled; the first error stops the run and is
  /// returned with the pass's name in front.
  llvm::Error run(ir::Module &module);

  size_t size() const { return passes.size(); }
  /// A counter of the first pass named `passName` that ran; None if none.
  llvm::Optional<int64_t> getStatistic(llvm::StringRef passName,
                                       llvm::StringRef counter) const;

private:
  bool isDisabled(llvm::StringRef name) const;
  void printTimings(llvm::raw_ostream &os) const;
  void printStatistics(llvm::raw_ostream &os) const;

  PassManagerOptions options;
  std::vector<std::unique_ptr<Pass>> passes;
  std::vector<double> seconds;
};

} // namespace snug

#endif // SNUG_PASSES_PASSMANAGER_H
