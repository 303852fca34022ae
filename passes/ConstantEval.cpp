//===- ConstantEval.cpp - Evaluating nodes on constant operands -----------===//
//
// Data-movement ops work on raw elements of any size (a byte copy per
// element), so they fold every element type; arithmetic goes through double
// or int64. Broadcasting maps each result element to an operand element with
// strides that are zero on broadcast dims.
//
//===----------------------------------------------------------------------===//
#include "passes/ConstantEval.h"
#include "passes/ShapeFunctions.h"

#include "ir/Float16.h"

#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstring>

namespace snug {

using ir::DType;
using ir::TensorType;

//===----------------------------------------------------------------------===//
// Elements
//===----------------------------------------------------------------------===//

template <typename T> static T load(const uint8_t *data, int64_t index) {
  T value;
  std::memcpy(&value, data + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T> static void store(uint8_t *data, int64_t index, T value) {
  std::memcpy(data + index * sizeof(T), &value, sizeof(T));
}

double readElementAsDouble(DType dtype, const uint8_t *data, int64_t index) {
  switch (dtype) {
  case DType::F32:
    return load<float>(data, index);
  case DType::F16:
    return f16ToFloat(load<uint16_t>(data, index));
  case DType::BF16:
    return bf16ToFloat(load<uint16_t>(data, index));
  case DType::F64:
    return load<double>(data, index);
  case DType::I64:
    return static_cast<double>(load<int64_t>(data, index));
  case DType::I32:
    return load<int32_t>(data, index);
  case DType::I16:
    return load<int16_t>(data, index);
  case DType::I8:
    return load<int8_t>(data, index);
  case DType::U8:
    return load<uint8_t>(data, index);
  case DType::Bool:
    return load<uint8_t>(data, index) != 0;
  }
  llvm_unreachable("unknown dtype");
}

static int64_t readInt(DType dtype, const uint8_t *data, int64_t index) {
  switch (dtype) {
  case DType::I64:
    return load<int64_t>(data, index);
  case DType::I32:
    return load<int32_t>(data, index);
  case DType::I16:
    return load<int16_t>(data, index);
  case DType::I8:
    return load<int8_t>(data, index);
  case DType::U8:
    return load<uint8_t>(data, index);
  case DType::Bool:
    return load<uint8_t>(data, index) != 0;
  default:
    return static_cast<int64_t>(readElementAsDouble(dtype, data, index));
  }
}

static void writeDouble(DType dtype, uint8_t *data, int64_t index,
                        double value) {
  switch (dtype) {
  case DType::F32:
    return store<float>(data, index, static_cast<float>(value));
  case DType::F16:
    return store<uint16_t>(data, index, floatToF16(static_cast<float>(value)));
  case DType::BF16:
    return store<uint16_t>(data, index, floatToBf16(static_cast<float>(value)));
  case DType::F64:
    return store<double>(data, index, value);
  case DType::Bool:
    return store<uint8_t>(data, index, value != 0);
  default:
    break;
  }
  // Float to integer truncates toward zero (C and onnxruntime); NaN and
  // out-of-range values become 0 rather than undefined behaviour.
  int64_t integer = std::isfinite(value) && std::fabs(value) < 9.2e18
                        ? static_cast<int64_t>(value)
                        : 0;
  switch (dtype) {
  case DType::I64:
    return store<int64_t>(data, index, integer);
  case DType::I32:
    return store<int32_t>(data, index, static_cast<int32_t>(integer));
  case DType::I16:
    return store<int16_t>(data, index, static_cast<int16_t>(integer));
  case DType::I8:
    return store<int8_t>(data, index, static_cast<int8_t>(integer));
  case DType::U8:
    return store<uint8_t>(data, index, static_cast<uint8_t>(integer));
  default:
    llvm_unreachable("float dtypes handled above");
  }
}

static void writeInt(DType dtype, uint8_t *data, int64_t index, int64_t value) {
  switch (dtype) {
  case DType::I64:
    return store<int64_t>(data, index, value);
  case DType::I32:
    return store<int32_t>(data, index, static_cast<int32_t>(value));
  case DType::I16:
    return store<int16_t>(data, index, static_cast<int16_t>(value));
  case DType::I8:
    return store<int8_t>(data, index, static_cast<int8_t>(value));
  case DType::U8:
    return store<uint8_t>(data, index, static_cast<uint8_t>(value));
  case DType::Bool:
    return store<uint8_t>(data, index, value != 0);
  default:
    return writeDouble(dtype, data, index, static_cast<double>(value));
  }
}

llvm::Optional<llvm::SmallVector<int64_t, 4>>
readIntegers(const TensorType &type, llvm::ArrayRef<uint8_t> bytes) {
  if (!ir::isIntegerDType(type.getDType()) ||
      bytes.size() != type.getByteSize())
    return llvm::None;
  llvm::SmallVector<int64_t, 4> values;
  for (int64_t i = 0; i < type.getNumElements(); ++i)
    values.push_back(readInt(type.getDType(), bytes.data(), i));
  return values;
}

/// For each element of `result`, the index of the element of `operand` that
/// broadcasts to it.
static std::vector<int64_t> broadcastIndices(llvm::ArrayRef<int64_t> result,
                                             llvm::ArrayRef<int64_t> operand) {
  size_t rank = result.size();
  llvm::SmallVector<int64_t, 4> strides(rank, 0);
  llvm::SmallVector<int64_t, 4> operandStrides = getStrides(operand);
  for (size_t i = 0; i < operand.size(); ++i) {
    size_t at = rank - operand.size() + i;
    strides[at] = operand[i] == 1 ? 0 : operandStrides[i];
  }
  int64_t count = TensorType(DType::U8, result).getNumElements();
  std::vector<int64_t> indices(count);
  llvm::SmallVector<int64_t, 4> position(rank, 0);
  int64_t offset = 0;
  for (int64_t flat = 0; flat < count; ++flat) {
    indices[flat] = offset;
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      ++position[d];
      offset += strides[d];
      if (position[d] < result[d])
        break;
      offset -= strides[d] * position[d];
      position[d] = 0;
    }
  }
  return indices;
}

/// memcpy that allows empty ranges (whose pointers may be null).
static void copyBytes(void *to, const void *from, size_t size) {
  if (size)
    std::memcpy(to, from, size);
}

//===----------------------------------------------------------------------===//
// The evaluator
//===----------------------------------------------------------------------===//

namespace {
class Evaluator {
public:
  Evaluator(const ir::Node &node, llvm::ArrayRef<OperandData> operands)
      : node(node), operands(operands) {
    for (unsigned i = 0; i < node.getNumResults(); ++i)
      results.emplace_back(node.getResult(i)->getType().getByteSize());
  }
  /// False when the op or its element types are not handled.
  llvm::Expected<bool> run();
  ResultData takeResults() { return std::move(results); }

private:
  const TensorType &type(unsigned index) const {
    return node.getOperand(index)->getType();
  }
  const TensorType &resultType(unsigned index = 0) const {
    return node.getResult(index)->getType();
  }
  const uint8_t *data(unsigned index) const { return operands[index]->data(); }
  const ir::AttributeMap &attrs() const { return node.getAttributes(); }
  llvm::Error error(const llvm::Twine &message) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   node.describe() + ": " + message.str());
  }

  bool copyOperand();
  bool shape();
  bool constant();
  bool constantOfShape();
  bool range();
  bool cast();
  bool transpose();
  bool concat();
  llvm::Expected<bool> gather();
  bool slice();
  bool split();
  bool expand();
  bool tile();
  bool unary();
  bool binary();
  bool where();

  const ir::Node &node;
  llvm::ArrayRef<OperandData> operands;
  ResultData results;
};
} // namespace

