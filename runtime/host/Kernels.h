//===- Kernels.h - Host reference kernels: context and helpers --*- C++ -*-===//
//
// A host kernel reads its operands and writes its results at the locations
// the plan gives (pointers into the one arena or the weights section) and
// nowhere else. Kernels are reference code: clear loops, f32 computed
// directly, f16/bf16/f64 converted to float or double and stored with
// round-to-nearest-even (core/ScalarOps.h). A result may alias an operand exactly
// when the planner placed it in place (elementwise ops, view copies); every
// kernel below is written so that this is safe: elementwise loops read
// element i of every operand before writing element i, copies use memmove or
// skip when source and destination coincide. Other ops are never aliased by
// the planner.
//
// Kernels are registered by family (one file each) into a table by OpCode;
// the elementwise ops' kernels are derived from the op table and
// core/ScalarOps.h (ElementwiseKernels.cpp), which also defines the
// element conversions below, so that the host, constant folding and the
// CUDA kernels share them.
// Parameters come from attributes in snug's canonical form (see
// compiler/onnx/OnnxImporter.h); where the canonical form keeps an ONNX input
// as an operand, it is a weight and the kernel reads it like any operand.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_HOST_KERNELS_H
#define SNUG_RUNTIME_HOST_KERNELS_H

#include "core/OpRuleTable.h"
#include "core/ScalarOps.h"
#include "runtime/BundleReader.h"

#include <cstring>
#include <string>
#include <vector>

namespace snug {
namespace rt {

/// An operand or result of one op: where it is and what it holds.
struct TensorView {
  uint8_t *data = nullptr; // nullptr for an absent operand
  uint8_t dtype = 0;
  const std::vector<int64_t> *dims = nullptr;
  int64_t numElements = 0;
  uint64_t bytes = 0;

  bool present = false;

  unsigned getRank() const { return dims ? unsigned(dims->size()) : 0; }
  int64_t dim(unsigned i) const { return (*dims)[i]; }
  unsigned elementSize() const { return bundle::dtypeSize(dtype); }
};

class KernelContext {
public:
  KernelContext(const PlanOp &op, size_t index) : op(op), index(index) {}

  const PlanOp &op;
  size_t index;
  std::vector<TensorView> inputs;
  std::vector<TensorView> outputs;
  /// An epilogue's extra operands (ir/Module.h), kept apart from the op's
  /// own `inputs`, which are all its kernel sees.
  std::vector<TensorView> epilogueInputs;
  /// Per operand: the graph input it is (its name), or "" (the executor
  /// fills it, so that bad input data is blamed on the input).
  std::vector<std::string> inputNames;

  size_t numInputs() const { return inputs.size(); }
  bool hasInput(size_t i) const { return i < inputs.size() && inputs[i].present; }
  const TensorView &in(size_t i) const { return inputs[i]; }
  const TensorView &out(size_t i) const { return outputs[i]; }

  int64_t getInt(const char *name, int64_t fallback) const;
  float getFloat(const char *name, float fallback) const;
  std::string getString(const char *name, const std::string &fallback) const;
  /// Whether the node multiplies in TF32 (math = "tf32", passes/precision/Tf32Math.cpp).
  bool isTf32() const { return getString("math", "") == "tf32"; }
  /// nullptr when absent.
  const std::vector<int64_t> *getInts(const char *name) const;
  const std::vector<float> *getFloats(const char *name) const;
  const Attr *getAttr(const char *name) const { return op.getAttr(name); }

