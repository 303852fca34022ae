//===- EpiloguePattern.cpp - Elementwise consumers into their producer's store ===//
//
// After the fuse pass has grouped elementwise nodes, a Conv, MatMul or Gemm
// (the ops of the op table's Epilogue trait) whose only reader is one
// elementwise node or snug.fused group takes that consumer as its epilogue
// (ir/Module.h): the kernel applies it to each result element as it stores
// it, so the raw result is never written to the arena and read back, and
// one launch goes. This is the ResNet shape: Conv (BatchNorm folded in),
// Add of the residual, Relu; MobileNet's Conv, Clip / HardSwish; and the
// transformer's MatMul, bias Add, Gelu (either form) or residual Add.
//
// Conditions, each because without it the rewrite would be wrong:
//  - the producer's result has no other reader and is no graph output
//    (another reader needs the raw values);
//  - the producer's result is no weight gradient (grad.<weight>): as in
//    the fuse pass, it stays a value, so that a training step's phases
//    (StepPhases.h) still find the backward behind it (the update that
//    reads it would otherwise be the product's epilogue);
//  - the consumer has one result, of the producer's result type (an
//    epilogue computes one element per result element; a consumer that
//    broadcasts the result to a larger shape, or changes its dtype, is
//    not one);
//  - the consumer's other operands (the residual) broadcast to that shape,
//    which they do, being operands of an elementwise node of that result.
// The fused node takes the consumer's place in the schedule: the
// producer's operands are defined before the producer, so before the
// consumer as well, and the extra operands before the consumer.
//
// Cost model: fused only when the roofline (passes/CostModel.h) estimates
// the merged node no slower than the two apart; it is, unless a tiny
// producer meets a consumer whose FLOPs dominate, which the estimate sees.
// Where a consumer reads two producers' results (the downsample branch of
// ResNet: Add(conv, conv)), the later producer takes it; the earlier one's
// result is the residual.
//
//===----------------------------------------------------------------------===//
#include "passes/CostModel.h"
#include "passes/FusePatterns.h"
#include "passes/ScratchRequest.h"
#include "passes/StepPhases.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace snug {
namespace {

/// A node an epilogue can hold: one elementwise node (all operands
/// present) or a snug.fused group, with one result.
bool isEpilogueCandidate(const ir::Node &node) {
  if (node.getNumResults() != 1)
    return false;
  if (node.is(ir::OpCode::SnugFused))
    return node.hasBody();
  if (!node.getOpInfo().isElementwise() || node.hasBody())
    return false;
  for (const ir::Value *operand : node.getOperands())
    if (!operand)
      return false;
  return true;
}

/// The producer whose epilogue `consumer` can become, or nullptr.
ir::Node *findProducer(const ir::Module &module, const ir::Node &consumer,
                       const llvm::DenseMap<const ir::Node *, unsigned> &at) {
  ir::Node *best = nullptr;
  const ir::TensorType &type = consumer.getResult(0)->getType();
  for (ir::Value *operand : consumer.getOperands()) {
    ir::Node *producer = operand->getDefiningNode();
    if (!producer || !producer->getOpInfo().takesEpilogue() ||
        producer->hasBody() || producer->getNumResults() != 1 ||
        producer->getOpInfo().maxOperands < 0 ||
        producer->getResult(0)->getType() != type ||
        module.isOutput(operand) || isWeightGradient(operand))
      continue;
    bool onlyConsumer = true;
    for (const ir::Value::Use &use : operand->getUses())
      onlyConsumer = onlyConsumer && use.user == &consumer;
    if (onlyConsumer && (!best || at.lookup(producer) > at.lookup(best)))
      best = producer;
  }
  return best;
}

/// Whether the roofline says the merged node is no slower than the two.
/// A MatMul or Gemm with an epilogue runs as snug's tiled kernel
/// (compiler/cuda/GemmEmitters.cpp), not as cuBLAS; with f16 or bf16
/// operands that kernel multiplies on the tensor cores (mma.sync, f32
/// accumulators), as Conv's implicit-GEMM kernel does, so the merged
/// product is estimated at the tensor peak, as the unfused cuBLAS one is,
/// and the epilogue pays when the traffic it saves (the raw result written
/// and read back) outweighs what merging costs; f32, f64 and integer
/// products are on the CUDA cores either way (CostModel's vector peak).
/// Under --precision=tf32, f32 products are on the tensor cores either way
/// (the tiled kernel's tf32 path, cuBLAS's FAST_TF32), but tf32-math marks
/// them after this pass, so both sides are costed at the vector peak.
/// The roofline takes both kernels at the peak: it does not see that the
/// tiled kernel's plain 64x64 tiles (no multi-stage copy pipeline, no
/// ldmatrix, no split-K) reach less of it than cuBLAS on large products.
///
/// A product cuBLAS would split along K (a long K over too few output
/// tiles to fill the GPU, passes/ScratchRequest.h) never pays: the tiled
/// kernel has no split-K and would run that K on a handful of blocks
/// (32x4096 by 4096x64: one block of 132 SMs).
bool pays(const ir::Node &producer, const ir::Node &consumer) {
  if (!producer.is(ir::OpCode::Conv) &&
      getScratchRequest(producer, ScratchOptions()).bytes != 0)
    return false;
  const DeviceSpec &device = getDefaultDevice();
  const ir::Node *pair[] = {&producer, &consumer};
  double fused = estimateSeconds(costOfGroup(pair), device);
  double apart = estimateSeconds(costOfNode(producer), device) +
                 estimateSeconds(costOfNode(consumer), device);
  return fused <= apart;
}

/// Builds `producer` with `consumer` as its epilogue before schedule
/// position `index`; the new node takes over the consumer's result.
ir::Node *buildEpilogue(ir::Module &module, ir::Node &producer,
                        ir::Node &consumer, size_t index) {
  ir::Value *raw = producer.getResult(0);
  llvm::SmallVector<ir::Value *, 6> operands(producer.getOperands().begin(),
                                             producer.getOperands().end());
  operands.resize(unsigned(producer.getOpInfo().maxOperands), nullptr);
  llvm::SetVector<ir::Value *> extras;
  for (ir::Value *operand : consumer.getOperands())
    if (operand != raw)
      extras.insert(operand);
  operands.append(extras.begin(), extras.end());
  ir::Node *fused =
      module.insertNode(index, producer.getOpCode(), operands,
                        {consumer.getResult(0)->getType()},
                        producer.getAttributes());
  fused->setName(producer.getName());
  ir::Region &body = fused->createBody();
  // Outer value -> body value, for the consumer's operands.
  llvm::DenseMap<const ir::Value *, ir::Value *> inner;
  inner[raw] = body.addArgument(raw->getType());
  for (ir::Value *extra : extras)
    inner[extra] = body.addArgument(extra->getType());

  auto copyNode = [&](const ir::Node &node,
                      llvm::function_ref<ir::Value *(const ir::Value *)> map) {
    llvm::SmallVector<ir::Value *, 4> mapped;
    for (const ir::Value *operand : node.getOperands())
      mapped.push_back(operand ? map(operand) : nullptr);
    ir::Node *copy =
        body.addNode(node.getOpCode(), mapped, {node.getResult(0)->getType()},
                     node.getAttributes());
    copy->setName(node.getName());
    return copy->getResult(0);
  };
  ir::Value *result;
  if (consumer.is(ir::OpCode::SnugFused)) {
    // The group's block argument k stands for its operand k.
    const ir::Region &group = *consumer.getBody();
    llvm::DenseMap<const ir::Value *, ir::Value *> groupInner;
    for (unsigned k = 0; k < group.getNumArguments(); ++k)
      groupInner[group.getArgument(k)] = inner.lookup(consumer.getOperand(k));
    for (const std::unique_ptr<ir::Node> &node : group.getNodes())
      groupInner[node->getResult(0)] = copyNode(
          *node, [&](const ir::Value *v) { return groupInner.lookup(v); });
    result = groupInner.lookup(group.getYield()[0]);
  } else {
    result = copyNode(consumer,
                      [&](const ir::Value *v) { return inner.lookup(v); });
  }
  body.setYield({result});
  module.replaceValue(consumer.getResult(0), fused->getResult(0));
  return fused;
}

} // namespace

unsigned fuseEpilogues(ir::Module &module) {
  llvm::DenseMap<const ir::Node *, unsigned> at;
  std::vector<ir::Node *> consumers;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    at[node.get()] = unsigned(at.size());
    consumers.push_back(node.get());
  }
  llvm::DenseSet<const ir::Node *> erased;
  unsigned count = 0;
  for (ir::Node *consumer : consumers) {
    if (!isEpilogueCandidate(*consumer))
      continue;
    ir::Node *producer = findProducer(module, *consumer, at);
    if (!producer || erased.count(producer) || !pays(*producer, *consumer))
      continue;
    size_t index = 0;
    while (module.getNodes()[index].get() != consumer)
      ++index;
    buildEpilogue(module, *producer, *consumer, index);
    erased.insert(producer);
    erased.insert(consumer);
    ++count;
  }
  if (count)
    module.eraseNodesIf(
        [&](const ir::Node &node) { return erased.count(&node) != 0; });
  return count;
}

} // namespace snug
