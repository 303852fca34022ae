//===- SplitBatch.cpp - Run the graph in micro-batches ---------------------===//
//
// Option parts=K: the graph runs as K copies, one after the other, each on
// 1/K of the batch (dim 0 of the graph inputs), and the outputs are joined
// along dim 0. Only one copy's intermediates are live at a time, so the
// arena's activations shrink about K-fold while weights, inputs and outputs
// stay whole: what rematerialization cannot do where a single node's own
// operands and result make the peak (a U-Net's widest Concat). Results are
// bit for bit those of the whole batch, since every op it splits computes
// each sample from that sample alone, in the same order.
//
// The batch B is dim 0 of the first graph input of rank >= 1; graph inputs
// with that dim 0 are split, others (and weights) are shared by every copy.
// The nodes that depend on a split input (the region) must all be
// separable (checkSeparable): every result has dim 0 = B, every operand
// that depends on the input has dim 0 = B, operands that do not are
// parameters of the op (a Conv's weight) or broadcast along dim 0 (dim 0 of
// 1, or a lower rank), and nothing mixes samples (a Concat, Softmax, Split,
// Gather or reduction along dim 0, a Transpose moving it, a Reshape
// folding it; Shape and Size, which would see the smaller batch, are
// refused). A shared operand whose dim 0 is B and which an elementwise op
// or Concat pairs sample for sample with the batch (a constant the folder
// expanded to the batch) is sliced like an input. Reshape and Expand
// shapes and Resize sizes that name B are rewritten for B / K, and a
// snug.check_labels copy's offset names its slice's first position in the
// input. Anything else is an error naming the node, and
// findSplittableBatch says beforehand whether a module can be split. What
// each op must not do to dim 0, which of its operands may be shared and
// whether it may follow a mean loss is its line of BatchRules.def.
//
// Layout: nodes outside the region first (in order), then per copy the
// Slices of its inputs (so each copy's slice lives only while it runs)
// and the copies of the region's nodes, then one Concat per graph output
// along dim 0 (concat in place lets each copy write its slice of the output
// directly). The module records split_batch = K for the report.
//
// Option loss=NAME (gradient accumulation, `snugc train --accumulate=K`):
// the graph output NAME is a loss that is a mean over the batch, a scalar
// without dim 0. Each copy computes it over its micro-batch and the joined
// loss is the mean of the K copies' losses, which equals the whole batch's
// since every micro-batch holds as many samples. The loss may be any
// affine function of ReduceMeans over dim 0 (a mean squared error, minus
// the mean log-likelihood); the nodes after those means (the loss tail)
// may only be linear (Neg, Add, Sub, Mul or Div by a value the batch does
// not reach, reductions and reshapes), since only then does the mean of
// the copies' values equal the value over the whole batch. autodiff, run
// after this, then adds every copy's weight gradients into one adjoint,
// and interleave-micro-batches (InterleaveMicroBatches.cpp) orders each
// micro-batch's backward right after its forward. Option micro-batch=N
// checks that N * parts is the batch, or gives parts = batch / N when
// parts is not set.
//
//===----------------------------------------------------------------------===//
#include "passes/memory/budget/SplitBatch.h"

#include "ir/Module.h"
#include "core/OpRuleTable.h"
#include "passes/training/GradientRules.h"
#include "passes/Passes.h"
#include "ir/ShapeFunctions.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/ErrorHandling.h"

namespace snug {

/// BatchRules.def's lines; an op without one keeps check None.
static constexpr OpRuleTable<BatchRule> buildBatchRuleTable() {
  OpRuleTable<BatchRule> table;
#define BATCH_RULE(OP_ID, SPLIT_CHECK, SHARED_OPERANDS, LOSS_TAIL)             \
  table.set(OpCode::OP_ID,                                                     \
            {SplitCheck::SPLIT_CHECK, SharedOperands::SHARED_OPERANDS,         \
             LossTailRule::LOSS_TAIL});
#include "passes/memory/budget/BatchRules.def"
  return table;
}

static constexpr OpRuleTable<BatchRule> batchRules = buildBatchRuleTable();
static_assert(batchRules.hasNoOpTwice(),
              "an op has two lines in BatchRules.def");

const BatchRule &getBatchRule(OpCode op) { return batchRules.get(op); }

namespace {

llvm::Error splitError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "cannot run the graph in micro-batches: " +
                                     message.str());
}

