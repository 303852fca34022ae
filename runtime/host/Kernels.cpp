//===- Kernels.cpp - Kernel table, context and element access -------------===//
//
// The OpCode -> kernel table (filled once by the family files), attribute
// access for kernels, and the dtype-generic element loads and stores every
// kernel goes through (memcpy-based, so unaligned arena offsets written by
// hand in tests are fine), with the conversions of core/ScalarOps.h: the
// float -> integer rule there (onnxruntime's) is defined for NaN and
// out-of-range values, never undefined behaviour.
//
//===----------------------------------------------------------------------===//
#include "runtime/host/Kernels.h"
#include "runtime/host/kernels/FusedKernel.h"

#include "core/ScalarOps.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <optional>

namespace snug {
namespace rt {

using namespace bundle;

static const KernelTable &getTable() {
  static const KernelTable table = [] {
    KernelTable t;
    registerElementwiseKernels(t);
    registerNormalizeKernels(t);
    registerConvKernels(t);
    registerLinalgKernels(t);
    registerAttentionKernels(t);
    registerDataMovementKernels(t);
    registerIndexingKernels(t);
    registerTopKKernel(t);
    registerSamplingKernels(t);
    registerFusedKernels(t);
    assert(t.hasNoOpTwice() && "an op has two host kernels");
    return t;
  }();
  return table;
}

Kernel findHostKernel(OpCode code) { return getTable().get(code); }

Kernel findHostKernel(const std::string &opName) {
  std::optional<OpCode> code = findOpCode(opName);
  return code ? findHostKernel(*code) : nullptr;
}

int64_t KernelContext::getInt(const char *name, int64_t fallback) const {
  const Attr *attr = op.getAttr(name);
  if (!attr)
    return fallback;
  if (attr->kind == AttrInt)
    return attr->i;
  if (attr->kind == AttrFloat)
    return int64_t(attr->f);
  return fallback;
}

float KernelContext::getFloat(const char *name, float fallback) const {
  const Attr *attr = op.getAttr(name);
  if (!attr)
    return fallback;
  if (attr->kind == AttrFloat)
    return attr->f;
  if (attr->kind == AttrInt)
    return float(attr->i);
  return fallback;
}

std::string KernelContext::getString(const char *name,
                                     const std::string &fallback) const {
  const Attr *attr = op.getAttr(name);
  return attr && attr->kind == AttrString ? attr->s : fallback;
}

const std::vector<int64_t> *KernelContext::getInts(const char *name) const {
  const Attr *attr = op.getAttr(name);
  return attr && attr->kind == AttrInts ? &attr->ints : nullptr;
}

const std::vector<float> *KernelContext::getFloats(const char *name) const {
  const Attr *attr = op.getAttr(name);
  return attr && attr->kind == AttrFloats ? &attr->floats : nullptr;
}

Status KernelContext::error(const std::string &message) const {
  return Status(SNUG_ERROR_RUNTIME, op.describe(index) + ": " + message);
}

Status KernelContext::dataError(size_t operand,
                                const std::string &message) const {
  if (operand < inputNames.size() && !inputNames[operand].empty())
    return Status(SNUG_ERROR_INVALID_ARGUMENT,
                  "input '" + inputNames[operand] + "' holds a value " +
                      op.describe(index) + " cannot take: " + message);
  return error(message);
}

Status KernelContext::expect(size_t minInputs, size_t minOutputs) const {
  for (size_t i = 0; i < minInputs; ++i)
    if (!hasInput(i))
      return error("operand " + std::to_string(i) + " is required");
  if (outputs.size() < minOutputs)
    return error("expects " + std::to_string(minOutputs) + " results");
  return Status::ok();
}

bool isFloatCode(uint8_t dtype) {
  return dtype == DTypeF32 || dtype == DTypeF16 || dtype == DTypeBF16 ||
         dtype == DTypeF64;
}

scalar::ElementClass elementClassOf(uint8_t dtype) {
  if (dtype == DTypeF64)
    return scalar::ElementClass::F64;
  if (dtype == DTypeU64)
    return scalar::ElementClass::U64;
  return isFloatCode(dtype) ? scalar::ElementClass::NarrowFloat
                            : scalar::ElementClass::Integer;
}

template <typename T> static T loadRaw(const uint8_t *base, int64_t i) {
  T value;
  std::memcpy(&value, base + i * int64_t(sizeof(T)), sizeof(T));
  return value;
}
template <typename T> static void storeRaw(uint8_t *base, int64_t i, T value) {
  std::memcpy(base + i * int64_t(sizeof(T)), &value, sizeof(T));
}

template <class C> C loadAs(const uint8_t *base, uint8_t dtype, int64_t i) {
  using scalar::to;
  using scalar::widen;
  switch (dtype) {
  case DTypeF32: return to<C>(loadRaw<float>(base, i));
  case DTypeF64: return to<C>(loadRaw<double>(base, i));
  case DTypeF16: return to<C>(widen(loadRaw<snug_half>(base, i)));
  case DTypeBF16: return to<C>(widen(loadRaw<snug_bfloat>(base, i)));
  case DTypeI64: return to<C>(loadRaw<int64_t>(base, i));
  case DTypeI32: return to<C>(int64_t(loadRaw<int32_t>(base, i)));
  case DTypeI16: return to<C>(int64_t(loadRaw<int16_t>(base, i)));
  case DTypeI8: return to<C>(int64_t(loadRaw<int8_t>(base, i)));
  case DTypeU8: return to<C>(int64_t(loadRaw<uint8_t>(base, i)));
  case DTypeU16: return to<C>(int64_t(loadRaw<uint16_t>(base, i)));
  case DTypeU32: return to<C>(int64_t(loadRaw<uint32_t>(base, i)));
  case DTypeU64: return to<C>(loadRaw<uint64_t>(base, i));
  case DTypeBool: return to<C>(loadRaw<uint8_t>(base, i) != 0);
  }
  return C(0);
}

template <class C>
void storeAs(uint8_t *base, uint8_t dtype, int64_t i, C value) {
  using scalar::Convert;
  switch (dtype) {
  case DTypeF32: return storeRaw(base, i, Convert<float>::from(value));
  case DTypeF64: return storeRaw(base, i, Convert<double>::from(value));
  case DTypeF16: return storeRaw(base, i, Convert<snug_half>::from(value));
  case DTypeBF16: return storeRaw(base, i, Convert<snug_bfloat>::from(value));
  case DTypeI64: return storeRaw(base, i, Convert<int64_t>::from(value));
  case DTypeI32: return storeRaw(base, i, Convert<int32_t>::from(value));
  case DTypeI16: return storeRaw(base, i, Convert<int16_t>::from(value));
  case DTypeI8: return storeRaw(base, i, Convert<int8_t>::from(value));
  case DTypeU8: return storeRaw(base, i, Convert<uint8_t>::from(value));
  case DTypeU16: return storeRaw(base, i, Convert<uint16_t>::from(value));
  case DTypeU32: return storeRaw(base, i, Convert<uint32_t>::from(value));
  case DTypeU64: return storeRaw(base, i, Convert<uint64_t>::from(value));
  case DTypeBool:
    return storeRaw(base, i, uint8_t(Convert<bool>::from(value) ? 1 : 0));
  }
}

template float loadAs<float>(const uint8_t *, uint8_t, int64_t);
template double loadAs<double>(const uint8_t *, uint8_t, int64_t);
template int64_t loadAs<int64_t>(const uint8_t *, uint8_t, int64_t);
template uint64_t loadAs<uint64_t>(const uint8_t *, uint8_t, int64_t);
template bool loadAs<bool>(const uint8_t *, uint8_t, int64_t);
template void storeAs<float>(uint8_t *, uint8_t, int64_t, float);
template void storeAs<double>(uint8_t *, uint8_t, int64_t, double);
template void storeAs<int64_t>(uint8_t *, uint8_t, int64_t, int64_t);
template void storeAs<uint64_t>(uint8_t *, uint8_t, int64_t, uint64_t);
template void storeAs<bool>(uint8_t *, uint8_t, int64_t, bool);

FloatInput::FloatInput(const TensorView &view, bool tf32) {
  if (!tf32 && view.dtype == DTypeF32 &&
      reinterpret_cast<uintptr_t>(view.data) % alignof(float) == 0) {
    pointer = reinterpret_cast<const float *>(view.data);
    return;
  }
  copy.resize(view.numElements);
  for (int64_t i = 0; i < view.numElements; ++i)
    copy[i] = float(loadDouble(view.data, view.dtype, i));
  if (tf32)
    for (float &value : copy)
      value = scalar::roundToTf32(value);
  pointer = copy.data();
}

FloatOutput::FloatOutput(const TensorView &view) : view(view) {
  if (view.dtype == DTypeF32 &&
      reinterpret_cast<uintptr_t>(view.data) % alignof(float) == 0) {
    pointer = reinterpret_cast<float *>(view.data);
    return;
  }
  copy.resize(view.numElements);
  pointer = copy.data();
}

void FloatOutput::finish() {
  if (pointer != copy.data())
    return;
  for (int64_t i = 0; i < view.numElements; ++i)
    storeDouble(view.data, view.dtype, i, copy[i]);
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

Broadcast::Broadcast(const std::vector<int64_t> &outDims,
                     const std::vector<const std::vector<int64_t> *> &inputs)
    : outDims(outDims) {
  size_t rank = outDims.size();
  for (const std::vector<int64_t> *dims : inputs) {
    std::vector<int64_t> own = stridesOf(*dims);
    std::vector<int64_t> mapped(rank, 0);
    if (dims->size() > rank) {
      valid = false;
    } else {
      size_t shift = rank - dims->size();
      for (size_t d = 0; d < dims->size(); ++d) {
        int64_t dim = (*dims)[d];
        if (dim == outDims[d + shift])
          mapped[d + shift] = dim == 1 ? 0 : own[d];
        else if (dim != 1)
          valid = false;
      }
    }
    strides.push_back(std::move(mapped));
  }
}

} // namespace rt
} // namespace snug
