//===- PassManager.cpp - Pipelines of passes ------------------------------===//
#include "passes/PassManager.h"
#include "ir/Module.h"
#include "ir/Verifier.h"
#include "passes/Passes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <chrono>

namespace snug {

bool PassManagerOptions::defaultVerifyEach() {
#ifndef NDEBUG
  return true;
#else
  return false;
#endif
}

std::string printPipeline(llvm::ArrayRef<PipelineStep> steps) {
  std::string text;
  for (const PipelineStep &step : steps) {
    if (!text.empty())
      text += ',';
    text += step.pass;
    if (step.options.empty())
      continue;
    text += '{';
    for (size_t i = 0; i < step.options.size(); ++i)
      text +=
          (i ? " " : "") + step.options[i].first + "=" + step.options[i].second;
    text += '}';
  }
  return text;
}

bool insertStepBefore(PipelineSteps &steps, llvm::StringRef pass,
                      PipelineStep step) {
  auto at = llvm::find_if(
      steps, [&](const PipelineStep &each) { return each.pass == pass; });
  if (at == steps.end())
    return false;
  steps.insert(at, std::move(step));
  return true;
}

size_t removeSteps(PipelineSteps &steps, llvm::StringRef pass) {
  size_t before = steps.size();
  llvm::erase_if(steps,
                 [&](const PipelineStep &each) { return each.pass == pass; });
  return before - steps.size();
}

static llvm::Error pipelineError(llvm::StringRef pipeline,
                                 const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "pipeline '" + pipeline + "': " + message);
}

/// Splits at top-level commas (commas inside braces belong to options).
static llvm::Expected<llvm::SmallVector<llvm::StringRef, 8>>
splitPipeline(llvm::StringRef pipeline) {
  llvm::SmallVector<llvm::StringRef, 8> elements;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= pipeline.size(); ++i) {
    char c = i < pipeline.size() ? pipeline[i] : ',';
    if (c == '{')
      ++depth;
    else if (c == '}' && --depth < 0)
      return pipelineError(pipeline, "unbalanced '}'");
    if (c != ',' || depth != 0)
      continue;
    llvm::StringRef element = pipeline.slice(start, i).trim();
    if (element.empty())
      return pipelineError(pipeline, "empty pass name");
    elements.push_back(element);
    start = i + 1;
  }
  if (depth != 0)
    return pipelineError(pipeline, "unbalanced '{'");
  return elements;
}

llvm::Error PassManager::addPipeline(llvm::StringRef pipeline) {
  if (pipeline.trim().empty())
    return llvm::Error::success();
  auto elements = splitPipeline(pipeline);
  if (!elements)
    return elements.takeError();
  for (llvm::StringRef element : *elements) {
    llvm::StringRef name = element.take_until([](char c) { return c == '{'; });
    llvm::StringRef optionText = element.drop_front(name.size());
    name = name.trim();
    std::unique_ptr<Pass> pass = createPassByName(name);
    if (!pass) {
      std::string known;
      llvm::raw_string_ostream os(known);
      printRegisteredPasses(os);
      return pipelineError(pipeline, "unknown pass '" + name +
                                         "'; registered passes:\n" + os.str());
    }
    if (!optionText.empty()) {
      if (!optionText.endswith("}"))
        return pipelineError(pipeline, "options of '" + name +
                                           "' must end with '}'");
      llvm::SmallVector<llvm::StringRef, 4> options;
      optionText.drop_front().drop_back().split(options, ' ', -1, false);
      for (llvm::StringRef option : options) {
        auto keyValue = option.split('=');
        if (keyValue.first.empty() || keyValue.second.empty())
          return pipelineError(pipeline, "option '" + option + "' of '" +
                                             name + "' is not key=value");
        if (llvm::Error error =
                pass->setOption(keyValue.first, keyValue.second))
          return pipelineError(pipeline, llvm::toString(std::move(error)));
      }
    }
    addPass(std::move(pass));
  }
  return llvm::Error::success();
}

bool PassManager::isDisabled(llvm::StringRef name) const {
  return llvm::is_contained(options.disabledPasses, name.str());
}

llvm::Error PassManager::run(ir::Module &module) {
  llvm::raw_ostream &os =
      options.diagnostics ? *options.diagnostics : llvm::errs();
  seconds.assign(passes.size(), 0.0);
  for (size_t i = 0; i < passes.size(); ++i) {
    Pass &pass = *passes[i];
    if (isDisabled(pass.getName()))
      continue;
    auto start = std::chrono::steady_clock::now();
    llvm::Expected<bool> changed = pass.run(module);
    seconds[i] = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
    if (!changed)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(), "in pass '" + pass.getName() +
                                              "': " +
                                              toString(changed.takeError()));
    if (options.verifyEach)
      if (llvm::Error error = ir::verifyModule(module))
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "the module does not verify after pass '" + pass.getName() +
                "' (a bug in snug; please report it):\n" +
                toString(std::move(error)));
    if (options.printIrAfterAll ||
        llvm::is_contained(options.printIrAfter, pass.getName().str())) {
      os << "// -----// IR Dump After " << pass.getName() << " //----- //\n";
      ir::printModule(module, os, options.printOptions);
      os << '\n';
    }
  }
  if (options.timePasses)
    printTimings(os);
  if (options.statistics)
    printStatistics(os);
  os.flush();
  return llvm::Error::success();
}

llvm::Optional<int64_t>
PassManager::getStatistic(llvm::StringRef passName,
                          llvm::StringRef counter) const {
  for (const std::unique_ptr<Pass> &pass : passes) {
    if (pass->getName() != passName)
      continue;
    auto it = pass->getStatistics().find(counter.str());
    if (it != pass->getStatistics().end())
      return it->second;
  }
  return llvm::None;
}

void PassManager::printTimings(llvm::raw_ostream &os) const {
  double total = 0;
  for (double value : seconds)
    total += value;
  os << "===-------------------------------------------------------------===\n"
     << "                      ... Pass execution timing report ...\n"
     << "===-------------------------------------------------------------===\n"
     << llvm::format("  Total Execution Time: %.4f seconds\n\n", total)
     << "   ---Wall Time---  --- Name ---\n";
  for (size_t i = 0; i < passes.size(); ++i) {
    if (isDisabled(passes[i]->getName()))
      continue;
    os << llvm::format("   %.4f (%5.1f%%)  ", seconds[i],
                       total > 0 ? 100.0 * seconds[i] / total : 0.0)
       << passes[i]->getName() << '\n';
  }
  os << llvm::format("   %.4f (100.0%%)  Total\n", total);
}

void PassManager::printStatistics(llvm::raw_ostream &os) const {
  os << "===-------------------------------------------------------------===\n"
     << "                          ... Statistics Collected ...\n"
     << "===-------------------------------------------------------------===\n";
  for (const std::unique_ptr<Pass> &pass : passes)
    for (const auto &entry : pass->getStatistics())
      os << llvm::format("%10lld %s - ", static_cast<long long>(entry.second),
                         pass->getName().str().c_str())
         << entry.first << '\n';
}

} // namespace snug
