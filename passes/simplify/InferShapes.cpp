//===- InferShapes.cpp - Recompute and check every result type -----------===//
//
// Runs each node's shape function (ShapeFunctions.h) and compares its answer
// with the types the module records; a difference is an error naming the node
// and both types. Ops without a shape function (snug's own `snug.` ops, which
// their passes type) are skipped and counted. With {update=1} the pass
// overwrites recorded types instead, in schedule order, so that a change
// propagates; the default only checks, so it can follow any pass as a
// safety net.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/Passes.h"
#include "ir/ShapeFunctions.h"

namespace snug {
namespace {
class InferShapes : public Pass {
public:
  llvm::StringRef getName() const override { return "infer-shapes"; }
  llvm::Expected<bool> run(ir::Module &module) override;
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override {
    if (key == "update" && (value == "0" || value == "1")) {
      update = value == "1";
      return llvm::Error::success();
    }
    return Pass::setOption(key, value);
  }

private:
  bool update = false;
};
} // namespace

llvm::Expected<bool> InferShapes::run(ir::Module &module) {
  bool changed = false;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    if (!hasShapeFunction(node->getOpCode())) {
      addStatistic("nodes-skipped");
      continue;
    }
    auto types = inferResultTypes(*node);
    if (!types)
      return types.takeError();
    addStatistic("nodes-checked");
    for (unsigned i = 0; i < node->getNumResults(); ++i) {
      const ir::TensorType &recorded = node->getResult(i)->getType();
      if (recorded == (*types)[i])
        continue;
      if (!update)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "%s: result %u has type %s, its shape function says %s",
            node->describe().c_str(), i, recorded.str().c_str(),
            (*types)[i].str().c_str());
      node->getResult(i)->setType((*types)[i]);
      addStatistic("types-updated");
      changed = true;
    }
  }
  return changed;
}

std::unique_ptr<Pass> createInferShapesPass() {
  return std::make_unique<InferShapes>();
}

} // namespace snug
