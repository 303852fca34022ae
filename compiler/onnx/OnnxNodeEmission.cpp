//===- OnnxNodeEmission.cpp - The Importer's helpers for normalizers ------===//
//
// What the op normalizers (OnnxOps.cpp and the files beside it) build
// snug nodes with: the ONNX attribute readers, and the Importer's methods
// that name a node in errors, look up its inputs, read constant inputs
// (weights, or values the constant evaluator folds), emit a node typed by
// its shape function (explaining which bound dims a failure came from),
// and bind the node's outputs. The driver that loads and checks the model
// and walks the graph is OnnxImporter.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"

#include "ir/ShapeFunctions.h"
#include "passes/simplify/ConstantEval.h"

namespace snug {
namespace onnx_import {

//===----------------------------------------------------------------------===//
// Attribute readers
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                     llvm::StringRef name) {
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t attrInt(const onnx::NodeProto &node, llvm::StringRef name,
                int64_t defaultValue) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  return attr ? attr->i() : defaultValue;
}

float attrFloat(const onnx::NodeProto &node, llvm::StringRef name,
                float defaultValue) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  return attr ? attr->f() : defaultValue;
}

std::string attrString(const onnx::NodeProto &node, llvm::StringRef name,
                       llvm::StringRef defaultValue) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  return attr ? attr->s() : defaultValue.str();
}

llvm::Optional<llvm::SmallVector<int64_t, 4>>
attrInts(const onnx::NodeProto &node, llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  if (!attr)
    return llvm::None;
  return llvm::SmallVector<int64_t, 4>(attr->ints().begin(),
                                       attr->ints().end());
}

llvm::Optional<llvm::SmallVector<float, 4>>
attrFloats(const onnx::NodeProto &node, llvm::StringRef name) {
  const onnx::AttributeProto *attr = findAttr(node, name);
  if (!attr)
    return llvm::None;
  return llvm::SmallVector<float, 4>(attr->floats().begin(),
                                     attr->floats().end());
}

//===----------------------------------------------------------------------===//
// Importer
//===----------------------------------------------------------------------===//

llvm::Error Importer::error(const llvm::Twine &message) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": error: " + message.str());
}

std::string Importer::describe(const onnx::NodeProto &node) const {
  std::string name =
      node.name().empty()
          ? (node.output_size() ? "<output " + node.output(0) + ">"
                                : std::string("<unnamed>"))
          : node.name();
  return "node '" + name + "' (" + node.op_type() + ")";
}

llvm::Error Importer::bindingError(llvm::StringRef input, int64_t dimIndex,
                                   llvm::StringRef symbol,
                                   const llvm::Twine &message) const {
  return llvm::make_error<InputBindingError>(path + ": error: " + message.str(),
                                             input.str(), dimIndex,
                                             symbol.str());
}

llvm::Error Importer::error(const onnx::NodeProto &node,
                            const llvm::Twine &message) const {
  return error(describe(node) + ": " + message);
}

llvm::Expected<ir::Value *> Importer::getInput(const onnx::NodeProto &node,
                                               unsigned index) {
  if (index >= static_cast<unsigned>(node.input_size()) ||
      node.input(index).empty())
    return nullptr;
  const std::string &name = node.input(index);
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  auto dropped = droppedOutputs.find(name);
  if (dropped != droppedOutputs.end())
    return error(node, "input '" + name + "' is an output of " +
                           dropped->second +
                           " that snug does not compute (a training-mode or "
                           "optional output)");
  return error(node, "input '" + name + "' is not defined");
}

llvm::Expected<llvm::Optional<llvm::ArrayRef<uint8_t>>>
Importer::getConstant(ir::Value *value) {
  using Result = llvm::Optional<llvm::ArrayRef<uint8_t>>;
  if (!value || value->isInput() || notConstant.count(value))
    return Result();
  if (value->isWeight())
    return value->isWeightElided() ? Result()
                                   : Result(module.getWeightData(value));
  auto cached = constants.find(value);
  if (cached != constants.end())
    return Result(llvm::makeArrayRef(cached->second));
  ir::Node *node = value->getDefiningNode();
  // Shape parameters are small; a large constant computation is left to
  // fold-constants rather than evaluated twice.
  uint64_t resultBytes = 0;
  for (unsigned i = 0; i < node->getNumResults(); ++i)
    resultBytes += node->getResult(i)->getType().getByteSize();
  if (!canEvaluate(node->getOpCode()) || resultBytes > (uint64_t(64) << 20)) {
    notConstant.insert(value);
    return Result();
  }
  llvm::SmallVector<OperandData, 4> operands;
  for (unsigned i = 0; i < node->getNumOperands(); ++i) {
    ir::Value *operand = node->getOperand(i);
    if (!operand || !needsOperandData(node->getOpCode(), i)) {
      operands.push_back(llvm::None);
      continue;
    }
    auto data = getConstant(operand);
    if (!data)
      return data.takeError();
    if (!*data) {
      notConstant.insert(value);
      return Result();
    }
    operands.push_back(**data);
  }
  auto results = evaluateNode(*node, operands);
  if (!results)
    return error(toString(results.takeError()));
  if (!*results) {
    notConstant.insert(value);
    return Result();
  }
  for (unsigned i = 0; i < node->getNumResults(); ++i)
    constants[node->getResult(i)] = std::move((**results)[i]);
  return Result(llvm::makeArrayRef(constants[value]));
}

