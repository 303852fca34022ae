//===- ElementwiseEmitters.cpp - CUDA emitters: elementwise ops -----------===//
//
// Every elementwise op of the op table, and Cast. Each node becomes one
// grid-stride kernel over the result's elements; every operand's element
// index is computed from the result index with the broadcast strides baked
// in, after collapsing the dims that need no index math of their own. When
// every operand is an f32 tensor of the result's shape (or an f32 scalar)
// and the bytes line up, the kernel moves 16-byte vectors instead.
//
// What a node computes is not written here: ElementwiseExpr.h turns the op
// into a call of its definition in core/ScalarOps.h (embedded in the
// prelude), with the compute type and bound attributes the host kernels
// use, and the op list is the table's (every op ElementwiseExpr knows), so
// the emitted kernels and the host reference agree by construction (see
// ScalarOps.h for the device math library's ulp bounds). Cast converts
// through double when a float is involved and int64 otherwise, as the
// host's Cast kernel, with ScalarOps.h's conversions.
//
// The index and loop helpers at the top are shared with
// DataMovementEmitters.cpp, which declares them.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/ElementwiseExpr.h"
#include "compiler/cuda/KernelEmitter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>

namespace snug {
namespace cuda {

using namespace codegen;

namespace {

/// The op's name as a symbol tag: "snug.cast" -> "cast".
std::string tagFor(llvm::StringRef opName) {
  std::string tag = opName.lower();
  llvm::erase_if(tag, [](char c) { return !std::isalnum((unsigned char)c); });
  if (llvm::StringRef(tag).startswith("snug") && tag.size() > 4)
    tag = tag.substr(4);
  return tag;
}

//===----------------------------------------------------------------------===//
// The elementwise kernel builder
//===----------------------------------------------------------------------===//

/// One operand broadcast to the result, loaded as a0, a1 ...: widened
/// (snug_load) or, when `raw`, as stored (Where's values).
struct EwInput {
  const TensorRef *ref;
  bool raw = false;
};

/// An elementwise kernel: operands a0, a1 ... are loaded for each result
/// element, `compute` (statements) defines `r` from them, and `r` is stored
/// converted to the result's dtype (or as is, when `rawStore`).
struct EwKernel {
  std::string tag;
  std::vector<EwInput> inputs;
  std::string setup; // statements before the loop (bound attributes)
  std::string compute;
  bool rawStore = false;
};

/// `text`'s non-empty lines indented by `spaces`.
std::string indent(llvm::StringRef text, unsigned spaces) {
  std::string result;
  for (llvm::StringRef line : llvm::split(text, '\n'))
    if (!line.empty())
      result += std::string(spaces, ' ') + line.str() + "\n";
  return result;
}

/// True when the kernel can move float4-sized vectors: f32 everywhere,
/// every operand the result's shape or a scalar, whole vectors, and every
/// pointer 16-byte aligned.
bool canVectorize(const EwKernel &spec, const TensorRef &out) {
  if (out.dtype != ir::DType::F32 || out.numElements % 4 != 0 ||
      out.place.value % 16 != 0 || spec.rawStore)
    return false;
  bool anyFull = false;
  for (const EwInput &input : spec.inputs) {
    const TensorRef &ref = *input.ref;
    if (input.raw || ref.dtype != ir::DType::F32)
      return false;
    if (ref.numElements == 1)
      continue;
    if (ref.dims != out.dims || ref.place.value % 16 != 0)
      return false;
    anyFull = true;
  }
  return anyFull;
}

/// The declaration of operand `k` loaded from `pointer`.
std::string loadOperand(const EwInput &input, size_t k,
                        llvm::StringRef pointer) {
  std::string a = "a" + std::to_string(k);
  if (input.raw)
    return "const " + std::string(cudaTypeName(input.ref->dtype)) + " " + a +
           " = *(" + pointer.str() + ");\n";
  return "const auto " + a + " = snug_load(" + pointer.str() + ");\n";
}

/// The vectorized body: each thread loads 16 bytes of every full operand,
/// computes four lanes and stores 16 bytes (after all its loads, so in
/// place is safe).
std::string vectorBody(const EwKernel &spec, const TensorRef &out,
                       const char *indexType) {
  std::string text = "  struct alignas(16) snug_f32x4 { float v[4]; };\n";
  std::string lanes;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    std::string in = "in" + std::to_string(k);
    if (spec.inputs[k].ref->numElements == 1) {
      text += "  " + loadOperand(spec.inputs[k], k, in);
      continue;
    }
    lanes += "      const float a" + std::to_string(k) + " = x" +
             std::to_string(k) + ".v[l];\n";
  }
  text += gridStrideLoop(indexType, out.numElements / 4);
  for (size_t k = 0; k < spec.inputs.size(); ++k)
    if (spec.inputs[k].ref->numElements != 1)
      text += "    const snug_f32x4 x" + std::to_string(k) +
              " = ((const snug_f32x4 *)in" + std::to_string(k) + ")[i];\n";
  text +=
      "    snug_f32x4 y;\n#pragma unroll\n    for (int l = 0; l < 4; ++l) {\n";
  text += lanes + spec.compute +
          "      y.v[l] = snug::scalar::Convert<float>::from(r);\n    }\n";
  text += "    ((snug_f32x4 *)out)[i] = y;\n  }\n";
  return text;
}

/// The general body: per result element, each operand's index from the
/// broadcast strides (dims collapsed), loads, compute, store.
std::string scalarBody(const EwKernel &spec, const TensorRef &out,
                       const char *indexType) {
  std::vector<int64_t> dims = out.dims;
  std::vector<std::vector<int64_t>> strides;
  for (const EwInput &input : spec.inputs) {
    strides.emplace_back();
    broadcastStrides(*input.ref, out.dims, strides.back());
  }
  collapseDims(dims, strides);
  std::string text, loopLoads;
  std::vector<std::vector<int64_t>> walked;
  std::vector<std::string> names;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    std::string in = "in" + std::to_string(k);
    // A broadcast scalar is loaded once, before the loop.
    if (llvm::all_of(strides[k], [](int64_t s) { return s == 0; })) {
      text += "  " + loadOperand(spec.inputs[k], k, in);
      continue;
    }
    walked.push_back(strides[k]);
    names.push_back("o" + std::to_string(k));
    loopLoads += "    " + loadOperand(spec.inputs[k], k,
                                      in + " + o" + std::to_string(k));
  }
  text += gridStrideLoop(indexType, out.numElements);
  text += emitOffsets(dims, walked, names, indexType, "i");
  text += loopLoads;
  text += spec.compute;
  if (spec.rawStore)
    text += "    out[i] = r;\n";
  else
    text += "    snug_store(out + i, r);\n";
  text += "  }\n";
  return text;
}

llvm::Error emitElementwise(EmitContext &context, EwKernel spec) {
  const TensorRef &out = context.out();
  for (const EwInput &input : spec.inputs) {
    std::vector<int64_t> strides;
    if (!broadcastStrides(*input.ref, out.dims, strides))
      return context.unsupported("operands do not broadcast to the result");
  }
  if (out.numElements == 0)
    return llvm::Error::success();
  Kernel kernel;
  kernel.tag = spec.tag;
  int64_t extent = out.numElements;
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    kernel.addTensor("in" + std::to_string(k), *spec.inputs[k].ref, true);
    extent = std::max(extent, spec.inputs[k].ref->numElements);
  }
  kernel.addTensor("out", out, false);
  kernel.body = spec.setup;
  int64_t work = out.numElements;
  if (canVectorize(spec, out)) {
    work /= 4;
    spec.compute = indent(spec.compute, 6); // inside the lane loop
    kernel.body += vectorBody(spec, out, indexTypeFor(context, work, extent));
  } else {
    spec.compute = indent(spec.compute, 4);
    kernel.body += scalarBody(spec, out, indexTypeFor(context, work, extent));
  }
  launchGridStride(context, std::move(kernel), work);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// The table's elementwise ops
//===----------------------------------------------------------------------===//

/// Any elementwise op: the present operands are the kernel's inputs (an
/// absent or empty optional operand, Clip's bounds, is the op's constant),
/// r is what ElementwiseExpr's call gives.
llvm::Error emitScalarOp(EmitContext &context) {
  if (context.results.empty() || context.operands.empty())
    return context.unsupported("expects operands and a result");
  const ir::OpInfo &info = context.node.getOpInfo();
  bool select = context.node.is(ir::OpCode::Where);
  EwKernel spec;
  spec.tag = tagFor(info.name);
  std::vector<std::string> operands;
  std::vector<ir::DType> types;
  for (const TensorRef &ref : context.operands) {
    types.push_back(ref.dtype);
    if (!ref.present || ref.numElements == 0) {
      if (select)
        return context.unsupported("an operand is absent");
      operands.emplace_back();
      continue;
    }
    bool raw = select && !spec.inputs.empty(); // Where's values, as stored
    operands.push_back("a" + std::to_string(spec.inputs.size()));
    spec.inputs.push_back({&ref, raw});
  }
  if (select && (context.in(1).dtype != context.out().dtype ||
                 context.in(2).dtype != context.out().dtype))
    return context.unsupported("value operands and result differ in dtype");
  auto code = buildElementwiseCode(info.code, context.node.getAttributes(),
                                   operands, types, "r");
  if (!code)
    return context.unsupported(llvm::toString(code.takeError()));
  spec.setup = code->setup;
  spec.compute = code->body;
  spec.rawStore = select;
  return emitElementwise(context, std::move(spec));
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// Cast / snug.cast: scalar::Cast's compute type and conversion
/// (core/ScalarOps.h), written by ElementwiseExpr as in a fused body,
/// the store converting to the result's dtype as the host's Cast kernel
/// does.
llvm::Error emitCast(EmitContext &context) {
  if (!context.hasIn(0) || context.results.empty())
    return context.unsupported("expects one operand and one result");
  const TensorRef &x = context.in(0), &out = context.out();
  if (x.numElements != out.numElements)
    return context.unsupported("operand and result differ in size");
  if (x.dtype == out.dtype) {
    context.copy(out.place, x.place, out.bytes);
    return llvm::Error::success();
  }
  if (x.sameAs(out) &&
      ir::getDTypeSize(x.dtype) != ir::getDTypeSize(out.dtype))
    return context.unsupported("an in-place cast between element sizes "
                               "would race across threads");
  auto code = buildElementwiseCode(context.node.getOpCode(),
                                   context.node.getAttributes(), {"a0"},
                                   {x.dtype}, "r");
  if (!code)
    return context.unsupported(llvm::toString(code.takeError()));
  EwKernel spec;
  spec.tag = "cast";
  spec.inputs = {{&x}};
  spec.compute = code->body;
  return emitElementwise(context, std::move(spec));
}

/// Every elementwise op of the table (ElementwiseExpr knows them from
/// ScalarOps.h), then the casts.
std::vector<EmitterEntry> buildEmitterTable() {
  std::vector<EmitterEntry> entries;
  for (const ir::OpInfo &info : ir::getAllOps())
    if (isScalarOp(info.code))
      entries.push_back({info.code, emitScalarOp});
  entries.push_back({ir::OpCode::Cast, emitCast});
  entries.push_back({ir::OpCode::SnugCast, emitCast});
  return entries;
}

} // namespace

llvm::ArrayRef<EmitterEntry> getElementwiseEmitters() {
  static const std::vector<EmitterEntry> entries = buildEmitterTable();
  return entries;
}

} // namespace cuda
} // namespace snug