/// Whether `axis` names dim 0 of a tensor of rank `rank`.
bool isDimZero(int64_t axis, size_t rank) {
  llvm::Optional<int64_t> normalized = normalizeAxis(axis, int64_t(rank));
  return normalized && *normalized == 0;
}

/// Whether `axis` names dim 0 or lies before it (below -rank), where an
/// axis-from-here op (Flatten, LayerNormalization) would fold dim 0 in.
bool isAtOrBeforeDimZero(int64_t axis, size_t rank) {
  llvm::Optional<int64_t> normalized = normalizeAxis(axis, int64_t(rank));
  return normalized ? *normalized == 0 : axis < 0;
}

/// Whether the ints attribute `name` of `node` names dim 0 of a tensor of
/// rank `rank`.
bool axesContainDimZero(const ir::Node &node, llvm::StringRef name,
                        size_t rank) {
  if (const ir::Attribute *attr = node.getAttribute(name))
    for (int64_t axis : attr->getInts())
      if (isDimZero(axis, rank))
        return true;
  return false;
}

int64_t intAttr(const ir::Node &node, llvm::StringRef name, int64_t fallback) {
  const ir::Attribute *attr = node.getAttribute(name);
  return attr ? attr->getInt() : fallback;
}

/// `node`'s `axis`, else the op table's default for it, which is ONNX's
/// (0 for ArgMax, Split and Gather, -1 for Softmax and LayerNormalization,
/// 1 for Flatten). An axis that is required but missing is taken as dim 0,
/// so the node is refused rather than split on a guess.
int64_t axisOf(const ir::Node &node) {
  if (const ir::Attribute *attr = node.getAttribute("axis"))
    return attr->getInt();
  const ir::AttrSpec *spec = ir::findAttrSpec(node.getOpCode(), "axis");
  if (spec && spec->defaultKind == ir::AttrSpec::Default::Int)
    return spec->intDefault;
  return 0;
}

/// Whether `node`'s op shares operands the elementwise way: broadcast along
/// dim 0, or per-sample (a fused group's body is elementwise).
bool sharesByBroadcast(const ir::Node &node) {
  SharedOperands shared = getBatchRule(node.getOpCode()).shared;
  return shared == SharedOperands::Broadcast ||
         shared == SharedOperands::BroadcastOrParameters;
}

/// Whether operand `index` of `node` may be shared by every copy although
/// it does not depend on the split inputs: a parameter of the op.
bool isParameterOperand(const ir::Node &node, unsigned index) {
  // An epilogue's extra operands pair with the result element for element.
  if (index >= node.getNumOwnOperands())
    return false;
  switch (getBatchRule(node.getOpCode()).shared) {
  case SharedOperands::Parameters:
  case SharedOperands::BroadcastOrParameters:
    return index > 0;
  case SharedOperands::Table:
    return index == 0; // the table an embedding looks rows up in
  case SharedOperands::Nothing:
  case SharedOperands::Broadcast:
  case SharedOperands::Paired:
    return false;
  }
  llvm_unreachable("unknown shared-operand rule");
}

/// Whether `operand`, which does not depend on the split inputs, is a
/// tensor of per-sample values anyway: dim 0 is the batch and the op pairs
/// it with its batch operands element for element (an elementwise op, a
/// fused group, a Concat), as a constant the folder expanded to the batch
/// (a ViT's class token) is. Each copy then reads its slice of it.
bool isPerSampleShared(const ir::Node &node, const ir::Value &operand,
                       int64_t batch) {
  const ir::TensorType &type = operand.getType();
  bool pairs = sharesByBroadcast(node) ||
               getBatchRule(node.getOpCode()).shared ==
                   SharedOperands::Paired ||
               node.hasEpilogue();
  return pairs && type.getRank() > 0 && type.getDims()[0] == batch &&
         type.getRank() == node.getResult(0)->getType().getRank();
}

