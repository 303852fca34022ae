//===- Kernels.cpp - Kernel table, context and element access -------------===//
//
// The op-name -> kernel table (filled once by the family files), attribute
// access for kernels, and the dtype-generic element loads and stores every
// kernel goes through (memcpy-based, so unaligned arena offsets written by
// hand in tests are fine). Float to integer conversions are defined for NaN
// and out-of-range values (pinned), never undefined behaviour.
//
//===----------------------------------------------------------------------===//
#include "runtime/host/Kernels.h"

#include "ir/Float16.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
    registerDataMovementKernels(t);
    return t;
  }();
  return table;
}

Kernel findHostKernel(const std::string &opName) {
  auto it = getTable().find(opName);
  return it == getTable().end() ? nullptr : it->second;
}

std::vector<std::string> listHostKernels() {
  std::vector<std::string> names;
  for (const auto &entry : getTable())
    names.push_back(entry.first);
  std::sort(names.begin(), names.end());
  return names;
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

template <typename T> static T loadAs(const uint8_t *base, int64_t i) {
  T value;
  std::memcpy(&value, base + i * int64_t(sizeof(T)), sizeof(T));
  return value;
}
template <typename T> static void storeAs(uint8_t *base, int64_t i, T value) {
  std::memcpy(base + i * int64_t(sizeof(T)), &value, sizeof(T));
}

double loadDouble(const uint8_t *base, uint8_t dtype, int64_t i) {
  switch (dtype) {
  case DTypeF32: return loadAs<float>(base, i);
  case DTypeF64: return loadAs<double>(base, i);
  case DTypeF16: return f16ToFloat(loadAs<uint16_t>(base, i));
  case DTypeBF16: return bf16ToFloat(loadAs<uint16_t>(base, i));
  case DTypeI64: return double(loadAs<int64_t>(base, i));
  case DTypeI32: return loadAs<int32_t>(base, i);
  case DTypeI16: return loadAs<int16_t>(base, i);
  case DTypeI8: return loadAs<int8_t>(base, i);
  case DTypeU8: return loadAs<uint8_t>(base, i);
  case DTypeBool: return loadAs<uint8_t>(base, i) != 0;
  }
  return 0;
}

/// Float to integer as onnxruntime does (truncation), with NaN and
/// out-of-range values pinned so that the conversion is defined.
static int64_t truncateToInt(double value) {
  if (std::isnan(value))
    return 0;
  if (value >= 9.2233720368547758e18)
    return std::numeric_limits<int64_t>::max();
  if (value <= -9.2233720368547758e18)
    return std::numeric_limits<int64_t>::min();
  return int64_t(value);
}

void storeDouble(uint8_t *base, uint8_t dtype, int64_t i, double value) {
  switch (dtype) {
  case DTypeF32: return storeAs<float>(base, i, float(value));
  case DTypeF64: return storeAs<double>(base, i, value);
  case DTypeF16: return storeAs<uint16_t>(base, i, floatToF16(float(value)));
  case DTypeBF16: return storeAs<uint16_t>(base, i, floatToBf16(float(value)));
  case DTypeBool: return storeAs<uint8_t>(base, i, value != 0);
  default: return storeInt(base, dtype, i, truncateToInt(value));
  }
}

int64_t loadInt(const uint8_t *base, uint8_t dtype, int64_t i) {
  switch (dtype) {
  case DTypeI64: return loadAs<int64_t>(base, i);
  case DTypeI32: return loadAs<int32_t>(base, i);
  case DTypeI16: return loadAs<int16_t>(base, i);
  case DTypeI8: return loadAs<int8_t>(base, i);
  case DTypeU8: return loadAs<uint8_t>(base, i);
  case DTypeBool: return loadAs<uint8_t>(base, i) != 0;
  default: return truncateToInt(loadDouble(base, dtype, i));
  }
}

void storeInt(uint8_t *base, uint8_t dtype, int64_t i, int64_t value) {
  // Narrowing wraps (two's complement), as a C++ cast does since C++20.
  switch (dtype) {
  case DTypeI64: return storeAs<int64_t>(base, i, value);
  case DTypeI32: return storeAs<int32_t>(base, i, int32_t(uint32_t(value)));
  case DTypeI16: return storeAs<int16_t>(base, i, int16_t(uint16_t(value)));
  case DTypeI8: return storeAs<int8_t>(base, i, int8_t(uint8_t(value)));
  case DTypeU8: return storeAs<uint8_t>(base, i, uint8_t(value));
  case DTypeBool: return storeAs<uint8_t>(base, i, value != 0);
  default: return storeDouble(base, dtype, i, double(value));
  }
}

FloatInput::FloatInput(const TensorView &view) {
  if (view.dtype == DTypeF32 &&
      reinterpret_cast<uintptr_t>(view.data) % alignof(float) == 0) {
    pointer = reinterpret_cast<const float *>(view.data);
    return;
  }
  copy.resize(view.numElements);
  for (int64_t i = 0; i < view.numElements; ++i)
    copy[i] = float(loadDouble(view.data, view.dtype, i));
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
