//===- EpilogueStore.cpp - A result element stored through an epilogue ----===//
//
// Block argument 0 is the rounded element `ev0`; argument k > 0 is extra
// operand k - 1, loaded as `evK` from pointer `eK` at offset `eoK`. The
// names stay clear of the convolution kernels' own (s0, o0, e, ...), and
// every store is a block of its own, so a kernel may store at several
// places.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/EpilogueStore.h"
#include "compiler/cuda/BodyCode.h"
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/ElementwiseExpr.h"

namespace snug {
namespace cuda {

using namespace codegen;

llvm::Expected<EpilogueStore> EpilogueStore::create(const EmitContext &context) {
  EpilogueStore result;
  const ir::Node &node = context.node;
  if (!node.hasEpilogue())
    return result;
  const ir::Region &body = *node.getBody();
  unsigned own = node.getNumOwnOperands();
  const TensorRef &y = context.out();
  result.present = true;
  result.dtype = y.dtype;
  result.dims = y.dims;
  std::vector<BodyArgument> arguments{{"ev0", ""}};
  for (unsigned k = own; k < context.operands.size(); ++k) {
    const TensorRef &extra = context.in(k);
    result.strides.emplace_back();
    if (!extra.present || !broadcastStrides(extra, y.dims,
                                            result.strides.back()))
      return context.unsupported("an epilogue operand is absent or does not "
                                 "broadcast to the result");
    result.extraTypes.push_back(extra.dtype);
    std::string name = std::to_string(k - own + 1);
    arguments.push_back({"ev" + name, "e" + name + "[eo" + name + "]"});
  }
  collapseDims(result.dims, result.strides);
  auto code = buildBodyCode(body, arguments);
  if (!code)
    return context.unsupported("epilogue: " + toString(code.takeError()));
  if (code->yield.size() != 1)
    return context.unsupported("an epilogue yields one value");
  result.setup = std::move(code->setup);
  result.element = std::move(code->element);
  result.yield = code->yield[0];
  return result;
}

void EpilogueStore::addParams(Kernel &kernel,
                              const EmitContext &context) const {
  if (!present)
    return;
  unsigned own = context.node.getNumOwnOperands();
  for (unsigned k = own; k < context.operands.size(); ++k)
    kernel.addTensor("e" + std::to_string(k - own + 1), context.in(k), true);
}

std::string EpilogueStore::store(llvm::StringRef index, llvm::StringRef value,
                                 llvm::StringRef indent,
                                 llvm::StringRef indexType) const {
  std::string pad = indent.str();
  if (!present)
    return pad + "snug_store(y + " + index.str() + ", " + value.str() + ");\n";
  std::string text = pad + "{\n";
  std::string inner;
  inner += "    const " + indexType.str() + " yi = " + index.str() + ";\n";
  inner += "    const " + std::string(cudaComputeTypeName(dtype)) +
           " ev0 = " + roundTripExpr(dtype, value) + ";\n";
  std::vector<std::string> names;
  for (size_t k = 0; k < strides.size(); ++k)
    names.push_back("eo" + std::to_string(k + 1));
  std::string type = indexType.str();
  inner += emitOffsets(dims, strides, names, type.c_str(), "yi");
  for (size_t k = 0; k < strides.size(); ++k) {
    std::string name = std::to_string(k + 1);
    inner += "    const " + std::string(cudaComputeTypeName(extraTypes[k])) +
             " ev" + name + " = snug_load(e" + name + " + eo" + name + ");\n";
  }
  inner += element;
  inner += "    snug_store(y + yi, " + yield + ");\n";
  // The pieces are written 4 spaces in; re-indent them under `indent`.
  llvm::SmallVector<llvm::StringRef, 16> lines;
  llvm::StringRef(inner).split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (!line.trim().empty()) {
      line.consume_front("    ");
      text += pad + "  " + line.str() + "\n";
    }
  return text + pad + "}\n";
}

} // namespace cuda
} // namespace snug
