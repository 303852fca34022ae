//===- Module.cpp - Values, nodes and the module --------------------------===//
//
// Use lists are kept exact by funnelling every operand change through
// Node::setOperand; destruction drops operands first (of body nodes too) so
// that no use list ever points at a dead node.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace snug {
namespace ir {

void Value::removeUse(Node *user, unsigned operandIndex) {
  for (size_t i = 0; i < uses.size(); ++i) {
    if (uses[i].user == user && uses[i].operandIndex == operandIndex) {
      uses.erase(uses.begin() + i);
      return;
    }
  }
  llvm_unreachable("use list out of sync with operands");
}

Node *Value::getBodyOwner() const {
  if (kind == Kind::BlockArgument)
    return argumentOwner;
  return definingNode ? definingNode->getParentNode() : nullptr;
}

//===----------------------------------------------------------------------===//
// Node
//===----------------------------------------------------------------------===//

Node::~Node() { dropAllOperands(); }

Node *Node::create(Module *module, Node *parent, const OpInfo &info,
                   llvm::ArrayRef<Value *> operands,
                   llvm::ArrayRef<TensorType> resultTypes,
                   AttributeMap nodeAttributes) {
  Node *node = new Node(module, info);
  node->parent = parent;
  node->setOperands(operands);
  for (unsigned i = 0; i < resultTypes.size(); ++i) {
    std::unique_ptr<Value> result(
        new Value(Value::Kind::Result, resultTypes[i], ""));
    result->definingNode = node;
    result->resultIndex = i;
    node->results.push_back(std::move(result));
  }
  node->attributes = std::move(nodeAttributes);
  return node;
}

void Node::dropAllOperands() {
  dropOperands();
  if (body)
    for (std::unique_ptr<Node> &node : body->nodes)
      node->dropAllOperands();
}

unsigned Node::getNumOwnOperands() const {
  if (!hasEpilogue() || info->maxOperands < 0)
    return getNumOperands();
  return std::min<unsigned>(getNumOperands(), unsigned(info->maxOperands));
}

Region &Node::createBody() {
  assert(!body && "the node already has a body");
  body.reset(new Region(this));
  return *body;
}

void Node::dropOperands() {
  for (unsigned i = 0; i < operands.size(); ++i)
    if (operands[i])
      operands[i]->removeUse(this, i);
  operands.clear();
}

void Node::setOperand(unsigned index, Value *value) {
  if (operands[index])
    operands[index]->removeUse(this, index);
  operands[index] = value;
  if (value)
    value->uses.push_back({this, index});
}

void Node::setOperands(llvm::ArrayRef<Value *> values) {
  dropOperands();
  operands.assign(values.size(), nullptr);
  for (unsigned i = 0; i < values.size(); ++i)
    setOperand(i, values[i]);
}

llvm::SmallVector<Value *, 2> Node::getResults() const {
  llvm::SmallVector<Value *, 2> values;
  for (const std::unique_ptr<Value> &result : results)
    values.push_back(result.get());
  return values;
}

const Attribute *Node::getAttribute(llvm::StringRef attrName) const {
  auto it = attributes.find(attrName.str());
  return it == attributes.end() ? nullptr : &it->second;
}

void Node::setAttribute(llvm::StringRef attrName, Attribute value) {
  attributes[attrName.str()] = std::move(value);
}

void Node::removeAttribute(llvm::StringRef attrName) {
  attributes.erase(attrName.str());
}

std::string Value::describe() const {
  if (!name.empty())
    return "'%" + name + "'";
  if (isResult())
    return "result " + std::to_string(resultIndex) + " of " +
           definingNode->describe();
  return "an unnamed input";
}

std::string Node::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (!name.empty()) {
    os << "node '" << name << "'";
  } else {
    llvm::ArrayRef<std::unique_ptr<Node>> nodes =
        parent ? parent->getBody()->getNodes() : module->getNodes();
    auto it = std::find_if(nodes.begin(), nodes.end(),
                           [&](const auto &node) { return node.get() == this; });
    os << "node #" << (it - nodes.begin());
  }
  os << " (" << info->name << ")";
  if (parent)
    os << " in the body of " << parent->describe();
  return os.str();
}

//===----------------------------------------------------------------------===//
// Region
//===----------------------------------------------------------------------===//

Region::~Region() {
  // Body nodes use each other's results: drop every operand first.
  for (std::unique_ptr<Node> &node : nodes)
    node->dropAllOperands();
}

