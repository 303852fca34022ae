//===- FusionReport.cpp - What fusion did to a module ---------------------===//
#include "compiler/FusionReport.h"
#include "ir/ShapeFunctions.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"

namespace snug {

static FusedGroup describeGroup(const ir::Node &node) {
  FusedGroup group;
  group.name = node.getName().str();
  group.pattern = "elementwise";
  group.results = node.getNumResults();
  const ir::Region &body = *node.getBody();
  // An epilogue's op runs in the kernel too; its raw result, block
  // argument 0, is the intermediate the epilogue removes.
  if (node.hasEpilogue()) {
    group.pattern = "epilogue";
    group.ops.push_back(node.getOpName().str());
    ++group.intermediates;
    group.intermediateBytes += body.getArgument(0)->getType().getByteSize();
  }
  llvm::DenseSet<const ir::Value *> yielded(body.getYield().begin(),
                                            body.getYield().end());
  for (const std::unique_ptr<ir::Node> &inside : body.getNodes()) {
    group.ops.push_back(inside->getOpName().str());
    for (unsigned i = 0; i < inside->getNumResults(); ++i) {
      const ir::Value *value = inside->getResult(i);
      if (yielded.count(value))
        continue;
      ++group.intermediates;
      group.intermediateBytes += value->getType().getByteSize();
    }
  }
  return group;
}

/// A snug.attention: the nodes it certainly replaced (a Transpose per
/// perm, the products, the mask's node, the Softmax; a constant scale it
/// took in leaves no trace) and, as intermediates, their results but the
/// last: the transposed Q, K, V (an operand's bytes each), the score-sized
/// ones, and the result before its merging Transpose.
static FusedGroup describeAttention(const ir::Node &node) {
  FusedGroup group;
  group.name = node.getName().str();
  group.pattern = "attention";
  group.results = 1;
  auto add = [&](const char *op, uint64_t bytes) {
    group.ops.push_back(op);
    ++group.intermediates;
    group.intermediateBytes += bytes;
  };
  const char *perms[3] = {"q_perm", "k_perm", "v_perm"};
  for (unsigned i = 0; i < 3; ++i)
    if (node.getAttribute(perms[i]))
      add("Transpose", node.getOperand(i)->getType().getByteSize());
  AttentionShape shape = getAttentionShape(node);
  const ir::TensorType &result = node.getResult(0)->getType();
  uint64_t scoreBytes = uint64_t(shape.batch * shape.sq * shape.skv) *
                        ir::getDTypeSize(result.getDType());
  add("MatMul", scoreBytes);
  AttentionMaskKind mask = getAttentionMaskKind(node);
  if (mask.where || mask.causal)
    add("Where", scoreBytes);
  if (mask.additive || mask.bias)
    add("Add", scoreBytes);
  if (mask.whereAfter)
    add("Where", scoreBytes);
  add("Softmax", scoreBytes);
  if (getIntAttr(node.getAttributes(), "zero_filled", 0))
    add("Where", scoreBytes);
  if (node.getAttribute("y_perm")) {
    add("MatMul", result.getByteSize());
    group.ops.push_back("Transpose");
  } else {
    group.ops.push_back("MatMul");
  }
  return group;
}

FusionSummary summarizeFusion(const ir::Module &module) {
  FusionSummary summary;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    if (node->getOpInfo().isView())
      continue;
    ++summary.kernelsAfter;
    // A fused group, an epilogue on its op, or an attention.
    bool attention = node->is(ir::OpCode::SnugAttention);
    if (!attention && !node->hasBody()) {
      ++summary.kernelsBefore;
      continue;
    }
    FusedGroup group =
        attention ? describeAttention(*node) : describeGroup(*node);
    summary.nodesFused += group.ops.size();
    summary.kernelsBefore += group.ops.size();
    summary.intermediateBytesRemoved += group.intermediateBytes;
    summary.groups.push_back(std::move(group));
  }
  return summary;
}

void printFusion(const FusionSummary &summary, llvm::raw_ostream &os) {
  os << "fusion: " << summary.groups.size() << " fused group"
     << (summary.groups.size() == 1 ? "" : "s") << " of "
     << summary.nodesFused << " nodes; kernels " << summary.kernelsBefore
     << " -> " << summary.kernelsAfter << "; intermediates removed "
     << summary.intermediateBytesRemoved << " B\n";
  for (const FusedGroup &group : summary.groups) {
    os << "  '" << group.name << "' " << group.pattern << ": "
       << group.ops.size() << " nodes (";
    for (size_t i = 0; i < group.ops.size(); ++i)
      os << (i ? ", " : "") << group.ops[i];
    os << "), " << group.results << " result" << (group.results == 1 ? "" : "s")
       << ", " << group.intermediates << " intermediate"
       << (group.intermediates == 1 ? "" : "s") << " removed ("
       << group.intermediateBytes << " B)\n";
  }
}

} // namespace snug
