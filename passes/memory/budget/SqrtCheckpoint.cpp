//===- SqrtCheckpoint.cpp - √n checkpointing of a training step -----------===//
//
// `sqrt-checkpoint{every=K}`: the baseline bench/remat compares snug's
// remat with on training steps, Chen, Xu, Zhang and Guestrin, "Training
// Deep Nets with Sublinear Memory Cost" (2016), section 4.1: the forward
// pass, taken as a chain of its n nodes in schedule order
// (passes/analysis/StepPhases.h), is cut into segments of K = ceil(sqrt(n)) nodes
// (or the K given); the last result of each segment is a checkpoint the
// backward keeps, and every other forward value the backward reads is
// recomputed: the segment's nodes are copied (tests/support/RematModule.cpp's
// kind of copy: same op, attributes and body, the copies reading each
// other) just before the first node outside the forward that reads one of
// them, and every such read from there on reads the copy. The original
// then dies at its last forward read. A segment is copied up to its last
// node whose value the backward reads, once. Results stay bitwise equal:
// the copies are the same deterministic ops on the same operands.
//
// Not a policy snug uses: it never looks at the memory plan, so on a graph
// that is no chain (a value read across segments) it keeps what other
// segments need, and it ignores the budget. It sets the module attribute
// checkpoint_copies (the copies made) so that the memory report counts
// their FLOPs as recompute (compiler/StepBreakdown.h).
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/Passes.h"
#include "passes/analysis/StepPhases.h"

#include "llvm/ADT/DenseMap.h"

#include <cmath>

namespace snug {
namespace {

class SqrtCheckpoint : public Pass {
public:
  llvm::StringRef getName() const override { return "sqrt-checkpoint"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  /// Nodes per segment; 0: ceil(sqrt(forward nodes)).
  unsigned every = 0;
};

llvm::Error passError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str());
}

size_t indexOf(const ir::Module &module, const ir::Node *node) {
  llvm::ArrayRef<std::unique_ptr<ir::Node>> nodes = module.getNodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].get() == node)
      return i;
  llvm_unreachable("a node outside its module");
}

} // namespace

llvm::Error SqrtCheckpoint::setOption(llvm::StringRef key,
                                      llvm::StringRef value) {
  if (key != "every")
    return Pass::setOption(key, value);
  if (value.getAsInteger(10, every) || every == 0)
    return passError("option 'every' must be a positive integer, got '" +
                     value + "'");
  return llvm::Error::success();
}

llvm::Expected<bool> SqrtCheckpoint::run(ir::Module &module) {
  StepPhases phases = classifyStepPhases(module);
  if (!phases.isStep)
    return passError("the module is no training step (it has no state); "
                     "run it on what snugc train compiles");
  std::vector<ir::Node *> chain;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    if (phases.forward.count(node.get()))
      chain.push_back(node.get());
  if (chain.empty())
    return false;
  size_t segment =
      every ? every
            : size_t(std::ceil(std::sqrt(double(chain.size()))));
  unsigned copies = 0;
  for (size_t begin = 0; begin < chain.size(); begin += segment) {
    size_t end = std::min(chain.size(), begin + segment);
    // The reads from outside the forward of every value of the segment but
    // its checkpoint (the last node's results), and the last node read.
    struct Read {
      ir::Node *user;
      unsigned operand;
      size_t node; // position in the segment
    };
    std::vector<Read> reads;
    size_t last = begin;
    for (size_t i = begin; i + 1 < end; ++i)
      for (unsigned r = 0; r < chain[i]->getNumResults(); ++r)
        for (const ir::Value::Use &use : chain[i]->getResult(r)->getUses())
          if (!phases.forward.count(use.user)) {
            reads.push_back({use.user, use.operandIndex, i});
            last = std::max(last, i);
          }
    if (reads.empty())
      continue;
    for (size_t i = begin; i <= last; ++i)
      if (chain[i]->getOpInfo().hasSideEffects())
        return passError(chain[i]->describe() +
                         " has side effects and cannot be recomputed");
    size_t at = indexOf(module, chain[last]) + 1;
    size_t firstRead = SIZE_MAX;
    for (const Read &read : reads)
      firstRead = std::min(firstRead, indexOf(module, read.user));
    at = std::max(at, firstRead);
    llvm::DenseMap<const ir::Value *, ir::Value *> copyOf;
    size_t index = at;
    for (size_t i = begin; i <= last; ++i) {
      llvm::SmallVector<ir::Value *, 4> operands;
      for (ir::Value *operand : chain[i]->getOperands()) {
        ir::Value *mapped = operand ? copyOf.lookup(operand) : nullptr;
        operands.push_back(mapped ? mapped : operand);
      }
      ir::Node *copy = module.insertCopy(index++, *chain[i], operands);
      ++copies;
      for (unsigned r = 0; r < chain[i]->getNumResults(); ++r)
        copyOf[chain[i]->getResult(r)] = copy->getResult(r);
    }
    // Reads before `at` (none on a chain) keep the originals.
    for (const Read &read : reads)
      if (indexOf(module, read.user) >= index)
        read.user->setOperand(read.operand,
                              copyOf.lookup(read.user->getOperand(read.operand)));
  }
  module.setAttribute("checkpoint_copies", ir::Attribute::getInt(copies));
  addStatistic("segment-nodes", int64_t(segment));
  addStatistic("copies", copies);
  return copies > 0;
}

std::unique_ptr<Pass> createSqrtCheckpointPass() {
  return std::make_unique<SqrtCheckpoint>();
}

} // namespace snug
