//===- Tf32Math.cpp - Run the f32 contractions in TF32 --------------------===//
//
// --precision=tf32: storage stays f32 (weights and activations keep their
// bytes; lower-precision does not run), and the contractions, Conv, MatMul
// and Gemm with f32 operands, multiply in TF32 (10 explicit mantissa bits,
// the operands rounded as cvt.rna.tf32.f32 rounds: core/ScalarOps.h's
// roundToTf32) and sum in f32. The pass marks each such node math = "tf32";
// the module gets math = "tf32" and math_kept = the contractions left in
// full f32. Readers of the mark: the CUDA emitters (the tf32 element width
// of the tensor-core tile, compiler/cuda/MmaTile.h, in the implicit-GEMM
// convolution and the tiled MatMul/Gemm kernel that takes the products with
// an epilogue or too many cuBLAS calls, and CUBLAS_COMPUTE_32F_FAST_TF32 for
// cuBLAS steps, compiler/cuda/CudaEmitter.cpp), the host kernels
// (runtime/host/kernels/ConvKernels.cpp, LinalgKernels.cpp), which round the
// operands the same way so that host results predict device results, and the
// precision report.
//
// Kept in full f32: the nodes keep= names (node names or op types, as
// lower-precision's keep= and --keep-fp32). Runs after fuse, so that the
// mark lands on the fused products (the host's fused kernel reads it as the
// plain one does). Contractions of other dtypes are left alone; a module whose
// contractions are all f16/bf16 (or f64) is an error, since the flag then
// does nothing. Nodes inside bodies are not contractions (fuse groups
// elementwise ops only).
//
//===----------------------------------------------------------------------===//
#include "passes/precision/KeepF32.h"
#include "passes/Pass.h"
#include "passes/Passes.h"

#include "ir/Module.h"

#include "llvm/ADT/StringSet.h"

namespace snug {
namespace {

class Tf32Math : public Pass {
public:
  llvm::StringRef getName() const override { return "tf32-math"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  llvm::StringSet<> keep;
};

bool isContraction(const ir::Node &node) {
  return node.is(ir::OpCode::Conv) || node.is(ir::OpCode::MatMul) ||
         node.is(ir::OpCode::Gemm);
}

/// Whether the product's two multiplied operands are f32.
bool multipliesF32(const ir::Node &node) {
  for (unsigned i = 0; i < 2; ++i) {
    const ir::Value *operand =
        i < node.getNumOperands() ? node.getOperand(i) : nullptr;
    if (!operand || operand->getType().getDType() != ir::DType::F32)
      return false;
  }
  return true;
}

} // namespace

llvm::Error Tf32Math::setOption(llvm::StringRef key, llvm::StringRef value) {
  if (key == "keep") {
    addKeepList(value, keep);
    return llvm::Error::success();
  }
  return Pass::setOption(key, value);
}

llvm::Expected<bool> Tf32Math::run(ir::Module &module) {
  unsigned marked = 0, kept = 0, other = 0;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    if (!isContraction(*node))
      continue;
    if (!multipliesF32(*node)) {
      ++other;
      continue;
    }
    if (keepNames(keep, *node)) {
      node->removeAttribute("math");
      ++kept;
      continue;
    }
    node->setAttribute("math", ir::Attribute::getString("tf32"));
    ++marked;
  }
  if (!marked && !kept && other)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--precision=tf32: the model's " + std::to_string(other) +
            " Conv, MatMul and Gemm nodes compute in f16, bf16 or f64, not "
            "f32; TF32 math applies to f32 models (use --precision=fp32, or "
            "fp16/bf16 for storage in 16 bits)");
  module.setAttribute("math", ir::Attribute::getString("tf32"));
  module.setAttribute("math_kept", ir::Attribute::getInt(kept));
  addStatistic("nodes-tf32", marked);
  addStatistic("nodes-kept-f32", kept);
  return true;
}

std::unique_ptr<Pass> createTf32MathPass() {
  return std::make_unique<Tf32Math>();
}

} // namespace snug
