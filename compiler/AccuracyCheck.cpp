//===- AccuracyCheck.cpp - What lowering the precision costs -------------===//
#include "compiler/AccuracyCheck.h"

#include "passes/simplify/ConstantEval.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

#include <cmath>

namespace snug {

namespace {

/// A lowered value kept for the comparison: its bytes and element type.
struct Kept {
  ir::DType dtype;
  std::vector<uint8_t> bytes;
};

ValueDivergence compare(const ir::Value &value, llvm::ArrayRef<uint8_t> ref,
                        const Kept &low) {
  ValueDivergence d;
  d.value = value.getName().str();
  const ir::Node *producer = value.getDefiningNode();
  d.node = producer ? producer->describe() : "input";
  d.nodeName = producer ? producer->getName().str() : "";
  d.op = producer ? producer->getOpName().str() : "input";
  ir::DType refType = value.getType().getDType();
  int64_t count = value.getType().getNumElements();
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < count; ++i) {
    double a = readElementAsDouble(refType, ref.data(), i);
    double b = readElementAsDouble(low.dtype, low.bytes.data(), i);
    // A NaN or Inf in the lowered value fails the check even where the
    // reference has one too: the norms below cannot weigh it, and "error
    // 0" would call an all-NaN output exact.
    if (!std::isfinite(b))
      d.nonFinite = true;
    if (!std::isfinite(a))
      d.referenceNonFinite = true;
    if (!std::isfinite(a) || !std::isfinite(b))
      continue;
    diff += (b - a) * (b - a);
    norm += a * a;
    d.maxAbsError = std::max(d.maxAbsError, std::fabs(b - a));
  }
  d.relativeError = std::sqrt(diff) / (norm > 0 ? std::sqrt(norm) : 1.0);
  return d;
}

bool isFloat(ir::DType type) {
  return type == ir::DType::F32 || type == ir::DType::F16 ||
         type == ir::DType::BF16 || type == ir::DType::F64;
}

} // namespace

llvm::Expected<AccuracyResult>
compareLoweredModule(const ir::Module &reference, const ir::Module &lowered,
                     llvm::ArrayRef<std::vector<uint8_t>> inputs) {
  // The lowered run first, keeping every named float result (2 bytes an
  // element in 16 bits), then the reference, compared as it goes.
  llvm::StringMap<Kept> kept;
  auto lowOutputs = evaluateModule(
      lowered, inputs,
      [&](const ir::Value &value, llvm::ArrayRef<uint8_t> bytes) {
        if (!value.getName().empty() && isFloat(value.getType().getDType()))
          kept[value.getName()] = {value.getType().getDType(), bytes.vec()};
      });
  if (!lowOutputs)
    return lowOutputs.takeError();
  for (size_t i = 0; i < lowered.getOutputs().size(); ++i) {
    const ir::Value *output = lowered.getOutputs()[i];
    kept[output->getName()] = {output->getType().getDType(),
                               std::move((*lowOutputs)[i])};
  }
  AccuracyResult result;
  auto refOutputs = evaluateModule(
      reference, inputs,
      [&](const ir::Value &value, llvm::ArrayRef<uint8_t> bytes) {
        auto it = kept.find(value.getName());
        if (value.getName().empty() || it == kept.end() ||
            !isFloat(value.getType().getDType()))
          return;
        result.values.push_back(compare(value, bytes, it->second));
      });
  if (!refOutputs)
    return refOutputs.takeError();
  for (size_t i = 0; i < reference.getOutputs().size(); ++i) {
    const ir::Value *output = reference.getOutputs()[i];
    auto it = kept.find(output->getName());
    if (it == kept.end() || !isFloat(output->getType().getDType())) {
      ValueDivergence same;
      same.value = output->getName().str();
      result.outputs.push_back(same);
      continue;
    }
    result.outputs.push_back(compare(*output, (*refOutputs)[i], it->second));
  }
  return result;
}

const ValueDivergence *findFirstDivergence(const AccuracyResult &result,
                                           double threshold) {
  for (const ValueDivergence &value : result.values)
    if (value.nonFinite || value.relativeError > threshold)
      return &value;
  return nullptr;
}

bool printAccuracy(const AccuracyResult &result, llvm::StringRef precision,
                   double threshold, llvm::raw_ostream &os) {
  bool ok = true;
  os << "accuracy: " << precision << " against fp32 on the host reference "
     << "kernels (threshold " << llvm::format("%g", threshold) << ")\n";
  for (const ValueDivergence &output : result.outputs) {
    bool over = output.nonFinite || output.relativeError > threshold;
    ok &= !over;
    os << "  output '" << output.value << "': relative error "
       << llvm::format("%.3e", output.relativeError) << ", max abs error "
       << llvm::format("%.3e", output.maxAbsError)
       << (output.nonFinite ? ", NaN or Inf" : "")
       << (output.nonFinite && output.referenceNonFinite
               ? " (the fp32 reference has them too)"
               : "")
       << (over ? "  OVER" : "") << '\n';
  }
  if (const ValueDivergence *first = findFirstDivergence(result, threshold))
    os << "  first value over the threshold: '" << first->value << "' of "
       << first->node << ": relative error "
       << llvm::format("%.3e", first->relativeError)
       << (first->nonFinite ? " (NaN or Inf)" : "")
       << " (--keep-fp32=" << first->op << " or the node's name keeps it)\n";
  else
    os << "  no value over the threshold\n";
  return ok;
}

} // namespace snug
