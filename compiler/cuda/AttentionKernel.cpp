//===- AttentionKernel.cpp - What the two snug.attention kernels share ----===//
//
// The operand addressing and the score masks of AttentionKernel.h, in the
// order core/AttentionShape.h gives (AttentionMaskKind): a causal fill, the
// bool or additive mask of operand 3, then operand 4's additive mask or
// bool fill.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/AttentionKernel.h"

#include "llvm/Support/raw_ostream.h"

namespace snug {
namespace cuda {

std::string attentionBatchOffset(const AttentionShape &shape,
                                 const std::vector<int64_t> &strides) {
  std::string offset = "(int64_t)0";
  std::string rest = "(int64_t)b";
  for (size_t d = shape.batchDims.size(); d-- > 0;) {
    if (strides[d] && shape.batchDims[d] != 1)
      offset += " + (" + rest + " % " + cudaIntLiteral(shape.batchDims[d]) +
                ") * " + cudaIntLiteral(strides[d]);
    rest = "(" + rest + " / " + cudaIntLiteral(shape.batchDims[d]) + ")";
  }
  return offset;
}

std::string attentionScoreMask(const AttentionKernelSpec &spec,
                               llvm::StringRef dot, llvm::StringRef row,
                               llvm::StringRef key, llvm::StringRef onFill,
                               llvm::StringRef pad) {
  using S = AttentionShape;
  const AttentionShape &shape = spec.shape;
  const AttentionMaskKind &kind = spec.kind;
  const std::string &acc = spec.acc;
  std::string in = pad.str() + "  ";
  // Element (row, key) of a mask with these strides.
  auto at = [&](const std::vector<int64_t> &strides) {
    return "(" + attentionBatchOffset(shape, strides) + " + (int64_t)(" +
           row.str() + ") * " + cudaIntLiteral(S::rowStride(strides)) +
           " + (int64_t)(" + key.str() + ") * " +
           cudaIntLiteral(S::columnStride(strides)) + ")";
  };
  std::string fillIt = "{\n" + in + "  " + dot.str() + " = (" + acc + ")" +
                       cudaFloatLiteral(double(spec.fill)) + ";\n";
  if (!onFill.empty())
    fillIt += in + "  " + onFill.str() + "\n";
  fillIt += in + "}\n";
  std::string fillIf = spec.fillIf ? "true" : "false";
  std::string text;
  llvm::raw_string_ostream os(text);
  if (spec.scale != 1.0f)
    os << pad << dot << " *= (" << acc << ")"
       << cudaFloatLiteral(double(spec.scale)) << ";\n";
  os << pad << "if ((" << key << ") < " << cudaIntLiteral(shape.skv)
     << ") {\n";
  if (kind.causal)
    os << in << "if ((int64_t)(" << key << ") > (int64_t)(" << row << ") + "
       << cudaIntLiteral(spec.causal) << ") " << fillIt;
  if (kind.additive)
    os << in << dot << " += (" << acc << ")snug_load(mask + "
       << at(shape.maskStrides) << ");\n";
  else if (kind.where)
    os << in << "if (mask[" << at(shape.maskStrides) << "] == " << fillIf
       << ") " << fillIt;
  if (kind.bias)
    os << in << dot << " += (" << acc << ")snug_load(bias + "
       << at(shape.biasStrides) << ");\n";
  else if (kind.whereAfter)
    os << in << "if (mask2[" << at(shape.biasStrides) << "] == " << fillIf
       << ") " << fillIt;
  os << pad << "} else {\n"
     << in << dot << " = -(" << acc << ")snug_inf(); // past Skv: no weight\n"
     << pad << "}\n";
  return os.str();
}

} // namespace cuda
} // namespace snug