bool Evaluator::copyOperand() {
  assert(results[0].size() == operands[0]->size());
  copyBytes(results[0].data(), data(0), results[0].size());
  return true;
}

bool Evaluator::shape() {
  llvm::ArrayRef<int64_t> dims = type(0).getDims();
  if (node.getOpName() == "Size") {
    store<int64_t>(results[0].data(), 0, type(0).getNumElements());
    return true;
  }
  int64_t start = getIntAttr(attrs(), "start", 0);
  for (int64_t i = 0; i < resultType().getNumElements(); ++i)
    store<int64_t>(results[0].data(), i, dims[start + i]);
  return true;
}

bool Evaluator::constant() {
  auto it = attrs().find("value");
  if (it == attrs().end() ||
      it->second.getKind() != ir::Attribute::Kind::Tensor)
    return false;
  llvm::ArrayRef<uint8_t> bytes = it->second.getTensorBytes();
  if (bytes.size() != results[0].size())
    return false;
  copyBytes(results[0].data(), bytes.data(), bytes.size());
  return true;
}

bool Evaluator::constantOfShape() {
  auto it = attrs().find("value");
  size_t elementSize = ir::getDTypeSize(resultType().getDType());
  std::vector<uint8_t> value(elementSize, 0);
  if (it != attrs().end() &&
      it->second.getKind() == ir::Attribute::Kind::Tensor &&
      it->second.getTensorBytes().size() == elementSize)
    value.assign(it->second.getTensorBytes().begin(),
                 it->second.getTensorBytes().end());
  for (size_t at = 0; at < results[0].size(); at += elementSize)
    copyBytes(results[0].data() + at, value.data(), elementSize);
  return true;
}

