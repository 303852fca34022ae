//===- FusedEmitter.cpp - CUDA emitter: one kernel per snug.fused region --===//
//
// A snug.fused node becomes one grid-stride kernel over its result elements.
// Per element: each block argument is loaded at its broadcast offset (the
// strides the single elementwise kernels bake in, dims collapsed the same
// way), the body ops follow in order, each written by ElementwiseExpr.h from
// its scalar definition in runtime/ScalarOps.h, and every yielded value is
// stored. Intermediates keep the single-op kernels' bits: each op's result
// is rounded to its dtype (roundTripExpr: what storing and loading it again
// gives), as the unfused nodes round it in memory, and each op converts its
// operands to its own compute type.
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
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/ElementwiseExpr.h"
#include "compiler/cuda/KernelEmitter.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

namespace snug {
namespace cuda {

using namespace codegen;

namespace {

/// What the body sees of one of its values while the kernel is written.
struct BodyValue {
  ir::DType dtype;
  std::string widened; // the element as snug_load gives it (a name)
  std::string stored;  // the element as stored; empty until needed
};

/// `text`'s non-empty lines, each indented by `spaces`.
std::string indent(llvm::StringRef text, unsigned spaces) {
  std::string result;
  llvm::SmallVector<llvm::StringRef, 8> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (!line.trim().empty())
      result += std::string(spaces, ' ') + line.str() + "\n";
  return result;
}

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
  const char *indexType = indexTypeFor(first.numElements, extent);

  std::vector<std::string> offsetNames;
  for (size_t k = 0; k < strides.size(); ++k)
    offsetNames.push_back("o" + std::to_string(k));
  std::string loop = emitOffsets(dims, strides, offsetNames, indexType, "i");

  llvm::DenseMap<const ir::Value *, BodyValue> values;
  for (unsigned k = 0; k < body.getNumArguments(); ++k) {
    const ir::Value *argument = body.getArgument(k);
    std::string index = std::to_string(k);
    BodyValue value{argument->getType().getDType(), "v" + index,
                    "in" + index + "[o" + index + "]"};
    loop += "    const " + std::string(cudaComputeTypeName(value.dtype)) +
            " " + value.widened + " = snug_load(in" + index + " + o" + index +
            ");\n";
    values[argument] = value;
  }

  std::string setup;
  unsigned next = body.getNumArguments();
  for (const std::unique_ptr<ir::Node> &inner : body.getNodes()) {
    if (inner->getNumResults() != 1)
      return context.unsupported(inner->describe() +
                                 " has other than one result");
    bool select = inner->is(ir::OpCode::Where);
    std::vector<std::string> operands;
    std::vector<ir::DType> types;
    for (unsigned k = 0; k < inner->getNumOperands(); ++k) {
      const ir::Value *operand = inner->getOperand(k);
      if (!operand) {
        operands.push_back("");
        types.push_back(ir::DType::F32);
        continue;
      }
      auto it = values.find(operand);
      if (it == values.end())
        return context.unsupported(inner->describe() +
                                   " uses a value its body does not define");
      BodyValue &value = it->second;
      // Where moves stored elements; everything else takes widened ones.
      if (select && k > 0) {
        if (value.stored.empty()) {
          value.stored = "s" + value.widened.substr(1);
          loop += "    " + std::string(cudaTypeName(value.dtype)) + " " +
                  value.stored + ";\n    snug_store(&" + value.stored +
                  ", " + value.widened + ");\n";
        }
        operands.push_back(value.stored);
      } else {
        operands.push_back(value.widened);
      }
      types.push_back(value.dtype);
    }
    std::string id = std::to_string(next++);
    auto code = buildElementwiseCode(inner->getOpCode(),
                                     inner->getAttributes(), operands, types,
                                     "r" + id);
    if (!code)
      return context.unsupported(inner->describe() + ": " +
                                 toString(code.takeError()));
    setup += indent(code->setup, 2);
    loop += indent(code->body, 4);
    const ir::Value *result = inner->getResult(0);
    BodyValue value{result->getType().getDType(), "v" + id, ""};
    if (select) {
      // r holds the stored element itself.
      value.stored = "r" + id;
      loop += "    const " + std::string(cudaComputeTypeName(value.dtype)) +
              " " + value.widened + " = snug_load(&r" + id + ");\n";
    } else {
      loop += "    const " + std::string(cudaComputeTypeName(value.dtype)) +
              " " + value.widened + " = " +
              roundTripExpr(value.dtype, "r" + id) + ";\n";
    }
    values[result] = value;
  }

  for (size_t k = 0; k < context.results.size(); ++k) {
    auto it = values.find(body.getYield()[k]);
    if (it == values.end())
      return context.unsupported("the body yields a value it does not "
                                 "define");
    loop += "    snug_store(out" + std::to_string(k) + " + i, " +
            it->second.widened + ");\n";
  }
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