  /// A runtime error naming the op: "node 'x' (Conv): message".
  Status error(const std::string &message) const;
  /// Operand `operand` holds a value the op cannot take (an index out of
  /// range): the caller's data, not snug, when the operand is a graph input
  /// (SNUG_ERROR_INVALID_ARGUMENT naming it); otherwise a runtime error.
  Status dataError(size_t operand, const std::string &message) const;
  /// Checks operand/result counts (inputs present up to `minInputs`).
  Status expect(size_t minInputs, size_t minOutputs) const;
};

using Kernel = Status (*)(KernelContext &);

/// The host kernels by OpCode: one slot per op of the table, nullptr where
/// the host has no kernel, so no kernel can exist for an op outside the
/// table (OpCoverageTest holds every op to one).
using KernelTable = OpRuleTable<Kernel>;

/// The kernel for `code`, nullptr when the host has none.
Kernel findHostKernel(OpCode code);
/// The kernel for the op named `opName`, nullptr for an op the table does
/// not list or the host has no kernel for.
Kernel findHostKernel(const std::string &opName);

void registerElementwiseKernels(KernelTable &table);
void registerNormalizeKernels(KernelTable &table);
void registerConvKernels(KernelTable &table);
void registerLinalgKernels(KernelTable &table);
void registerDataMovementKernels(KernelTable &table);
void registerIndexingKernels(KernelTable &table);
void registerTopKKernel(KernelTable &table);
void registerSamplingKernels(KernelTable &table); // GridSampleKernel.cpp
void registerAttentionKernels(KernelTable &table);

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//

bool isFloatCode(uint8_t dtype);
/// The class of a bundle dtype code for scalar::computeKind and
/// scalar::Cast::kind (bool is an integer).
scalar::ElementClass elementClassOf(uint8_t dtype);

/// Element `i` of a `dtype` tensor as compute type C (float, double,
/// int64_t, uint64_t or bool), converted by core/ScalarOps.h's rules (f16/bf16
/// widen exactly; floats to integers by its float -> integer rule).
/// memcpy-based: unaligned offsets are fine.
template <class C> C loadAs(const uint8_t *base, uint8_t dtype, int64_t i);
/// Stores `value` converted to `dtype` by ScalarOps.h's rules (f16/bf16
/// round to nearest even, integers wrap, floats to integers by the float ->
/// integer rule).
template <class C>
void storeAs(uint8_t *base, uint8_t dtype, int64_t i, C value);

/// Element `i` as a double (bool as 0/1, integers exactly up to 2^53).
inline double loadDouble(const uint8_t *base, uint8_t dtype, int64_t i) {
  return loadAs<double>(base, dtype, i);
}
inline void storeDouble(uint8_t *base, uint8_t dtype, int64_t i,
                        double value) {
  storeAs<double>(base, dtype, i, value);
}
/// Element `i` as int64 (floats by the float -> integer rule).
inline int64_t loadInt(const uint8_t *base, uint8_t dtype, int64_t i) {
  return loadAs<int64_t>(base, dtype, i);
}
inline void storeInt(uint8_t *base, uint8_t dtype, int64_t i, int64_t value) {
  storeAs<int64_t>(base, dtype, i, value);
}

/// A float array view of an operand: the operand itself when it is an
/// aligned f32 tensor, a converted copy otherwise.
class FloatInput {
public:
  /// With `tf32`, a copy with every element rounded to TF32 (ScalarOps.h's
  /// roundToTf32): the --precision=tf32 operands of Conv, MatMul and Gemm.
  explicit FloatInput(const TensorView &view, bool tf32 = false);
  const float *data() const { return pointer; }
  float operator[](int64_t i) const { return pointer[i]; }

private:
  std::vector<float> copy;
  const float *pointer = nullptr;
};

/// A float array to write a result through; finish() stores it into the
/// result's dtype when it was not written in place.
class FloatOutput {
public:
  explicit FloatOutput(const TensorView &view);
  float *data() { return pointer; }
  float &operator[](int64_t i) { return pointer[i]; }
  void finish();

private:
  const TensorView &view;
  std::vector<float> copy;
  float *pointer = nullptr;
};

/// Row-major strides (in elements).
std::vector<int64_t> stridesOf(const std::vector<int64_t> &dims);

/// Walks the elements of `outDims` and, for each, the matching element of
/// each input broadcast to it (numpy rules; inputs right-aligned).
class Broadcast {
public:
  Broadcast(const std::vector<int64_t> &outDims,
            const std::vector<const std::vector<int64_t> *> &inputDims);
  /// False when some input does not broadcast to outDims.
  bool isValid() const { return valid; }
  template <typename F> void forEach(F f) const {
    int64_t total = 1;
    for (int64_t d : outDims)
      total *= d;
    if (total == 0)
      return;
    size_t rank = outDims.size(), count = strides.size();
    std::vector<int64_t> counter(rank, 0), offsets(count, 0);
    for (int64_t index = 0; index < total; ++index) {
      f(index, offsets.data());
      for (size_t d = rank; d-- > 0;) {
        if (++counter[d] < outDims[d]) {
          for (size_t k = 0; k < count; ++k)
            offsets[k] += strides[k][d];
          break;
        }
        for (size_t k = 0; k < count; ++k)
          offsets[k] -= strides[k][d] * (outDims[d] - 1);
        counter[d] = 0;
      }
    }
  }

private:
  std::vector<int64_t> outDims;
  std::vector<std::vector<int64_t>> strides; // per input, 0 where broadcast
  bool valid = true;
};

/// memmove unless source and destination coincide.
inline void copyBytes(uint8_t *dst, const uint8_t *src, uint64_t bytes) {
  if (dst != src && bytes)
    std::memmove(dst, src, bytes);
}

} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_HOST_KERNELS_H
