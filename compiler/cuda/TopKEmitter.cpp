//===- TopKEmitter.cpp - CUDA emitter: TopK by repeated block selection ---===//
//
// TopK(x) {axis, k, largest, sorted} -> (values, i64 indices) with the host
// reference's semantics (runtime/host/kernels/TopKKernel.cpp): elements
// ordered by an unsigned 64-bit key (core/ScalarOps.h's topKKey, the
// host's too: integers with the
// sign bit flipped, floats as IEEE bit patterns made monotone, -0.0 as
// +0.0, NaN the largest key; inverted when largest = 0), equal keys by
// increasing index. That order is total, so the pick is deterministic.
//
// One block per line along the axis (grid-stride over the lines). Round r
// of k picks the r-th element: each thread scans its strided share of the
// line for the best element after the one picked in round r - 1 (smaller
// key, or the same key at a larger index), then the block agrees on the
// largest key (snug_block_reduce, max) and the smallest index holding it
// (min). k rounds of n / blockDim loads each, no scratch memory, no sort
// buffer, any line length: a selection, not a sort, which suits the small
// k models use (a full sort as TopK, k = n, costs n^2 / blockDim loads per
// line). Lines over an outer axis read strided; that is correct, only not
// coalesced.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/KernelEmitter.h"

#include <algorithm>
#include <string>

namespace snug {
namespace cuda {

namespace {

std::string lit(int64_t value) { return cudaIntLiteral(value); }

/// Statements defining `key` (uint64_t) for the element at `pointer`:
/// ScalarOps.h's topKKey, as the host kernel's, inverted unless `largest`.
std::string keyOf(ir::DType dtype, llvm::StringRef pointer, bool largest) {
  std::string text = "        uint64_t key = snug::scalar::topKKey(snug_load_as<" +
                     std::string(ir::isFloatDType(dtype) ? "double" : "int64_t") +
                     ">(" + pointer.str() + "));\n";
  if (!largest)
    text += "        key = ~key;\n";
  return text;
}

llvm::Error emitTopK(EmitContext &context) {
  const TensorRef &x = context.in(0), &values = context.out(0),
                  &indices = context.out(1);
  int64_t rank = x.rank(), axis = context.intAttr("axis", -1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return context.unsupported("axis out of range");
  int64_t n = x.dims[axis], k = context.intAttr("k", 0);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d < axis)
      outer *= x.dims[d];
    else if (d > axis)
      inner *= x.dims[d];
  if (k < 1 || k > n || values.dtype != x.dtype ||
      indices.dtype != ir::DType::I64 ||
      values.numElements != outer * k * inner ||
      indices.numElements != values.numElements)
    return context.unsupported("k and the results do not match the operand");
  bool largest = context.intAttr("largest", 1) != 0;
  // Whole warps (the block reductions need them), no more than the line
  // has elements, at most 256.
  uint32_t threads = uint32_t(std::min<int64_t>(256, (n + 31) / 32 * 32));
  int64_t lines = outer * inner;

  Kernel kernel;
  kernel.tag = "topk";
  kernel.addTensor("x", x, true);
  kernel.addTensor("values", values, false);
  kernel.addTensor("indices", indices, false);
  kernel.grid = gridFor(lines, 1);
  kernel.block = {threads, 1, 1};
  std::string N = lit(n), K = lit(k), I = lit(inner);
  // The line loop and the rounds are uniform over the block, so every
  // thread reaches the reductions.
  kernel.body =
      "  __shared__ uint64_t scratch_key[32];\n"
      "  __shared__ int64_t scratch_at[32];\n"
      "  for (int64_t line = blockIdx.x; line < " + lit(lines) +
      "; line += gridDim.x) {\n"
      "    const int64_t o = line / " + I + ", j = line % " + I + ";\n"
      "    const int64_t base = o * " + lit(n * inner) + " + j;\n"
      "    const int64_t out_base = o * " + lit(k * inner) + " + j;\n"
      "    uint64_t last_key = 0;\n"
      "    int64_t last = -1;\n"
      "    for (int64_t r = 0; r < " + K + "; ++r) {\n"
      "      uint64_t best = 0;\n"
      "      int64_t at = " + N + "; // none yet\n"
      "      for (int64_t t = threadIdx.x; t < " + N + "; t += " +
      lit(threads) + ") {\n" +
      keyOf(x.dtype, "x + base + t * " + I, largest) +
      "        const bool after = last < 0 || key < last_key ||\n"
      "                           (key == last_key && t > last);\n"
      "        if (after && (at == " + N + " || key > best)) {\n"
      "          best = key;\n"
      "          at = t;\n"
      "        }\n"
      "      }\n"
      "      const uint64_t top = snug_block_reduce(best, snug_op_max(), "
      "scratch_key);\n"
      "      int64_t pick = at != " + N + " && best == top ? at : " + N +
      ";\n"
      "      pick = snug_block_reduce(pick, snug_op_min(), scratch_at);\n"
      "      if (threadIdx.x == 0) {\n"
      "        const int64_t to = out_base + r * " + I + ";\n"
      "        values[to] = x[base + pick * " + I + "];\n"
      "        indices[to] = pick;\n"
      "      }\n"
      "      last_key = top;\n"
      "      last = pick;\n"
      "    }\n"
      "  }\n";
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

const EmitterEntry kTopKEmitters[] = {
    {ir::OpCode::TopK, emitTopK},
};

} // namespace

llvm::ArrayRef<EmitterEntry> getTopKEmitters() { return kTopKEmitters; }

} // namespace cuda
} // namespace snug
