//===- AccuracyCheck.cpp - What lowering the precision costs -------------===//
#include "compiler/AccuracyCheck.h"

#include "passes/simplify/ConstantEval.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

#include <cmath>

namespace snug {

namespace {

/// A lowered value kept for the comparison: its bytes and element type,
/// and the lowered module's node that computes it.
struct Kept {
  ir::DType dtype;
  std::vector<uint8_t> bytes;
  const ir::Node *producer = nullptr;
};

/// The node of the lowered module that computes `value`: its producer, or
/// for a cast lower-precision inserted (an output cast back to f32), what
/// it casts. That node's name is what --keep-fp32 takes: a pass before
/// lowering may have moved the value to another node (fold-batchnorm gives
/// a BatchNormalization's result to the Conv it folds into).
const ir::Node *computingNode(const ir::Value &value) {
  const ir::Node *producer = value.getDefiningNode();
  while (producer && producer->is(ir::OpCode::SnugCast) &&
         producer->getOperand(0)->getDefiningNode())
    producer = producer->getOperand(0)->getDefiningNode();
  return producer;
}

Kept keep(const ir::Value &value, std::vector<uint8_t> bytes) {
  return {value.getType().getDType(), std::move(bytes), computingNode(value)};
}

ValueDivergence compare(const ir::Value &value, llvm::ArrayRef<uint8_t> ref,
                        const Kept &low) {
  ValueDivergence d;
  d.value = value.getName().str();
  const ir::Node *producer =
      low.producer ? low.producer : value.getDefiningNode();
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

/// The index of the first largest of `count` elements from `first` (NaN is
/// never the largest; a row of NaN gives `first`).
int64_t argmax(ir::DType type, const uint8_t *data, int64_t first,
               int64_t count) {
  int64_t best = first;
  double bestValue = readElementAsDouble(type, data, first);
  for (int64_t i = first + 1; i < first + count; ++i) {
    double value = readElementAsDouble(type, data, i);
    if (value > bestValue || (std::isnan(bestValue) && !std::isnan(value))) {
      best = i;
      bestValue = value;
    }
  }
  return best - first;
}

/// Fills `d`'s argmax agreement over the last axis of `type`.
void compareArgmax(const ir::TensorType &type, llvm::ArrayRef<uint8_t> ref,
                   const Kept &low, ValueDivergence &d) {
  int64_t classes = type.getRank() ? type.getDims().back() : 1;
  if (classes <= 0)
    return;
  d.classScores = true;
  d.rows = type.getNumElements() / classes;
  for (int64_t row = 0; row < d.rows; ++row)
    d.argmaxAgreed +=
        argmax(type.getDType(), ref.data(), row * classes, classes) ==
        argmax(low.dtype, low.bytes.data(), row * classes, classes);
}

bool isFloat(ir::DType type) {
  return type == ir::DType::F32 || type == ir::DType::F16 ||
         type == ir::DType::BF16 || type == ir::DType::F64;
}

} // namespace

bool isSoftmaxOutput(const ir::Value &output) {
  const ir::Value *value = &output;
  while (value->getDefiningNode() &&
         value->getDefiningNode()->is(ir::OpCode::Identity))
    value = value->getDefiningNode()->getOperand(0);
  const ir::Node *producer = value->getDefiningNode();
  if (!producer || !(producer->is(ir::OpCode::Softmax) ||
                     producer->is(ir::OpCode::LogSoftmax)))
    return false;
  int64_t rank = value->getType().getRank();
  const ir::Attribute *axis = producer->getAttribute("axis");
  int64_t at = axis ? axis->getInt() : -1;
  return rank > 0 && (at == -1 || at == rank - 1);
}

bool isWithinThresholds(const ValueDivergence &output,
                        const AccuracyThresholds &thresholds) {
  if (output.nonFinite)
    return false;
  return output.relativeError <= thresholds.relative ||
         (output.classScores &&
          output.argmaxAgreement() >= thresholds.argmax);
}

llvm::Expected<AccuracyResult>
compareLoweredModule(const ir::Module &reference, const ir::Module &lowered,
                     llvm::ArrayRef<std::vector<uint8_t>> inputs,
                     llvm::ArrayRef<std::string> classOutputs) {
  // The lowered run first, keeping every named float result (2 bytes an
  // element in 16 bits), then the reference, compared as it goes.
  llvm::StringMap<Kept> kept;
  auto lowOutputs = evaluateModule(
      lowered, inputs,
      [&](const ir::Value &value, llvm::ArrayRef<uint8_t> bytes) {
        if (!value.getName().empty() && isFloat(value.getType().getDType()))
          kept[value.getName()] = keep(value, bytes.vec());
      });
  if (!lowOutputs)
    return lowOutputs.takeError();
  for (size_t i = 0; i < lowered.getOutputs().size(); ++i) {
    const ir::Value *output = lowered.getOutputs()[i];
    kept[output->getName()] = keep(*output, std::move((*lowOutputs)[i]));
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
    if (isSoftmaxOutput(*output) ||
        llvm::is_contained(classOutputs, output->getName().str()))
      compareArgmax(output->getType(), (*refOutputs)[i], it->second,
                    result.outputs.back());
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
                   const AccuracyThresholds &thresholds,
                   llvm::raw_ostream &os) {
  bool ok = true;
  double threshold = thresholds.relative;
  os << "accuracy: " << precision << " against fp32 on the host reference "
     << "kernels (threshold " << llvm::format("%g", threshold);
  bool anyClass = llvm::any_of(result.outputs, [](const ValueDivergence &o) {
    return o.classScores;
  });
  if (anyClass && thresholds.argmax <= 1)
    os << "; class scores: or argmax agreement at least "
       << llvm::format("%g", 100 * thresholds.argmax) << " %";
  os << ")\n";
  for (const ValueDivergence &output : result.outputs) {
    bool over = !isWithinThresholds(output, thresholds);
    ok &= !over;
    os << "  output '" << output.value << "': relative error "
       << llvm::format("%.3e", output.relativeError) << ", max abs error "
       << llvm::format("%.3e", output.maxAbsError);
    if (output.classScores)
      os << ", argmax agreement "
         << llvm::format("%.2f", 100 * output.argmaxAgreement()) << " % ("
         << output.argmaxAgreed << " of " << output.rows
         << (output.rows == 1 ? " row)" : " rows)");
    os << (output.nonFinite ? ", NaN or Inf" : "")
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