bool Evaluator::range() {
  DType dtype = resultType().getDType();
  double start = readElementAsDouble(type(0).getDType(), data(0), 0);
  double delta = readElementAsDouble(type(2).getDType(), data(2), 0);
  for (int64_t i = 0; i < resultType().getNumElements(); ++i) {
    if (ir::isIntegerDType(dtype))
      writeInt(dtype, results[0].data(), i,
               static_cast<int64_t>(start) + i * static_cast<int64_t>(delta));
    else
      writeDouble(dtype, results[0].data(), i, start + i * delta);
  }
  return true;
}

bool Evaluator::cast() {
  DType from = type(0).getDType(), to = resultType().getDType();
  for (int64_t i = 0; i < resultType().getNumElements(); ++i) {
    if (!ir::isFloatDType(from))
      writeInt(to, results[0].data(), i, readInt(from, data(0), i));
    else
      writeDouble(to, results[0].data(), i,
                  readElementAsDouble(from, data(0), i));
  }
  return true;
}

bool Evaluator::transpose() {
  llvm::ArrayRef<int64_t> inDims = type(0).getDims();
  size_t rank = inDims.size();
  llvm::SmallVector<int64_t, 4> perm;
  if (auto given = getIntsAttr(attrs(), "perm"))
    perm = *given;
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  llvm::SmallVector<int64_t, 4> inStrides = getStrides(inDims);
  // The operand's strides seen in result order give a broadcast-free gather.
  llvm::SmallVector<int64_t, 4> outDims(resultType().getDims().begin(),
                                        resultType().getDims().end());
  size_t elementSize = ir::getDTypeSize(resultType().getDType());
  int64_t count = resultType().getNumElements();
  llvm::SmallVector<int64_t, 4> position(rank, 0);
  int64_t offset = 0;
  for (int64_t flat = 0; flat < count; ++flat) {
    copyBytes(results[0].data() + flat * elementSize,
              data(0) + offset * elementSize, elementSize);
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      ++position[d];
      offset += inStrides[perm[d]];
      if (position[d] < outDims[d])
        break;
      offset -= inStrides[perm[d]] * position[d];
      position[d] = 0;
    }
  }
  return true;
}

bool Evaluator::concat() {
  int64_t axis =
      *normalizeAxis(getIntAttr(attrs(), "axis", 0), resultType().getRank());
  size_t elementSize = ir::getDTypeSize(resultType().getDType());
  llvm::ArrayRef<int64_t> dims = resultType().getDims();
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= dims[i];
  uint8_t *out = results[0].data();
  for (int64_t o = 0; o < outer; ++o)
    for (unsigned k = 0; k < node.getNumOperands(); ++k) {
      int64_t chunk = type(k).getNumElements() / outer;
      size_t bytes = chunk * elementSize;
      copyBytes(out, data(k) + o * bytes, bytes);
      out += bytes;
    }
  return true;
}

llvm::Expected<bool> Evaluator::gather() {
  llvm::ArrayRef<int64_t> dims = type(0).getDims();
  int64_t axis = *normalizeAxis(getIntAttr(attrs(), "axis", 0), dims.size());
  auto indices = readIntegers(type(1), *operands[1]);
  if (!indices)
    return false;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i)
    inner *= dims[i];
  size_t elementSize = ir::getDTypeSize(type(0).getDType());
  size_t chunk = inner * elementSize;
  uint8_t *out = results[0].data();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : *indices) {
      int64_t at = index < 0 ? index + dims[axis] : index;
      if (at < 0 || at >= dims[axis])
        return error("index " + llvm::Twine(index) + " is out of range for " +
                     type(0).str() + " on axis " + llvm::Twine(axis));
      copyBytes(out, data(0) + (o * dims[axis] + at) * chunk, chunk);
      out += chunk;
    }
  return true;
}

