//===- LowerPrecision.cpp - f32 storage to f16 or bf16 --------------------===//
//
// Option to=f16|bf16: every f32 tensor the graph stores (weights and
// activations) becomes `to`, except around the nodes kept in f32, and
// graph inputs and outputs keep their f32 type at the boundary. Kernels
// keep their accumulation as it was (the host reference in double, the CUDA
// kernels and cuBLAS in f32): only what is stored is rounded, to nearest
// even, by the one conversion of core/ScalarOps.h.
//
//  - Weights are converted at compile time (the bundle stores them
//    lowered); a weight some kept node reads stays f32 for it too.
//  - A node is lowered when it computes in f32 (some result is f32), its op
//    takes the lowered dtype (the op table's dtypes) and the keep rules do
//    not name it: each f32 operand is read lowered (a snug.cast is inserted
//    before the first such reader of a value computed in f32), each f32
//    result becomes lowered, and a Cast to f32 now casts to `to`.
//  - A kept node reads f32: a lowered operand is cast back to f32 once, and
//    its results stay f32. So does every node that computes no float
//    (Shape, ArgMax, integer arithmetic reading a float tensor).
//  - Graph inputs: the first lowered reader gets a cast; graph outputs that
//    became lowered are cast back to f32 under their own names. With
//    io=lowered both take the lowered dtype instead (the caller feeds and
//    reads 16-bit tensors).
//  - Casts that change nothing fold away: to the dtype they read (a
//    model's Cast to f16 of what is now f16), and round trips that lose
//    nothing (f16 -> f32 -> f16, likewise bf16).
//
// Training steps (ir/State.h): a state weight (master weight, optimizer
// state) is never converted at compile time, since its bytes are only its
// first value: its lowered readers read a snug.cast of it inserted before
// the first of them, run every step. The nodes the module's keep_f32
// attribute lists (passes/precision/KeepF32.h: the optimizer's update) are kept, so
// the update reads f32 gradients and writes f32 state; a state's next value
// computed lowered all the same is cast back to f32 like an output, io=
// lowered or not, since it is written back over its f32 weight.
//
// Range rule (passes/precision/ValueRanges.h): a node some f32 operand or
// result of which may pass the lowered type's largest finite value is kept
// in f32, whatever the options, with the weights it reads: converted, the
// value would be Inf and what follows garbage. The ranges come from the
// weights' data and each op's semantics, an activation of unknown origin
// taken as ordinary (at most 16). In f16 this keeps:
//  - a node reading a weight past 65504 (PP-OCRv4's detector has a
//    BatchNormalization running variance of 1e7: the output was wrong at
//    every pixel);
//  - a sum of N squares where N squares of an activation pass it, and the
//    Mul or Div making it a mean, which reads it (tf2onnx writes LayerNorm
//    as ReduceSum(Square): over magika's 512 positions the f16 sum was
//    Inf and its class wrong); a sum of N activations past it (N > 4094);
//  - Exp of an activation (e^16 = 8.9e6), not of a - max(a) (a Softmax);
//    x^4 and higher powers, not x^2 or x^3; a product of activations of
//    activations' products;
//  - and every node reading what such a node computes past the range (a
//    lowered reader would read it cast to Inf), up to the first that
//    brings it back (a quotient by a norm, a Sigmoid, a normalisation).
// bf16 has f32's range: only what passes 3.4e38 is kept there.
//
// Keep rules: the op types Log (a log near 1 of a 16-bit value loses its
// digits) and GridSample (its grid's normalized coordinates: in a
// 1000-pixel image a 16-bit one lands up to a quarter pixel off in f16 and
// two in bf16; torch's autocast keeps grid_sampler in f32 too);
// default-keep=0 drops them; plus option keep=A,B,...,
// each a node name or an op type. LayerNorm, Softmax and the reductions
// compute their statistics in f32 or wider inside the kernel already, so
// they need no rule of their own.
//
// Records precision = "f16"/"bf16" and precision_kept = the number of f32
// nodes kept in f32 on the module, for the report.
//
//===----------------------------------------------------------------------===//
#include "ir/Float16.h"
#include "ir/Module.h"
#include "ir/State.h"
#include "passes/precision/KeepF32.h"
#include "passes/precision/ValueRanges.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace snug {
namespace {

class LowerPrecision : public Pass {
public:
  llvm::StringRef getName() const override { return "lower-precision"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  bool isKept(const ir::Node &node) const;

  llvm::DenseSet<const ir::Value *> stateWeights;

  /// The module's keep_f32 list, for the run.
  llvm::StringSet<> marked;

  llvm::Optional<ir::DType> to;
  bool defaultKeep = true;
  /// io=lowered: graph inputs and outputs take the lowered dtype too.
  bool lowerIO = false;
  llvm::StringSet<> keep;
};

bool isF32(const ir::Value *value) {
  return value && value->getType().getDType() == ir::DType::F32;
}

ir::TensorType withDType(const ir::TensorType &type, ir::DType dtype) {
  return ir::TensorType(dtype, type.getDims());
}

/// True when a -> b -> a loses nothing: b holds every value of a.
bool widens(ir::DType a, ir::DType b) {
  return (a == ir::DType::F16 || a == ir::DType::BF16) &&
         (b == ir::DType::F32 || b == ir::DType::F64);
}

} // namespace

llvm::Error LowerPrecision::setOption(llvm::StringRef key,
                                      llvm::StringRef value) {
  auto bad = [&](llvm::StringRef what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "pass 'lower-precision': option '" +
                                       key.str() + "' must be " + what.str() +
                                       ", got '" + value.str() + "'");
  };
  if (key == "to") {
    if (value == "f16")
      to = ir::DType::F16;
    else if (value == "bf16")
      to = ir::DType::BF16;
    else
      return bad("f16 or bf16");
    return llvm::Error::success();
  }
  if (key == "default-keep") {
    if (value != "0" && value != "1")
      return bad("0 or 1");
    defaultKeep = value == "1";
    return llvm::Error::success();
  }
  if (key == "io") {
    if (value != "model" && value != "lowered")
      return bad("model or lowered");
    lowerIO = value == "lowered";
    return llvm::Error::success();
  }
  if (key == "keep") {
    addKeepList(value, keep);
    return llvm::Error::success();
  }
  return Pass::setOption(key, value);
}

