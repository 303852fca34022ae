//===- ElementwiseExpr.cpp - One elementwise op as CUDA statements --------===//
//
// The table of elementwise ops is derived from core/Ops.def and
// core/ScalarOps.h (ScalarOpTable.h): for each op, a builder
// instantiated on its scalar struct writes the call
// `snug::scalar::<ID>::apply<C>(operands..., params)` with C from the same
// computeKind the host kernels use and the params bound by the same
// bindParams (from the op's ATTR lines), so the emitted code and the host
// agree by construction. The conversions (Cast, snug.cast) are written the
// same way from scalar::Cast, whose compute type follows the result's dtype
// (attribute `to`) as well.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/ElementwiseExpr.h"

#include "compiler/cuda/KernelEmitter.h"
#include "core/ScalarOpTable.h"

#include <array>

namespace snug {
namespace cuda {

namespace {

/// scalar::bindParams's view of an IR node's attributes (as the host's
/// KernelContext reads the bundle's: ints read as floats and back).
struct IrAttrReader {
  const ir::AttributeMap &attributes;
  const ir::Attribute *find(const char *name) const {
    auto it = attributes.find(name);
    return it == attributes.end() ? nullptr : &it->second;
  }
  float getFloat(const char *name, float fallback) const {
    const ir::Attribute *attr = find(name);
    if (attr && attr->getKind() == ir::Attribute::Kind::Float)
      return attr->getFloat();
    if (attr && attr->getKind() == ir::Attribute::Kind::Int)
      return float(attr->getInt());
    return fallback;
  }
  int64_t getInt(const char *name, int64_t fallback) const {
    const ir::Attribute *attr = find(name);
    if (attr && attr->getKind() == ir::Attribute::Kind::Int)
      return attr->getInt();
    if (attr && attr->getKind() == ir::Attribute::Kind::Float)
      return int64_t(attr->getFloat());
    return fallback;
  }
  bool stringIs(const char *name, const char *value) const {
    const ir::Attribute *attr = find(name);
    return attr && attr->getKind() == ir::Attribute::Kind::String &&
           attr->getString() == value;
  }
};

scalar::ElementClass classOf(ir::DType type) {
  if (type == ir::DType::F64)
    return scalar::ElementClass::F64;
  if (type == ir::DType::U64)
    return scalar::ElementClass::U64;
  return ir::isFloatDType(type) ? scalar::ElementClass::NarrowFloat
                                : scalar::ElementClass::Integer;
}

const char *computeTypeName(scalar::ComputeKind kind) {
  switch (kind) {
  case scalar::ComputeKind::Float: return "float";
  case scalar::ComputeKind::Double: return "double";
  case scalar::ComputeKind::Int64: return "int64_t";
  case scalar::ComputeKind::UInt64: return "uint64_t";
  }
  return "double";
}

std::string floatParam(float value) {
  return "(float)" + cudaFloatLiteral(double(value));
}

llvm::Error badOperands(const char *id, size_t count) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "%s: %zu operands is not an operand count it "
                                 "takes",
                                 id, count);
}

/// Whether the op at `position` has ATTR lines (its calls then take bound
/// Params, declared before the loop).
bool takesAttributes(unsigned position) {
  for (const scalar::table::AttrSpec &attr : scalar::table::kAttrs)
    if (attr.op == position)
      return true;
  return false;
}

using BuildFn = llvm::Expected<ElementwiseCode> (*)(
    const char *id, const ir::AttributeMap &, llvm::ArrayRef<std::string>,
    llvm::ArrayRef<ir::DType>, llvm::StringRef);
using KindFn = scalar::ComputeKind (*)(const scalar::ElementClass *, int);

struct Entry {
  const char *id = nullptr; // the struct's name in snug::scalar
  BuildFn build = nullptr;
  KindFn kind = nullptr;
};

template <class Op, unsigned Position>
llvm::Expected<ElementwiseCode>
buildCall(const char *id, const ir::AttributeMap &attributes,
          llvm::ArrayRef<std::string> operands,
          llvm::ArrayRef<ir::DType> types, llvm::StringRef result) {
  std::string op = std::string("snug::scalar::") + id;
  std::string r = result.str();
  ElementwiseCode code;
  scalar::Params params =
      scalar::bindParams<Op, Position>(IrAttrReader{attributes});
  std::string paramsName = "snug::scalar::Params()";
  if (takesAttributes(Position)) {
    paramsName = r + "_p";
    code.setup = "  const snug::scalar::Params " + paramsName + " = {{" +
                 floatParam(params.f[0]) + ", " + floatParam(params.f[1]) +
                 "}, " + cudaIntLiteral(params.i) + "};\n";
  }
  size_t count = operands.size();
  if constexpr (Op::kSelect) {
    if (count != 3 || types.size() != 3 ||
        llvm::any_of(operands, [](const std::string &e) { return e.empty(); }))
      return badOperands(id, count);
    std::string type = cudaTypeName(types[1]);
    code.computeType = code.resultType = type;
    code.body = "const " + type + " " + r + " = " + op + "::apply<" + type +
                ">(snug::scalar::to<bool>(snug::scalar::normalize(" +
                operands[0] + ")), " + operands[1] + ", " + operands[2] +
                ", " + paramsName + ");\n";
    return code;
  } else {
    bool arityOk = Op::kFold ? count >= 1
                   : Op::kArity == 3
                       ? count >= 1 && count <= 3
                       : count == size_t(Op::kArity);
    if (!arityOk || types.size() != count || operands[0].empty())
      return badOperands(id, count);
    std::vector<scalar::ElementClass> classes;
    for (size_t k = 0; k < count; ++k)
      if (!operands[k].empty())
        classes.push_back(classOf(types[k]));
    scalar::ComputeKind kind =
        scalar::computeKind<Op>(classes.data(), int(classes.size()));
    std::string C = computeTypeName(kind);
    code.computeType = C;
    code.resultType = Op::kCompare ? "bool" : C;
    // Operand k in C; an absent one is the op's constant for it.
    auto operand = [&](size_t k) -> std::string {
      if (k >= count || operands[k].empty())
        return op + "::absent<" + C + ">(" + std::to_string(k) + ", " +
               paramsName + ")";
      return "snug::scalar::to<" + C + ">(snug::scalar::normalize(" +
             operands[k] + "))";
    };
    std::string call = op + "::apply<" + C + ">(";
    if (Op::kFold) {
      if (Op::kFold && count > 1 && classes.size() != count)
        return badOperands(id, count);
      std::string acc = r + "_acc";
      code.body = C + " " + acc + " = " + operand(0) + ";\n";
      for (size_t k = 1; k < count; ++k)
        code.body += acc + " = " + call + acc + ", " + operand(k) + ", " +
                     paramsName + ");\n";
      code.body += "const " + C + " " + r + " = " + op + "::finish<" + C +
                   ">(" + acc + ", " + std::to_string(count) + ");\n";
      return code;
    }
    for (int k = 0; k < Op::kArity; ++k)
      call += operand(size_t(k)) + ", ";
    code.body =
        "const " + code.resultType + " " + r + " = " + call + paramsName + ");\n";
    return code;
  }
}

/// A conversion (Cast, snug.cast): the operand in scalar::Cast's compute
/// type for its dtype and the result's (attribute `to`), the value the
/// store then converts. The caller rounds it to the result's dtype (a
/// fused body's roundTripExpr, a kernel's snug_store), as the host's
/// storeAs does.
llvm::Expected<ElementwiseCode>
buildCastCode(const ir::AttributeMap &attributes,
              llvm::ArrayRef<std::string> operands,
              llvm::ArrayRef<ir::DType> types, llvm::StringRef result) {
  if (operands.size() != 1 || types.size() != 1 || operands[0].empty())
    return badOperands("Cast", operands.size());
  auto it = attributes.find("to");
  llvm::Optional<ir::DType> to;
  if (it != attributes.end() &&
      it->second.getKind() == ir::Attribute::Kind::String)
    to = ir::parseDType(it->second.getString());
  if (!to)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "Cast: attribute 'to' names no dtype");
  std::string C =
      computeTypeName(scalar::Cast::kind(classOf(types[0]), classOf(*to)));
  ElementwiseCode code;
  code.computeType = code.resultType = C;
  code.body = "const " + C + " " + result.str() +
              " = snug::scalar::Cast::apply<" + C + ">(snug::scalar::to<" + C +
              ">(snug::scalar::normalize(" + operands[0] + ")));\n";
  return code;
}

