//===- Verifier.cpp - Structural and type checks of a module --------------===//
//
// One walk over the schedule with the set of values defined so far. Type rules
// beyond the op families belong to each op's shape function (the importer's),
// not here: the verifier must accept any type a correct pass can produce.
// Attributes are the op table's (Ops.def ATTR lines): an attribute the op
// does not declare, or one of another kind, is an error (no pass sets node
// attributes of its own; planner results are module attributes).
//
// A body is checked as a scope of its own, with the same node rules plus
// what its lowering needs. snug.fused is run per element (the host executor
// and the CUDA emitter evaluate the whole body at one result index, loading
// each block argument at its broadcast offset), so: its body holds only
// elementwise ops (nothing else is a function of one element), no body of
// its own (nesting is not supported), block arguments typed as the
// operands, a yield typed as the results, every result of one shape, and
// every body value broadcasting to that shape. Body values are not buffers:
// they carry no arena offsets. An epilogue (the body of an op that takes
// one, ir/Module.h) is held to the same rules, its block argument 0 typed as
// the node's result.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"
#include "ir/Module.h"
#include "ir/OpInfo.h"
#include "ir/Parser.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

namespace snug {
namespace ir {

llvm::Optional<llvm::SmallVector<int64_t, 4>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  llvm::SmallVector<int64_t, 4> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t b = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (a != b && a != 1 && b != 1)
      return llvm::None;
    result[i] = a == 1 ? b : a;
  }
  return result;
}

namespace {
class ModuleVerifier {
public:
  ModuleVerifier(const Module &module, const SourceLocations *locations)
      : module(module), locations(locations) {}
  llvm::Error verify();

private:
  void report(const Node *node, const llvm::Twine &message);
  void verifyNode(const Node &node, llvm::DenseSet<const Value *> &defined);
  void verifyFusedBody(const Node &node);
  void verifyFamily(const Node &node, const OpInfo &info);
  void checkName(const Value *value, const Node *node);

  const Module &module;
  const SourceLocations *locations;
  llvm::StringSet<> names;
  std::string messages;
  unsigned count = 0;
};
} // namespace

void ModuleVerifier::report(const Node *node, const llvm::Twine &message) {
  // A broken module can have thousands of errors; the first few say enough.
  if (++count > 20)
    return;
  if (!messages.empty())
    messages += '\n';
  std::string prefix;
  if (locations) {
    auto it = node ? locations->nodes.find(node) : locations->nodes.end();
    prefix = it != locations->nodes.end() ? it->second : locations->module;
    prefix += ": ";
  }
  messages += prefix + "error: ";
  if (node)
    messages += node->describe() + ": ";
  messages += message.str();
}

void ModuleVerifier::checkName(const Value *value, const Node *node) {
  if (!value->getName().empty() && !names.insert(value->getName()).second)
    report(node, "value name '%" + value->getName() + "' is defined twice");
}

static llvm::StringRef ordinal(unsigned count) {
  return count == 1 ? "" : "s";
}

void ModuleVerifier::verifyFamily(const Node &node, const OpInfo &info) {
  if (info.family == OpFamily::Other || node.getNumOperands() == 0 ||
      node.getNumResults() == 0)
    return;
  const Value *first = node.getOperand(0);
  const Value *result = node.getResult(0);
  if (!first)
    return report(&node, "operand 0 is required");
  if (info.family == OpFamily::Unary) {
    if (result->getType() != first->getType())
      report(&node, "result type " + result->getType().str() +
                        " differs from operand type " +
                        first->getType().str());
    return;
  }
  llvm::SmallVector<int64_t, 4> dims(first->getType().getDims().begin(),
                                     first->getType().getDims().end());
  for (unsigned i = 1; i < node.getNumOperands(); ++i) {
    const Value *operand = node.getOperand(i);
    if (!operand)
      return report(&node, "operand " + llvm::Twine(i) + " is required");
    if (operand->getType().getDType() != first->getType().getDType())
      return report(&node, "operand " + llvm::Twine(i) + " has element type " +
                               getDTypeName(operand->getType().getDType()) +
                               ", operand 0 has " +
                               getDTypeName(first->getType().getDType()));
    auto broadcast = broadcastShapes(dims, operand->getType().getDims());
    if (!broadcast)
      return report(&node, "operand shapes do not broadcast: " +
                               first->getType().str() + " and " +
                               operand->getType().str());
    dims = *broadcast;
  }
  DType dtype = info.family == OpFamily::Compare ? DType::Bool
                                                 : first->getType().getDType();
  TensorType expected(dtype, dims);
  if (result->getType() != expected)
    report(&node, "result type " + result->getType().str() + ", expected " +
                      expected.str());
}