/// Why `node` (in the region) cannot be split along dim 0 of size `batch`,
/// or "" when it can. `inRegion` says which values depend on the split
/// inputs.
std::string whyNotSeparable(const ir::Module &module, const ir::Node &node,
                            int64_t batch,
                            const llvm::DenseSet<const ir::Value *> &inRegion) {
  if (node.getOpInfo().hasSideEffects())
    return "it has side effects";
  SplitCheck check = getBatchRule(node.getOpCode()).check;
  if (check == SplitCheck::SeesBatch)
    return "its result would see the smaller batch";
  for (unsigned i = 0; i < node.getNumResults(); ++i) {
    const ir::TensorType &type = node.getResult(i)->getType();
    if (type.getRank() == 0 || type.getDims()[0] != batch)
      return "result " + std::to_string(i) + " does not have the batch (" +
             std::to_string(batch) + ") as dim 0";
  }
  size_t rank = node.getResult(0)->getType().getRank();
  for (unsigned i = 0; i < node.getNumOperands(); ++i) {
    const ir::Value *operand = node.getOperand(i);
    if (!operand)
      continue;
    const ir::TensorType &type = operand->getType();
    if (inRegion.count(operand)) {
      if (type.getRank() == 0 || type.getDims()[0] != batch)
        return "operand " + std::to_string(i) + " depends on the batch but "
               "does not have it as dim 0";
      continue;
    }
    // A shared operand of an elementwise op (a fused group is one) must
    // broadcast along dim 0; other ops share only their parameters.
    bool broadcasts = type.getRank() < rank ||
                      (type.getRank() > 0 && type.getDims()[0] == 1);
    bool elementwise =
        sharesByBroadcast(node) || i >= node.getNumOwnOperands();
    if (!isParameterOperand(node, i) && !(elementwise && broadcasts) &&
        !isPerSampleShared(node, *operand, batch))
      return "operand " + std::to_string(i) +
             " is shared by every sample but not broadcast along dim 0";
  }
  // An axis counts in the input's dims: the result of ArgMax without
  // keepdims, Flatten or Gather has another rank.
  size_t inputRank = node.getOperand(0) ? node.getOperand(0)->getType().getRank()
                                        : rank;
  // Ops that mix samples along dim 0 under some attributes.
  switch (check) {
  case SplitCheck::None:
    llvm_unreachable("an op of the table without a line in BatchRules.def");
  case SplitCheck::PerSample:
  case SplitCheck::SeesBatch: // refused above
    break;
  // The indexing ops address dim 0 along their axis or index tuples (a
  // runtime CumSum axis is refused above, as a shared operand).
  case SplitCheck::Axis:
  case SplitCheck::IndexAxis:
    if (isDimZero(axisOf(node), inputRank))
      return "it works along dim 0";
    break;
  case SplitCheck::FoldingAxis:
    if (isAtOrBeforeDimZero(axisOf(node), inputRank))
      return "it folds dim 0 into its normalization or result";
    break;
  case SplitCheck::GatherAxis:
    if (inRegion.count(node.getOperand(0)) &&
        isDimZero(axisOf(node), inputRank))
      return "it gathers along dim 0";
    break;
  case SplitCheck::BatchDims:
    if (intAttr(node, "batch_dims", 0) < 1)
      return "its index tuples address dim 0";
    break;
  case SplitCheck::IndexTuples:
    return "its index tuples address dim 0";
  case SplitCheck::SliceAxes:
    if (axesContainDimZero(node, "axes",
                           node.getOperand(0)->getType().getRank()))
      return "it slices dim 0";
    break;
  case SplitCheck::SqueezeAxes:
    if (axesContainDimZero(
            node, "axes",
            std::max<size_t>(rank, node.getOperand(0)->getType().getRank())))
      return "it changes dim 0";
    break;
  case SplitCheck::Perm: {
    const ir::Attribute *perm = node.getAttribute("perm");
    if (!perm || perm->getInts().empty() || perm->getInts()[0] != 0)
      return "it moves dim 0";
    break;
  }
  case SplitCheck::Repeats: {
    const ir::Attribute *repeats = node.getAttribute("repeats");
    if (!repeats || repeats->getInts().empty() || repeats->getInts()[0] != 1)
      return "it repeats dim 0";
    break;
  }
  case SplitCheck::Pads: {
    const ir::Attribute *pads = node.getAttribute("pads");
    if (!pads || pads->getInts().size() != 2 * rank || pads->getInts()[0] ||
        pads->getInts()[rank])
      return "it pads dim 0";
    break;
  }
  case SplitCheck::ReshapeShape: {
    const ir::Attribute *shape = node.getAttribute("shape");
    int64_t first = shape && !shape->getInts().empty() ? shape->getInts()[0]
                                                       : -2;
    if (first != batch && first != 0 && first != -1)
      return "it reshapes across dim 0";
    if (first == -1 && node.getOperand(0)->getType().getRank() == 1)
      return "it reshapes across dim 0";
    break;
  }
  case SplitCheck::ExpandShape: {
    const ir::Attribute *shape = node.getAttribute("shape");
    if (!shape || shape->getInts().size() != rank ||
        (shape->getInts()[0] != batch && shape->getInts()[0] != 1))
      return "it expands dim 0";
    break;
  }
  case SplitCheck::ResizeScales: {
    // Dim 0 must map sample to sample: the same size, scale 1 and, under
    // tf_crop_and_resize, the whole of it as the region.
    const ir::Attribute *scales = node.getAttribute("scales");
    const ir::Attribute *roi = node.getAttribute("roi");
    llvm::ArrayRef<int64_t> in = node.getOperand(0)->getType().getDims();
    llvm::ArrayRef<int64_t> out = node.getResult(0)->getType().getDims();
    bool crops = roi && roi->getFloats().size() == 2 * in.size() &&
                 getStringAttr(node.getAttributes(),
                               "coordinate_transformation_mode", "") ==
                     "tf_crop_and_resize" &&
                 (roi->getFloats()[0] != 0 || roi->getFloats()[in.size()] != 1);
    if ((scales && !scales->getFloats().empty() &&
         scales->getFloats()[0] != 1) ||
        (!in.empty() && !out.empty() && in[0] != out[0]) || crops)
      return "it resizes dim 0";
    break;
  }
  case SplitCheck::MatrixBatch:
    // A shared left operand, or a batched right one of rank 2 (then dim 0
    // is the contraction), would mix samples.
    if (!inRegion.count(node.getOperand(0)) ||
        (inRegion.count(node.getOperand(1)) &&
         node.getOperand(1)->getType().getRank() < 3))
      return "its operands do not carry the batch as dim 0 of a batch of "
             "matrices";
    break;
  case SplitCheck::RowBatch:
    if (intAttr(node, "transA", 0) != 0 || inRegion.count(node.getOperand(1)))
      return "its first operand is not a batch of rows";
    break;
  case SplitCheck::ReduceAxes: {
    // Canonical reductions carry their axes as an attribute (none: all).
    const ir::Attribute *axes = node.getAttribute("axes");
    if (!axes || axes->getInts().empty())
      return "it reduces over every axis";
    if (axesContainDimZero(node, "axes",
                           node.getOperand(0)->getType().getRank()))
      return "it reduces over dim 0";
    break;
  }
  }
  return "";
}

