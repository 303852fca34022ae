//===- FusedEmitter.cpp - CUDA emitter: one kernel per snug.fused region --===//
//
// A snug.fused node becomes one grid-stride kernel over its result elements.
// Per element: each block argument is loaded at its broadcast offset (the
// strides the single elementwise kernels bake in, dims collapsed the same
// way), the body ops follow in order, each written by ElementwiseExpr.h from
// its scalar definition in core/ScalarOps.h, and every yielded value is
// stored (BodyCode.h writes the ops). Intermediates keep the single-op
// kernels' bits: each op's result is rounded to its dtype, as the unfused
// nodes round it in memory, and each op converts its operands to its own
// compute type. A conversion (Cast, snug.cast) is one more op: its value
// in scalar::Cast's compute type, rounded to its result's dtype like any
// intermediate, which is the conversion itself.
//
// Every operand is read before any result is written, so a result placed
// over an operand of its shape is safe, as it is for one elementwise kernel
// (the op table marks snug.fused InPlace). Where takes stored elements:
// a block argument's is the operand element itself, an intermediate's is
// materialized once (a variable of the storage type) where Where needs it.
//
// Not done: vectorized (float4) access, which single f32 kernels use; a
// region is a scalar loop. Nested bodies are rejected by the verifier.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/BodyCode.h"
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/KernelEmitter.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

namespace snug {
namespace cuda {

using namespace codegen;

namespace {

llvm::Error emitFused(EmitContext &context) {
  const ir::Node &node = context.node;
  if (!node.hasBody())
    return context.unsupported("snug.fused without a body");
  const ir::Region &body = *node.getBody();
  if (context.results.empty() ||
      body.getNumArguments() != context.operands.size() ||
      body.getYield().size() != context.results.size())
    return context.unsupported("body does not match the operands and results");
  const TensorRef &first = context.out(0);
  for (const TensorRef &result : context.results)
    if (result.dims != first.dims)
      return context.unsupported("results differ in shape");

  // Offsets of each operand from the result index, after collapsing.
  std::vector<int64_t> dims = first.dims;
  std::vector<std::vector<int64_t>> strides;
  for (const TensorRef &operand : context.operands) {
    strides.emplace_back();
    if (!operand.present || !broadcastStrides(operand, first.dims,
                                              strides.back()))
      return context.unsupported("an operand is absent or does not "
                                 "broadcast to the result");
  }
  collapseDims(dims, strides);
  if (first.numElements == 0)
    return llvm::Error::success();

  Kernel kernel;
  kernel.tag = "fused";
  int64_t extent = first.numElements;
  for (size_t k = 0; k < context.operands.size(); ++k) {
    kernel.addTensor("in" + std::to_string(k), context.in(k), true);
    extent = std::max(extent, context.in(k).numElements);
  }
  for (size_t k = 0; k < context.results.size(); ++k)
    kernel.addTensor("out" + std::to_string(k), context.out(k), false);
  const char *indexType = indexTypeFor(context, first.numElements, extent);

  std::vector<std::string> offsetNames;
  for (size_t k = 0; k < strides.size(); ++k)
    offsetNames.push_back("o" + std::to_string(k));
  std::string loop = emitOffsets(dims, strides, offsetNames, indexType, "i");

  std::vector<BodyArgument> arguments;
  for (unsigned k = 0; k < body.getNumArguments(); ++k) {
    std::string index = std::to_string(k);
    arguments.push_back({"v" + index, "in" + index + "[o" + index + "]"});
    loop += "    const " +
            std::string(cudaComputeTypeName(
                body.getArgument(k)->getType().getDType())) +
            " v" + index + " = snug_load(in" + index + " + o" + index +
            ");\n";
  }
  auto code = buildBodyCode(body, arguments);
  if (!code)
    return context.unsupported(toString(code.takeError()));
  loop += code->element;
  for (size_t k = 0; k < context.results.size(); ++k)
    loop += "    snug_store(out" + std::to_string(k) + " + i, " +
            code->yield[k] + ");\n";
  std::string setup = code->setup;
  kernel.body = setup + gridStrideLoop(indexType, first.numElements) + loop +
                "  }\n";
  launchGridStride(context, std::move(kernel), first.numElements);
  return llvm::Error::success();
}

const EmitterEntry kFusedEmitters[] = {
    {ir::OpCode::SnugFused, emitFused},
};

} // namespace

llvm::ArrayRef<EmitterEntry> getFusedEmitters() { return kFusedEmitters; }

} // namespace cuda
} // namespace snug