llvm::Expected<llvm::SmallVector<int64_t, 4>>
Importer::getConstantInts(const onnx::NodeProto &node, unsigned index,
                          llvm::StringRef what) {
  auto input = getInput(node, index);
  if (!input)
    return input.takeError();
  if (!*input)
    return error(node,
                 what + " (input " + llvm::Twine(index) + ") is required");
  auto data = getConstant(*input);
  if (!data)
    return data.takeError();
  if (!*data)
    return error(node, what + " '" + node.input(index) +
                           "' is not a constant; snug needs it known at "
                           "compile time (bind the inputs' dims)");
  auto values = readIntegers((*input)->getType(), **data);
  if (!values)
    return error(node, what + " '" + node.input(index) +
                           "' is not an integer tensor");
  return *values;
}

llvm::Expected<llvm::SmallVector<double, 4>>
Importer::getConstantFloats(const onnx::NodeProto &node, unsigned index,
                            llvm::StringRef what) {
  auto input = getInput(node, index);
  if (!input)
    return input.takeError();
  if (!*input)
    return error(node,
                 what + " (input " + llvm::Twine(index) + ") is required");
  auto data = getConstant(*input);
  if (!data)
    return data.takeError();
  if (!*data)
    return error(node, what + " '" + node.input(index) +
                           "' is not a constant; snug needs it known at "
                           "compile time");
  llvm::SmallVector<double, 4> values;
  const ir::TensorType &type = (*input)->getType();
  for (int64_t i = 0; i < type.getNumElements(); ++i)
    values.push_back(readElementAsDouble(type.getDType(), (*data)->data(), i));
  return values;
}

/// For a shape error: when an operand's dim (aligned from the right, as
/// broadcasting aligns them) is a value some --dim bound and a weight has
/// another size there, the binding is past what the model takes: "" when
/// no such pair exists.
std::string
Importer::explainBoundDims(llvm::ArrayRef<ir::Value *> operands) const {
  for (const auto &bound : boundDims)
    for (const ir::Value *a : operands) {
      // A dim of 1 broadcasts against anything: never the cause.
      if (!a || a->isWeight() || bound.second <= 1)
        continue;
      llvm::ArrayRef<int64_t> dims = a->getType().getDims();
      for (size_t k = 0; k < dims.size(); ++k) {
        if (dims[dims.size() - 1 - k] != bound.second)
          continue;
        for (const ir::Value *b : operands) {
          if (!b || !b->isWeight() || b->getType().getRank() <= k)
            continue;
          llvm::ArrayRef<int64_t> other = b->getType().getDims();
          int64_t size = other[other.size() - 1 - k];
          if (size != 1 && size != bound.second)
            return " (--dim " + bound.first().str() + "=" +
                   std::to_string(bound.second) + " sets " +
                   std::to_string(bound.second) + " there, but " +
                   b->describe() + " holds " + std::to_string(size) +
                   ": the model takes " + bound.first().str() + " up to " +
                   std::to_string(size) + ")";
        }
      }
    }
  return "";
}

llvm::Expected<llvm::SmallVector<ir::Value *, 2>>
Importer::emit(const onnx::NodeProto &node, llvm::StringRef opName,
               llvm::ArrayRef<ir::Value *> operands,
               ir::AttributeMap attributes, unsigned numResults,
               llvm::StringRef suffix) {
  llvm::SmallVector<const ir::TensorType *, 4> types;
  llvm::SmallVector<OperandData, 4> data;
  for (ir::Value *operand : operands) {
    types.push_back(operand ? &operand->getType() : nullptr);
    data.push_back(operand && operand->isWeight() && !operand->isWeightElided()
                       ? OperandData(module.getWeightData(operand))
                       : OperandData());
  }
  const ir::OpInfo *info = ir::lookupOp(opName);
  assert(info && "the importer emits ops of the op table only");
  if (!operands.empty() && operands[0] &&
      !info->acceptsDType(operands[0]->getType().getDType()))
    return error(node, "element type " +
                           ir::getDTypeName(operands[0]->getType().getDType()) +
                           " is not supported (" + opName + " takes " +
                           ir::dtypeSetString(info->dtypes) + ")");
  for (const auto &attribute : attributes) {
    std::string why =
        ir::checkAttributeKind(info->code, attribute.first, attribute.second);
    if (!why.empty())
      return error(node, why);
  }
  ShapeQuery query{info->code, types, attributes, numResults, data};
  auto resultTypes = inferResultTypes(query);
  if (!resultTypes)
    return error(node, toString(resultTypes.takeError()) +
                           explainBoundDims(operands));
  ir::Node *created =
      module.addNode(info->code, operands, *resultTypes, std::move(attributes));
  if (!node.name().empty())
    created->setName(node.name() + suffix.str());
  return created->getResults();
}

void Importer::bindOutputs(const onnx::NodeProto &node,
                           llvm::ArrayRef<ir::Value *> results) {
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string &name = node.output(i);
    if (name.empty())
      continue;
    if (static_cast<size_t>(i) < results.size()) {
      results[i]->setName(name);
      values[name] = results[i];
    } else {
      droppedOutputs[name] = describe(node);
    }
  }
}

llvm::Error Importer::emitAndBind(const onnx::NodeProto &node,
                                  llvm::StringRef opName,
                                  llvm::ArrayRef<ir::Value *> operands,
                                  ir::AttributeMap attributes,
                                  unsigned numResults, llvm::StringRef suffix) {
  auto results =
      emit(node, opName, operands, std::move(attributes), numResults, suffix);
  if (!results)
    return results.takeError();
  bindOutputs(node, *results);
  return llvm::Error::success();
}

void Importer::bindConstant(const onnx::NodeProto &node,
                            const ir::TensorType &type,
                            llvm::ArrayRef<uint8_t> bytes) {
  ir::Value *weight = module.addWeight(node.output(0), type, bytes);
  values[node.output(0)] = weight;
}

} // namespace onnx_import

} // namespace snug