/// The batch and the region: values that depend on a graph input whose dim
/// 0 is the batch, and the nodes that compute them, in schedule order.
struct Region {
  int64_t batch = 0;
  std::vector<ir::Value *> inputs;
  llvm::DenseSet<const ir::Value *> values;
  std::vector<ir::Node *> nodes;
};

Region findRegion(const ir::Module &module) {
  Region region;
  for (ir::Value *input : module.getInputs())
    if (input->getType().getRank() > 0) {
      region.batch = input->getType().getDims()[0];
      break;
    }
  for (ir::Value *input : module.getInputs())
    if (input->getType().getRank() > 0 &&
        input->getType().getDims()[0] == region.batch) {
      region.inputs.push_back(input);
      region.values.insert(input);
    }
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    bool depends = false;
    for (const ir::Value *operand : node->getOperands())
      depends |= operand && region.values.count(operand);
    if (!depends)
      continue;
    region.nodes.push_back(node.get());
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      region.values.insert(node->getResult(i));
  }
  return region;
}

/// The nodes of the loss tail and the values they compute: a ReduceMean
/// over dim 0 of per-sample values, and the linear nodes on such means.
struct LossTail {
  llvm::DenseSet<const ir::Node *> nodes;
  llvm::DenseSet<const ir::Value *> values;
};

