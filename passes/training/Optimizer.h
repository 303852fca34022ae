//===- Optimizer.h - The optimizer pass's number options --------*- C++ -*-===//
//
// The ranges of the optimizer pass's number options (lr, momentum, beta1,
// beta2, eps, weight-decay), shared by the pass and by `snugc train`, whose
// flags of the same names pass them on: one check, two messages (the pass
// names its option, the tool its flag).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_TRAINING_OPTIMIZER_H
#define SNUG_PASSES_TRAINING_OPTIMIZER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace snug {

/// Whether `key` is a number option of the optimizer pass.
bool isOptimizerNumber(llvm::StringRef key);
/// Whether number option `key` means something for optimizer `kind`
/// (sgd, momentum, adam, adamw): --beta1 does not for sgd.
bool appliesToOptimizer(llvm::StringRef key, llvm::StringRef kind);
/// `value` of number option `key`, or an error whose message says what it
/// must be ("must be a positive number, got 'x'"), for the caller to put
/// the option's or the flag's name in front of.
llvm::Expected<double> parseOptimizerNumber(llvm::StringRef key,
                                            llvm::StringRef value);

} // namespace snug

#endif // SNUG_PASSES_TRAINING_OPTIMIZER_H
