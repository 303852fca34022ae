//===- RematModule.cpp - A module as a rematerialization problem ---------===//
//
// See RematModule.h. A copy is recognised by its signature (op name and
// operands as graph indices) once its own operands are known, which the
// schedule order guarantees.
//
//===----------------------------------------------------------------------===//
#include "tests/support/RematModule.h"

#include "passes/analysis/CostModel.h"

#include "llvm/Support/raw_ostream.h"

namespace snug {
namespace {

llvm::Error fail(const ir::Node &node, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "error: " + node.describe() + ": " + message);
}

/// "Op(3,5,@w)": the op and what it reads, or "" when an operand is not
/// in `indexOf` yet.
std::string
getSignature(const ir::Node &node,
             const llvm::DenseMap<const ir::Value *, unsigned> &indexOf) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << node.getOpName() << "(";
  for (const ir::Value *operand : node.getOperands()) {
    if (!operand) {
      os << "-,";
    } else if (operand->isWeight()) {
      os << "@" << operand->getName() << ",";
    } else {
      auto found = indexOf.find(operand);
      if (found == indexOf.end())
        return "";
      os << found->second << ",";
    }
  }
  os << ")";
  return os.str();
}

} // namespace

llvm::Expected<RematModuleGraph> buildRematGraph(const ir::Module &module,
                                                 uint64_t alignment) {
  RematModuleGraph result;
  auto footprint = [&](const ir::Value *value) {
    uint64_t bytes = value->getType().getByteSize();
    return (bytes + alignment - 1) / alignment * alignment;
  };
  for (const ir::Value *input : module.getInputs()) {
    result.indexOf[input] = result.graph.nodes.size();
    RematNode node;
    node.bytes = footprint(input);
    node.isInput = true;
    node.isOutput = module.isOutput(input);
    result.graph.nodes.push_back(node);
  }
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    if (node->getNumResults() != 1)
      return fail(*node, "the remat oracle models nodes with one result");
    if (node->getOpInfo().isView())
      return fail(*node, "the remat oracle does not model views");
    std::string signature = getSignature(*node, result.indexOf);
    unsigned index = result.graph.nodes.size();
    if (!result.bySignature.emplace(signature, index).second)
      return fail(*node, "computes what an earlier node does, so a copy of "
                         "either could not be told apart");
    RematNode entry;
    entry.cost = costOfNode(*node).getFlops();
    entry.bytes = footprint(node->getResult(0));
    entry.isOutput = module.isOutput(node->getResult(0));
    for (const ir::Value *operand : node->getOperands()) {
      auto found = operand ? result.indexOf.find(operand) : result.indexOf.end();
      if (found != result.indexOf.end() &&
          !llvm::is_contained(entry.operands, found->second))
        entry.operands.push_back(found->second);
    }
    result.graph.nodes.push_back(entry);
    result.indexOf[node->getResult(0)] = index;
  }
  return result;
}

llvm::Expected<RematSchedule> getRematSchedule(const RematModuleGraph &graph,
                                               const ir::Module &module) {
  llvm::DenseMap<const ir::Value *, unsigned> indexOf = graph.indexOf;
  RematSchedule schedule;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    if (node->getNumResults() != 1)
      return fail(*node, "the remat oracle models nodes with one result");
    auto known = indexOf.find(node->getResult(0));
    if (known == indexOf.end()) {
      auto copied = graph.bySignature.find(getSignature(*node, indexOf));
      if (copied == graph.bySignature.end())
        return fail(*node, "is neither a node of the graph nor a copy of one");
      known = indexOf.insert({node->getResult(0), copied->second}).first;
    }
    schedule.push_back(known->second);
  }
  return schedule;
}

} // namespace snug
