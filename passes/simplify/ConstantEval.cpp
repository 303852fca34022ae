//===- ConstantEval.cpp - Evaluating nodes by running the host kernels ----===//
//
// Folding has no op implementations of its own: a node is evaluated by the
// host reference kernel of its op (runtime/host), on a plan op built for it
// (attributes converted by HostAttributes.h, operands bound to the
// constants' bytes, results to fresh buffers), exactly as the host executor
// would run it from a bundle. So a folded value is bit for bit what running
// the node gives, for every dtype and special value; views fold as a byte
// copy. Operands without data (Shape's and Size's, Dropout's ratio and mode)
// are passed as their type only (Shape, Size) or as absent.
//
// Every size (operand and result bytes, element counts) is computed with
// core/CheckedArithmetic.h before anything is allocated: a type whose
// size passes kMaxTensorBytes is an error naming the node, never a wrapped
// allocation. How much is worth folding is the caller's choice (the
// fold-constants pass's max-bytes).
//
//===----------------------------------------------------------------------===//
#include "passes/simplify/ConstantEval.h"
#include "passes/simplify/HostAttributes.h"
#include "ir/ShapeFunctions.h"

#include "core/CheckedArithmetic.h"
#include "runtime/host/Kernels.h"

#include "llvm/ADT/DenseMap.h"

#include <cstring>

namespace snug {

using ir::DType;
using ir::TensorType;

llvm::Optional<llvm::SmallVector<int64_t, 4>>
readIntegers(const TensorType &type, llvm::ArrayRef<uint8_t> bytes) {
  llvm::Optional<uint64_t> size = getCheckedByteSize(type);
  if (!ir::isIntegerDType(type.getDType()) || !size || bytes.size() != *size)
    return llvm::None;
  llvm::SmallVector<int64_t, 4> values;
  uint8_t code = toBundleCode(type.getDType());
  for (int64_t i = 0; i < type.getNumElements(); ++i)
    values.push_back(rt::loadInt(bytes.data(), code, i));
  return values;
}

double readElementAsDouble(DType dtype, const uint8_t *data, int64_t index) {
  return rt::loadDouble(data, toBundleCode(dtype), index);
}

bool canEvaluate(ir::OpCode op) {
  const ir::OpInfo &info = ir::getOpInfo(op);
  return info.isFoldable() &&
         (info.isView() || rt::findHostKernel(info.code) != nullptr);
}

bool needsOperandData(ir::OpCode op, unsigned index) {
  if (op == ir::OpCode::Shape || op == ir::OpCode::Size)
    return false;
  // Dropout's ratio and training-mode operands do not change its result.
  if (op == ir::OpCode::Dropout)
    return index == 0;
  return true;
}

namespace {

/// A plan location (type only: kernels get the bytes through TensorViews).
rt::Location locationOf(const TensorType &type) {
  rt::Location location;
  location.kind = bundle::Arena;
  location.dtype = toBundleCode(type.getDType());
  location.dims.assign(type.getDims().begin(), type.getDims().end());
  location.bytes = type.getByteSize();
  location.numElements = type.getNumElements();
  return location;
}

rt::TensorView viewOf(const rt::Location &location, uint8_t *data,
                      bool present) {
  rt::TensorView view;
  view.data = data;
  view.dtype = location.dtype;
  view.dims = &location.dims;
  view.numElements = location.numElements;
  view.bytes = location.bytes;
  view.present = present;
  return view;
}

} // namespace

llvm::Expected<llvm::Optional<ResultData>>
evaluateNode(const ir::Node &node, llvm::ArrayRef<OperandData> operands) {
  assert(operands.size() == node.getNumOperands());
  const ir::OpInfo &info = node.getOpInfo();
  ir::OpCode op = info.code;
  auto tooLarge = [&](const ir::Value *value) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        node.describe() + ": " + value->describe() + " of type " +
            value->getType().str() + " is too large to evaluate (over " +
            std::to_string(kMaxTensorBytes) + " bytes)");
  };
  for (unsigned i = 0; i < node.getNumOperands(); ++i) {
    const ir::Value *operand = node.getOperand(i);
    if (!operand)
      continue;
    llvm::Optional<uint64_t> size = getCheckedByteSize(operand->getType());
    if (!size)
      return tooLarge(operand);
    if (operands[i] && operands[i]->size() != *size)
      return llvm::None;
    if (!operands[i] && needsOperandData(op, i))
      return llvm::None;
  }
  // Every result size is checked before the first is allocated.
  llvm::SmallVector<uint64_t, 2> resultBytes;
  for (unsigned i = 0; i < node.getNumResults(); ++i) {
    llvm::Optional<uint64_t> size = getCheckedByteSize(node.getResult(i)->getType());
    if (!size)
      return tooLarge(node.getResult(i));
    resultBytes.push_back(*size);
  }
  ResultData results;
  for (uint64_t size : resultBytes)
    results.emplace_back(size);

  if (info.isView()) {
    if (!operands[0] || results.size() != 1 ||
        results[0].size() != operands[0]->size())
      return llvm::None;
    if (!results[0].empty())
      std::memcpy(results[0].data(), operands[0]->data(), results[0].size());
    return results;
  }
  rt::Kernel kernel = rt::findHostKernel(info.code);
  if (!kernel)
    return llvm::None;

  rt::PlanOp plan;
  plan.opName = info.name;
  for (const auto &entry : node.getAttributes())
    plan.attributes.push_back({entry.first, toHostAttr(entry.second)});
  for (unsigned i = 0; i < node.getNumOperands(); ++i) {
    const ir::Value *operand = node.getOperand(i);
    plan.operands.push_back(operand ? locationOf(operand->getType())
                                    : rt::Location());
  }
  for (unsigned i = 0; i < node.getNumResults(); ++i)
    plan.results.push_back(locationOf(node.getResult(i)->getType()));

  rt::KernelContext context(plan, 0);
  for (unsigned i = 0; i < node.getNumOperands(); ++i) {
    const ir::Value *operand = node.getOperand(i);
    // Kernels never write their operands (the results below are fresh
    // buffers), so the constant bytes are bound as they are.
    uint8_t *data =
        operands[i] ? const_cast<uint8_t *>(operands[i]->data()) : nullptr;
    // An operand without data is read for its type (Shape, Size) or not at
    // all (Dropout's ratio and mode): the latter is passed as absent.
    bool present = operand && (operands[i] || !needsOperandData(op, i)) &&
                   (operands[i] || op == ir::OpCode::Shape ||
                    op == ir::OpCode::Size);
    context.inputs.push_back(viewOf(plan.operands[i], data, present));
  }
  for (unsigned i = 0; i < node.getNumResults(); ++i)
    context.outputs.push_back(
        viewOf(plan.results[i], results[i].data(), true));

  if (rt::Status status = kernel(context)) {
    // The kernel's message starts with its plan op ("op #0 (Gather): ");
    // say which node instead.
    std::string message = status.getMessage();
    std::string prefix = plan.describe(0) + ": ";
    if (message.compare(0, prefix.size(), prefix) == 0)
      message = message.substr(prefix.size());
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   node.describe() + ": " + message);
  }
  return results;
}