bool reducesDimZero(const ir::Node &node) {
  const ir::Attribute *axes = node.getAttribute("axes");
  return !axes || axes->getInts().empty() ||
         axesContainDimZero(node, "axes",
                            node.getOperand(0)->getType().getRank());
}

/// Why `node`, reading the mean of some micro-batch quantity, would not
/// give the whole batch's value as the mean of the copies' values ("" when
/// it would): only linear ops keep that.
std::string whyNotLinear(const ir::Node &node,
                         const llvm::DenseSet<const ir::Value *> &tailValues) {
  auto inTail = [&](unsigned i) {
    return i < node.getNumOperands() && node.getOperand(i) &&
           tailValues.count(node.getOperand(i));
  };
  switch (getBatchRule(node.getOpCode()).lossTail) {
  case LossTailRule::Linear:
    return "";
  case LossTailRule::LinearInOneFactor:
    return inTail(0) && inTail(1) ? "it multiplies two means" : "";
  case LossTailRule::LinearInDividend:
    return inTail(1) ? "it divides by a mean" : "";
  case LossTailRule::Nonlinear:
    return "it is not linear";
  }
  llvm_unreachable("unknown loss-tail rule");
}

/// The loss tail of `loss` in `region` (loss=NAME): an error when a node
/// mixes the batch's means with per-sample values in a way the copies
/// cannot reproduce, or when the loss is no mean over the batch.
llvm::Expected<LossTail> findLossTail(const ir::Module &module,
                                      const Region &region,
                                      llvm::StringRef lossName) {
  const ir::Value *loss = nullptr;
  for (const ir::Value *output : module.getOutputs())
    if (output->getName() == lossName)
      loss = output;
  if (!loss)
    return splitError("loss '" + lossName + "' is not a graph output");
  LossTail tail;
  for (const ir::Node *node : region.nodes) {
    bool readsTail = false, readsBatch = false;
    for (const ir::Value *operand : node->getOperands())
      if (operand && region.values.count(operand))
        (tail.values.count(operand) ? readsTail : readsBatch) = true;
    if (readsTail && readsBatch)
      return splitError(node->describe() +
                        " mixes samples: it reads a mean over the batch and "
                        "per-sample values");
    bool mean = !readsTail && node->is(ir::OpCode::ReduceMean) &&
                reducesDimZero(*node);
    if (readsTail) {
      std::string why = whyNotLinear(*node, tail.values);
      if (!why.empty())
        return splitError(node->describe() + " on the way to loss '" +
                          lossName +
                          "' keeps the mean of the micro-batches' losses "
                          "from being the batch's: " + why);
    }
    if (!readsTail && !mean)
      continue;
    tail.nodes.insert(node);
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      tail.values.insert(node->getResult(i));
  }
  if (!tail.values.count(loss))
    return splitError("loss " + loss->describe() +
                      " is not a mean over the batch (dim 0): no ReduceMean "
                      "over dim 0 leads to it, so the micro-batches' losses "
                      "do not average to the batch's");
  for (const ir::Value *output : module.getOutputs())
    if (output != loss && tail.values.count(output))
      return splitError("output " + output->describe() +
                        " is computed from a mean over the batch but is not "
                        "the loss");
  return tail;
}

ir::TensorType withBatch(const ir::TensorType &type, int64_t batch) {
  llvm::SmallVector<int64_t, 4> dims(type.getDims().begin(),
                                     type.getDims().end());
  dims[0] = batch;
  return ir::TensorType(type.getDType(), dims);
}