Value *Region::addArgument(const TensorType &type, llvm::StringRef valueName) {
  arguments.emplace_back(
      new Value(Value::Kind::BlockArgument, type, valueName));
  arguments.back()->argumentOwner = owner;
  arguments.back()->resultIndex = arguments.size() - 1;
  return arguments.back().get();
}

Node *Region::addNode(OpCode op, llvm::ArrayRef<Value *> operands,
                      llvm::ArrayRef<TensorType> resultTypes,
                      AttributeMap nodeAttributes) {
  nodes.emplace_back(Node::create(owner->getModule(), owner, getOpInfo(op),
                                  operands, resultTypes,
                                  std::move(nodeAttributes)));
  return nodes.back().get();
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

Module::~Module() {
  // Nodes reference each other's results: drop all operands before any
  // node (and so any value) is destroyed.
  for (std::unique_ptr<Node> &node : nodes)
    node->dropAllOperands();
}

llvm::SmallVector<Value *, 4> Module::getInputs() const {
  llvm::SmallVector<Value *, 4> inputs;
  for (const std::unique_ptr<Value> &argument : arguments)
    if (argument->isInput())
      inputs.push_back(argument.get());
  return inputs;
}

llvm::SmallVector<Value *, 8> Module::getWeights() const {
  llvm::SmallVector<Value *, 8> weights;
  for (const std::unique_ptr<Value> &argument : arguments)
    if (argument->isWeight())
      weights.push_back(argument.get());
  return weights;
}

Value *Module::addInput(llvm::StringRef valueName, const TensorType &type) {
  arguments.emplace_back(new Value(Value::Kind::Input, type, valueName));
  return arguments.back().get();
}

Value *Module::addWeight(llvm::StringRef valueName, const TensorType &type,
                         llvm::ArrayRef<uint8_t> bytes) {
  assert(bytes.size() == type.getByteSize() && "weight bytes/type mismatch");
  return addWeightAt(valueName, type, weightBlob.addOwned(bytes));
}

Value *Module::addWeightAt(llvm::StringRef valueName, const TensorType &type,
                           uint64_t blobOffset) {
  arguments.emplace_back(new Value(Value::Kind::Weight, type, valueName));
  arguments.back()->weightOffset = blobOffset;
  return arguments.back().get();
}

Value *Module::addElidedWeight(llvm::StringRef valueName,
                               const TensorType &type) {
  arguments.emplace_back(new Value(Value::Kind::Weight, type, valueName));
  arguments.back()->weightElided = true;
  return arguments.back().get();
}

llvm::ArrayRef<uint8_t> Module::getWeightData(const Value *weight) const {
  assert(weight->isWeight() && !weight->isWeightElided());
  return weightBlob.getBytes(weight->getWeightOffset(),
                             weight->getType().getByteSize());
}

unsigned Module::eraseUnusedWeights() {
  size_t before = arguments.size();
  llvm::erase_if(arguments, [&](const std::unique_ptr<Value> &argument) {
    return argument->isWeight() && !argument->hasUses() &&
           !isOutput(argument.get());
  });
  return before - arguments.size();
}

Node *Module::addNode(OpCode op, llvm::ArrayRef<Value *> operands,
                      llvm::ArrayRef<TensorType> resultTypes,
                      AttributeMap nodeAttributes) {
  return insertNode(nodes.size(), op, operands, resultTypes,
                    std::move(nodeAttributes));
}

Node *Module::addNode(llvm::StringRef opName, llvm::ArrayRef<Value *> operands,
                      llvm::ArrayRef<TensorType> resultTypes,
                      AttributeMap nodeAttributes) {
  const OpInfo *info = lookupOp(opName);
  assert(info && "addNode: the op is not in the op table");
  return insertNode(nodes.size(), info->code, operands, resultTypes,
                    std::move(nodeAttributes));
}

Node *Module::insertNode(size_t index, OpCode op,
                         llvm::ArrayRef<Value *> operands,
                         llvm::ArrayRef<TensorType> resultTypes,
                         AttributeMap nodeAttributes) {
  Node *node = Node::create(this, nullptr, getOpInfo(op), operands,
                            resultTypes, std::move(nodeAttributes));
  nodes.insert(nodes.begin() + index, std::unique_ptr<Node>(node));
  return node;
}

/// Copies `from`'s body into `to`'s new one: arguments, nodes (bodies
/// included) and the yield, mapped value for value. Value names are one
/// namespace with the function's, so the copies stay unnamed.
static void copyBody(const Region &from, Node &to) {
  Region &body = to.createBody();
  llvm::DenseMap<const Value *, Value *> inner;
  for (const std::unique_ptr<Value> &argument : from.getArguments())
    inner[argument.get()] = body.addArgument(argument->getType());
  for (const std::unique_ptr<Node> &node : from.getNodes()) {
    llvm::SmallVector<Value *, 4> operands;
    for (Value *operand : node->getOperands())
      operands.push_back(operand ? inner.lookup(operand) : nullptr);
    llvm::SmallVector<TensorType, 2> types;
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      types.push_back(node->getResult(i)->getType());
    Node *copy = body.addNode(node->getOpCode(), operands, types,
                              node->getAttributes());
    copy->setName(node->getName());
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      inner[node->getResult(i)] = copy->getResult(i);
    if (node->hasBody())
      copyBody(*node->getBody(), *copy);
  }
  std::vector<Value *> yield;
  for (Value *value : from.getYield())
    yield.push_back(inner.lookup(value));
  body.setYield(yield);
}

Node *Module::insertCopy(size_t index, const Node &original,
                         llvm::ArrayRef<Value *> operands) {
  llvm::SmallVector<TensorType, 2> types;
  for (unsigned i = 0; i < original.getNumResults(); ++i)
    types.push_back(original.getResult(i)->getType());
  Node *copy = insertNode(index, original.getOpCode(), operands, types,
                          original.getAttributes());
  copy->setName(original.getName());
  if (original.hasBody())
    copyBody(*original.getBody(), *copy);
  return copy;
}

unsigned Module::eraseNodesIf(
    llvm::function_ref<bool(const Node &)> shouldErase) {
  llvm::SmallVector<Node *, 16> doomed;
  for (std::unique_ptr<Node> &node : nodes)
    if (shouldErase(*node))
      doomed.push_back(node.get());
  // Drop operands of all doomed nodes first: they may use each other.
  for (Node *node : doomed)
    node->dropAllOperands();
  llvm::DenseSet<Node *> doomedSet(doomed.begin(), doomed.end());
  llvm::erase_if(nodes, [&](const std::unique_ptr<Node> &node) {
    if (!doomedSet.count(node.get()))
      return false;
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      assert(!node->getResult(i)->hasUses() && !isOutput(node->getResult(i)) &&
             "erasing a node whose result is still used");
    return true;
  });
  return doomed.size();
}

void Module::setSchedule(llvm::ArrayRef<Node *> order) {
  assert(order.size() == nodes.size() && "schedule is not a permutation");
  llvm::DenseMap<Node *, size_t> position;
  for (size_t i = 0; i < order.size(); ++i)
    position[order[i]] = i;
  std::vector<std::unique_ptr<Node>> reordered(nodes.size());
  for (std::unique_ptr<Node> &node : nodes) {
    auto it = position.find(node.get());
    assert(it != position.end() && "schedule names a foreign node");
    reordered[it->second] = std::move(node);
  }
  nodes = std::move(reordered);
}

void Module::setOutputs(llvm::ArrayRef<Value *> values) {
  outputs.assign(values.begin(), values.end());
  outputSet.clear();
  outputSet.insert(values.begin(), values.end());
}

bool Module::isOutput(const Value *value) const {
  return outputSet.count(value);
}

void Module::replaceAllUsesWith(Value *from, Value *to) {
  assert(from != to && "replacing a value with itself");
  while (from->hasUses()) {
    Value::Use use = from->getUses().back();
    use.user->setOperand(use.operandIndex, to);
  }
  if (!outputSet.erase(from))
    return;
  for (Value *&output : outputs)
    if (output == from)
      output = to;
  outputSet.insert(to);
}

void Module::replaceValue(Value *from, Value *to) {
  std::string name = from->getName().str();
  replaceAllUsesWith(from, to);
  from->setName("");
  to->setName(name);
}

const Attribute *Module::getAttribute(llvm::StringRef attrName) const {
  auto it = attributes.find(attrName.str());
  return it == attributes.end() ? nullptr : &it->second;
}

void Module::setAttribute(llvm::StringRef attrName, Attribute value) {
  attributes[attrName.str()] = std::move(value);
}

void Module::removeAttribute(llvm::StringRef attrName) {
  attributes.erase(attrName.str());
}

} // namespace ir
} // namespace snug
