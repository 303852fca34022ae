//===- CodegenHelpers.h - Index math and loops the emitters share -*- C++ -*-===//
//
// Pieces of emitted code more than one op family needs: the index type
// (indexTypeFor, the one rule KernelEmitter.h's contract states),
// grid-stride loops, row-major coordinates and strided offsets with
// constant divisors, dim collapsing, broadcast strides and converting
// stores.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_CUDA_CODEGENHELPERS_H
#define SNUG_COMPILER_CUDA_CODEGENHELPERS_H

#include "compiler/cuda/KernelEmitter.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace snug {
namespace cuda {

// Each is documented at its definition (CodegenHelpers.cpp).
namespace codegen {
int64_t gridStride(int64_t count, uint32_t perBlock);
const char *indexTypeFor(const EmitContext &context, int64_t count,
                         int64_t extent, uint32_t perBlock = 256);
const char *indexTypeFor(int64_t count, int64_t extent);
std::string gridStrideLoop(const char *indexType, int64_t count,
                           llvm::StringRef var = "i");
void launchGridStride(EmitContext &context, Kernel kernel, int64_t work);
std::string emitCoordinates(llvm::ArrayRef<int64_t> dims,
                            const char *indexType, llvm::StringRef index,
                            llvm::StringRef prefix,
                            const std::vector<bool> &needed = {});
std::string emitOffsets(llvm::ArrayRef<int64_t> dims,
                        llvm::ArrayRef<std::vector<int64_t>> strides,
                        llvm::ArrayRef<std::string> names,
                        const char *indexType, llvm::StringRef index);
void collapseDims(std::vector<int64_t> &dims,
                  std::vector<std::vector<int64_t>> &strides);
std::string storeConverted(ir::DType dtype, llvm::StringRef computeType,
                           llvm::StringRef pointer, llvm::StringRef value);
bool broadcastStrides(const TensorRef &operand, llvm::ArrayRef<int64_t> outDims,
                      std::vector<int64_t> &strides);
} // namespace codegen

} // namespace cuda
} // namespace snug

#endif // SNUG_COMPILER_CUDA_CODEGENHELPERS_H