/// numpy broadcasting of `types`' dims, in `dtype`.
ir::TensorType broadcastTypes(llvm::ArrayRef<ir::TensorType> types,
                              ir::DType dtype) {
  size_t rank = 0;
  for (const ir::TensorType &type : types)
    rank = std::max<size_t>(rank, type.getRank());
  llvm::SmallVector<int64_t, 4> dims(rank, 1);
  for (const ir::TensorType &type : types)
    for (size_t k = 0; k < type.getRank(); ++k) {
      int64_t dim = type.getDims()[type.getRank() - 1 - k];
      int64_t &out = dims[rank - 1 - k];
      if (dim != 1)
        out = dim;
    }
  return ir::TensorType(dtype, dims);
}

/// Retypes a copied elementwise body from its arguments: each argument
/// takes its operand's type (an epilogue's argument 0 the result's), each
/// body result the broadcast of its operands' (its own dtype).
void retypeBody(ir::Node &copy) {
  ir::Region &body = *copy.getBody();
  bool epilogue = copy.hasEpilogue();
  unsigned first = epilogue ? copy.getNumOwnOperands() - 1 : 0;
  for (unsigned i = 0; i < body.getNumArguments(); ++i)
    body.getArgument(i)->setType(epilogue && i == 0
                                     ? copy.getResult(0)->getType()
                                     : copy.getOperand(first + i)->getType());
  for (const std::unique_ptr<ir::Node> &inner : body.getNodes()) {
    llvm::SmallVector<ir::TensorType, 4> types;
    for (const ir::Value *operand : inner->getOperands())
      if (operand)
        types.push_back(operand->getType());
    // Unary ops (Clip's bounds, PRelu's slope) take operand 0's shape.
    if (inner->getOpInfo().family == ir::OpFamily::Unary)
      types.resize(1);
    inner->getResult(0)->setType(
        broadcastTypes(types, inner->getResult(0)->getType().getDType()));
  }
}

/// The batch when every node of `region` but the loss tail computes each
/// sample alone; an error naming the first that does not otherwise.
llvm::Expected<int64_t> checkSplittable(const ir::Module &module,
                                        const Region &region,
                                        const LossTail &tail) {
  if (region.batch < 2)
    return splitError("no graph input has a batch (dim 0) above 1");
  for (const ir::Value *output : module.getOutputs())
    if (region.values.count(output) && !tail.values.count(output) &&
        (output->getType().getRank() == 0 ||
         output->getType().getDims()[0] != region.batch))
      return splitError("output " + output->describe() +
                        " does not have the batch as dim 0");
  for (const ir::Node *node : region.nodes) {
    if (tail.nodes.count(node))
      continue;
    std::string why = whyNotSeparable(module, *node, region.batch,
                                      region.values);
    if (!why.empty())
      return splitError(node->describe() + " mixes samples: " + why);
  }
  return region.batch;
}

class SplitBatch : public Pass {
public:
  llvm::StringRef getName() const override { return "split-batch"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override {
    if (key == "parts") {
      if (value.getAsInteger(10, partsOption) || partsOption < 1 ||
          partsOption > kMaxSplitParts)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "pass 'split-batch': option 'parts' must be a whole number from "
            "1 to " + std::to_string(kMaxSplitParts) + ", got '" +
                value.str() + "'");
      return llvm::Error::success();
    }
    if (key == "micro-batch") {
      if (value.getAsInteger(10, microBatch) || microBatch < 1)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "pass 'split-batch': option 'micro-batch' must be a whole number "
            "of at least 1, got '" + value.str() + "'");
      return llvm::Error::success();
    }
    if (key == "loss") {
      lossName = value.str();
      return llvm::Error::success();
    }
    return Pass::setOption(key, value);
  }
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  /// The number of copies (0 until set: from micro-batch, else 1).
  int64_t partsOption = 0;
  /// Samples per copy; 0: the batch / parts.
  int64_t microBatch = 0;
  /// The scalar output joined by the mean of the copies' values.
  std::string lossName;
};