bool Evaluator::slice() {
  auto starts = getIntsAttr(attrs(), "starts");
  auto axes = getIntsAttr(attrs(), "axes");
  auto steps = getIntsAttr(attrs(), "steps");
  if (!starts || !axes || !steps)
    return false;
  size_t rank = type(0).getRank();
  llvm::SmallVector<int64_t, 4> begin(rank, 0), step(rank, 1);
  for (size_t i = 0; i < axes->size(); ++i) {
    begin[(*axes)[i]] = (*starts)[i];
    step[(*axes)[i]] = (*steps)[i];
  }
  llvm::SmallVector<int64_t, 4> inStrides = getStrides(type(0).getDims());
  llvm::ArrayRef<int64_t> outDims = resultType().getDims();
  size_t elementSize = ir::getDTypeSize(resultType().getDType());
  int64_t count = resultType().getNumElements();
  llvm::SmallVector<int64_t, 4> position(rank, 0);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset += (begin[d] + position[d] * step[d]) * inStrides[d];
    copyBytes(results[0].data() + flat * elementSize,
              data(0) + offset * elementSize, elementSize);
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      if (++position[d] < outDims[d])
        break;
      position[d] = 0;
    }
  }
  return true;
}

bool Evaluator::split() {
  llvm::ArrayRef<int64_t> dims = type(0).getDims();
  int64_t axis = *normalizeAxis(getIntAttr(attrs(), "axis", 0), dims.size());
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i)
    inner *= dims[i];
  size_t elementSize = ir::getDTypeSize(type(0).getDType());
  int64_t start = 0;
  for (unsigned r = 0; r < node.getNumResults(); ++r) {
    int64_t part = resultType(r).getDims()[axis];
    for (int64_t o = 0; o < outer; ++o)
      copyBytes(results[r].data() + o * part * inner * elementSize,
                data(0) + (o * dims[axis] + start) * inner * elementSize,
                part * inner * elementSize);
    start += part;
  }
  return true;
}

bool Evaluator::expand() {
  std::vector<int64_t> indices =
      broadcastIndices(resultType().getDims(), type(0).getDims());
  size_t elementSize = ir::getDTypeSize(resultType().getDType());
  for (size_t i = 0; i < indices.size(); ++i)
    copyBytes(results[0].data() + i * elementSize,
              data(0) + indices[i] * elementSize, elementSize);
  return true;
}

bool Evaluator::tile() {
  llvm::ArrayRef<int64_t> inDims = type(0).getDims();
  llvm::ArrayRef<int64_t> outDims = resultType().getDims();
  llvm::SmallVector<int64_t, 4> inStrides = getStrides(inDims);
  size_t rank = inDims.size();
  size_t elementSize = ir::getDTypeSize(resultType().getDType());
  llvm::SmallVector<int64_t, 4> position(rank, 0);
  for (int64_t flat = 0; flat < resultType().getNumElements(); ++flat) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset += (position[d] % inDims[d]) * inStrides[d];
    copyBytes(results[0].data() + flat * elementSize,
              data(0) + offset * elementSize, elementSize);
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      if (++position[d] < outDims[d])
        break;
      position[d] = 0;
    }
  }
  return true;
}

static llvm::Optional<double> applyUnary(llvm::StringRef op, double x) {
  if (op == "Neg")
    return -x;
  if (op == "Abs")
    return std::fabs(x);
  if (op == "Sqrt")
    return std::sqrt(x);
  if (op == "Exp")
    return std::exp(x);
  if (op == "Log")
    return std::log(x);
  if (op == "Reciprocal")
    return 1.0 / x;
  if (op == "Relu")
    return x > 0 ? x : 0.0;
  if (op == "Floor")
    return std::floor(x);
  if (op == "Ceil")
    return std::ceil(x);
  if (op == "Round")
    return std::nearbyint(x);
  if (op == "Sigmoid")
    return 1.0 / (1.0 + std::exp(-x));
  if (op == "Tanh")
    return std::tanh(x);
  if (op == "Erf")
    return std::erf(x);
  if (op == "Sin")
    return std::sin(x);
  if (op == "Cos")
    return std::cos(x);
  if (op == "Sign")
    return static_cast<double>((x > 0) - (x < 0));
  if (op == "Not")
    return x == 0 ? 1.0 : 0.0;
  return llvm::None;
}

