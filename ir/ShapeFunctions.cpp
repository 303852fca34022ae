//===- ShapeFunctions.cpp - Elementwise, data movement and shape ops ------===//
//
// Shape functions of the elementwise families and of snug.fused bodies and
// epilogues, the lookup table over all ops, and the attribute and operand
// helpers. The data-movement and shape ops (Reshape, Slice, Gather, Pad,
// Resize, Range, ...) live in ShapeFunctionsDataMovement.cpp, the
// neural-network ops (convolution, pooling, normalization, matrix
// products, reductions) in ShapeFunctionsNN.cpp and the indexing ops in
// ShapeFunctionsIndexing.cpp.
// Every function assumes snug's canonical form: shape-determining parameters
// are attributes, already resolved by the importer (no 0 or -1 in a Reshape
// shape, no negative axes).
//
//===----------------------------------------------------------------------===//
#include "ir/ShapeFunctions.h"
#include "ir/ShapeFunctionsInternal.h"
#include "core/BundleFormat.h"
#include "core/CheckedArithmetic.h"

#include "ir/Verifier.h"

#include "llvm/ADT/StringMap.h"

namespace snug {

using ir::DType;
using ir::OpCode;
using ir::TensorType;

llvm::Error shapeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

llvm::Error overflowError(const llvm::Twine &what) {
  return shapeError(what + " overflows a 64-bit integer");
}

int64_t getIntAttr(const ir::AttributeMap &attributes, llvm::StringRef name,
                   int64_t defaultValue) {
  auto it = attributes.find(name.str());
  if (it == attributes.end() ||
      it->second.getKind() != ir::Attribute::Kind::Int)
    return defaultValue;
  return it->second.getInt();
}

float getFloatAttr(const ir::AttributeMap &attributes, llvm::StringRef name,
                   float defaultValue) {
  auto it = attributes.find(name.str());
  if (it == attributes.end())
    return defaultValue;
  if (it->second.getKind() == ir::Attribute::Kind::Float)
    return it->second.getFloat();
  if (it->second.getKind() == ir::Attribute::Kind::Int)
    return static_cast<float>(it->second.getInt());
  return defaultValue;
}

llvm::StringRef getStringAttr(const ir::AttributeMap &attributes,
                              llvm::StringRef name,
                              llvm::StringRef defaultValue) {
  auto it = attributes.find(name.str());
  if (it == attributes.end() ||
      it->second.getKind() != ir::Attribute::Kind::String)
    return defaultValue;
  return it->second.getString();
}

llvm::Optional<llvm::SmallVector<int64_t, 4>>
getIntsAttr(const ir::AttributeMap &attributes, llvm::StringRef name) {
  auto it = attributes.find(name.str());
  if (it == attributes.end())
    return llvm::None;
  if (it->second.getKind() == ir::Attribute::Kind::Int)
    return llvm::SmallVector<int64_t, 4>{it->second.getInt()};
  if (it->second.getKind() != ir::Attribute::Kind::Ints)
    return llvm::None;
  auto values = it->second.getInts();
  return llvm::SmallVector<int64_t, 4>(values.begin(), values.end());
}

llvm::Optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return llvm::None;
  return axis < 0 ? axis + rank : axis;
}

