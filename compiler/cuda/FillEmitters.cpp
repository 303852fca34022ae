//===- FillEmitters.cpp - CUDA emitters: fills and generated values -------===//
//
// The ops whose result does not read an operand's elements: Shape and Size
// (small constants written from one thread), Constant and ConstantOfShape
// (a constant's bytes, or one element repeated as the widest pattern the
// size and address allow), inference Dropout (a copy and an all-true mask),
// Range, and training Dropout's generated mask (snug.dropout_mask, the
// host's dropoutKeeps bit for bit). Values are encoded as the host stores
// them (storeInt, storeDouble), so device and host agree on every byte.
// Registered in DataMovementEmitters.cpp's table; the opaque-unit helpers
// are shared from there (DataMovementInternal.h).
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CodegenHelpers.h"
#include "compiler/cuda/DataMovementInternal.h"
#include "compiler/cuda/KernelEmitter.h"

#include "ir/Float16.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace snug {
namespace cuda {

using namespace codegen;

namespace {

//===----------------------------------------------------------------------===//
// Fills: Dropout's mask, Shape, Size, Constant, ConstantOfShape, Range
//===----------------------------------------------------------------------===//

/// `value` stored as the host's storeDouble stores it into `dtype`.
std::vector<uint8_t> encodeDouble(double value, ir::DType dtype);

/// `value` stored as the host's storeInt stores it.
std::vector<uint8_t> encodeInt(int64_t value, ir::DType dtype) {
  std::vector<uint8_t> bytes(ir::getDTypeSize(dtype));
  auto put = [&](auto v) { std::memcpy(bytes.data(), &v, sizeof v); };
  switch (dtype) {
  case ir::DType::I64: put(value); break;
  case ir::DType::I32: put(int32_t(uint32_t(value))); break;
  case ir::DType::I16: put(int16_t(uint16_t(value))); break;
  case ir::DType::I8: put(int8_t(uint8_t(value))); break;
  case ir::DType::U8: put(uint8_t(value)); break;
  case ir::DType::U16: put(uint16_t(value)); break;
  case ir::DType::U32: put(uint32_t(value)); break;
  case ir::DType::U64: put(uint64_t(value)); break;
  case ir::DType::Bool: put(uint8_t(value != 0)); break;
  default: return encodeDouble(double(value), dtype);
  }
  return bytes;
}

std::vector<uint8_t> encodeDouble(double value, ir::DType dtype) {
  std::vector<uint8_t> bytes(ir::getDTypeSize(dtype));
  auto put = [&](auto v) { std::memcpy(bytes.data(), &v, sizeof v); };
  switch (dtype) {
  case ir::DType::F32: put(float(value)); break;
  case ir::DType::F64: put(value); break;
  case ir::DType::F16: put(floatToF16(float(value))); break;
  case ir::DType::BF16: put(floatToBf16(float(value))); break;
  case ir::DType::Bool: put(uint8_t(value != 0)); break;
  // The unsigned types by ScalarOps.h's float -> integer rule itself.
  case ir::DType::U16: put(scalar::Convert<uint16_t>::from(value)); break;
  case ir::DType::U32: put(scalar::Convert<uint32_t>::from(value)); break;
  case ir::DType::U64: put(scalar::Convert<uint64_t>::from(value)); break;
  default: {
    // Truncation with NaN and out-of-range values pinned, as the host.
    int64_t pinned = std::isnan(value)                 ? 0
                     : value >= 9.2233720368547758e18  ? INT64_MAX
                     : value <= -9.2233720368547758e18 ? INT64_MIN
                                                       : int64_t(value);
    return encodeInt(pinned, dtype);
  }
  }
  return bytes;
}

/// Element 0 of a tensor attribute as the host's loadDouble reads it.
double decodeDouble(llvm::ArrayRef<uint8_t> bytes, ir::DType dtype) {
  auto get = [&](auto v) {
    std::memcpy(&v, bytes.data(), sizeof v);
    return v;
  };
  switch (dtype) {
  case ir::DType::F32: return get(float());
  case ir::DType::F64: return get(double());
  case ir::DType::F16: return f16ToFloat(get(uint16_t()));
  case ir::DType::BF16: return bf16ToFloat(get(uint16_t()));
  case ir::DType::I64: return double(get(int64_t()));
  case ir::DType::I32: return get(int32_t());
  case ir::DType::I16: return get(int16_t());
  case ir::DType::I8: return get(int8_t());
  case ir::DType::U8: return get(uint8_t());
  case ir::DType::U16: return get(uint16_t());
  case ir::DType::U32: return get(uint32_t());
  case ir::DType::U64: return double(get(uint64_t()));
  case ir::DType::Bool: return get(uint8_t()) != 0;
  }
  return 0;
}

/// `bytes` (little-endian, at most 8) as an unsigned literal.
std::string unitLiteral(llvm::ArrayRef<uint8_t> bytes) {
  uint64_t value = 0;
  for (size_t i = bytes.size(); i-- > 0;)
    value = value << 8 | bytes[i];
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%llxull", (unsigned long long)value);
  return "(" + unitType(unsigned(bytes.size())) + ")" + buffer;
}

/// Fills `out` with copies of the one element `element`, as the widest
/// repeated pattern (up to 8 bytes) the size and address allow.
void emitFill(EmitContext &context, llvm::StringRef tag, const TensorRef &out,
              llvm::ArrayRef<uint8_t> element) {
  if (out.numElements == 0)
    return;
  unsigned bytes = unsigned(element.size());
  unsigned unit = std::min(8u, widestUnit(bytes, out.bytes, {out.place.value}));
  std::vector<uint8_t> pattern;
  for (unsigned k = 0; k < unit / bytes; ++k)
    pattern.insert(pattern.end(), element.begin(), element.end());
  int64_t count = int64_t(out.bytes / unit);
  Kernel kernel;
  kernel.tag = tag.str();
  addUnitPointer(kernel, "out", out, 0, false, unit);
  const char *index = indexTypeFor(context, count, count);
  kernel.body = gridStrideLoop(index, count) + "    out[i] = " +
                unitLiteral(pattern) + ";\n  }\n";
  launchGridStride(context, std::move(kernel), count);
}

/// Writes `data` (the whole tensor) to `out` from one thread: for the small
/// constants Shape and Size make. A larger non-uniform constant belongs in
/// the weights (fold-constants puts it there).
llvm::Error emitConstantBytes(EmitContext &context, const TensorRef &out,
                              llvm::ArrayRef<uint8_t> data) {
  unsigned bytes = elementBytes(out);
  if (data.size() != out.bytes)
    return context.unsupported("the constant does not match the result");
  if (out.numElements == 0)
    return llvm::Error::success();
  bool uniform = true;
  for (uint64_t k = bytes; k < data.size() && uniform; k += bytes)
    uniform = std::memcmp(data.data(), data.data() + k, bytes) == 0;
  if (uniform) {
    emitFill(context, tagOf(context), out, data.take_front(bytes));
    return llvm::Error::success();
  }
  if (out.numElements > 256)
    return context.unsupported("a constant of more than 256 distinct-valued "
                               "elements must be a weight (run "
                               "fold-constants)");
  Kernel kernel;
  kernel.tag = tagOf(context);
  addUnitPointer(kernel, "out", out, 0, false, bytes);
  for (int64_t k = 0; k < out.numElements; ++k)
    kernel.body += "  out[" + std::to_string(k) + "] = " +
                   unitLiteral(data.slice(k * bytes, bytes)) + ";\n";
  kernel.block.x = 1;
  context.launch(std::move(kernel));
  return llvm::Error::success();
}

} // namespace

llvm::Error emitShape(EmitContext &context) {
  const TensorRef &x = context.in(0), &y = context.out();
  int64_t rank = x.rank();
  int64_t start = context.intAttr("start", 0),
          end = context.intAttr("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::min(std::max<int64_t>(start, 0), rank);
  end = std::min(std::max<int64_t>(end, 0), rank);
  if (y.numElements != std::max<int64_t>(end - start, 0))
    return context.unsupported("result size does not match start and end");
  std::vector<uint8_t> data;
  for (int64_t d = start; d < end; ++d) {
    std::vector<uint8_t> element = encodeInt(x.dims[d], y.dtype);
    data.insert(data.end(), element.begin(), element.end());
  }
  return emitConstantBytes(context, y, data);
}

llvm::Error emitSize(EmitContext &context) {
  if (context.out().numElements != 1)
    return context.unsupported("the result must hold one element");
  return emitConstantBytes(context, context.out(),
                           encodeInt(context.in(0).numElements,
                                     context.out().dtype));
}

/// Constant copies its tensor attribute; ConstantOfShape fills with its
/// one element (f32 zero by default), converted as the host does.
llvm::Error emitConstant(EmitContext &context) {
  const TensorRef &y = context.out();
  const ir::Attribute *value = context.node.getAttribute("value");
  bool isTensor = value && value->getKind() == ir::Attribute::Kind::Tensor;
  if (context.node.is(ir::OpCode::Constant)) {
    if (!isTensor || value->getTensorType().getDType() != y.dtype)
      return context.unsupported("tensor attribute 'value' must match the "
                                 "result");
    return emitConstantBytes(context, y, value->getTensorBytes());
  }
  double fill = 0;
  if (isTensor && !value->getTensorBytes().empty())
    fill = decodeDouble(value->getTensorBytes(),
                        value->getTensorType().getDType());
  emitFill(context, "constantofshape", y, encodeDouble(fill, y.dtype));
  return llvm::Error::success();
}

/// Inference Dropout: the identity (a copy, none when the planner put the
/// result on the operand) and an all-true mask when it is asked for.
llvm::Error emitDropout(EmitContext &context) {
  if (context.hasIn(2)) {
    const ir::Value *training = context.node.getOperand(2);
    if (!training->isWeight() || training->isWeightElided())
      return context.unsupported("training_mode must be a constant");
    llvm::ArrayRef<uint8_t> data =
        context.node.getModule()->getWeightData(training);
    if (!data.empty() &&
        decodeDouble(data, training->getType().getDType()) != 0)
      return context.unsupported("training_mode is not supported");
  }
  const TensorRef &x = context.in(0), &y = context.out();
  if (x.bytes != y.bytes)
    return context.unsupported("operand and result differ in size");
  context.copy(y.place, x.place, y.bytes);
  if (context.results.size() > 1 && context.out(1).present)
    emitFill(context, "dropout_mask", context.out(1),
             encodeInt(1, context.out(1).dtype));
  return llvm::Error::success();
}

/// Range(start, limit, delta): start + i * delta, in double for a float
/// result and int64 otherwise, as the host.
llvm::Error emitRange(EmitContext &context) {
  if (!context.hasIn(0) || !context.hasIn(2))
    return context.unsupported("expects start, limit and delta");
  const TensorRef &start = context.in(0), &delta = context.in(2),
                  &y = context.out();
  if (start.numElements != 1 || delta.numElements != 1)
    return context.unsupported("start and delta must be scalars");
  if (y.numElements == 0)
    return llvm::Error::success();
  bool floatMath = ir::isFloatDType(y.dtype);
  if (!floatMath &&
      (ir::isFloatDType(start.dtype) || ir::isFloatDType(delta.dtype)))
    return context.unsupported("an integer range needs integer start and "
                               "delta");
  std::string type = floatMath ? "double" : "int64_t";
  Kernel kernel;
  kernel.tag = "range";
  kernel.addTensor("start", start, true);
  kernel.addTensor("delta", delta, true);
  kernel.addTensor("out", y, false);
  const char *index = indexTypeFor(context, y.numElements, y.numElements);
  kernel.body = "  const " + type + " first = (" + type +
                ")snug_load(start), step = (" + type + ")snug_load(delta);\n";
  kernel.body += gridStrideLoop(index, y.numElements);
  std::string value =
      floatMath ? "first + (double)i * step"
                : "(int64_t)((uint64_t)first + (uint64_t)i * (uint64_t)step)";
  kernel.body +=
      "    " + storeConverted(y.dtype, type, "out + i", value) + "  }\n";
  launchGridStride(context, std::move(kernel), y.numElements);
  return llvm::Error::success();
}

/// snug.dropout_mask(seed): one thread per element runs ScalarOps.h's
/// dropoutKeeps (the prelude embeds it), so the device mask is the host's
/// bit for bit.
llvm::Error emitDropoutMask(EmitContext &context) {
  const TensorRef &seed = context.in(0), &y = context.out();
  if (seed.numElements != 1 || seed.dtype != ir::DType::I64)
    return context.unsupported("the seed must be an i64 scalar");
  if (y.dtype != ir::DType::F32)
    return context.unsupported("the mask must be f32");
  float ratio = context.floatAttr("ratio", 0.5f);
  int64_t salt = context.intAttr("salt", 0);
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return context.unsupported("ratio must be in [0, 1)");
  if (y.numElements == 0)
    return llvm::Error::success();
  Kernel kernel;
  kernel.tag = "dropout_mask";
  kernel.addTensor("seed", seed, true);
  kernel.addTensor("out", y, false);
  const char *index = indexTypeFor(context, y.numElements, y.numElements);
  std::string ratioText = "(float)" + cudaFloatLiteral(ratio);
  kernel.body = "  const uint64_t key = (uint64_t)snug_load(seed);\n"
                "  const float ratio = " +
                ratioText +
                ";\n"
                "  const float scale = snug::scalar::dropoutScale(ratio);\n";
  kernel.body += gridStrideLoop(index, y.numElements);
  kernel.body += "    out[i] = snug::scalar::dropoutKeeps(key, " +
                 std::to_string(uint32_t(salt)) +
                 "u, (uint64_t)i, ratio) ? scale : 0.0f;\n  }\n";
  launchGridStride(context, std::move(kernel), y.numElements);
  return llvm::Error::success();
}

} // namespace cuda
} // namespace snug