llvm::Expected<std::vector<std::vector<uint8_t>>> evaluateModule(
    const ir::Module &module, llvm::ArrayRef<std::vector<uint8_t>> inputs,
    llvm::function_ref<void(const ir::Value &, llvm::ArrayRef<uint8_t>)>
        visit,
    llvm::function_ref<llvm::ArrayRef<uint8_t>(const ir::Value &)>
        elidedWeight) {
  auto fail = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   message.str());
  };
  llvm::DenseMap<const ir::Value *, std::vector<uint8_t>> data;
  llvm::SmallVector<ir::Value *, 4> graphInputs = module.getInputs();
  if (graphInputs.size() != inputs.size())
    return fail("the module has " + llvm::Twine(graphInputs.size()) +
                " inputs, " + llvm::Twine(inputs.size()) + " were given");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].size() != graphInputs[i]->getType().getByteSize())
      return fail("input " + graphInputs[i]->describe() + " needs " +
                  llvm::Twine(graphInputs[i]->getType().getByteSize()) +
                  " bytes, got " + llvm::Twine(inputs[i].size()));
    data[graphInputs[i]] = inputs[i];
  }
  // The last node reading each value, to free it after.
  auto nodes = module.getNodes();
  llvm::DenseMap<const ir::Value *, size_t> lastRead;
  for (size_t n = 0; n < nodes.size(); ++n)
    for (const ir::Value *operand : nodes[n]->getOperands())
      if (operand)
        lastRead[operand] = n;
  for (size_t n = 0; n < nodes.size(); ++n) {
    const ir::Node &node = *nodes[n];
    std::vector<OperandData> operands;
    for (const ir::Value *operand : node.getOperands()) {
      if (!operand) {
        operands.push_back(llvm::None);
      } else if (operand->isWeight()) {
        if (operand->isWeightElided() && !elidedWeight)
          return fail(node.describe() + " reads " + operand->describe() +
                      ", whose data is elided");
        operands.push_back(operand->isWeightElided()
                               ? elidedWeight(*operand)
                               : module.getWeightData(operand));
      } else {
        auto it = data.find(operand);
        if (it == data.end())
          return fail(node.describe() + " reads " + operand->describe() +
                      " before it is computed");
        operands.push_back(llvm::ArrayRef<uint8_t>(it->second));
      }
    }
    llvm::Expected<llvm::Optional<ResultData>> results =
        evaluateNode(node, operands);
    if (!results)
      return results.takeError();
    if (!*results)
      return fail(node.describe() + " cannot run on the host reference "
                  "kernels");
    for (unsigned i = 0; i < node.getNumResults(); ++i) {
      if (visit)
        visit(*node.getResult(i), (**results)[i]);
      data[node.getResult(i)] = std::move((**results)[i]);
    }
    for (const ir::Value *operand : node.getOperands())
      if (operand && !operand->isWeight() && lastRead.lookup(operand) == n &&
          !module.isOutput(operand))
        data.erase(operand);
  }
  std::vector<std::vector<uint8_t>> outputs;
  for (const ir::Value *output : module.getOutputs()) {
    auto it = data.find(output);
    if (it == data.end())
      return fail("output " + output->describe() + " is never computed");
    outputs.push_back(it->second);
  }
  return outputs;
}

} // namespace snug