/// Whether `node` reads or computes an f32 value whose range `low` cannot
/// hold (the range rule): one past its largest finite value rounds to Inf.
static bool passesRange(
    const ir::Node &node, ir::DType low,
    const llvm::DenseMap<const ir::Value *, ValueRange> &ranges) {
  const bool bf16 = low == ir::DType::BF16;
  auto outside = [&](const ir::Value *value) {
    if (!isF32(value))
      return false;
    auto range = ranges.find(value);
    if (range == ranges.end())
      return false;
    double magnitude = range->second.magnitude();
    return magnitude > double(std::numeric_limits<float>::max()) ||
           !std::isfinite(roundThrough16Bits(float(magnitude), bf16));
  };
  for (const ir::Value *operand : node.getOperands())
    if (outside(operand))
      return true;
  for (unsigned i = 0; i < node.getNumResults(); ++i)
    if (outside(node.getResult(i)))
      return true;
  return false;
}

bool LowerPrecision::isKept(const ir::Node &node) const {
  using ir::OpCode;
  if (keepNames(keep, node) ||
      (!node.getName().empty() && marked.count(node.getName())))
    return true;
  if (!defaultKeep)
    return false;
  switch (node.getOpCode()) {
  case OpCode::Log:
  case OpCode::GridSample:
    return true;
  default:
    return false;
  }
}