bool Evaluator::unary() {
  DType in = type(0).getDType(), out = resultType().getDType();
  llvm::StringRef op = node.getOpName();
  for (int64_t i = 0; i < resultType().getNumElements(); ++i) {
    if (!ir::isFloatDType(in) && (op == "Neg" || op == "Abs")) {
      int64_t x = readInt(in, data(0), i);
      writeInt(out, results[0].data(), i, op == "Neg" ? -x : std::llabs(x));
      continue;
    }
    auto value = applyUnary(op, readElementAsDouble(in, data(0), i));
    if (!value)
      return false;
    writeDouble(out, results[0].data(), i, *value);
  }
  return true;
}

/// The binary ops whose folding is the same in double and int64
/// arithmetic: sums, products, compares and logic.
template <class T>
static llvm::Optional<T> applySharedBinary(llvm::StringRef op, T a, T b) {
  if (op == "Add" || op == "Sum")
    return a + b;
  if (op == "Sub")
    return a - b;
  if (op == "Mul")
    return a * b;
  if (op == "Equal")
    return a == b;
  if (op == "Less")
    return a < b;
  if (op == "LessOrEqual")
    return a <= b;
  if (op == "Greater")
    return a > b;
  if (op == "GreaterOrEqual")
    return a >= b;
  if (op == "And")
    return (a != 0) && (b != 0);
  if (op == "Or")
    return (a != 0) || (b != 0);
  if (op == "Xor")
    return (a != 0) != (b != 0);
  return llvm::None;
}

static llvm::Optional<double> applyBinary(llvm::StringRef op, double a,
                                          double b) {
  if (op == "Div")
    return a / b;
  if (op == "Pow")
    return std::pow(a, b);
  if (op == "Max")
    return std::fmax(a, b);
  if (op == "Min")
    return std::fmin(a, b);
  return applySharedBinary(op, a, b);
}

static llvm::Optional<int64_t> applyIntBinary(llvm::StringRef op, int64_t a,
                                              int64_t b) {
  if (op == "Div")
    return b == 0 ? 0 : a / b;
  if (op == "Max")
    return std::max(a, b);
  if (op == "Min")
    return std::min(a, b);
  if (op == "Mod")
    return b == 0 ? 0 : ((a % b) + b) % b;
  return applySharedBinary(op, a, b);
}