/// `parts` and `microBatch` (either may be 0: not given) checked against
/// `batch`: the number of copies.
llvm::Expected<int64_t> countParts(int64_t batch, int64_t parts,
                                   int64_t microBatch,
                                   const ir::Value &input) {
  std::string where = "the batch (dim 0 of input " + input.describe() +
                      ") is " + std::to_string(batch);
  if (parts && microBatch && parts * microBatch != batch)
    return splitError(std::to_string(parts) + " micro-batches of " +
                      std::to_string(microBatch) + " make " +
                      std::to_string(parts * microBatch) + " samples, but " +
                      where);
  if (!parts && batch % microBatch != 0)
    return splitError("micro-batches of " + std::to_string(microBatch) +
                      " do not divide the batch: " + where);
  if (!parts)
    parts = batch / microBatch;
  if (batch % parts != 0)
    return splitError("the batch " + std::to_string(batch) +
                      " is not a multiple of " + std::to_string(parts));
  return parts;
}

/// The mean of `pieces` (one single-element loss per copy) as `type`:
/// Concat of the pieces as [1] each, ReduceMean. No constant: autodiff,
/// run next, would take a new float weight for a parameter to train.
llvm::Expected<ir::Value *> joinByMean(ir::Module &module,
                                       llvm::ArrayRef<ir::Value *> pieces,
                                       const ir::TensorType &type) {
  GraphBuilder builder(module, "split.c");
  llvm::SmallVector<ir::Value *, 8> rows;
  for (ir::Value *piece : pieces) {
    auto row = builder.reshape(piece, {1});
    if (!row)
      return row.takeError();
    rows.push_back(*row);
  }
  auto joined =
      builder.emit(ir::OpCode::Concat, rows, {{"axis", ir::Attribute::getInt(0)}});
  if (!joined)
    return joined.takeError();
  auto mean = builder.emit(ir::OpCode::ReduceMean, {*joined},
                           {{"axes", ir::Attribute::getInts({0})},
                            {"keepdims", ir::Attribute::getInt(0)}});
  if (!mean)
    return mean.takeError();
  return builder.reshape(*mean, type.getDims());
}