void ModuleVerifier::verifyNode(const Node &node,
                                llvm::DenseSet<const Value *> &defined) {
  if (node.getModule() != &module)
    report(&node, "belongs to another module");
  const Node *scopeOwner = node.getParentNode();
  for (unsigned i = 0; i < node.getNumOperands(); ++i) {
    const Value *operand = node.getOperand(i);
    if (!operand || defined.count(operand))
      continue;
    const Node *operandOwner = operand->getBodyOwner();
    if (scopeOwner && operandOwner != scopeOwner)
      report(&node, "operand " + llvm::Twine(i) +
                        " is defined outside this body (a body uses only "
                        "its block arguments and its own values)");
    else if (!scopeOwner && operandOwner)
      report(&node, "operand " + llvm::Twine(i) + " is defined inside the "
                        "body of " + operandOwner->describe() +
                        " and is not visible outside it");
    else
      report(&node, "operand " + llvm::Twine(i) + " is not defined before "
                        "this node in " +
                        (scopeOwner ? "the body" : "the schedule"));
  }
  const OpInfo &info = node.getOpInfo();
  auto outside = [](int count, int low, int high) {
    return count < low || (high >= 0 && count > high);
  };
  auto range = [](int low, int high) {
    if (low == high)
      return llvm::Twine(low).str();
    if (high < 0)
      return (llvm::Twine("at least ") + llvm::Twine(low)).str();
    return (llvm::Twine(low) + " to " + llvm::Twine(high)).str();
  };
  int operands = node.getNumOwnOperands(), results = node.getNumResults();
  const Value *first = operands ? node.getOperand(0) : nullptr;
  if (outside(operands, info.minOperands, info.maxOperands))
    report(&node, "has " + llvm::Twine(operands) + " operand" +
                      ordinal(operands) + ", expected " +
                      range(info.minOperands, info.maxOperands));
  else if (outside(results, info.minResults, info.maxResults))
    report(&node, "has " + llvm::Twine(results) + " result" +
                      ordinal(results) + ", expected " +
                      range(info.minResults, info.maxResults));
  else if (first && !info.acceptsDType(first->getType().getDType()))
    report(&node, "operand 0 has element type " +
                      getDTypeName(first->getType().getDType()) +
                      ", the op takes " + dtypeSetString(info.dtypes));
  else
    verifyFamily(node, info);
  // Every attribute is one the op table declares (Ops.def ATTR lines); an
  // unknown one would be carried along and ignored by every kernel.
  for (const auto &attribute : node.getAttributes()) {
    if (!findAttrSpec(info.code, attribute.first)) {
      std::string known;
      for (const AttrSpec &spec : getAttrSpecs(info.code))
        known += (known.empty() ? "" : ", ") + std::string(spec.name);
      report(&node, "attribute '" + attribute.first + "' is not one " +
                        info.name + " takes (it takes: " +
                        (known.empty() ? "none" : known) + ")");
      continue;
    }
    std::string why =
        checkAttributeKind(info.code, attribute.first, attribute.second);
    if (!why.empty())
      report(&node, why);
  }
  for (unsigned i = 0; i < node.getNumResults(); ++i) {
    const Value *result = node.getResult(i);
    checkName(result, &node);
    if (scopeOwner && result->getArenaOffset())
      report(&node, "result " + llvm::Twine(i) + " has an arena offset; "
                        "values inside a body are not buffers");
    defined.insert(result);
  }
  // Host-resident values (snug.offload's results, in pinned host memory)
  // are read by snug.reload alone: every kernel reads device memory, and a
  // graph output is handed back from the device arena.
  for (unsigned i = 0; i < node.getNumOperands(); ++i) {
    const Value *operand = node.getOperand(i);
    bool onHost = operand && operand->isResult() &&
                  operand->getDefiningNode()->getOpInfo().hasHostResult();
    if (onHost != node.is(OpCode::SnugReload))
      report(&node, "operand " + llvm::Twine(i) +
                        (onHost ? " lives in pinned host memory; only "
                                  "snug.reload reads it"
                                : " is not in pinned host memory; "
                                  "snug.reload reads a snug.offload result"));
  }
  if (info.hasHostResult())
    for (unsigned i = 0; i < node.getNumResults(); ++i)
      if (module.isOutput(node.getResult(i)))
        report(&node, "result " + llvm::Twine(i) + " lives in pinned host "
                          "memory and cannot be a graph output");
  if (node.is(OpCode::SnugFused)) {
    if (!node.hasBody())
      report(&node, "has no body");
    else if (scopeOwner)
      report(&node, "nested bodies are not supported");
    else
      verifyFusedBody(node);
  } else if (node.hasEpilogue()) {
    if (scopeOwner)
      report(&node, "nested bodies are not supported");
    else
      verifyFusedBody(node);
  } else if (node.hasBody()) {
    report(&node, "has a body; only snug.fused and ops that take an "
                  "epilogue carry one");
  }
}

