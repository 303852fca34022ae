//===- Module.h - Values, nodes and the module ------------------*- C++ -*-===//
//
// A Module is one function: arguments (graph inputs and weights), nodes in a
// total order that is the schedule, and graph outputs. Values are SSA: each
// is an argument or exactly one result of one node, and each keeps a list of
// the node operands that use it so rewrites (replaceAllUsesWith, DCE) need no
// whole-graph scan. Nodes own their results; the module owns arguments and
// nodes. A node operand may be absent (ONNX's empty input name), held as
// nullptr and printed as `_`.
//
// Plan annotations (an arena offset per value) live on values so the printer
// and parser carry them through textual IR; the planner sets them.
//
// A node may own a body (a Region): typed block arguments, nodes in order
// and a yield. snug.fused is the one op with a body: its block arguments
// stand for its operands, its yield gives its results. A body is closed: its
// nodes use only its block arguments and the results of earlier body nodes
// (not weights, not outer values), and nothing outside uses a value defined
// inside (the verifier checks both). Body nodes are not in the schedule, so
// passes that walk getNodes() (liveness, planning, DCE) see a node with a
// body as one node; body values are never buffers and carry no offsets.
//
// An op of the Epilogue trait (Conv) may carry a body too, its epilogue:
// the elementwise ops applied to each element of the op's own result as
// the kernel stores it. Its operands are the op's own (all of its table
// arity, absent ones as nullptr, so that each keeps its position) followed
// by the epilogue's extra operands (a residual); block argument 0 stands
// for the op's own result element, block argument k > 0 for extra operand
// k - 1; the yield gives the node's result, of the own result's type.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_MODULE_H
#define SNUG_IR_MODULE_H

#include "ir/Attribute.h"
#include "ir/OpInfo.h"
#include "ir/TensorType.h"
#include "ir/WeightBlob.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace snug {
namespace ir {

class Node;
class Module;
class Region;

/// Sorted by name so that printing is deterministic.
using AttributeMap = std::map<std::string, Attribute>;

class Value {
public:
  enum class Kind { Input, Weight, Result, BlockArgument };
  struct Use {
    Node *user;
    unsigned operandIndex;
  };

  Kind getKind() const { return kind; }
  bool isInput() const { return kind == Kind::Input; }
  bool isWeight() const { return kind == Kind::Weight; }
  bool isResult() const { return kind == Kind::Result; }
  bool isBlockArgument() const { return kind == Kind::BlockArgument; }

  const TensorType &getType() const { return type; }
  void setType(const TensorType &newType) { type = newType; }
  /// Empty for an unnamed value (printed with a number).
  llvm::StringRef getName() const { return name; }
  void setName(llvm::StringRef newName) { name = newName.str(); }

  /// For results: the node and the result's index in it.
  Node *getDefiningNode() const { return definingNode; }
  unsigned getResultIndex() const { return resultIndex; }
  /// The node whose body defines this value (a block argument, or a result
  /// of a body node); nullptr for a value of the function itself.
  Node *getBodyOwner() const;

  /// For weights: the range of the module's weight blob holding the data.
  /// An elided weight (parsed from text that left its data out) has none.
  uint64_t getWeightOffset() const { return weightOffset; }
  bool isWeightElided() const { return weightElided; }

  llvm::ArrayRef<Use> getUses() const { return uses; }
  bool hasUses() const { return !uses.empty(); }

  llvm::Optional<uint64_t> getArenaOffset() const { return arenaOffset; }

  /// "'%name'", "result 1 of node 'conv1' (Conv)" or "an unnamed input":
  /// the subject of a diagnostic about this value.
  std::string describe() const;
  void setArenaOffset(llvm::Optional<uint64_t> offset) { arenaOffset = offset; }

private:
  friend class Node;
  friend class Module;
  friend class Region;
  Value(Kind kind, const TensorType &type, llvm::StringRef name)
      : kind(kind), type(type), name(name.str()) {}
  void removeUse(Node *user, unsigned operandIndex);

  Kind kind;
  TensorType type;
  std::string name;
  Node *definingNode = nullptr;
  unsigned resultIndex = 0; // the argument's index for block arguments
  Node *argumentOwner = nullptr; // for block arguments
  uint64_t weightOffset = 0;
  bool weightElided = false;
  llvm::SmallVector<Use, 2> uses;
  llvm::Optional<uint64_t> arenaOffset;
};

class Node {
public:
  ~Node();
  Node(const Node &) = delete;
  Node &operator=(const Node &) = delete;

