//===- BatchNormBatchStats.h - BatchNorm in training mode -------*- C++ -*-===//
//-*-===//
//
// The rewrite of the batchnorm-batch-stats pass, for autodiff's
// batch-stats=1 too (see BatchNormBatchStats.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_TRAINING_BATCHNORMBATCHSTATS_H
#define SNUG_PASSES_TRAINING_BATCHNORMBATCHSTATS_H

#include "ir/Module.h"

#include "llvm/Support/Error.h"

namespace snug {

/// Rewrites every BatchNormalization of `module` in place into the
/// normalization by its batch's statistics; whether any was. An error when
/// a node's running-statistics results are read.
llvm::Expected<bool> useBatchStatistics(ir::Module &module);

} // namespace snug

#endif // SNUG_PASSES_TRAINING_BATCHNORMBATCHSTATS_H
