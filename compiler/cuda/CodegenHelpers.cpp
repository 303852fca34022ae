//===- CodegenHelpers.cpp - Index math and loops the emitters share -------===//
#include "compiler/cuda/CodegenHelpers.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>

namespace snug {
namespace cuda {
namespace codegen {

/// The step of a grid-stride loop over `count` items, `perBlock` of them
/// per block and iteration, launched with gridFor(count, perBlock): the
/// grid (capped at kMaxGridBlocks) times `perBlock`.
int64_t gridStride(int64_t count, uint32_t perBlock) {
  return int64_t(gridFor(count, perBlock).x) * perBlock;
}

/// The one index rule (KernelEmitter.h's contract): "int" when no index
/// value the kernel computes can pass `limit`, "int64_t" otherwise. A
/// grid-stride loop over [0, count) last adds its step to an index below
/// count, so it reaches count - 1 + step; every offset and coordinate the
/// body computes stays below `extent`. 32-bit index arithmetic (and
/// division by a constant) is much cheaper than 64-bit, so it is kept
/// wherever it cannot wrap.
static const char *chooseIndexType(int64_t count, int64_t extent,
                                   uint32_t perBlock, int64_t limit) {
  int64_t reach = count > 0 ? count - 1 + gridStride(count, perBlock) : 0;
  return std::max(reach, extent) <= limit ? "int" : "int64_t";
}

/// The index type of a kernel whose grid-stride loop runs over `count`
/// items (0: the kernel has none), `perBlock` per block and iteration
/// (launched with gridFor(count, perBlock)), and whose offsets and
/// coordinates all stay below `extent`, under the context's limit
/// (EmitContext::index32Limit: INT32_MAX unless a test lowers it).
const char *indexTypeFor(const EmitContext &context, int64_t count,
                         int64_t extent, uint32_t perBlock) {
  return chooseIndexType(count, extent, perBlock, context.index32Limit);
}

/// The same rule for a 256-thread grid-stride loop at the INT32_MAX limit,
/// without a context: for the unit tests of the rule's boundary.
const char *indexTypeFor(int64_t count, int64_t extent) {
  return chooseIndexType(count, extent, 256, INT32_MAX);
}

/// The opening line of `for (var ...)` over [0, count), grid-stride; the
/// caller closes the brace. `indexType` comes from indexTypeFor.
std::string gridStrideLoop(const char *indexType, int64_t count,
                           llvm::StringRef var) {
  std::string type = indexType, v = var.str();
  return "  for (" + type + " " + v + " = (" + type +
         ")(blockIdx.x * blockDim.x + threadIdx.x); " + v + " < " +
         cudaIntLiteral(count) + "; " + v + " += (" + type +
         ")(gridDim.x * blockDim.x)) {\n";
}

/// Launches `kernel` with 256-thread blocks covering `work` items.
void launchGridStride(EmitContext &context, Kernel kernel, int64_t work) {
  kernel.block.x = 256;
  kernel.grid = gridFor(work, kernel.block.x);
  context.launch(std::move(kernel));
}

/// Statements defining `<prefix>d` = the row-major coordinate of `index`
/// along dim d of `dims`, for the dims `needed` marks (all when empty).
std::string emitCoordinates(llvm::ArrayRef<int64_t> dims,
                            const char *indexType, llvm::StringRef index,
                            llvm::StringRef prefix,
                            const std::vector<bool> &needed) {
  auto isNeeded = [&](size_t d) { return needed.empty() || needed[d]; };
  size_t rank = dims.size(), outermost = rank;
  for (size_t d = rank; d-- > 0;)
    if (isNeeded(d))
      outermost = d;
  if (outermost == rank)
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  std::string I = indexType, rest = prefix.str() + "rest";
  if (rank == 1) {
    os << "    const " << I << " " << prefix << "0 = " << index << ";\n";
    return os.str();
  }
  os << "    " << I << " " << rest << " = " << index << ";\n";
  // Peel dims from the innermost; the outermost needed one needs no
  // division after it (and no modulo when it is dim 0).
  for (size_t d = rank; d-- > outermost;) {
    std::string size = cudaIntLiteral(dims[d]);
    if (d == 0) {
      os << "    const " << I << " " << prefix << "0 = " << rest << ";\n";
      break;
    }
    if (isNeeded(d))
      os << "    const " << I << " " << prefix << d << " = " << rest << " % "
         << size << ";\n";
    if (d > outermost && dims[d] != 1)
      os << "    " << rest << " /= " << size << ";\n";
  }
  return os.str();
}

/// Row-major strides of `dims`.
static std::vector<int64_t> contiguousStrides(llvm::ArrayRef<int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;)
    strides[d - 1] = strides[d] * dims[d];
  return strides;
}

/// The sum of coordinate * stride terms; "0" when every stride is 0.
static std::string linearCombination(llvm::ArrayRef<int64_t> strides,
                                     llvm::StringRef prefix) {
  std::string sum;
  for (size_t d = 0; d < strides.size(); ++d) {
    if (!strides[d])
      continue;
    if (!sum.empty())
      sum += " + ";
    sum += prefix.str() + std::to_string(d);
    if (strides[d] != 1)
      sum += " * " + cudaIntLiteral(strides[d]);
  }
  return sum.empty() ? "0" : sum;
}

/// Statements defining each of `names` as the element offset that
/// `index`, a row-major position in `dims`, has under the matching stride
/// vector (0 for broadcast dims): `index` itself for a contiguous tensor, 0
/// for a broadcast scalar, else a sum of coordinate * stride.
std::string emitOffsets(llvm::ArrayRef<int64_t> dims,
                        llvm::ArrayRef<std::vector<int64_t>> strides,
                        llvm::ArrayRef<std::string> names,
                        const char *indexType, llvm::StringRef index) {
  std::vector<int64_t> contiguous = contiguousStrides(dims);
  auto isZero = [](const std::vector<int64_t> &s) {
    return llvm::all_of(s, [](int64_t v) { return v == 0; });
  };
  // Coordinates are only needed by an operand that is neither walked in
  // order (offset = index) nor a broadcast scalar (offset = 0).
  bool needCoordinates =
      llvm::any_of(strides, [&](const std::vector<int64_t> &s) {
        return s != contiguous && !isZero(s);
      });
  std::vector<bool> needed(dims.size(), false);
  for (const std::vector<int64_t> &s : strides)
    if (s != contiguous)
      for (size_t d = 0; d < dims.size(); ++d)
        needed[d] = needed[d] || s[d] != 0;
  std::string text;
  if (needCoordinates)
    text += emitCoordinates(dims, indexType, index, "d", needed);
  for (size_t k = 0; k < strides.size(); ++k) {
    std::string value = strides[k] == contiguous ? index.str()
                        : isZero(strides[k])
                            ? std::string("0")
                            : linearCombination(strides[k], "d");
    text += "    const " + std::string(indexType) + " " + names[k] + " = " +
            value + ";\n";
  }
  return text;
}

/// Drops unit dims and merges each dim into the one outside it when every
/// stride vector steps over it exactly, so the index math has as few
/// divisions as the layouts allow.
void collapseDims(std::vector<int64_t> &dims,
                  std::vector<std::vector<int64_t>> &strides) {
  std::vector<int64_t> newDims;
  std::vector<std::vector<int64_t>> newStrides(strides.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1)
      continue; // any stride: the coordinate is always 0
    bool mergeable = !newDims.empty();
    for (size_t k = 0; k < strides.size() && mergeable; ++k)
      mergeable = newStrides[k].back() == strides[k][d] * dims[d];
    if (mergeable) {
      // The outer dim steps exactly over the inner one for every tensor:
      // one dim of the product's size with the inner strides.
      newDims.back() *= dims[d];
      for (size_t k = 0; k < strides.size(); ++k)
        newStrides[k].back() = strides[k][d];
      continue;
    }
    newDims.push_back(dims[d]);
    for (size_t k = 0; k < strides.size(); ++k)
      newStrides[k].push_back(strides[k][d]);
  }
  dims = std::move(newDims);
  strides = std::move(newStrides);
}

/// A statement storing `value` (of `computeType`: float, double or
/// int64_t) at `pointer` (a `dtype` element) as the host's storeDouble or
/// storeInt would: snug_store converts by core/ScalarOps.h's rules (the
/// float -> integer rule, round to nearest even), which both share.
std::string storeConverted(ir::DType dtype, llvm::StringRef computeType,
                           llvm::StringRef pointer, llvm::StringRef value) {
  (void)dtype; // snug_store dispatches on the pointer's element type
  return "snug_store(" + pointer.str() + ", (" + computeType.str() + ")(" +
         value.str() + "));\n";
}

/// `operand`'s strides over `outDims` under numpy broadcasting (0 along a
/// broadcast dim); false when it does not broadcast.
bool broadcastStrides(const TensorRef &operand, llvm::ArrayRef<int64_t> outDims,
                      std::vector<int64_t> &strides) {
  size_t rank = outDims.size();
  if (operand.rank() > rank)
    return false;
  std::vector<int64_t> own = operand.strides();
  strides.assign(rank, 0);
  size_t shift = rank - operand.rank();
  for (size_t d = 0; d < operand.rank(); ++d) {
    int64_t dim = operand.dims[d];
    if (dim == outDims[d + shift])
      strides[d + shift] = dim == 1 ? 0 : own[d];
    else if (dim != 1)
      return false;
  }
  return true;
}

} // namespace codegen

} // namespace cuda
} // namespace snug