  /// The op's entry in the op table (core/Ops.def).
  const OpInfo &getOpInfo() const { return *info; }
  OpCode getOpCode() const { return info->code; }
  bool is(OpCode code) const { return info->code == code; }
  /// The op's name, for printing and messages; dispatch on getOpCode().
  llvm::StringRef getOpName() const { return info->name; }
  /// The ONNX node name (for messages); may be empty.
  llvm::StringRef getName() const { return name; }
  void setName(llvm::StringRef newName) { name = newName.str(); }

  llvm::ArrayRef<Value *> getOperands() const { return operands; }
  unsigned getNumOperands() const { return operands.size(); }
  /// nullptr for an absent optional operand.
  Value *getOperand(unsigned index) const { return operands[index]; }
  void setOperand(unsigned index, Value *value);
  void setOperands(llvm::ArrayRef<Value *> values);

  unsigned getNumResults() const { return results.size(); }
  Value *getResult(unsigned index) const { return results[index].get(); }
  llvm::SmallVector<Value *, 2> getResults() const;

  const AttributeMap &getAttributes() const { return attributes; }
  /// nullptr when absent.
  const Attribute *getAttribute(llvm::StringRef attrName) const;
  void setAttribute(llvm::StringRef attrName, Attribute value);
  void removeAttribute(llvm::StringRef attrName);

  /// "node 'conv1' (Conv)" or "node #3 (Conv)" for unnamed nodes (with
  /// " in the body of node #2 (snug.fused)" for body nodes): the subject of
  /// every diagnostic about this node.
  std::string describe() const;

  Module *getModule() const { return module; }

  /// The body, nullptr when the node has none.
  Region *getBody() const { return body.get(); }
  bool hasBody() const { return body != nullptr; }
  /// Gives the node an empty body; it must not have one.
  Region &createBody();
  /// The node whose body holds this node; nullptr in the schedule.
  Node *getParentNode() const { return parent; }
  /// Whether the body is an epilogue (see the file comment).
  bool hasEpilogue() const { return body && info->takesEpilogue(); }
  /// The operands of the op itself: all of them, except for a node with an
  /// epilogue, whose extra operands follow its table arity.
  unsigned getNumOwnOperands() const;

private:
  friend class Module;
  friend class Region;
  Node(Module *module, const OpInfo &info) : module(module), info(&info) {}
  static Node *create(Module *module, Node *parent, const OpInfo &info,
                      llvm::ArrayRef<Value *> operands,
                      llvm::ArrayRef<TensorType> resultTypes,
                      AttributeMap attributes);
  void dropOperands();
  /// Drops the operands of this node and of every node in its body.
  void dropAllOperands();

  Module *module;
  Node *parent = nullptr;
  const OpInfo *info;
  std::string name;
  llvm::SmallVector<Value *, 4> operands;
  llvm::SmallVector<std::unique_ptr<Value>, 1> results;
  AttributeMap attributes;
  std::unique_ptr<Region> body;
};

/// A node's body: block arguments, nodes in order, and the yielded values
/// that become the owner's results. The yield, like the graph outputs, is
/// not recorded in use lists.
class Region {
public:
  ~Region();
  Region(const Region &) = delete;
  Region &operator=(const Region &) = delete;

  Node *getOwner() const { return owner; }

  llvm::ArrayRef<std::unique_ptr<Value>> getArguments() const {
    return arguments;
  }
  unsigned getNumArguments() const { return arguments.size(); }
  Value *getArgument(unsigned index) const { return arguments[index].get(); }
  Value *addArgument(const TensorType &type, llvm::StringRef valueName = "");

  /// Body nodes in evaluation order.
  llvm::ArrayRef<std::unique_ptr<Node>> getNodes() const { return nodes; }
  Node *addNode(OpCode op, llvm::ArrayRef<Value *> operands,
                llvm::ArrayRef<TensorType> resultTypes,
                AttributeMap attributes = {});

  llvm::ArrayRef<Value *> getYield() const { return yield; }
  void setYield(llvm::ArrayRef<Value *> values) {
    yield.assign(values.begin(), values.end());
  }

private:
  friend class Node;
  explicit Region(Node *owner) : owner(owner) {}

