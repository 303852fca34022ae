//===- DedupeWeights.cpp - One weight for identical constants -------------===//
//
// Folding often leaves several weights with the same type and bytes (each
// decoder layer's copy of one causal mask, a shape computed twice): every
// use of a later one is pointed at the first, and the bundle stores it
// once (unused weights are dropped by the driver). Weights are grouped by
// type and a hash of their bytes, then compared byte for byte, so a hash
// collision costs nothing but time. Elided weights (parsed without data)
// are left alone. Outputs are unchanged: the values are equal.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "ir/State.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"

#include <cstring>

namespace snug {
namespace {

class DedupeWeights : public Pass {
public:
  llvm::StringRef getName() const override { return "dedupe-weights"; }
  llvm::Expected<bool> run(ir::Module &module) override;
};

} // namespace

llvm::Expected<bool> DedupeWeights::run(ir::Module &module) {
  llvm::DenseMap<llvm::hash_code, llvm::SmallVector<ir::Value *, 2>> seen;
  unsigned merged = 0;
  uint64_t bytesSaved = 0;
  for (ir::Value *weight : module.getWeights()) {
    // State weights (ir/State.h) are distinct buffers even when their
    // first values agree (every zero momentum buffer of a shape does).
    if (weight->isWeightElided() || !weight->hasUses() ||
        module.isOutput(weight) || ir::isStateWeight(module, weight))
      continue;
    llvm::ArrayRef<uint8_t> data = module.getWeightData(weight);
    llvm::hash_code key = llvm::hash_combine(
        weight->getType().str(),
        llvm::hash_combine_range(data.begin(), data.end()));
    ir::Value *same = nullptr;
    for (ir::Value *earlier : seen[key]) {
      llvm::ArrayRef<uint8_t> other = module.getWeightData(earlier);
      if (earlier->getType() == weight->getType() &&
          other.size() == data.size() &&
          (data.empty() ||
           std::memcmp(other.data(), data.data(), data.size()) == 0)) {
        same = earlier;
        break;
      }
    }
    if (!same) {
      seen[key].push_back(weight);
      continue;
    }
    module.replaceAllUsesWith(weight, same);
    ++merged;
    bytesSaved += data.size();
  }
  addStatistic("weights-merged", merged);
  addStatistic("bytes-saved", int64_t(bytesSaved));
  return merged != 0;
}

std::unique_ptr<Pass> createDedupeWeightsPass() {
  return std::make_unique<DedupeWeights>();
}

} // namespace snug
