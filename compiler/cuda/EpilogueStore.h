//===- EpilogueStore.h - A result element stored through an epilogue -*- C++ -*-===//
//
// How a kernel of an op that takes an epilogue (ir/Module.h; the Conv
// kernels) stores one result element: plainly when the node has none;
// otherwise the element is rounded to the result's dtype (what the unfused
// op would have stored), the epilogue's extra operands are loaded at their
// broadcast offsets from the element's index, the body runs (BodyCode.h)
// and its yield is stored. So the epilogue gives the bits of the
// elementwise nodes run after the op, as the host executor's epilogue does.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_EPILOGUESTORE_H
#define SNUG_COMPILER_CUDA_EPILOGUESTORE_H

#include "compiler/cuda/KernelEmitter.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace snug {
namespace cuda {

class EpilogueStore {
public:
  /// Reads the node's epilogue (none is fine) and checks that its extra
  /// operands broadcast to the result.
  static llvm::Expected<EpilogueStore> create(const EmitContext &context);

  /// Adds the extra operands' pointer parameters (e1, e2, ...).
  void addParams(Kernel &kernel, const EmitContext &context) const;
  /// Statements for the kernel's start (the body ops' parameters).
  const std::string &getSetup() const { return setup; }
  /// Statements storing `value` (of the kernel's accumulator type) as
  /// element `index` (an `indexType` expression) of result `y`, each line
  /// indented by `indent`.
  std::string store(llvm::StringRef index, llvm::StringRef value,
                    llvm::StringRef indent, llvm::StringRef indexType) const;

private:
  bool present = false;
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides; // per extra operand
  std::vector<ir::DType> extraTypes;
  std::string setup, element, yield;
};

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_EPILOGUESTORE_H
