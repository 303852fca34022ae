//===- BodyCode.cpp - An op body as CUDA statements per element -----------===//
//
// Walks the body in order, one ElementwiseExpr call per op (BodyCode.h).
// Where takes stored elements: a block argument's is given by the caller
// or materialized once, an intermediate's is Where's own result variable.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/BodyCode.h"
#include "compiler/cuda/ElementwiseExpr.h"
#include "compiler/cuda/KernelEmitter.h"

#include "llvm/ADT/DenseMap.h"

namespace snug {
namespace cuda {

namespace {

/// What the body sees of one of its values while the code is written.
struct BodyValue {
  ir::DType dtype;
  std::string widened; // the element as snug_load gives it (a name)
  std::string stored;  // the element as stored; empty until needed
};

llvm::Error failure(const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), why);
}

} // namespace

std::string indentLines(llvm::StringRef text, unsigned spaces) {
  std::string result;
  llvm::SmallVector<llvm::StringRef, 8> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (!line.trim().empty())
      result += std::string(spaces, ' ') + line.str() + "\n";
  return result;
}

llvm::Expected<BodyCode> buildBodyCode(const ir::Region &body,
                                       llvm::ArrayRef<BodyArgument> arguments) {
  if (arguments.size() != body.getNumArguments())
    return failure("body does not match the operands and results");
  BodyCode code;
  llvm::DenseMap<const ir::Value *, BodyValue> values;
  for (unsigned k = 0; k < body.getNumArguments(); ++k) {
    const ir::Value *argument = body.getArgument(k);
    values[argument] = {argument->getType().getDType(), arguments[k].widened,
                        arguments[k].stored};
  }
  unsigned next = body.getNumArguments();
  for (const std::unique_ptr<ir::Node> &inner : body.getNodes()) {
    if (inner->getNumResults() != 1)
      return failure(inner->describe() + " has other than one result");
    bool select = inner->is(ir::OpCode::Where);
    std::vector<std::string> operands;
    std::vector<ir::DType> types;
    for (unsigned k = 0; k < inner->getNumOperands(); ++k) {
      const ir::Value *operand = inner->getOperand(k);
      if (!operand) {
        operands.push_back("");
        types.push_back(ir::DType::F32);
        continue;
      }
      auto it = values.find(operand);
      if (it == values.end())
        return failure(inner->describe() +
                       " uses a value its body does not define");
      BodyValue &value = it->second;
      // Where moves stored elements; everything else takes widened ones.
      if (select && k > 0) {
        if (value.stored.empty()) {
          value.stored = "s" + value.widened.substr(1);
          code.element += "    " + std::string(cudaTypeName(value.dtype)) +
                          " " + value.stored + ";\n    snug_store(&" +
                          value.stored + ", " + value.widened + ");\n";
        }
        operands.push_back(value.stored);
      } else {
        operands.push_back(value.widened);
      }
      types.push_back(value.dtype);
    }
    std::string id = std::to_string(next++);
    auto op = buildElementwiseCode(inner->getOpCode(), inner->getAttributes(),
                                   operands, types, "r" + id);
    if (!op)
      return failure(inner->describe() + ": " + toString(op.takeError()));
    code.setup += indentLines(op->setup, 2);
    code.element += indentLines(op->body, 4);
    const ir::Value *result = inner->getResult(0);
    BodyValue value{result->getType().getDType(), "v" + id, ""};
    const char *type = cudaComputeTypeName(value.dtype);
    if (select) {
      // r holds the stored element itself.
      value.stored = "r" + id;
      code.element += "    const " + std::string(type) + " " + value.widened +
                      " = snug_load(&r" + id + ");\n";
    } else {
      code.element += "    const " + std::string(type) + " " + value.widened +
                      " = " + roundTripExpr(value.dtype, "r" + id) + ";\n";
    }
    values[result] = value;
  }
  for (const ir::Value *yielded : body.getYield()) {
    auto it = values.find(yielded);
    if (it == values.end())
      return failure("the body yields a value it does not define");
    code.yield.push_back(it->second.widened);
  }
  return code;
}

} // namespace cuda
} // namespace snug
