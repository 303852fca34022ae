//===- Passes.h - Pass factories and lookup by name -------------*- C++ -*-===//
#ifndef SNUG_PASSES_PASSES_H
#define SNUG_PASSES_PASSES_H

#include "passes/Pass.h"

#include "llvm/Support/raw_ostream.h"

namespace snug {

#define PASS(NAME, FACTORY, DESCRIPTION) std::unique_ptr<Pass> FACTORY();
#include "passes/Passes.def"

/// A new instance of the registered pass `name`; nullptr if there is none.
std::unique_ptr<Pass> createPassByName(llvm::StringRef name);
/// Writes "  name  description" for every registered pass.
void printRegisteredPasses(llvm::raw_ostream &os);

} // namespace snug

#endif // SNUG_PASSES_PASSES_H
