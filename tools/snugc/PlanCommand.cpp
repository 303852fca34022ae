//===- PlanCommand.cpp - snugc plan ---------------------------------------===//
//
// `snugc plan MODEL`: import, run the pipeline, plan the arena and print
// only the memory report (stdout), with no GPU and no code generation.
//
//===----------------------------------------------------------------------===//
#include "tools/snugc/PlanSupport.h"
#include "tools/snugc/SnugcCommands.h"
#include "tools/snugc/SnugcCommon.h"


namespace cl = llvm::cl;

namespace snug {
namespace snugc {

cl::SubCommand &getPlanCommand() {
  static cl::SubCommand command(
      "plan", "Print the predicted device memory of an ONNX model");
  return command;
}

static cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx>"),
                                      cl::sub(getPlanCommand()));

int runPlan() {
  int exitCode = ExitOk;
  llvm::Optional<cuda::CudaProgram> program;
  auto module = loadPlanAndReport(modelPath, exitCode, program);
  if (!module)
    return exitCode;
  return ExitOk;
}

} // namespace snugc
} // namespace snug
