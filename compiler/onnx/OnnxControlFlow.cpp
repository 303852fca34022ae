//===- OnnxControlFlow.cpp - If with a condition known at compile time ----===//
//
// snug's IR is a straight-line schedule: it has no branches. An ONNX If
// whose condition is known when the model is compiled (an initializer, a
// Constant, a frozen input, or a value the importer folds from shapes the
// bindings fix, like Equal(Gather(Shape(x), 0), 1) with --dim batch=1) is
// imported as the nodes of the branch it takes: the branch's initializers
// and nodes go into the module through the same normalizers as the
// model's own (a nested If the same way), and the If's outputs are the
// branch's outputs. Exporters write such Ifs for shape checks a tracer
// could not resolve (torch.onnx's `if x.size(0) == 1`).
//
// An If whose condition depends on an input's data is refused, naming the
// node and the condition: running either branch needs control flow in the
// plan, which snug does not have. The scan (OnnxImporter.cpp) has already
// checked both branches (unsupported ops, undefined names, names that
// shadow the enclosing graph's) and ordered their nodes.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"
#include "passes/simplify/ConstantEval.h"

namespace snug {
namespace onnx_import {

llvm::Error importIf(Importer &importer, onnx::NodeProto &node) {
  auto condition = requireInput(importer, node, 0);
  if (!condition)
    return condition.takeError();
  const std::string &name = node.input(0);
  const ir::TensorType &type = (*condition)->getType();
  if (type.getNumElements() != 1)
    return importer.error(node, "condition '" + name + "' has type " +
                                    type.str() +
                                    "; If takes a tensor of one element");
  auto data = importer.getConstant(*condition);
  if (!data)
    return data.takeError();
  if (!*data)
    return importer.error(
        node, "condition '" + name +
                  "' is not a constant; snug needs it known at compile time "
                  "(it supports only an If whose condition is known then: "
                  "an initializer, a Constant node, or a value computed from "
                  "shapes; --freeze-input fixes a graph input's value, and "
                  "--dim/--input bind the dims a shape-derived condition "
                  "reads)");
  bool taken = readElementAsDouble(type.getDType(), (*data)->data(), 0) != 0;
  llvm::StringRef branchName = taken ? "then_branch" : "else_branch";
  onnx::AttributeProto *branch = nullptr;
  for (onnx::AttributeProto &attr : *node.mutable_attribute())
    if (attr.name() == branchName && attr.has_g())
      branch = &attr;
  if (!branch)
    return importer.error(node, "has no graph attribute '" + branchName +
                                    "' (the branch its condition takes)");
  if (branch->g().output_size() != node.output_size())
    return importer.error(node, branchName + " has " +
                                    llvm::Twine(branch->g().output_size()) +
                                    " outputs, the If has " +
                                    llvm::Twine(node.output_size()));
  auto results = importer.importBranch(node, *branch->mutable_g(), branchName);
  if (!results)
    return results.takeError();
  // A branch output that names a value of the enclosing graphs (still
  // bound after the branch: a branch cannot shadow their names) is copied
  // by an Identity, which the pipeline forwards: binding it directly
  // would rename that value, a graph input perhaps, after the If's output.
  const onnx::GraphProto &graph = branch->g();
  for (int i = 0; i < graph.output_size(); ++i) {
    if (!importer.values.count(graph.output(i).name()))
      continue;
    auto copy = firstResult(importer.emit(
        node, "Identity", {(*results)[i]}, {}, 1,
        i ? "." + std::to_string(i) : std::string()));
    if (!copy)
      return copy.takeError();
    (*results)[i] = *copy;
  }
  importer.bindOutputs(node, *results);
  return llvm::Error::success();
}

} // namespace onnx_import
} // namespace snug