llvm::Expected<bool> LowerPrecision::run(ir::Module &module) {
  if (!to)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "pass 'lower-precision' needs option to=f16 or to=bf16");
  const ir::DType low = *to;
  marked = getKeepF32Names(module);
  llvm::Expected<std::vector<ir::StateEntry>> state = ir::getState(module);
  if (!state)
    return state.takeError();
  llvm::DenseSet<const ir::Value *> stateNext;
  stateWeights.clear();
  for (const ir::StateEntry &entry : *state) {
    stateWeights.insert(entry.weight);
    stateNext.insert(entry.next);
  }
  llvm::StringRef lowName = ir::getDTypeName(low);
  // Per f32 value: its lowered twin, and per lowered value its f32 twin
  // (created on demand).
  llvm::DenseMap<const ir::Value *, ir::Value *> lowered, widened;
  // Values of the lowered dtype this pass made (not the model's own f16).
  llvm::DenseSet<const ir::Value *> ours;
  auto lowerWeight = [&](ir::Value *weight) -> ir::Value * {
    if (ir::Value *done = lowered.lookup(weight))
      return done;
    if (weight->isWeightElided())
      return nullptr;
    llvm::ArrayRef<uint8_t> data = module.getWeightData(weight);
    size_t count = data.size() / 4;
    std::vector<uint8_t> bytes(count * 2);
    for (size_t i = 0; i < count; ++i) {
      float value;
      std::memcpy(&value, data.data() + 4 * i, 4);
      uint16_t bits = low == ir::DType::F16 ? floatToF16(value)
                                            : floatToBf16(value);
      std::memcpy(bytes.data() + 2 * i, &bits, 2);
    }
    // An unnamed weight (a folded constant) gets an unnamed twin: two of
    // them must not both be called ".bf16".
    std::string name = weight->getName().empty()
                           ? std::string()
                           : weight->getName().str() + "." + lowName.str();
    ir::Value *copy = module.addWeight(
        name, withDType(weight->getType(), low), bytes);
    lowered[weight] = copy;
    ours.insert(copy);
    return copy;
  };
  // With io=lowered the caller's inputs arrive lowered: they are their own
  // twins, and outputs are left lowered below.
  if (lowerIO)
    for (ir::Value *input : module.getInputs())
      if (isF32(input)) {
        input->setType(withDType(input->getType(), low));
        ours.insert(input);
      }
  std::vector<ir::Node *> original;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    original.push_back(node.get());
  size_t index = 0; // position of the node being rewritten
  auto positionOf = [&](const ir::Node *node) {
    auto nodes = module.getNodes();
    while (nodes[index].get() != node)
      ++index;
    return index;
  };
  auto castBefore = [&](const ir::Node *user, ir::Value *value,
                        ir::DType dtype) {
    size_t at = positionOf(user);
    ir::Node *cast = module.insertNode(
        at, ir::OpCode::SnugCast, {value},
        {withDType(value->getType(), dtype)},
        {{"to", ir::Attribute::getString(ir::getDTypeName(dtype))}});
    ++index;
    return cast->getResult(0);
  };
  unsigned lowNodes = 0, kept = 0, keptForRange = 0;
  // Ranges of the module as imported: the casts this pass inserts read and
  // write the same values.
  const llvm::DenseMap<const ir::Value *, ValueRange> ranges =
      computeValueRanges(module);
  for (ir::Node *node : original) {
    if (node->hasBody())
      continue; // bodies (fused groups) are lowered before they form
    bool computesF32 = false;
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      computesF32 |= isF32(node->getResult(i));
    bool outOfRange = computesF32 && passesRange(*node, low, ranges);
    bool lower = computesF32 && node->getOpInfo().acceptsDType(low) &&
                 !isKept(*node) && !outOfRange;
    // A cast's dtypes constrain its input; what it casts to is ours to
    // pick.
    bool isCast = node->is(ir::OpCode::Cast) || node->is(ir::OpCode::SnugCast);
    if (computesF32 && isCast && !isKept(*node) && !outOfRange)
      lower = true;
    kept += computesF32 && !lower;
    keptForRange += outOfRange;
    for (unsigned i = 0; i < node->getNumOperands(); ++i) {
      ir::Value *operand = node->getOperand(i);
      if (!operand)
        continue;
      if (lower && isF32(operand)) {
        ir::Value *twin = lowered.lookup(operand);
        bool constant = operand->isWeight() && !stateWeights.count(operand);
        if (!twin && constant)
          twin = lowerWeight(operand);
        if (!twin && !constant) {
          twin = castBefore(node, operand, low);
          lowered[operand] = twin;
          ours.insert(twin);
        }
        if (twin)
          node->setOperand(i, twin);
      } else if (!lower && ours.count(operand)) {
        // A lowered value read by a node kept in f32: one cast back each.
        ir::Value *wide = widened.lookup(operand);
        if (!wide) {
          wide = castBefore(node, operand, ir::DType::F32);
          widened[operand] = wide;
        }
        node->setOperand(i, wide);
      }
    }
    if (!lower)
      continue;
    ++lowNodes;
    for (unsigned i = 0; i < node->getNumResults(); ++i) {
      ir::Value *result = node->getResult(i);
      if (!isF32(result))
        continue;
      result->setType(withDType(result->getType(), low));
      ours.insert(result);
    }
    if (isCast) {
      const ir::Attribute *attr = node->getAttribute("to");
      if (attr && attr->getString() == "f32")
        node->setAttribute("to", ir::Attribute::getString(lowName));
    }
  }
  // Outputs the model gives as f32 stay f32; so does a state's next value
  // with io=lowered, as it is written back over its f32 weight.
  llvm::SmallVector<ir::Value *, 4> outputs(module.getOutputs().begin(),
                                            module.getOutputs().end());
  for (ir::Value *output : outputs) {
    if ((lowerIO && !stateNext.count(output)) || !output->isResult() ||
        !ours.count(output))
      continue;
    ir::Node *cast = module.addNode(
        ir::OpCode::SnugCast, {output},
        {withDType(output->getType(), ir::DType::F32)},
        {{"to", ir::Attribute::getString("f32")}});
    std::string name = output->getName().str();
    llvm::SmallVector<ir::Value *, 4> now(module.getOutputs().begin(),
                                          module.getOutputs().end());
    for (ir::Value *&value : now)
      if (value == output)
        value = cast->getResult(0);
    module.setOutputs(now);
    output->setName("");
    cast->getResult(0)->setName(name);
  }
  // Casts that change nothing fold: one to the dtype it reads (a model's
  // Cast to f16 of what is now f16), and a lossless round trip
  // cast(cast(x: a -> b) -> a) with b wider than a.
  unsigned folded = 0;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    if (!node->is(ir::OpCode::SnugCast) && !node->is(ir::OpCode::Cast))
      continue;
    ir::Value *result = node->getResult(0);
    ir::Value *inner = node->getOperand(0);
    ir::DType want = result->getType().getDType();
    ir::Value *same = nullptr;
    if (inner->getType().getDType() == want) {
      same = inner;
    } else if (ir::Node *first = inner->getDefiningNode()) {
      if ((first->is(ir::OpCode::SnugCast) || first->is(ir::OpCode::Cast)) &&
          first->getOperand(0)->getType().getDType() == want &&
          widens(want, inner->getType().getDType()))
        same = first->getOperand(0);
    }
    if (!same || module.isOutput(result) || same->isInput() ||
        same->isWeight())
      continue;
    module.replaceAllUsesWith(result, same);
    ++folded;
  }
  // Casts nothing reads any more (the outer half of a folded pair, then
  // perhaps its inner half).
  for (int round = 0; round < 2; ++round)
    module.eraseNodesIf([&](const ir::Node &node) {
      return (node.is(ir::OpCode::SnugCast) || node.is(ir::OpCode::Cast)) &&
             !node.getResult(0)->hasUses() &&
             !module.isOutput(node.getResult(0));
    });
  module.setAttribute("precision", ir::Attribute::getString(lowName));
  module.setAttribute("precision_kept", ir::Attribute::getInt(kept));
  addStatistic("nodes-lowered", lowNodes);
  addStatistic("nodes-kept-f32", kept);
  addStatistic("nodes-kept-f32-for-range", keptForRange);
  addStatistic("cast-pairs-folded", folded);
  return lowNodes != 0;
}

std::unique_ptr<Pass> createLowerPrecisionPass() {
  return std::make_unique<LowerPrecision>();
}

} // namespace snug