  Node *owner;
  std::vector<std::unique_ptr<Value>> arguments;
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<Value *> yield;
};

class Module {
public:
  Module() = default;
  explicit Module(llvm::StringRef name) : name(name.str()) {}
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;
  ~Module();

  llvm::StringRef getName() const { return name; }
  void setName(llvm::StringRef newName) { name = newName.str(); }

  /// Graph inputs and weights, in signature order.
  llvm::ArrayRef<std::unique_ptr<Value>> getArguments() const {
    return arguments;
  }
  llvm::SmallVector<Value *, 4> getInputs() const;
  llvm::SmallVector<Value *, 8> getWeights() const;
  Value *addInput(llvm::StringRef valueName, const TensorType &type);
  /// Copies `bytes` into the weight blob.
  Value *addWeight(llvm::StringRef valueName, const TensorType &type,
                   llvm::ArrayRef<uint8_t> bytes);
  /// A weight whose bytes already are at [offset, offset + byte size) of the
  /// blob (added with getWeightBlob().addMapped, say).
  Value *addWeightAt(llvm::StringRef valueName, const TensorType &type,
                     uint64_t blobOffset);
  Value *addElidedWeight(llvm::StringRef valueName, const TensorType &type);
  /// The bytes of a weight that is not elided.
  llvm::ArrayRef<uint8_t> getWeightData(const Value *weight) const;
  /// Removes arguments that are weights without uses and not outputs.
  unsigned eraseUnusedWeights();

  /// Nodes in schedule order.
  llvm::ArrayRef<std::unique_ptr<Node>> getNodes() const { return nodes; }
  /// Appends a node to the schedule.
  Node *addNode(OpCode op, llvm::ArrayRef<Value *> operands,
                llvm::ArrayRef<TensorType> resultTypes,
                AttributeMap attributes = {});
  /// As above, by the op's table name; the op must be in the table
  /// (callers with untrusted names look them up with lookupOp first).
  Node *addNode(llvm::StringRef opName, llvm::ArrayRef<Value *> operands,
                llvm::ArrayRef<TensorType> resultTypes,
                AttributeMap attributes = {});
  /// Inserts a node before position `index` of the schedule.
  Node *insertNode(size_t index, OpCode op, llvm::ArrayRef<Value *> operands,
                   llvm::ArrayRef<TensorType> resultTypes,
                   AttributeMap attributes = {});
  /// Inserts before position `index` a copy of `original` (op, attributes,
  /// name, result types, and its body copied deeply) reading `operands`
  /// instead of the original's; the copy's results are unnamed. What
  /// rematerialization recomputes a value with.
  Node *insertCopy(size_t index, const Node &original,
                   llvm::ArrayRef<Value *> operands);
  /// Erases every node for which `shouldErase` holds, in one sweep. Their
  /// results must have no uses left outside the erased set.
  unsigned eraseNodesIf(llvm::function_ref<bool(const Node &)> shouldErase);
  /// Reorders the schedule; `order` must be a permutation of the nodes.
  void setSchedule(llvm::ArrayRef<Node *> order);

  llvm::ArrayRef<Value *> getOutputs() const { return outputs; }
  void setOutputs(llvm::ArrayRef<Value *> values);
  /// O(1): a 20,000-output graph asks this once per value.
  bool isOutput(const Value *value) const;

  /// Points every use of `from` (operands and graph outputs) at `to`.
  void replaceAllUsesWith(Value *from, Value *to);
  /// As replaceAllUsesWith, and `to` takes `from`'s name (a rewrite's new
  /// value stands for the old one: graph output names and messages keep it).
  void replaceValue(Value *from, Value *to);

  const AttributeMap &getAttributes() const { return attributes; }
  const Attribute *getAttribute(llvm::StringRef attrName) const;
  void setAttribute(llvm::StringRef attrName, Attribute value);
  void removeAttribute(llvm::StringRef attrName);

  WeightBlob &getWeightBlob() { return weightBlob; }
  const WeightBlob &getWeightBlob() const { return weightBlob; }

private:
  std::string name = "main";
  std::vector<std::unique_ptr<Value>> arguments;
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<Value *> outputs;
  /// The values in `outputs`, for isOutput.
  llvm::DenseSet<const Value *> outputSet;
  AttributeMap attributes;
  WeightBlob weightBlob;
};

} // namespace ir
} // namespace snug

#endif // SNUG_IR_MODULE_H