bool Evaluator::binary() {
  llvm::StringRef op = node.getOpName();
  DType out = resultType().getDType();
  llvm::ArrayRef<int64_t> dims = resultType().getDims();
  int64_t count = resultType().getNumElements();
  // Variadic Max/Min/Sum fold pairwise into the result buffer.
  std::vector<int64_t> first = broadcastIndices(dims, type(0).getDims());
  std::vector<double> accF(count);
  std::vector<int64_t> accI(count);
  bool useInt = !ir::isFloatDType(type(0).getDType()) && op != "Pow";
  for (int64_t i = 0; i < count; ++i) {
    if (useInt)
      accI[i] = readInt(type(0).getDType(), data(0), first[i]);
    else
      accF[i] = readElementAsDouble(type(0).getDType(), data(0), first[i]);
  }
  for (unsigned k = 1; k < node.getNumOperands(); ++k) {
    std::vector<int64_t> other = broadcastIndices(dims, type(k).getDims());
    for (int64_t i = 0; i < count; ++i) {
      if (useInt) {
        auto value = applyIntBinary(
            op, accI[i], readInt(type(k).getDType(), data(k), other[i]));
        if (!value)
          return false;
        accI[i] = *value;
      } else {
        auto value = applyBinary(
            op, accF[i],
            readElementAsDouble(type(k).getDType(), data(k), other[i]));
        if (!value)
          return false;
        accF[i] = *value;
      }
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    if (useInt)
      writeInt(out, results[0].data(), i, accI[i]);
    else
      writeDouble(out, results[0].data(), i, accF[i]);
  }
  return true;
}

bool Evaluator::where() {
  llvm::ArrayRef<int64_t> dims = resultType().getDims();
  std::vector<int64_t> c = broadcastIndices(dims, type(0).getDims());
  std::vector<int64_t> x = broadcastIndices(dims, type(1).getDims());
  std::vector<int64_t> y = broadcastIndices(dims, type(2).getDims());
  size_t elementSize = ir::getDTypeSize(resultType().getDType());
  for (size_t i = 0; i < c.size(); ++i) {
    bool pick = data(0)[c[i]] != 0;
    copyBytes(results[0].data() + i * elementSize,
              pick ? data(1) + x[i] * elementSize
                   : data(2) + y[i] * elementSize,
              elementSize);
  }
  return true;
}

static const llvm::StringSet<> &copyOps() {
  static const llvm::StringSet<> ops = {"Identity", "Dropout", "Reshape",
                                        "Flatten",  "Squeeze", "Unsqueeze"};
  return ops;
}

static const llvm::StringSet<> &unaryOps() {
  static const llvm::StringSet<> ops = {
      "Neg",  "Abs",   "Sqrt", "Exp",   "Log",     "Reciprocal",
      "Relu", "Floor", "Ceil", "Round", "Sigmoid", "Tanh",
      "Erf",  "Sin",   "Cos",  "Sign",  "Not"};
  return ops;
}

static const llvm::StringSet<> &binaryOps() {
  static const llvm::StringSet<> ops = {"Add",
                                        "Sub",
                                        "Mul",
                                        "Div",
                                        "Pow",
                                        "Max",
                                        "Min",
                                        "Sum",
                                        "Equal",
                                        "Less",
                                        "LessOrEqual",
                                        "Greater",
                                        "GreaterOrEqual",
                                        "And",
                                        "Or",
                                        "Xor",
                                        "Mod"};
  return ops;
}

llvm::Expected<bool> Evaluator::run() {
  llvm::StringRef op = node.getOpName();
  for (unsigned i = 0; i < operands.size(); ++i)
    if (needsOperandData(node.getOpCode(), i) && node.getOperand(i) &&
        !operands[i])
      return false;
  if (copyOps().count(op))
    return copyOperand();
  if (unaryOps().count(op))
    return unary();
  if (binaryOps().count(op))
    return binary();
  if (op == "Shape" || op == "Size")
    return shape();
  if (op == "Constant")
    return constant();
  if (op == "ConstantOfShape")
    return constantOfShape();
  if (op == "Range")
    return range();
  if (op == "Cast")
    return cast();
  if (op == "Transpose")
    return transpose();
  if (op == "Concat")
    return concat();
  if (op == "Gather")
    return gather();
  if (op == "Slice")
    return slice();
  if (op == "Split")
    return split();
  if (op == "Expand")
    return expand();
  if (op == "Tile")
    return tile();
  if (op == "Where")
    return where();
  return false;
}

bool canEvaluate(ir::OpCode op) {
  static const llvm::StringSet<> others = {
      "Shape",     "Size",   "Constant", "ConstantOfShape", "Range", "Cast",
      "Transpose", "Concat", "Gather",   "Slice",           "Split", "Expand",
      "Tile",      "Where"};
  llvm::StringRef opName = ir::getOpInfo(op).name;
  return copyOps().count(opName) || unaryOps().count(opName) ||
         binaryOps().count(opName) || others.count(opName);
}

bool needsOperandData(ir::OpCode op, unsigned index) {
  if (op == ir::OpCode::Shape || op == ir::OpCode::Size)
    return false;
  // Dropout's ratio and training-mode operands do not change its result.
  if (op == ir::OpCode::Dropout)
    return index == 0;
  return true;
}

llvm::Expected<llvm::Optional<ResultData>>
evaluateNode(const ir::Node &node, llvm::ArrayRef<OperandData> operands) {
  assert(operands.size() == node.getNumOperands());
  for (unsigned i = 0; i < node.getNumOperands(); ++i)
    if (operands[i] && node.getOperand(i) &&
        operands[i]->size() != node.getOperand(i)->getType().getByteSize())
      return llvm::None;
  Evaluator evaluator(node, operands);
  auto handled = evaluator.run();
  if (!handled)
    return handled.takeError();
  if (!*handled)
    return llvm::None;
  return evaluator.takeResults();
}

} // namespace snug