void ModuleVerifier::verifyFusedBody(const Node &node) {
  const Region &body = *node.getBody();
  llvm::DenseSet<const Value *> inner;
  // An epilogue's argument 0 is the op's own result element; the others
  // stand for the operands after the op's own (Module.h).
  bool epilogue = node.hasEpilogue();
  unsigned first = epilogue ? node.getNumOwnOperands() : 0;
  unsigned bound = node.getNumOperands() - first + (epilogue ? 1 : 0);
  if (epilogue && node.getNumOwnOperands() !=
                      unsigned(node.getOpInfo().maxOperands))
    report(&node, "has an epilogue but " +
                      llvm::Twine(node.getNumOperands()) + " operands; it "
                      "takes its op's " +
                      llvm::Twine(node.getOpInfo().maxOperands) +
                      " and then one per block argument after the first");
  if (body.getNumArguments() != bound)
    report(&node, "body has " + llvm::Twine(body.getNumArguments()) +
                      " block arguments for " + llvm::Twine(bound) +
                      (epilogue ? " (the result and the extra operands)"
                                : " operands"));
  for (unsigned i = 0; i < body.getNumArguments(); ++i) {
    const Value *argument = body.getArgument(i);
    checkName(argument, &node);
    inner.insert(argument);
    if (argument->getArenaOffset())
      report(&node, "block argument " + llvm::Twine(i) + " has an arena "
                        "offset; values inside a body are not buffers");
    if (i >= bound)
      continue;
    bool own = epilogue && i == 0;
    unsigned index = own ? 0 : first + i - (epilogue ? 1 : 0);
    const Value *operand = own ? node.getResult(0) : node.getOperand(index);
    std::string what =
        (own ? "result " : "operand ") + std::to_string(index);
    if (!operand)
      report(&node, what + " is absent");
    else if (operand->getType() != argument->getType())
      report(&node, "block argument " + llvm::Twine(i) + " has type " +
                        argument->getType().str() + ", " + what + " has " +
                        operand->getType().str());
  }
  for (const std::unique_ptr<Node> &inside : body.getNodes()) {
    if (!inside->getOpInfo().isFusable())
      report(inside.get(), "is not elementwise; the body of " +
                               node.getOpName() + " holds elementwise ops "
                               "and conversions only (it is run per "
                               "element)");
    verifyNode(*inside, inner);
  }
  llvm::ArrayRef<Value *> yield = body.getYield();
  if (yield.size() != node.getNumResults())
    report(&node, "body yields " + llvm::Twine(yield.size()) + " value" +
                      ordinal(yield.size()) + " for " +
                      llvm::Twine(node.getNumResults()) + " result" +
                      ordinal(node.getNumResults()));
  for (unsigned i = 0; i < yield.size(); ++i) {
    if (!yield[i] || !inner.count(yield[i])) {
      report(&node, "yield value " + llvm::Twine(i) +
                        " is not defined in the body");
      continue;
    }
    if (i < node.getNumResults() &&
        yield[i]->getType() != node.getResult(i)->getType())
      report(&node, "yield value " + llvm::Twine(i) + " has type " +
                        yield[i]->getType().str() + ", result " +
                        llvm::Twine(i) + " has " +
                        node.getResult(i)->getType().str());
  }
  if (node.getNumResults() == 0)
    return;
  if (epilogue && node.getNumResults() != 1)
    report(&node, "has an epilogue and " + llvm::Twine(node.getNumResults()) +
                      " results; an epilogue yields the one result");
  llvm::ArrayRef<int64_t> shape = node.getResult(0)->getType().getDims();
  for (unsigned i = 1; i < node.getNumResults(); ++i)
    if (node.getResult(i)->getType().getDims() != shape)
      report(&node, "result " + llvm::Twine(i) + " has another shape than "
                        "result 0; a fused node's results share one shape");
  // In body order, so that the message names the first offender.
  llvm::SmallVector<const Value *, 16> values;
  for (const std::unique_ptr<Value> &argument : body.getArguments())
    values.push_back(argument.get());
  for (const std::unique_ptr<Node> &inside : body.getNodes())
    for (unsigned i = 0; i < inside->getNumResults(); ++i)
      values.push_back(inside->getResult(i));
  for (const Value *value : values) {
    // Broadcasting to the result shape must not grow it.
    auto broadcast = broadcastShapes(value->getType().getDims(), shape);
    if (!broadcast || llvm::makeArrayRef(*broadcast) != shape) {
      report(&node, "body value of type " + value->getType().str() +
                        " does not broadcast to the result shape " +
                        node.getResult(0)->getType().str());
      break;
    }
  }
}

llvm::Error ModuleVerifier::verify() {
  llvm::DenseSet<const Value *> defined;
  for (const std::unique_ptr<Value> &argument : module.getArguments()) {
    checkName(argument.get(), nullptr);
    defined.insert(argument.get());
  }
  for (const std::unique_ptr<Node> &node : module.getNodes())
    verifyNode(*node, defined);
  for (size_t i = 0; i < module.getOutputs().size(); ++i)
    if (!defined.count(module.getOutputs()[i]))
      report(nullptr, "graph output " + llvm::Twine(i) +
                          " is not defined in the function");
  if (count > 20)
    messages += "\n(" + llvm::Twine(count - 20).str() + " more errors)";
  if (messages.empty())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(), messages);
}

llvm::Error verifyModule(const Module &module,
                         const SourceLocations *locations) {
  return ModuleVerifier(module, locations).verify();
}

} // namespace ir
} // namespace snug
