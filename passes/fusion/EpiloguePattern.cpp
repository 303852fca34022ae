//===- EpiloguePattern.cpp - Elementwise consumers into their producer's store
//===//
//
// After the fuse pass has grouped elementwise nodes, a Conv, MatMul or Gemm
// (the ops of the op table's Epilogue trait) whose only reader is one
// elementwise node or snug.fused group takes that consumer as its epilogue
// (ir/Module.h): the kernel applies it to each result element as it stores
// it (snug's kernel, or cuBLASLt's for a product whose epilogue is a bias,
// ReLU or tanh GELU: LtEpilogue.h), so the raw result is never written to
// the arena and read back, and one launch goes. This is the ResNet shape: Conv (BatchNorm folded in),
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
// Through a view: a product read by a Reshape (Flatten, Squeeze,
// Unsqueeze) whose only reader is the consumer (HF's Conv1D: addmm on
// x.view(-1, nx), then .view(..., nf), then the residual Add) takes the
// consumer too when the view only regroups rows: the same last dim, so
// element i of the view is element i of the product and each row of the
// view a row of the product. The epilogue then runs over the product's
// shape: an operand constant along the rows ([N], a scalar) is read as it
// is, one with every row dim of the view through a Reshape to the
// product's row dims (a view: no copy); one that keeps some row dims and
// broadcasts others reads no fixed pattern of the product's rows and
// keeps the consumer apart. A Reshape after the fused node gives the
// consumer's shape back. Weights are read only as they are (a view of a
// weight is not made here).
// The fused node takes the consumer's place in the schedule: the
// producer's operands are defined before the producer, so before the
// consumer as well, and the extra operands before the consumer.
//
// Cost model: fused only when the roofline (passes/analysis/CostModel.h) estimates
// the merged node no slower than the two apart; it is, unless a tiny
// producer meets a consumer whose FLOPs dominate, which the estimate sees.
// A product cuBLAS would split along K is fused only when its epilogue is
// one cuBLASLt runs itself (bias, ReLU, tanh GELU: LtEpilogue.h), since it
// then stays on cuBLAS; any other would move it to the tiled kernel, which
// has no split-K (see pays()).
// Where a consumer reads two producers' results (the downsample branch of
// ResNet: Add(conv, conv)), the later producer takes it; the earlier one's
// result is the residual.
//
//===----------------------------------------------------------------------===//
#include "passes/analysis/CostModel.h"
#include "passes/fusion/FusePatterns.h"
#include "passes/fusion/LtEpilogue.h"
#include "passes/memory/GuardBranches.h"
#include "passes/memory/ScratchRequest.h"
#include "passes/analysis/StepPhases.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace snug {
namespace {

/// A node an epilogue can hold: one elementwise node (all operands
/// present; not the select of an If on runtime data, GuardBranches.h) or a
/// snug.fused group, with one result.
bool isEpilogueCandidate(const ir::Node &node) {
  if (node.getNumResults() != 1 || isRuntimeSelect(node))
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

/// Whether `producer` can take an epilogue that reads its result `raw`
/// (read by `reader` alone).
bool canTakeEpilogue(const ir::Module &module, const ir::Node *producer,
                     const ir::Value *raw, const ir::Node *reader) {
  if (!producer || !producer->getOpInfo().takesEpilogue() ||
      producer->hasBody() || producer->getNumResults() != 1 ||
      producer->getOpInfo().maxOperands < 0 || module.isOutput(raw) ||
      isWeightGradient(raw))
    return false;
  for (const ir::Value::Use &use : raw->getUses())
    if (use.user != reader)
      return false;
  return true;
}

/// A product seen through a view: `view` (Reshape, Flatten, Squeeze,
/// Unsqueeze: the product's bytes under another shape) reads the product
/// and is read by the consumer alone. `extras` maps each other operand of
/// the consumer to its dims over the product's shape (see regroup()).
struct Regroup {
  ir::Node *view = nullptr;
  llvm::SmallVector<std::pair<ir::Value *, std::vector<int64_t>>, 4> extras;
};

/// The candidate producer of `consumer`: one reading it directly, or
/// through a view (`regroup` then says how).
struct ProducerMatch {
  ir::Node *producer = nullptr;
  Regroup regroup;
};

/// The dims over the product's shape `product` of an operand of dims `dims`
/// that broadcasts to the consumer's `viewed`, when the view only regroups
/// rows (both end in the same column dim N, the element order is the
/// product's): an operand constant along the rows ([N], [1, 1, N]) keeps
/// its last dim (or its own dims, when they broadcast to the product as
// they are: a scalar, [N]); one with every row dim of the view ([1, 32, N] over
// a
/// [32, N] product) takes the product's row dims. Any other (a row dim
/// kept and another broadcast: [2, 1, N] over a [2, 16, N] view of a
/// [32, N] product) reads no fixed pattern of the product's rows: None.
llvm::Optional<std::vector<int64_t>>
regroupDims(llvm::ArrayRef<int64_t> dims, llvm::ArrayRef<int64_t> viewed,
            llvm::ArrayRef<int64_t> product) {
  if (dims.size() > viewed.size() || viewed.empty() || product.empty())
    return llvm::None;
  std::vector<int64_t> padded(viewed.size() - dims.size(), 1);
  padded.insert(padded.end(), dims.begin(), dims.end());
  llvm::ArrayRef<int64_t> rows = llvm::makeArrayRef(padded).drop_back();
  bool constantRows = llvm::all_of(rows, [](int64_t d) { return d == 1; });
  if (constantRows)
    return dims.size() <= product.size() ? dims.vec()
                                         : std::vector<int64_t>{padded.back()};
  if (rows != viewed.drop_back())
    return llvm::None;
  std::vector<int64_t> mapped(product.begin(), product.end() - 1);
  mapped.push_back(padded.back());
  return mapped;
}

/// How `consumer` can read a product through the view `view`, or None.
llvm::Optional<Regroup> matchRegroup(const ir::Module &module,
                                     const ir::Node &consumer, ir::Node *view) {
  if (!view || !view->getOpInfo().isView() || view->hasBody() ||
      view->getNumResults() != 1 || !view->getOperand(0))
    return llvm::None;
  const ir::Value *viewed = view->getResult(0);
  const ir::TensorType &type = consumer.getResult(0)->getType();
  const ir::TensorType &product = view->getOperand(0)->getType();
  if (viewed->getType() != type || module.isOutput(viewed) ||
      product.getDType() != type.getDType() || type.getRank() == 0 ||
      product.getRank() == 0 ||
      type.getDims().back() != product.getDims().back())
    return llvm::None;
  for (unsigned i = 1; i < view->getNumOperands(); ++i)
    if (view->getOperand(i) && !view->getOperand(i)->isWeight())
      return llvm::None;
  Regroup regroup;
  regroup.view = view;
  for (ir::Value *operand : consumer.getOperands()) {
    if (operand == viewed)
      continue;
    auto dims = regroupDims(operand->getType().getDims(), type.getDims(),
                            product.getDims());
    // A weight's other shape would be a view of a weight: keep to those
    // read as they are.
    if (!dims || (operand->isWeight() &&
                  llvm::makeArrayRef(*dims) != operand->getType().getDims()))
      return llvm::None;
    regroup.extras.push_back({operand, std::move(*dims)});
  }
  return regroup;
}

/// The producer whose epilogue `consumer` can become, or none.
ProducerMatch
findProducer(const ir::Module &module, const ir::Node &consumer,
             const llvm::DenseMap<const ir::Node *, unsigned> &at) {
  ProducerMatch best;
  const ir::TensorType &type = consumer.getResult(0)->getType();
  for (ir::Value *operand : consumer.getOperands()) {
    ir::Node *producer = operand->getDefiningNode();
    ProducerMatch candidate;
    if (canTakeEpilogue(module, producer, operand, &consumer) &&
        producer->getResult(0)->getType() == type) {
      candidate.producer = producer;
    } else if (producer) {
      // Through a view: HF's Conv1D is addmm on x.view(-1, nx), then
      // .view(..., nf), and the bias Add or residual reads that.
      ir::Node *view = producer;
      bool viewOnly = !module.isOutput(operand);
      for (const ir::Value::Use &use : operand->getUses())
        viewOnly = viewOnly && use.user == &consumer;
      ir::Value *raw = view->getNumOperands() ? view->getOperand(0) : nullptr;
      ir::Node *inner = raw ? raw->getDefiningNode() : nullptr;
      if (!viewOnly || !canTakeEpilogue(module, inner, raw, view))
        continue;
      llvm::Optional<Regroup> regroup = matchRegroup(module, consumer, view);
      if (!regroup)
        continue;
      candidate.producer = inner;
      candidate.regroup = std::move(*regroup);
    }
    if (candidate.producer && (!best.producer || at.lookup(candidate.producer) >
                                                     at.lookup(best.producer)))
      best = std::move(candidate);
  }
  return best;
}

/// Whether the roofline says the merged node is no slower than the two.
/// A MatMul or Gemm with an epilogue cuBLASLt has (LtEpilogue.h) stays on
/// cuBLAS (a cuBLASLt step, compiler/cuda/GemmEmitters.cpp), so both sides
/// are cuBLAS's product. With any other epilogue it runs as snug's tiled
/// kernel, not as cuBLAS; with f16 or bf16 operands that kernel multiplies
/// on the tensor cores (mma.sync, f32 accumulators), as Conv's
/// implicit-GEMM kernel does. Either way the merged product is estimated
/// at the tensor peak, as the unfused cuBLAS one is, and the epilogue pays
/// when the traffic it saves (the raw result written and read back)
/// outweighs what merging costs; f32, f64 and integer products are on the
/// CUDA cores either way (CostModel's vector peak).
/// Under --precision=tf32, f32 products are on the tensor cores either way
/// (the tiled kernel's tf32 path, cuBLAS's FAST_TF32), but tf32-math marks
/// them after this pass, so both sides are costed at the vector peak.
/// The roofline takes both kernels at the peak: it does not see that the
/// tiled kernel's plain 64x64 tiles (no multi-stage copy pipeline, no
/// ldmatrix, no split-K) reach less of it than cuBLAS on large products.
///
/// A product cuBLAS would split along K (a long K over too few output
/// tiles to fill the GPU, passes/memory/ScratchRequest.h) pays only when the
/// epilogue is one cuBLASLt runs itself (LtEpilogue.h: bias, ReLU, tanh
/// GELU): the product then stays on cuBLAS, split-K and all, and the
/// roofline's two sides are both cuBLAS's. Any other epilogue would put it
/// on the tiled kernel, which has no split-K and would run that K on a
/// handful of blocks (32x4096 by 4096x64: one block of 132 SMs).
bool pays(const ir::Node &producer, const ir::Node &consumer,
          const ir::Value *raw) {
  if (!producer.is(ir::OpCode::Conv) &&
      splitsAlongK(producer) &&
      matchLtEpilogue(producer, consumer, raw) == LtEpilogue::None)
    return false;
  const DeviceSpec &device = getDefaultDevice();
  const ir::Node *pair[] = {&producer, &consumer};
  double fused = estimateSeconds(costOfGroup(pair), device);
  double apart = estimateSeconds(costOfNode(producer), device) +
                 estimateSeconds(costOfNode(consumer), device);
  return fused <= apart;
}

/// numpy's broadcast of two dims lists (both known to broadcast).
std::vector<int64_t> broadcastDims(llvm::ArrayRef<int64_t> a,
                                   llvm::ArrayRef<int64_t> b) {
  std::vector<int64_t> dims(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    dims[dims.size() - 1 - i] = x == 1 ? y : x;
  }
  return dims;
}

/// Builds `producer` with `consumer` as its epilogue before schedule
/// position `index`; the new node takes over the consumer's result. With
/// a regroup (the consumer read the product through a view), the body
/// runs over the product's shape, the extra operands read through views of
/// their regrouped dims, and a view after the new node gives the
/// consumer's shape back.
ir::Node *buildEpilogue(ir::Module &module, ir::Node &producer,
                        ir::Node &consumer, size_t index,
                        const Regroup &regroup) {
  ir::Value *raw = producer.getResult(0);
  // The consumer's operand standing for the product.
  ir::Value *read = regroup.view ? regroup.view->getResult(0) : raw;
  llvm::SmallVector<ir::Value *, 6> operands(producer.getOperands().begin(),
                                             producer.getOperands().end());
  operands.resize(unsigned(producer.getOpInfo().maxOperands), nullptr);
  llvm::SetVector<ir::Value *> extras;
  for (ir::Value *operand : consumer.getOperands())
    if (operand != read)
      extras.insert(operand);
  // Consumer operand -> the value the new node reads for it.
  llvm::DenseMap<const ir::Value *, ir::Value *> outer;
  for (ir::Value *extra : extras)
    outer[extra] = extra;
  for (const auto &[extra, dims] : regroup.extras)
    if (llvm::makeArrayRef(dims) != extra->getType().getDims())
      outer[extra] = insertReshapeView(module, index++, extra, dims);
  for (ir::Value *extra : extras)
    operands.push_back(outer.lookup(extra));
  ir::TensorType resultType =
      regroup.view ? raw->getType() : consumer.getResult(0)->getType();
  ir::Node *fused = module.insertNode(index++, producer.getOpCode(), operands,
                                      {resultType}, producer.getAttributes());
  fused->setName(producer.getName());
  ir::Region &body = fused->createBody();
  // Outer value -> body value, for the consumer's operands.
  llvm::DenseMap<const ir::Value *, ir::Value *> inner;
  inner[read] = body.addArgument(raw->getType());
  for (ir::Value *extra : extras)
    inner[extra] = body.addArgument(outer.lookup(extra)->getType());

  // A body node's result: the broadcast of its operands (an elementwise
  // op's), which through a regroup is over the product's shape.
  auto copyNode = [&](const ir::Node &node,
                      llvm::function_ref<ir::Value *(const ir::Value *)> map) {
    llvm::SmallVector<ir::Value *, 4> mapped;
    std::vector<int64_t> dims;
    for (const ir::Value *operand : node.getOperands()) {
      mapped.push_back(operand ? map(operand) : nullptr);
      if (mapped.back())
        dims = broadcastDims(dims, mapped.back()->getType().getDims());
    }
    ir::TensorType type = node.getResult(0)->getType();
    if (regroup.view)
      type = ir::TensorType(type.getDType(), dims);
    ir::Node *copy =
        body.addNode(node.getOpCode(), mapped, {type}, node.getAttributes());
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
  ir::Value *replacement = fused->getResult(0);
  if (regroup.view)
    replacement = insertReshapeView(module, index++, replacement,
                                    consumer.getResult(0)->getType().getDims());
  module.replaceValue(consumer.getResult(0), replacement);
  return fused;
}

/// Whether the consumer's body, run over the product's shape with the
/// regrouped operands, yields the product's shape (it must, each operand
/// broadcasting to it; checked before anything is built).
bool regroupYieldsProduct(const ir::Node &consumer, const ir::Node &producer,
                          const Regroup &regroup) {
  llvm::DenseMap<const ir::Value *, std::vector<int64_t>> dims;
  llvm::ArrayRef<int64_t> product = producer.getResult(0)->getType().getDims();
  dims[regroup.view->getResult(0)] = product.vec();
  for (const auto &[extra, mapped] : regroup.extras)
    dims[extra] = mapped;
  auto of = [&](const ir::Node &node, auto lookup) {
    std::vector<int64_t> result;
    for (const ir::Value *operand : node.getOperands())
      result = broadcastDims(result, lookup(operand));
    return result;
  };
  std::vector<int64_t> yield;
  if (consumer.is(ir::OpCode::SnugFused)) {
    const ir::Region &group = *consumer.getBody();
    llvm::DenseMap<const ir::Value *, std::vector<int64_t>> inside;
    for (unsigned k = 0; k < group.getNumArguments(); ++k)
      inside[group.getArgument(k)] = dims.lookup(consumer.getOperand(k));
    for (const std::unique_ptr<ir::Node> &node : group.getNodes())
      inside[node->getResult(0)] =
          of(*node, [&](const ir::Value *v) { return inside.lookup(v); });
    yield = inside.lookup(group.getYield()[0]);
  } else {
    yield = of(consumer, [&](const ir::Value *v) { return dims.lookup(v); });
  }
  return llvm::makeArrayRef(yield) == product;
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
    ProducerMatch match = findProducer(module, *consumer, at);
    ir::Node *producer = match.producer;
    if (!producer || erased.count(producer) ||
        (match.regroup.view &&
         !regroupYieldsProduct(*consumer, *producer, match.regroup)) ||
        !pays(*producer, *consumer,
              match.regroup.view ? match.regroup.view->getResult(0)
                                 : producer->getResult(0)))
      continue;
    size_t index = 0;
    while (module.getNodes()[index].get() != consumer)
      ++index;
    buildEpilogue(module, *producer, *consumer, index, match.regroup);
    erased.insert(producer);
    erased.insert(consumer);
    if (match.regroup.view)
      erased.insert(match.regroup.view);
    ++count;
  }
  if (count)
    module.eraseNodesIf(
        [&](const ir::Node &node) { return erased.count(&node) != 0; });
  return count;
}

} // namespace snug
