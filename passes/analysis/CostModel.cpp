//===- CostModel.cpp - FLOPs, bytes and a roofline per node ---------------===//
//
// Two halves: the compute of a node (FLOPs and MACs, by the rule its op has,
// from its traits or its line in CostRules.def; the counts are in
// elementwiseFlops and the add* function of each rule, each beside the
// formula it counts), and the traffic of a group (what crosses its
// boundary), of which a node's own traffic is the group of one. Counts assume canonical attributes (compiler/onnx/OnnxImporter.h)
// and read them with the importer's defaults, so hand-written IR costs the
// same as imported IR. Conventions are stated in CostModel.h.
//
//===----------------------------------------------------------------------===//
#include "passes/analysis/CostModel.h"
#include "core/OpRuleTable.h"
#include "ir/ShapeFunctions.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cmath>

namespace snug {

using ir::DType;
using ir::Node;
using ir::OpCode;
using ir::Value;

//===----------------------------------------------------------------------===//
// Cost
//===----------------------------------------------------------------------===//

template <typename Field>
static uint64_t sumOf(const std::array<DTypeCost, Cost::NumDTypeSlots> &all,
                      Field field) {
  uint64_t sum = 0;
  for (const DTypeCost &share : all)
    sum += share.*field;
  return sum;
}

uint64_t Cost::getFlops() const { return sumOf(byDType, &DTypeCost::flops); }
uint64_t Cost::getContractionFlops() const {
  return sumOf(byDType, &DTypeCost::contractionFlops);
}
uint64_t Cost::getMacs() const { return sumOf(byDType, &DTypeCost::macs); }
uint64_t Cost::getBytesRead() const {
  return sumOf(byDType, &DTypeCost::bytesRead);
}
uint64_t Cost::getBytesWritten() const {
  return sumOf(byDType, &DTypeCost::bytesWritten);
}

double Cost::getArithmeticIntensity() const {
  uint64_t bytes = getBytesMoved();
  return bytes ? double(getFlops()) / double(bytes) : 0.0;
}

llvm::SmallVector<DType, 4> Cost::getDTypes() const {
  llvm::SmallVector<DType, 4> types;
  for (unsigned i = 0; i < NumDTypeSlots; ++i)
    if (!(byDType[i] == DTypeCost()))
      types.push_back(DType(i));
  return types;
}

Cost &Cost::operator+=(const Cost &other) {
  for (unsigned i = 0; i < NumDTypeSlots; ++i) {
    byDType[i].flops += other.byDType[i].flops;
    byDType[i].contractionFlops += other.byDType[i].contractionFlops;
    byDType[i].tf32Flops += other.byDType[i].tf32Flops;
    byDType[i].macs += other.byDType[i].macs;
    byDType[i].bytesRead += other.byDType[i].bytesRead;
    byDType[i].bytesWritten += other.byDType[i].bytesWritten;
  }
  return *this;
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

/// CostRules.def's lines; an op without one keeps CostRule::None.
static constexpr OpRuleTable<CostRule> buildCostRuleTable() {
  OpRuleTable<CostRule> table;
#define COST_RULE(OP_ID, RULE) table.set(OpCode::OP_ID, CostRule::RULE);
#include "passes/analysis/CostRules.def"
  return table;
}

static constexpr OpRuleTable<CostRule> costRules = buildCostRuleTable();
static_assert(costRules.hasNoOpTwice(), "an op has two lines in CostRules.def");

CostRule getDeclaredCostRule(OpCode op) { return costRules.get(op); }

CostRule getCostRule(OpCode op) {
  // Views and elementwise ops take their rule from the op table's traits,
  // so that adding an elementwise op needs no edit here; the per-element
  // count of the ones that are more than one operation is below.
  const ir::OpInfo &info = ir::getOpInfo(op);
  if (info.isView())
    return CostRule::View;
  if (info.isElementwise())
    return info.maxOperands < 0 ? CostRule::Variadic : CostRule::Elementwise;
  // None for an op without a line: CostModelTest's coverage test fails.
  return getDeclaredCostRule(op);
}

llvm::StringRef getCostRuleName(CostRule rule) {
  switch (rule) {
  case CostRule::None:
    return "none";
  case CostRule::View:
    return "view";
  case CostRule::Elementwise:
    return "elementwise";
  case CostRule::Variadic:
    return "variadic";
  case CostRule::Contraction:
    return "contraction";
  case CostRule::Normalize:
    return "normalize";
  case CostRule::Softmax:
    return "softmax";
  case CostRule::Pool:
    return "pool";
  case CostRule::Reduction:
    return "reduction";
  case CostRule::Resize:
    return "resize";
  case CostRule::Movement:
    return "movement";
  }
  llvm_unreachable("unknown cost rule");
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

static uint64_t elementsOf(const Value *value) {
  return value ? uint64_t(value->getType().getNumElements()) : 0;
}

static uint64_t product(llvm::ArrayRef<int64_t> dims) {
  uint64_t result = 1;
  for (int64_t dim : dims)
    result *= uint64_t(dim);
  return result;
}

/// The dtype an op computes in: operand 0's, except that Where's operand 0
/// is its bool condition; an op without operands computes in its result's.
static DType getComputeDType(const Node &node) {
  if (node.is(OpCode::Where) && node.getNumOperands() > 1 &&
      node.getOperand(1))
    return node.getOperand(1)->getType().getDType();
  if (node.getNumOperands() && node.getOperand(0))
    return node.getOperand(0)->getType().getDType();
  return node.getResult(0)->getType().getDType();
}

/// FLOPs per result element of an op with the Elementwise rule, counting
/// the ops of its ONNX formula.
static uint64_t elementwiseFlops(const Node &node) {
  const ir::AttributeMap &attributes = node.getAttributes();
  switch (node.getOpCode()) {
  case OpCode::Celu: // max(0,x) + min(0, a*(exp(x/a) - 1))
    return 7;
  case OpCode::Clip: // min and max, for the bounds given
    return (attributes.count("min") ? 1 : 0) +
           (attributes.count("max") ? 1 : 0);
  case OpCode::Elu: // x < 0 ? a*(exp(x) - 1) : x
    return 5;
  case OpCode::Gelu:
    // tanh: 0.5x(1 + tanh(c(x + 0.044715x^3))): x^3 (2), mul, add, mul,
    // tanh, add, mul, mul. erf: 0.5x(1 + erf(x/sqrt 2)): mul, erf, add,
    // mul, mul.
    return getStringAttr(attributes, "approximate", "none") == "tanh" ? 9 : 5;
  case OpCode::HardSigmoid: // max(0, min(1, a*x + b))
    return 4;
  case OpCode::HardSwish: // x * HardSigmoid(x)
    return 5;
  case OpCode::LeakyRelu: // x < 0 ? a*x : x
  case OpCode::PRelu:
    return 3;
  case OpCode::Mish: // x * tanh(log(1 + exp(x)))
    return 5;
  case OpCode::SnugRotary: // x * cos + (+-x') * sin
    return 4;
  case OpCode::Selu: // g * (x <= 0 ? a*(exp(x) - 1) : x)
    return 6;
  case OpCode::Sigmoid: // 1 / (1 + exp(-x))
    return 4;
  case OpCode::Softplus: // log(exp(x) + 1)
  case OpCode::Softsign: // x / (1 + |x|)
    return 3;
  case OpCode::ThresholdedRelu: // x > a ? x : 0
    return 2;
  default:
    // One operation: Relu is a max, Where a select, comparisons and logic
    // one instruction, transcendentals one function evaluation.
    return 1;
  }
}

/// Adds `flops` (and `macs`) computed in `type`.
static void addFlops(Cost &cost, DType type, uint64_t flops, uint64_t macs,
                     bool contraction) {
  DTypeCost &share = cost.get(type);
  share.flops += flops;
  share.macs += macs;
  if (contraction)
    share.contractionFlops += flops;
}

static void addContraction(const Node &node, Cost &cost) {
  const Value *result = node.getResult(0);
  uint64_t outputs = elementsOf(result);
  uint64_t macs = 0, extra = 0;
  bool hasBias = node.getNumOperands() > 2 && node.getOperand(2);
  switch (node.getOpCode()) {
  case OpCode::Conv: {
    // Every result element sums Cin/group x kernel products: the weight
    // [Cout, Cin/group, k...] without its first dim.
    llvm::ArrayRef<int64_t> weight = node.getOperand(1)->getType().getDims();
    macs = outputs * product(weight.drop_front());
    extra = hasBias ? outputs : 0;
    break;
  }
  case OpCode::ConvTranspose: {
    // Every input element scatters into Cout/group x kernel results: the
    // weight [Cin, Cout/group, k...] without its first dim.
    llvm::ArrayRef<int64_t> weight = node.getOperand(1)->getType().getDims();
    macs = elementsOf(node.getOperand(0)) * product(weight.drop_front());
    extra = hasBias ? outputs : 0;
    break;
  }
  case OpCode::MatMul: {
    // Broadcast batch dims are in the result: each result element is one
    // dot product of length K.
    llvm::ArrayRef<int64_t> lhs = node.getOperand(0)->getType().getDims();
    macs = outputs * uint64_t(lhs.empty() ? 1 : lhs.back());
    break;
  }
  case OpCode::Gemm: {
    // Y = alpha A B + beta C: M N K MACs; scaling by alpha (when not 1),
    // adding C (when present and beta is not 0) and scaling it by beta
    // (when not 1) cost one FLOP per result element each.
    llvm::ArrayRef<int64_t> lhs = node.getOperand(0)->getType().getDims();
    bool transA = getIntAttr(node.getAttributes(), "transA", 0);
    macs = outputs * uint64_t(lhs[transA ? 0 : 1]);
    float alpha = getFloatAttr(node.getAttributes(), "alpha", 1.0f);
    float beta = getFloatAttr(node.getAttributes(), "beta", 1.0f);
    extra = alpha != 1.0f ? outputs : 0;
    if (hasBias && beta != 0.0f)
      extra += outputs * (beta != 1.0f ? 2 : 1);
    break;
  }
  case OpCode::SnugAttention: {
    // Both products (Q Kᵀ and P V) per score, then per score the scale,
    // the mask and the softmax's five (max, subtract, exp, sum, divide),
    // as the unfused nodes count them.
    AttentionShape shape = getAttentionShape(node);
    uint64_t scores = uint64_t(shape.batch * shape.sq * shape.skv);
    macs = scores * uint64_t(shape.d + shape.dv);
    AttentionMaskKind mask = getAttentionMaskKind(node);
    extra = scores * (6 + mask.causal + mask.where + mask.additive +
                      mask.bias + mask.whereAfter +
                      !!getIntAttr(node.getAttributes(), "zero_filled", 0));
    break;
  }
  default:
    llvm_unreachable("not a contraction");
  }
  DType type = getComputeDType(node);
  addFlops(cost, type, 2 * macs + extra, macs, /*contraction=*/true);
  const ir::Attribute *math = node.getAttribute("math");
  if (type == DType::F32 && math &&
      math->getKind() == ir::Attribute::Kind::String &&
      math->getString() == "tf32")
    cost.get(type).tf32Flops += 2 * macs + extra;
}

/// Normalization over groups of `groupSize` elements: mean (sum, divide),
/// variance (subtract, square, sum, divide), 1/sqrt(var + eps) (add,
/// sqrt, divide): 4 per element and 5 per group; normalizing (multiply by
/// the inverse deviation) 1 per element; scale and bias 1 each.
static uint64_t normalizeFlops(uint64_t elements, uint64_t groupSize,
                               unsigned affineTerms) {
  uint64_t groups = groupSize ? elements / groupSize : 0;
  return elements * (5 + affineTerms) + 5 * groups;
}

static void addNormalize(const Node &node, Cost &cost) {
  const Value *input = node.getOperand(0);
  llvm::ArrayRef<int64_t> dims = input->getType().getDims();
  uint64_t elements = elementsOf(input);
  uint64_t flops = 0;
  switch (node.getOpCode()) {
  case OpCode::BatchNormalization:
    // Inference: the statistics are given, so y = x*a + b per element with
    // a = scale/sqrt(var + eps) and b = bias - mean*a per channel (add,
    // sqrt, divide, multiply, subtract).
    flops = 2 * elements + 5 * elementsOf(node.getOperand(1));
    break;
  case OpCode::InstanceNormalization:
    flops = normalizeFlops(elements, product(dims.drop_front(2)), 2);
    break;
  case OpCode::LayerNormalization: {
    int64_t axis =
        normalizeAxis(getIntAttr(node.getAttributes(), "axis", -1),
                      dims.size())
            .getValueOr(int64_t(dims.size()) - 1);
    bool hasBias = node.getNumOperands() > 2 && node.getOperand(2);
    flops = normalizeFlops(elements, product(dims.drop_front(axis)),
                           hasBias ? 2 : 1);
    break;
  }
  case OpCode::SnugRmsNorm: {
    // Per element a square, a sum and the multiply by the inverse root
    // (and the scale); per row a divide, an add, a sqrt, a reciprocal.
    int64_t axis =
        normalizeAxis(getIntAttr(node.getAttributes(), "axis", -1), dims.size())
            .getValueOr(int64_t(dims.size()) - 1);
    uint64_t groupSize = product(dims.drop_front(axis));
    bool hasScale = node.getNumOperands() > 1 && node.getOperand(1);
    flops = elements * (3 + (hasScale ? 1 : 0)) +
            4 * (groupSize ? elements / groupSize : 0);
    break;
  }
  case OpCode::LRN: {
    // Sum of `size` squares (2 per term), then x / (bias + alpha/size *
    // sum)^beta: multiply, add, pow, divide.
    uint64_t size = getIntAttr(node.getAttributes(), "size", 1);
    flops = elements * (2 * size + 4);
    break;
  }
  default:
    llvm_unreachable("not a normalization");
  }
  addFlops(cost, getComputeDType(node), flops, 0, false);
}

static void addSoftmax(const Node &node, Cost &cost) {
  const Value *input = node.getOperand(0);
  uint64_t elements = elementsOf(input);
  uint64_t flops = 0;
  switch (node.getOpCode()) {
  case OpCode::Softmax: // max, subtract, exp, sum, divide
    flops = 5 * elements;
    break;
  case OpCode::LogSoftmax: {
    // max, subtract, exp, sum, subtract per element; log per row.
    llvm::ArrayRef<int64_t> dims = input->getType().getDims();
    int64_t axis =
        normalizeAxis(getIntAttr(node.getAttributes(), "axis", -1),
                      dims.size())
            .getValueOr(int64_t(dims.size()) - 1);
    uint64_t rowLength = dims.empty() ? 1 : uint64_t(dims[axis]);
    flops = 5 * elements + (rowLength ? elements / rowLength : 0);
    break;
  }
  case OpCode::Hardmax: // the arg max's compares; the one-hot is a store
    flops = elements;
    break;
  default:
    llvm_unreachable("not a softmax");
  }
  addFlops(cost, getComputeDType(node), flops, 0, false);
}

static void addPool(const Node &node, Cost &cost) {
  uint64_t outputs = elementsOf(node.getResult(0));
  uint64_t inputs = elementsOf(node.getOperand(0));
  uint64_t flops = 0;
  switch (node.getOpCode()) {
  case OpCode::MaxPool: {
    // One compare per window position, padding included.
    auto kernel = getIntsAttr(node.getAttributes(), "kernel_shape");
    flops = outputs * (kernel ? product(*kernel) : 1);
    break;
  }
  case OpCode::AveragePool: {
    // One add per window position, then a divide.
    auto kernel = getIntsAttr(node.getAttributes(), "kernel_shape");
    flops = outputs * ((kernel ? product(*kernel) : 1) + 1);
    break;
  }
  case OpCode::GlobalAveragePool:
    flops = inputs + outputs;
    break;
  case OpCode::GlobalMaxPool:
    flops = inputs;
    break;
  default:
    llvm_unreachable("not a pool");
  }
  addFlops(cost, getComputeDType(node), flops, 0, false);
}

static void addReduction(const Node &node, Cost &cost) {
  uint64_t inputs = elementsOf(node.getOperand(0));
  uint64_t outputs = elementsOf(node.getResult(0));
  uint64_t flops = 0;
  switch (node.getOpCode()) {
  case OpCode::ArgMax:
  case OpCode::ArgMin:
  case OpCode::ReduceMax:
  case OpCode::ReduceMin:
  case OpCode::ReduceProd:
  case OpCode::ReduceSum:
  case OpCode::CumSum: // a running sum: one add per element
    flops = inputs;
    break;
  case OpCode::ReduceMean: // sum, then a divide per result
    flops = inputs + outputs;
    break;
  case OpCode::TopK: // a selection: each of k rounds compares every element
    flops = inputs * uint64_t(std::max<int64_t>(
                         1, getIntAttr(node.getAttributes(), "k", 1)));
    break;
  case OpCode::ReduceL1:        // abs, add
  case OpCode::ReduceSumSquare: // multiply, add
    flops = 2 * inputs;
    break;
  case OpCode::ReduceL2: // multiply, add; sqrt per result
    flops = 2 * inputs + outputs;
    break;
  case OpCode::ReduceLogSumExp:
    // Stable: max, subtract, exp, add per element; log and adding the max
    // back per result.
    flops = 4 * inputs + 2 * outputs;
    break;
  default:
    llvm_unreachable("not a reduction");
  }
  addFlops(cost, getComputeDType(node), flops, 0, false);
}

static void addResize(const Node &node, Cost &cost) {
  if (node.is(OpCode::GridSample)) {
    // A multiply-add per tap (1, 2 or 4 along each of the k spatial dims)
    // per result element; the coordinate math per element is small beside
    // it.
    llvm::StringRef mode = getStringAttr(node.getAttributes(), "mode", "linear");
    uint64_t perDim = mode == "nearest" ? 1 : mode == "cubic" ? 4 : 2;
    uint64_t taps = 1;
    for (unsigned d = 2; d < node.getOperand(0)->getType().getRank(); ++d)
      taps *= perDim;
    addFlops(cost, getComputeDType(node),
             2 * taps * elementsOf(node.getResult(0)), 0, false);
    return;
  }
  llvm::StringRef mode = getStringAttr(node.getAttributes(), "mode", "nearest");
  if (mode == "nearest")
    return; // a gather
  llvm::ArrayRef<int64_t> in = node.getOperand(0)->getType().getDims();
  llvm::ArrayRef<int64_t> out = node.getResult(0)->getType().getDims();
  bool antialias = getIntAttr(node.getAttributes(), "antialias", 0) != 0;
  uint64_t taps = 1, resized = 0;
  bool wide = false; // a tap count other than linear's 2
  for (size_t i = 0; i < std::min(in.size(), out.size()); ++i) {
    if (in[i] == out[i])
      continue;
    uint64_t count = mode == "cubic" ? 4 : 2;
    // An antialiased downscale stretches the filter by in / out.
    if (antialias && out[i] > 0 && out[i] < in[i])
      count = uint64_t(std::ceil(double(count) * double(in[i]) /
                                 double(out[i]))) + 2;
    wide |= count != 2;
    taps *= count;
    ++resized;
  }
  // Linear over d resized axes blends 2^d neighbours with 2^d - 1 lerps,
  // a + t*(b - a) being 3 FLOPs each; wider filters sum t^d products of d
  // weights and a value, about 2 * d FLOPs each.
  uint64_t perElement = wide ? 2 * resized * taps : 3 * (taps - 1);
  addFlops(cost, getComputeDType(node), perElement * elementsOf(node.getResult(0)),
           0, false);
}

/// The FLOPs and MACs of `node`; no bytes.
static void addCompute(const Node &node, Cost &cost) {
  // A region computes what its body's ops compute, each counted as its
  // node would be; its traffic is its own operands and results. An
  // epilogue adds its ops to what the op itself computes.
  if (node.hasBody()) {
    for (const std::unique_ptr<Node> &inner : node.getBody()->getNodes())
      addCompute(*inner, cost);
    if (!node.hasEpilogue())
      return;
  }
  switch (getCostRule(node.getOpCode())) {
  case CostRule::None:
    llvm_unreachable("an op of the table without a cost rule");
  case CostRule::View:
  case CostRule::Movement:
    return;
  case CostRule::Elementwise:
    addFlops(cost, getComputeDType(node),
             elementwiseFlops(node) * elementsOf(node.getResult(0)), 0, false);
    return;
  case CostRule::Variadic: {
    // k operands: k - 1 binary ops per result element, and Mean's divide.
    uint64_t operands = 0;
    for (const Value *operand : node.getOperands())
      operands += operand != nullptr;
    uint64_t perElement = operands ? operands - 1 : 0;
    if (node.is(OpCode::Mean))
      perElement += 1;
    addFlops(cost, getComputeDType(node),
             perElement * elementsOf(node.getResult(0)), 0, false);
    return;
  }
  case CostRule::Contraction:
    return addContraction(node, cost);
  case CostRule::Normalize:
    return addNormalize(node, cost);
  case CostRule::Softmax:
    return addSoftmax(node, cost);
  case CostRule::Pool:
    return addPool(node, cost);
  case CostRule::Reduction:
    return addReduction(node, cost);
  case CostRule::Resize:
    return addResize(node, cost);
  }
  llvm_unreachable("unknown cost rule");
}

//===----------------------------------------------------------------------===//
// Traffic
//===----------------------------------------------------------------------===//

/// Bytes `user` reads of its operand `index`.
static uint64_t getUseReadBytes(const Node &user, unsigned index) {
  const Value *operand = user.getOperand(index);
  uint64_t size = operand->getType().getByteSize();
  switch (user.getOpCode()) {
  case OpCode::Shape:
  case OpCode::Size:
    return 0; // metadata, known statically
  case OpCode::Gather:
  case OpCode::Slice:
    // The data: only the elements the result holds (same dtype).
    if (index == 0)
      return std::min(size, user.getResult(0)->getType().getByteSize());
    return size;
  default:
    return size;
  }
}

namespace {
/// A group being costed: which nodes are in it.
class Group {
public:
  explicit Group(llvm::ArrayRef<const Node *> nodes)
      : members(nodes.begin(), nodes.end()) {}

  bool contains(const Node *node) const { return members.count(node); }

  /// Follows views defined inside the group to the value whose bytes they
  /// name.
  const Value *getStorage(const Value *value) const {
    while (value->isResult() && contains(value->getDefiningNode()) &&
           value->getDefiningNode()->getOpInfo().isView() &&
           value->getDefiningNode()->getOperand(0))
      value = value->getDefiningNode()->getOperand(0);
    return value;
  }

  /// Whether the group's nodes compute `storage` (so reading it is free).
  bool defines(const Value *storage) const {
    return storage->isResult() && contains(storage->getDefiningNode());
  }

  /// Whether something outside the group may read `value`: a user outside,
  /// a graph output, or nobody (the kernel producing it writes it anyway).
  bool leaves(const Value *value) const {
    if (!value->hasUses())
      return !value->getDefiningNode()->getOpInfo().isView();
    for (const Value::Use &use : value->getUses())
      if (!contains(use.user))
        return true;
    const ir::Module *module = value->getDefiningNode()->getModule();
    return module && module->isOutput(value);
  }

private:
  llvm::SmallPtrSet<const Node *, 16> members;
};
} // namespace

GroupBoundary findGroupBoundary(llvm::ArrayRef<const Node *> nodes) {
  Group group(nodes);
  GroupBoundary boundary;
  llvm::DenseMap<const Value *, unsigned> inputIndex;
  llvm::SmallPtrSet<const Value *, 8> written;
  for (const Node *node : nodes) {
    // A view reads nothing itself; its users read through it.
    if (!node->getOpInfo().isView()) {
      for (unsigned i = 0; i < node->getNumOperands(); ++i) {
        const Value *operand = node->getOperand(i);
        if (!operand)
          continue;
        const Value *storage = group.getStorage(operand);
        if (group.defines(storage))
          continue;
        uint64_t bytes = std::min(getUseReadBytes(*node, i),
                                  storage->getType().getByteSize());
        auto inserted = inputIndex.try_emplace(storage, boundary.inputs.size());
        if (inserted.second)
          boundary.inputs.push_back({storage, bytes});
        else
          boundary.inputs[inserted.first->second].second = std::max(
              boundary.inputs[inserted.first->second].second, bytes);
      }
    }
    for (unsigned i = 0; i < node->getNumResults(); ++i) {
      const Value *result = node->getResult(i);
      if (!group.leaves(result))
        continue;
      // A view leaving the group makes the group write what it names, if
      // the group computed it.
      const Value *storage = group.getStorage(result);
      if (group.defines(storage) && written.insert(storage).second)
        boundary.outputs.push_back(storage);
    }
  }
  return boundary;
}

Cost costOfGroup(llvm::ArrayRef<const Node *> nodes) {
  Cost cost;
  for (const Node *node : nodes)
    addCompute(*node, cost);
  GroupBoundary boundary = findGroupBoundary(nodes);
  for (const auto &input : boundary.inputs)
    cost.get(input.first->getType().getDType()).bytesRead += input.second;
  for (const Value *output : boundary.outputs)
    cost.get(output->getType().getDType()).bytesWritten +=
        output->getType().getByteSize();
  return cost;
}

Cost costOfNode(const Node &node) {
  const Node *self = &node;
  return costOfGroup(self);
}

Cost costOfBody(llvm::ArrayRef<const Node *> body,
                llvm::ArrayRef<const Value *> inputs,
                llvm::ArrayRef<const Value *> outputs) {
  Cost cost;
  for (const Node *node : body)
    addCompute(*node, cost);
  llvm::SmallPtrSet<const Value *, 8> seen;
  for (const Value *input : inputs)
    if (input && seen.insert(input).second)
      cost.get(input->getType().getDType()).bytesRead +=
          input->getType().getByteSize();
  for (const Value *output : outputs)
    if (output && seen.insert(output).second)
      cost.get(output->getType().getDType()).bytesWritten +=
          output->getType().getByteSize();
  return cost;
}

Cost costOfModule(const ir::Module &module) {
  Cost cost;
  for (const auto &node : module.getNodes())
    cost += costOfNode(*node);
  return cost;
}

//===----------------------------------------------------------------------===//
// Devices and the roofline
//===----------------------------------------------------------------------===//

// Vendor datasheet peaks (SXM parts, dense, no sparsity).
static const DeviceSpec deviceTable[] = {
    // H200 SXM: 4.8 TB/s HBM3e, 67 TFLOP/s f32, 989 TFLOP/s bf16/f16,
    // 495 TFLOP/s tf32.
    {"h200", "H200", 4.8e12, 67e12, 989e12, 495e12},
    // H100 SXM: 3.35 TB/s HBM3, same SM count and clocks as H200.
    {"h100", "H100", 3.35e12, 67e12, 989e12, 495e12},
    // A100 SXM 80 GB: 2.039 TB/s HBM2e, 19.5 TFLOP/s f32, 312 bf16/f16,
    // 156 tf32.
    {"a100", "A100", 2.039e12, 19.5e12, 312e12, 156e12},
};

double DeviceSpec::getPeakFlopsPerSecond(DType type, bool contraction) const {
  if (contraction && (type == DType::F16 || type == DType::BF16))
    return tensorFlopsPerSecond;
  return vectorFlopsPerSecond;
}

llvm::ArrayRef<DeviceSpec> getDevices() { return deviceTable; }

const DeviceSpec *lookupDevice(llvm::StringRef name) {
  for (const DeviceSpec &device : deviceTable)
    if (device.name == name.lower())
      return &device;
  return nullptr;
}

const DeviceSpec &getDefaultDevice() { return deviceTable[0]; }

double estimateComputeSeconds(const Cost &cost, const DeviceSpec &device) {
  double seconds = 0;
  for (DType type : cost.getDTypes()) {
    const DTypeCost &share = cost.get(type);
    seconds += share.tf32Flops / device.getTf32FlopsPerSecond();
    seconds += (share.contractionFlops - share.tf32Flops) /
               device.getPeakFlopsPerSecond(type, /*contraction=*/true);
    seconds += (share.flops - share.contractionFlops) /
               device.getPeakFlopsPerSecond(type, /*contraction=*/false);
  }
  return seconds;
}

double estimateSeconds(const Cost &cost, const DeviceSpec &device) {
  return std::max(estimateComputeSeconds(cost, device),
                  cost.getBytesMoved() / device.memoryBytesPerSecond);
}

RooflineEstimate estimateModule(const ir::Module &module,
                                const DeviceSpec &device) {
  RooflineEstimate estimate;
  for (const auto &node : module.getNodes()) {
    Cost cost = costOfNode(*node);
    if (!cost.getFlops() && !cost.getBytesMoved())
      continue; // a view: no kernel
    double compute = estimateComputeSeconds(cost, device);
    double memory = cost.getBytesMoved() / device.memoryBytesPerSecond;
    estimate.seconds += std::max(compute, memory);
    if (compute > memory) {
      estimate.computeBoundSeconds += compute;
      ++estimate.computeBoundNodes;
    } else {
      ++estimate.memoryBoundNodes;
    }
  }
  return estimate;
}

} // namespace snug
