//===- FoldBatchNorms.cpp - Inference BatchNorms folded before lowering ---===//
//
// The fuse pass's two BatchNorm patterns (BatchNormPattern.cpp) as a pass
// of their own, which the import pipeline runs before lower-precision at
// fp16 and bf16 (compiler/Pipeline.cpp). The patterns fold f32 parameters
// only; after lowering they found f16 ones and left every BatchNorm a node
// of its own in 16 bits, where the Conv's result was stored in 16 bits
// before the normalization and its statistics rounded to 16 bits too.
// Folded first, in double, the Conv's weights and bias are rounded once
// and the unnormalized tensor is never stored, and a bundle runs one
// kernel fewer per BatchNorm. On the trained zoo at fp16 (against fp32)
// the PP-OCRv4 recogniser went from 6.2e-3 to 2.7e-3 and the detector from
// 1.09e-2 to 1.005e-2 (its BatchNorm variance of 1e7, which f16 cannot
// hold, no longer reaches a 16-bit weight). At fp32 the fuse pass folds
// them as before, so this pass is not in that pipeline.
//
// Constant per-channel scales and shifts after a Conv fold into it the
// same way, after the BatchNorms (ConvAffinePattern.cpp): the detector's
// learnable affine blocks, two 16-bit roundings per element each, took it
// from 1.005e-2 to 3.7e-3 at fp16 (against fp32, on its rendered page).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/fusion/FusePatterns.h"

namespace snug {
namespace {
class FoldBatchNorms : public Pass {
public:
  llvm::StringRef getName() const override { return "fold-batchnorm"; }
  llvm::Expected<bool> run(ir::Module &module) override {
    unsigned folded = foldBatchNormsIntoConvs(module);
    unsigned scales = foldAffinesIntoConvs(module);
    unsigned affine = rewriteBatchNormsAsAffine(module);
    addStatistic("batchnorms-folded", folded);
    addStatistic("conv-affines-folded", scales);
    addStatistic("batchnorms-affine", affine);
    return folded + scales + affine != 0;
  }
};
} // namespace

std::unique_ptr<Pass> createFoldBatchNormsPass() {
  return std::make_unique<FoldBatchNorms>();
}

} // namespace snug