llvm::Expected<bool> SplitBatch::run(ir::Module &module) {
  if (partsOption <= 1 && !microBatch)
    return false;
  Region region = findRegion(module);
  LossTail tail;
  if (!lossName.empty()) {
    llvm::Expected<LossTail> found = findLossTail(module, region, lossName);
    if (!found)
      return found.takeError();
    tail = std::move(*found);
  }
  llvm::Expected<int64_t> batch = checkSplittable(module, region, tail);
  if (!batch)
    return batch.takeError();
  llvm::Expected<int64_t> counted =
      countParts(*batch, partsOption, microBatch, *region.inputs.front());
  if (!counted)
    return counted.takeError();
  int64_t parts = *counted;
  if (parts == 1)
    return false;
  int64_t perCopy = int64_t(region.nodes.size());
  if (perCopy > 0 && parts > kMaxSplitNodes / perCopy)
    return splitError(
        std::to_string(parts) + " micro-batches would copy the " +
        std::to_string(perCopy) + " nodes that see the batch into " +
        std::to_string(parts * perCopy) + " nodes, more than snug's bound of " +
        std::to_string(kMaxSplitNodes) +
        ": use fewer, larger micro-batches (at most " +
        std::to_string(std::max<int64_t>(1, kMaxSplitNodes / perCopy)) + ")");
  int64_t each = *batch / parts;
  size_t index = module.getNodes().size();
  // The outputs the copies produce, per output, in part order.
  llvm::SmallVector<llvm::SmallVector<ir::Value *, 4>, 4> pieces(
      module.getOutputs().size());
  for (int64_t part = 0; part < parts; ++part) {
    llvm::DenseMap<const ir::Value *, ir::Value *> copyOf;
    auto sliceOf = [&](ir::Value *value) {
      ir::Node *slice = module.insertNode(
          index++, ir::OpCode::Slice, {value},
          {withBatch(value->getType(), each)},
          {{"axes", ir::Attribute::getInts({0})},
           {"starts", ir::Attribute::getInts({part * each})},
           {"ends", ir::Attribute::getInts({(part + 1) * each})},
           {"steps", ir::Attribute::getInts({1})}});
      copyOf[value] = slice->getResult(0);
      return slice->getResult(0);
    };
    for (ir::Value *input : region.inputs)
      sliceOf(input);
    for (ir::Node *original : region.nodes) {
      llvm::SmallVector<ir::Value *, 4> operands;
      for (ir::Value *operand : original->getOperands()) {
        ir::Value *mapped = operand ? copyOf.lookup(operand) : nullptr;
        if (!mapped && operand && !region.values.count(operand) &&
            isPerSampleShared(*original, *operand, *batch))
          mapped = sliceOf(operand);
        operands.push_back(mapped ? mapped : operand);
      }
      ir::Node *copy = module.insertCopy(index++, *original, operands);
      // The loss tail's means keep their types: they have no batch.
      bool perSample = !tail.nodes.count(original);
      for (unsigned i = 0; i < copy->getNumResults(); ++i) {
        if (perSample)
          copy->getResult(i)->setType(
              withBatch(original->getResult(i)->getType(), each));
        copyOf[original->getResult(i)] = copy->getResult(i);
      }
      if (!perSample)
        continue;
      // Shapes that name the batch name the copy's.
      for (llvm::StringRef name : {"shape", "sizes"})
        if (const ir::Attribute *attr = copy->getAttribute(name)) {
          if (attr->getKind() != ir::Attribute::Kind::Ints ||
              attr->getInts().empty() || attr->getInts()[0] != *batch)
            continue;
          llvm::SmallVector<int64_t, 4> values(attr->getInts().begin(),
                                               attr->getInts().end());
          values[0] = each;
          copy->setAttribute(name, ir::Attribute::getInts(values));
        }
      // A label check names positions in the whole input.
      if (copy->getOpCode() == ir::OpCode::SnugCheckLabels) {
        const ir::Attribute *offset = copy->getAttribute("offset");
        int64_t first = offset ? offset->getInt() : 0;
        copy->setAttribute("offset",
                           ir::Attribute::getInt(first + part * each));
      }
      if (copy->hasBody())
        retypeBody(*copy);
    }
    for (size_t o = 0; o < module.getOutputs().size(); ++o)
      if (ir::Value *mapped = copyOf.lookup(module.getOutputs()[o]))
        pieces[o].push_back(mapped);
  }
  for (size_t o = 0; o < pieces.size(); ++o) {
    if (pieces[o].empty())
      continue;
    ir::Value *output = module.getOutputs()[o];
    if (tail.values.count(output)) {
      llvm::Expected<ir::Value *> mean =
          joinByMean(module, pieces[o], output->getType());
      if (!mean)
        return mean.takeError();
      std::string name = output->getName().str();
      module.replaceValue(output, *mean);
      output->setName("");
      (*mean)->setName(name);
      index = module.getNodes().size();
      continue;
    }
    ir::Node *join =
        module.insertNode(index++, ir::OpCode::Concat, pieces[o],
                          {output->getType()},
                          {{"axis", ir::Attribute::getInt(0)}});
    module.replaceValue(output, join->getResult(0));
  }
  llvm::DenseSet<const ir::Node *> doomed(region.nodes.begin(),
                                          region.nodes.end());
  module.eraseNodesIf(
      [&](const ir::Node &node) { return doomed.count(&node) != 0; });
  module.setAttribute("split_batch", ir::Attribute::getInt(parts));
  // The copies' types are set by rule; the shape functions check them.
  llvm::Expected<bool> checked = createPassByName("infer-shapes")->run(module);
  if (!checked)
    return splitError(llvm::toString(checked.takeError()));
  addStatistic("parts", parts);
  addStatistic("nodes-copied", int64_t(region.nodes.size()) * parts);
  return true;
}

} // namespace

llvm::Expected<int64_t> findSplittableBatch(const ir::Module &module,
                                            llvm::StringRef loss,
                                            int64_t *nodesPerCopy) {
  Region region = findRegion(module);
  if (nodesPerCopy)
    *nodesPerCopy = int64_t(region.nodes.size());
  LossTail tail;
  if (!loss.empty()) {
    llvm::Expected<LossTail> found = findLossTail(module, region, loss);
    if (!found)
      return found.takeError();
    tail = std::move(*found);
  }
  return checkSplittable(module, region, tail);
}

std::unique_ptr<Pass> createSplitBatchPass() {
  return std::make_unique<SplitBatch>();
}

} // namespace snug