llvm::SmallVector<int64_t, 4> getStrides(llvm::ArrayRef<int64_t> dims) {
  llvm::SmallVector<int64_t, 4> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

llvm::Optional<uint64_t> getCheckedByteSize(const TensorType &type) {
  llvm::ArrayRef<int64_t> dims = type.getDims();
  std::optional<uint64_t> bytes = checkedByteSize(
      dims.data(), dims.size(), ir::getDTypeSize(type.getDType()));
  if (!bytes)
    return llvm::None;
  return *bytes;
}

std::string dimsString(llvm::ArrayRef<int64_t> dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

llvm::Expected<const TensorType *> requireOperand(const ShapeQuery &query,
                                                  unsigned index) {
  if (index >= query.operands.size() || !query.operands[index])
    return shapeError("operand " + llvm::Twine(index) + " is required");
  return query.operands[index];
}

llvm::Expected<llvm::SmallVector<int64_t, 4>>
requireInts(const ShapeQuery &query, llvm::StringRef name) {
  auto values = getIntsAttr(query.attributes, name);
  if (!values)
    return shapeError("attribute '" + name + "' (ints) is required");
  return *values;
}

llvm::Expected<int64_t> requireAxis(const ShapeQuery &query,
                                    llvm::StringRef name, int64_t rank,
                                    int64_t defaultValue) {
  int64_t axis = getIntAttr(query.attributes, name, defaultValue);
  auto normalized = normalizeAxis(axis, rank);
  if (!normalized)
    return shapeError(name + " " + llvm::Twine(axis) +
                      " is out of range for rank " + llvm::Twine(rank));
  return *normalized;
}

//===----------------------------------------------------------------------===//
// Elementwise families
//===----------------------------------------------------------------------===//

/// A string attribute, when present, is one of `choices`.
llvm::Error checkChoice(const ShapeQuery &query, llvm::StringRef name,
                        llvm::ArrayRef<llvm::StringRef> choices) {
  auto it = query.attributes.find(name.str());
  if (it == query.attributes.end() ||
      it->second.getKind() != ir::Attribute::Kind::String ||
      llvm::is_contained(choices, it->second.getString()))
    return llvm::Error::success();
  std::string list;
  for (llvm::StringRef choice : choices)
    list += (list.empty() ? "" : ", ") + choice.str();
  return shapeError(name + " '" + it->second.getString() +
                    "' is not supported (" + list + ")");
}

static llvm::Expected<ResultTypes> inferUnary(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  // An elementwise op's parameters (PRelu's slope, Clip's bounds) are read
  // at the result's index, broadcast: they must not grow the result (the
  // kernels refuse it).
  if (ir::getOpInfo(query.op).isElementwise())
    for (unsigned i = 1; i < query.operands.size(); ++i) {
      if (!query.operands[i])
        continue;
      auto dims =
          ir::broadcastShapes((*input)->getDims(), query.operands[i]->getDims());
      if (!dims || llvm::makeArrayRef(*dims) != (*input)->getDims())
        return shapeError("operand " + llvm::Twine(i) + " " +
                          query.operands[i]->str() +
                          " does not broadcast to " + (*input)->str());
    }
  // Gelu's kernels take any approximate but "tanh" as the exact form.
  if (query.op == OpCode::Gelu)
    if (llvm::Error error =
            checkChoice(query, "approximate", {"none", "tanh"}))
      return error;
  ResultTypes results{**input};
  return results;
}

/// Softmax, LogSoftmax, Hardmax: the operand's type, along an axis in range
/// (a scalar has the one axis 0, as the kernels take it).
static llvm::Expected<ResultTypes> inferAxisUnary(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  int64_t rank = (*input)->getRank();
  if (rank == 0 && getIntAttr(query.attributes, "axis", -1) == 0)
    return ResultTypes{**input};
  if (auto axis = requireAxis(query, "axis", rank, -1); !axis)
    return axis.takeError();
  return ResultTypes{**input};
}

static llvm::Expected<llvm::SmallVector<int64_t, 4>>
broadcastOperands(const ShapeQuery &query, unsigned first, bool sameDType) {
  auto base = requireOperand(query, first);
  if (!base)
    return base.takeError();
  llvm::SmallVector<int64_t, 4> dims((*base)->getDims().begin(),
                                     (*base)->getDims().end());
  for (unsigned i = first + 1; i < query.operands.size(); ++i) {
    auto operand = requireOperand(query, i);
    if (!operand)
      return operand.takeError();
    if (sameDType && (*operand)->getDType() != (*base)->getDType())
      return shapeError("operand " + llvm::Twine(i) + " has element type " +
                        ir::getDTypeName((*operand)->getDType()) +
                        ", operand " + llvm::Twine(first) + " has " +
                        ir::getDTypeName((*base)->getDType()));
    auto broadcast = ir::broadcastShapes(dims, (*operand)->getDims());
    if (!broadcast)
      return shapeError("operand shapes do not broadcast: " + dimsString(dims) +
                        " and " + (*operand)->str());
    dims = *broadcast;
  }
  return dims;
}

static llvm::Expected<ResultTypes> inferBroadcast(const ShapeQuery &query) {
  // BitShift's kernels read any direction but "LEFT" as a right shift.
  if (query.op == OpCode::BitShift) {
    if (!query.attributes.count("direction"))
      return shapeError("direction is required (LEFT or RIGHT)");
    if (llvm::Error error = checkChoice(query, "direction", {"LEFT", "RIGHT"}))
      return error;
  }
  auto dims = broadcastOperands(query, 0, true);
  if (!dims)
    return dims.takeError();
  return ResultTypes{TensorType(query.operands[0]->getDType(), *dims)};
}

static llvm::Expected<ResultTypes> inferCompare(const ShapeQuery &query) {
  auto dims = broadcastOperands(query, 0, true);
  if (!dims)
    return dims.takeError();
  return ResultTypes{TensorType(DType::Bool, *dims)};
}

static llvm::Expected<ResultTypes> inferPow(const ShapeQuery &query) {
  auto dims = broadcastOperands(query, 0, false);
  if (!dims)
    return dims.takeError();
  return ResultTypes{TensorType(query.operands[0]->getDType(), *dims)};
}

static llvm::Expected<ResultTypes> inferWhere(const ShapeQuery &query) {
  auto condition = requireOperand(query, 0);
  if (!condition)
    return condition.takeError();
  if ((*condition)->getDType() != DType::Bool)
    return shapeError("condition has element type " +
                      ir::getDTypeName((*condition)->getDType()) +
                      ", expected bool");
  auto dims = broadcastOperands(query, 1, true);
  if (!dims)
    return dims.takeError();
  auto all = ir::broadcastShapes(*dims, (*condition)->getDims());
  if (!all)
    return shapeError("condition " + (*condition)->str() +
                      " does not broadcast with " + dimsString(*dims));
  return ResultTypes{TensorType(query.operands[1]->getDType(), *all)};
}

static llvm::Expected<ResultTypes> inferCast(const ShapeQuery &query) {
  auto input = requireOperand(query, 0);
  if (!input)
    return input.takeError();
  llvm::StringRef to = getStringAttr(query.attributes, "to", "");
  auto dtype = ir::parseDType(to);
  if (!dtype)
    return shapeError("attribute 'to' is '" + to +
                      "', expected an element type name such as \"f32\"");
  return ResultTypes{TensorType(*dtype, (*input)->getDims())};
}

//===----------------------------------------------------------------------===//
// Fused bodies and epilogues
//===----------------------------------------------------------------------===//

/// snug.fused: the yield's types. The body's nodes are checked against
/// their own shape functions here, so that infer-shapes covers bodies (the
/// verifier checks only the families' rules).
/// Checks every body node's result types against its shape function and
/// returns the yielded values' types.
static llvm::Expected<ResultTypes> inferBody(const ir::Region &body) {
  llvm::ArrayRef<std::unique_ptr<ir::Node>> nodes = body.getNodes();
  for (size_t k = 0; k < nodes.size(); ++k) {
    const ir::Node &node = *nodes[k];
    std::string subject =
        (node.getName().empty() ? "body node #" + std::to_string(k)
                                : "body node '" + node.getName().str() + "'") +
        " (" + node.getOpName().str() + ")";
    llvm::SmallVector<const TensorType *, 4> operands;
    for (const ir::Value *operand : node.getOperands())
      operands.push_back(operand ? &operand->getType() : nullptr);
    ShapeQuery inner{node.getOpCode(), operands, node.getAttributes(),
                     node.getNumResults()};
    auto types = inferResultTypes(inner);
    if (!types)
      return shapeError(subject + ": " + toString(types.takeError()));
    for (unsigned i = 0; i < node.getNumResults(); ++i)
      if (node.getResult(i)->getType() != (*types)[i])
        return shapeError(subject + ": result " + llvm::Twine(i) +
                          " has type " + node.getResult(i)->getType().str() +
                          ", its shape function says " + (*types)[i].str());
  }
  ResultTypes results;
  for (const ir::Value *value : body.getYield())
    results.push_back(value->getType());
  return results;
}

static llvm::Expected<ResultTypes> inferFused(const ShapeQuery &query) {
  if (!query.body)
    return shapeError("snug.fused has no body to take its result types from");
  return inferBody(*query.body);
}

/// A node with an epilogue (ir/Module.h): the op's own result, given by its
/// shape function, is the epilogue's argument 0; the epilogue yields the
/// node's result.
static llvm::Expected<ResultTypes> inferEpilogue(const ResultTypes &own,
                                                 const ir::Region &body) {
  if (own.empty() || body.getNumArguments() == 0 ||
      body.getArgument(0)->getType() != own[0])
    return shapeError("the epilogue's block argument 0 must have the op's "
                      "result type " +
                      llvm::Twine(own.empty() ? "" : own[0].str()));
  return inferBody(body);
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

/// Indexed by OpCode; nullptr where the op has none. Ops of the Unary,
/// Broadcast and Compare families get their family's function from the op
/// table; the rest register their own here, in ShapeFunctionsDataMovement.cpp,
/// ShapeFunctionsNN.cpp and ShapeFunctionsIndexing.cpp.
static const ShapeFunctionTable &getShapeFunctions() {
  static const ShapeFunctionTable table = [] {
    ShapeFunctionTable map{};
    for (const ir::OpInfo &info : ir::getAllOps()) {
      ShapeFunctionPtr &entry = map[size_t(info.code)];
      if (info.family == ir::OpFamily::Unary)
        entry = inferUnary;
      else if (info.family == ir::OpFamily::Broadcast)
        entry = inferBroadcast;
      else if (info.family == ir::OpFamily::Compare)
        entry = inferCompare;
    }
    auto set = [&](OpCode op, ShapeFunctionPtr function) {
      map[size_t(op)] = function;
    };
    set(OpCode::Pow, inferPow);
    set(OpCode::Softmax, inferAxisUnary);
    set(OpCode::LogSoftmax, inferAxisUnary);
    set(OpCode::Hardmax, inferAxisUnary);
    set(OpCode::Where, inferWhere);
    set(OpCode::Cast, inferCast);
    set(OpCode::SnugCast, inferCast);
    registerDataMovementShapeFunctions(map);
    set(OpCode::SnugFused, inferFused);
    registerNNShapeFunctions(map);
    registerIndexingShapeFunctions(map);
    return map;
  }();
  return table;
}

bool hasShapeFunction(OpCode op) {
  return getShapeFunctions()[size_t(op)] != nullptr;
}

llvm::Expected<ResultTypes> inferResultTypes(const ShapeQuery &query) {
  ShapeFunctionPtr function = getShapeFunctions()[size_t(query.op)];
  if (!function)
    return shapeError("snug has no shape function for op '" +
                      llvm::Twine(ir::getOpInfo(query.op).name) + "'");
  auto results = function(query);
  if (!results)
    return results.takeError();
  for (const TensorType &type : *results) {
    // The bundle holds at most kMaxRank dims a tensor (its reader refuses
    // more).
    if (type.getRank() > bundle::kMaxRank)
      return shapeError("result type " + type.str() + " has rank " +
                        llvm::Twine(type.getRank()) + ", more than the " +
                        llvm::Twine(bundle::kMaxRank) +
                        " the runtime supports");
    for (int64_t dim : type.getDims())
      if (dim < 0)
        return shapeError("result type " + type.str() + " has a negative dim");
    if (!getCheckedByteSize(type))
      return shapeError("result type " + type.str() + " is too large");
  }
  if (results->size() < query.numResults)
    return shapeError("the node has " + llvm::Twine(query.numResults) +
                      " results, the op defines " +
                      llvm::Twine(results->size()));
  results->resize(query.numResults);
  return results;
}

llvm::Expected<ResultTypes> inferResultTypes(const ir::Node &node) {
  llvm::SmallVector<const TensorType *, 4> operands;
  llvm::SmallVector<llvm::Optional<llvm::ArrayRef<uint8_t>>, 4> data;
  for (const ir::Value *operand :
       node.getOperands().take_front(node.getNumOwnOperands())) {
    operands.push_back(operand ? &operand->getType() : nullptr);
    if (operand && operand->isWeight() && !operand->isWeightElided())
      data.push_back(node.getModule()->getWeightData(operand));
    else
      data.push_back(llvm::None);
  }
  ShapeQuery query{node.getOpCode(), operands, node.getAttributes(),
                   node.getNumResults(), data, node.getBody()};
  auto results = inferResultTypes(query);
  if (results && node.hasEpilogue())
    results = inferEpilogue(*results, *node.getBody());
  if (!results)
    return shapeError(node.describe() + ": " + toString(results.takeError()));
  return results;
}

} // namespace snug