template <class Op>
scalar::ComputeKind kindOf(const scalar::ElementClass *classes, int count) {
  return scalar::computeKind<Op>(classes, count);
}

struct TableBuilder {
  std::array<Entry, ir::getAllOpsCount()> &entries;
  template <class Op, unsigned Position> void visit(const char *, const char *id) {
    entries[Position] = {id, buildCall<Op, Position>, kindOf<Op>};
  }
};

const Entry &lookup(ir::OpCode op) {
  static const std::array<Entry, ir::getAllOpsCount()> entries = [] {
    std::array<Entry, ir::getAllOpsCount()> table;
    TableBuilder builder{table};
    scalar::forEachScalarOp(builder);
    return table;
  }();
  return entries[size_t(op)];
}

} // namespace

bool isScalarOp(ir::OpCode op) { return lookup(op).build != nullptr; }

llvm::Expected<ElementwiseCode>
buildElementwiseCode(ir::OpCode op, const ir::AttributeMap &attributes,
                     llvm::ArrayRef<std::string> operands,
                     llvm::ArrayRef<ir::DType> operandTypes,
                     llvm::StringRef result) {
  if (ir::getOpInfo(op).isConversion())
    return buildCastCode(attributes, operands, operandTypes, result);
  const Entry &entry = lookup(op);
  if (!entry.build)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s is not an elementwise op",
                                   ir::getOpInfo(op).name);
  return entry.build(entry.id, attributes, operands, operandTypes, result);
}

std::string elementwiseComputeType(ir::OpCode op,
                                   llvm::ArrayRef<ir::DType> operandTypes) {
  const Entry &entry = lookup(op);
  assert(entry.kind && "not an elementwise op");
  std::vector<scalar::ElementClass> classes;
  for (ir::DType type : operandTypes)
    classes.push_back(classOf(type));
  return computeTypeName(entry.kind(classes.data(), int(classes.size())));
}

std::string roundTripExpr(ir::DType dtype, llvm::StringRef value) {
  return "snug::scalar::widen(snug::scalar::Convert<" +
         std::string(cudaTypeName(dtype)) +
         ">::from(snug::scalar::normalize(" + value.str() + ")))";
}

std::string loadAsExpr(llvm::StringRef computeType, llvm::StringRef pointer) {
  return "snug_load_as<" + computeType.str() + ">(" + pointer.str() + ")";
}

} // namespace cuda
} // namespace snug
