//===- Fuse.cpp - Elementwise fusion into snug.fused regions --------------===//
//
// Groups connected elementwise nodes (the op table's Elementwise trait:
// unary, binary with numpy broadcasting, Where, PRelu, ...) and conversions
// (its Conversion trait: Cast, snug.cast) into one snug.fused node whose body
// holds them, so that one kernel computes what took one kernel each, and
// the intermediates between them live in registers instead of the arena.
// A conversion joins like any member, by the same roles and cost model: a
// Cast of a mask multiplied into an activation (a bool or i64 mask to f32,
// HF's attention masks) is then read in its own narrower or equal dtype,
// and the converted copy is never stored. The host executor and the CUDA emitter
// run a body element by element from the same scalar definitions the single
// kernels use (core/ScalarOps.h), each intermediate rounded to its dtype,
// so a fused group gives the bits its nodes give one by one.
//
// How a group forms: the schedule is walked from its end; each elementwise
// node not yet in a group becomes the root of one and grows backwards over
// its producers, latest first. A producer joins
//  - as an internal value when every user of its result is in the group
//    (it is computed in registers and never stored), or
//  - as an extra output when its result has the root's shape and every user
//    outside the group (a graph output counts as one) comes after the root
//    in the schedule (the fused node runs at the root's step, so it is
//    still written before anyone outside reads it).
// Those two rules keep the graph acyclic: the only values leaving a group
// are read after its root. Every body value broadcasts to the root's shape
// (an elementwise result is the broadcast of its operands), which is the
// verifier's rule for snug.fused.
//
// Cost model (passes/analysis/CostModel.h, the roofline on the default device): a
// producer joins only when the group with it is estimated no slower than
// the group and the producer run apart. A producer whose result is smaller
// than the root's (a bias transformed before it is broadcast) is recomputed
// for every root element, so its FLOPs count that many times; its result's
// write and read are what fusion saves. Limits keep kernels reasonable:
// at most max-ops nodes (64) and max-operands distinct operands (16) a group.
//
// Before grouping, the exporters' decomposed patterns are rewritten as the
// ops they spell (LayerNorm, RMSNorm), inference BatchNorms after a Conv are
// folded into its weights, the others become a per-channel Mul and Add,
// rotary embeddings become snug.rotary and attention snug.attention
// (FusePatterns.h); an elementwise op between a Reshape and its inverse
// moves onto the unreshaped tensor, so that those chains are unbroken, and
// a Concat of strided Slices of one tensor along its axis (torch.roll)
// becomes one Gather.
//
// Micro-batches (gradient accumulation, MicroBatchPhases.h): a producer
// joins only a root of its own micro-batch's phase. Otherwise the running
// sum of a weight's gradients over K micro-batches, a chain of Adds, would
// become one node in the last phase, and every micro-batch's gradients
// would stay live until then.
//
// A weight's gradient (grad.<weight>, passes/training/Autodiff.cpp) is never taken
// into its reader's group: it stays a value, so a training step's phases
// (StepPhases.h) still find the backward behind it. Under accumulation the
// gradient is the last Add of the running sum; taken into the update, it
// hid the whole backward (the report counted it as the optimizer's). The
// planner runs that Add in place, so the cost is a kernel, not bytes.
//
// After grouping, a Conv, MatMul or Gemm whose one reader is a group (or
// one elementwise node), directly or through a view that regroups its
// rows, takes it as its epilogue (EpiloguePattern.cpp).
//
// Option patterns=NAME+NAME+... runs only the stages named, in their usual
// order: the patterns of Patterns.def (layernorm, ..., attention),
// `elementwise` (growing groups) and `epilogue`. Without it every stage
// runs. It is for testing and bisecting one pattern at a time; a pattern
// run alone sees what the ones before it would otherwise have rewritten.
//
// Not here yet: the decomposed GELU as one op (its six elementwise nodes
// already become one group).
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/analysis/CostModel.h"
#include "passes/fusion/FusePatterns.h"
#include "passes/memory/GuardBranches.h"
#include "passes/memory/budget/MicroBatchPhases.h"
#include "passes/analysis/StepPhases.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <queue>

namespace snug {
namespace {

constexpr unsigned kDefaultMaxOps = 64;
constexpr unsigned kDefaultMaxOperands = 16;

/// A rewrite of Patterns.def: its name in patterns=, its statistic and its
/// entry point (FusePatterns.h).
struct PatternEntry {
  const char *name;
  const char *statistic;
  unsigned (*rewrite)(ir::Module &);
};

constexpr PatternEntry kPatterns[] = {
#define PATTERN(NAME, STATISTIC, FUNCTION, DESCRIPTION)                        \
  {NAME, STATISTIC, FUNCTION},
#include "passes/fusion/Patterns.def"
};
constexpr size_t kNumPatterns = std::size(kPatterns);

/// The two stages after the patterns, by their names in patterns=.
constexpr llvm::StringLiteral kElementwiseStage = "elementwise";
constexpr llvm::StringLiteral kEpilogueStage = "epilogue";

class Fuse : public Pass {
public:
  Fuse() { runPattern.fill(true); }
  llvm::StringRef getName() const override { return "fuse"; }
  llvm::Expected<bool> run(ir::Module &module) override;
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;

private:
  llvm::Error selectStages(llvm::StringRef list);
  unsigned rewritePatterns(ir::Module &module);
  bool groupElementwise(ir::Module &module);
  unsigned maxOps = kDefaultMaxOps;
  unsigned maxOperands = kDefaultMaxOperands;
  /// Which stages run (patterns=; all by default), by kPatterns' index.
  std::array<bool, kNumPatterns> runPattern;
  bool runElementwise = true;
  bool runEpilogue = true;
};

/// A group being formed: members in no particular order until it is built.
struct Group {
  ir::Node *root = nullptr;
  std::vector<ir::Node *> members;
  llvm::DenseSet<const ir::Node *> memberSet;
  /// Members whose results leave the group besides the root's.
  llvm::SmallVector<ir::Node *, 2> extraOutputs;
};

/// What fusion may put in a body: an elementwise node or a conversion
/// (OpInfo::isFusable) with one result, no body and every operand present
/// (the body ops read block arguments or body values, never an absent
/// operand), and not the select of an If on runtime data (GuardBranches.h).
bool isFusable(const ir::Node &node) {
  if (!node.getOpInfo().isFusable() || node.hasBody() ||
      node.getNumResults() != 1 || isRuntimeSelect(node))
    return false;
  for (const ir::Value *operand : node.getOperands())
    if (!operand)
      return false;
  return true;
}

uint64_t elementCount(const ir::Value *value) {
  return value->getType().getNumElements();
}

/// The group's cost as one kernel over the root's elements: bytes at the
/// boundary (costOfGroup), FLOPs of each member times the number of times
/// it is evaluated (once per root element).
Cost costAsFused(const std::vector<ir::Node *> &members, uint64_t rootElements) {
  llvm::SmallVector<const ir::Node *, 16> nodes(members.begin(), members.end());
  Cost cost = costOfGroup(nodes);
  for (const ir::Node *member : members) {
    uint64_t elements = elementCount(member->getResult(0));
    if (elements == 0 || elements >= rootElements)
      continue;
    uint64_t repeats = rootElements / elements - 1;
    Cost alone = costOfNode(*member);
    for (ir::DType type : alone.getDTypes())
      cost.get(type).flops += alone.get(type).flops * repeats;
  }
  return cost;
}

class GroupBuilder {
public:
  GroupBuilder(ir::Module &module, unsigned maxOps, unsigned maxOperands)
      : module(module), maxOps(maxOps), maxOperands(maxOperands),
        device(getDefaultDevice()) {
    unsigned index = 0;
    for (const std::unique_ptr<ir::Node> &node : module.getNodes())
      position[node.get()] = index++;
    phases = findMicroBatchPhases(module);
  }

  /// The group rooted at `root`, grown over its producers; its members are
  /// marked taken when it has more than the root.
  Group grow(ir::Node &root);

  bool isTaken(const ir::Node *node) const { return taken.count(node); }
  unsigned getPosition(const ir::Node *node) const {
    return position.lookup(node);
  }

private:
  enum class Role { None, Internal, ExtraOutput };
  Role roleOf(const Group &group, const ir::Node &producer) const;
  unsigned countOperandsWith(const Group &group, const ir::Node &producer) const;

  ir::Module &module;
  unsigned maxOps, maxOperands;
  const DeviceSpec &device;
  llvm::DenseMap<const ir::Node *, unsigned> position;
  /// Each node's micro-batch phase by position; empty when not split.
  std::vector<int64_t> phases;
  llvm::DenseSet<const ir::Node *> taken;
};

GroupBuilder::Role GroupBuilder::roleOf(const Group &group,
                                        const ir::Node &producer) const {
  const ir::Value *result = producer.getResult(0);
  bool allInside = !module.isOutput(result);
  bool outsideAfterRoot = true;
  unsigned rootPosition = getPosition(group.root);
  for (const ir::Value::Use &use : result->getUses()) {
    if (group.memberSet.count(use.user))
      continue;
    allInside = false;
    if (getPosition(use.user) <= rootPosition)
      outsideAfterRoot = false;
  }
  if (allInside)
    return Role::Internal;
  if (outsideAfterRoot &&
      result->getType().getDims() == group.root->getResult(0)->getType().getDims())
    return Role::ExtraOutput;
  return Role::None;
}

/// The distinct operands of the group with `producer` in it: values read
/// from outside.
unsigned GroupBuilder::countOperandsWith(const Group &group,
                                         const ir::Node &producer) const {
  llvm::SmallPtrSet<const ir::Value *, 16> inputs;
  auto add = [&](const ir::Node &node) {
    for (const ir::Value *operand : node.getOperands()) {
      const ir::Node *definer = operand->getDefiningNode();
      if (definer && (group.memberSet.count(definer) || definer == &producer))
        continue;
      inputs.insert(operand);
    }
  };
  for (const ir::Node *member : group.members)
    add(*member);
  add(producer);
  return inputs.size();
}

Group GroupBuilder::grow(ir::Node &root) {
  Group group;
  group.root = &root;
  group.members.push_back(&root);
  group.memberSet.insert(&root);
  uint64_t rootElements = elementCount(root.getResult(0));
  double seconds = estimateSeconds(costAsFused(group.members, rootElements), device);

  // Producers, latest first: by the time one is looked at, every user of it
  // that could join already has.
  auto later = [&](const ir::Node *a, const ir::Node *b) {
    return getPosition(a) < getPosition(b);
  };
  std::priority_queue<ir::Node *, std::vector<ir::Node *>, decltype(later)>
      candidates(later);
  llvm::DenseSet<const ir::Node *> queued;
  auto queueProducers = [&](const ir::Node &node) {
    for (ir::Value *operand : node.getOperands()) {
      ir::Node *definer = operand->getDefiningNode();
      if (definer && !taken.count(definer) && isFusable(*definer) &&
          queued.insert(definer).second)
        candidates.push(definer);
    }
  };
  queueProducers(root);
  while (!candidates.empty() && group.members.size() < maxOps) {
    ir::Node *producer = candidates.top();
    candidates.pop();
    if (!phases.empty() &&
        phases[getPosition(producer)] != phases[getPosition(&root)])
      continue;
    if (isWeightGradient(producer->getResult(0)))
      continue;
    Role role = roleOf(group, *producer);
    if (role == Role::None ||
        countOperandsWith(group, *producer) > maxOperands)
      continue;
    std::vector<ir::Node *> with = group.members;
    with.push_back(producer);
    double fused = estimateSeconds(costAsFused(with, rootElements), device);
    double apart = seconds + estimateSeconds(costOfNode(*producer), device);
    if (fused > apart)
      continue;
    group.members = std::move(with);
    group.memberSet.insert(producer);
    if (role == Role::ExtraOutput)
      group.extraOutputs.push_back(producer);
    seconds = fused;
    queueProducers(*producer);
  }
  if (group.members.size() > 1)
    for (const ir::Node *member : group.members)
      taken.insert(member);
  return group;
}

/// Replaces the group's members by one snug.fused node at the root's step.
/// Returns the new node (appended to the schedule; the caller reorders).
ir::Node *buildFusedNode(ir::Module &module, Group &group,
                         const GroupBuilder &builder) {
  std::sort(group.members.begin(), group.members.end(),
            [&](const ir::Node *a, const ir::Node *b) {
              return builder.getPosition(a) < builder.getPosition(b);
            });
  llvm::SetVector<ir::Value *> inputs;
  for (const ir::Node *member : group.members)
    for (ir::Value *operand : member->getOperands())
      if (!operand->getDefiningNode() ||
          !group.memberSet.count(operand->getDefiningNode()))
        inputs.insert(operand);
  llvm::SmallVector<ir::Value *, 4> outputs{group.root->getResult(0)};
  for (ir::Node *extra : group.extraOutputs)
    outputs.push_back(extra->getResult(0));
  llvm::SmallVector<ir::TensorType, 4> resultTypes;
  for (const ir::Value *output : outputs)
    resultTypes.push_back(output->getType());

  ir::Node *fused = module.addNode(ir::OpCode::SnugFused, inputs.getArrayRef(),
                                   resultTypes);
  fused->setName(group.root->getName());
  ir::Region &body = fused->createBody();
  // Body values stay unnamed: names are one namespace with the function's,
  // and the results below take the outside names.
  llvm::DenseMap<const ir::Value *, ir::Value *> inner;
  for (ir::Value *input : inputs)
    inner[input] = body.addArgument(input->getType());
  for (const ir::Node *member : group.members) {
    llvm::SmallVector<ir::Value *, 4> operands;
    for (const ir::Value *operand : member->getOperands())
      operands.push_back(inner.lookup(operand));
    ir::Node *copy =
        body.addNode(member->getOpCode(), operands,
                     {member->getResult(0)->getType()}, member->getAttributes());
    copy->setName(member->getName());
    inner[member->getResult(0)] = copy->getResult(0);
  }
  llvm::SmallVector<ir::Value *, 4> yield;
  for (const ir::Value *output : outputs)
    yield.push_back(inner.lookup(output));
  body.setYield(yield);
  for (unsigned i = 0; i < outputs.size(); ++i)
    module.replaceValue(outputs[i], fused->getResult(i));
  return fused;
}

} // namespace

llvm::Error Fuse::setOption(llvm::StringRef key, llvm::StringRef value) {
  if (key == "patterns")
    return selectStages(value);
  unsigned *target = key == "max-ops"        ? &maxOps
                     : key == "max-operands" ? &maxOperands
                                             : nullptr;
  if (!target)
    return Pass::setOption(key, value);
  if (value.getAsInteger(10, *target) || *target < 1 || *target > 4096)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "pass 'fuse': option '" + key.str() +
            "' must be a whole number from 1 to 4096, got '" + value.str() +
            "'");
  return llvm::Error::success();
}

/// `list` is NAME+NAME+..., in any order: a space would end the option, and
/// '+' needs no quoting in a shell where '|' would. The last patterns=
/// given wins.
llvm::Error Fuse::selectStages(llvm::StringRef list) {
  runPattern.fill(false);
  runElementwise = runEpilogue = false;
  llvm::SmallVector<llvm::StringRef, 8> names;
  list.split(names, '+');
  for (llvm::StringRef name : names) {
    if (name == kElementwiseStage) {
      runElementwise = true;
      continue;
    }
    if (name == kEpilogueStage) {
      runEpilogue = true;
      continue;
    }
    auto *found = llvm::find_if(
        kPatterns, [&](const PatternEntry &entry) { return name == entry.name; });
    if (found != std::end(kPatterns)) {
      runPattern[found - std::begin(kPatterns)] = true;
      continue;
    }
    std::string known;
    for (const PatternEntry &entry : kPatterns)
      known += std::string(entry.name) + ", ";
    known += kElementwiseStage.str() + ", " + kEpilogueStage.str();
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "pass 'fuse': option 'patterns' has no pattern '" + name.str() +
            "'; known: " + known);
  }
  return llvm::Error::success();
}

llvm::Expected<bool> Fuse::run(ir::Module &module) {
  // Patterns first (FusePatterns.h): their nodes would otherwise be taken
  // into elementwise groups.
  bool changed = rewritePatterns(module) != 0;
  if (runElementwise)
    changed |= groupElementwise(module);
  if (!runEpilogue)
    return changed;
  // Epilogues last: a producer takes a whole group as its epilogue.
  unsigned epilogues = fuseEpilogues(module);
  if (epilogues)
    addStatistic("epilogues", epilogues);
  return changed || epilogues;
}

/// Runs the selected patterns in Patterns.def's order; each one's rewrites
/// are its statistic. Returns how many rewrites there were in all.
unsigned Fuse::rewritePatterns(ir::Module &module) {
  unsigned rewritten = 0;
  for (size_t i = 0; i < kNumPatterns; ++i) {
    if (!runPattern[i])
      continue;
    unsigned done = kPatterns[i].rewrite(module);
    if (done)
      addStatistic(kPatterns[i].statistic, done);
    rewritten += done;
  }
  return rewritten;
}

/// Replaces each group that forms by one snug.fused node; whether any did.
bool Fuse::groupElementwise(ir::Module &module) {
  GroupBuilder builder(module, maxOps, maxOperands);
  std::vector<Group> groups;
  auto nodes = module.getNodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    ir::Node &node = **it;
    if (builder.isTaken(&node) || !isFusable(node))
      continue;
    Group group = builder.grow(node);
    if (group.members.size() > 1)
      groups.push_back(std::move(group));
  }
  if (groups.empty())
    return false;

  // The new schedule: each fused node where its root was. The members stay
  // in it (at the end, as setSchedule takes every node) until they are
  // erased, which needs their results unused outside them: the fused
  // node's results have taken every outside use.
  llvm::DenseMap<const ir::Node *, ir::Node *> fusedAtRoot;
  llvm::DenseSet<const ir::Node *> members, created;
  for (Group &group : groups) {
    for (const ir::Node *member : group.members)
      members.insert(member);
    ir::Node *fused = buildFusedNode(module, group, builder);
    fusedAtRoot[group.root] = fused;
    created.insert(fused);
    addStatistic("groups");
    addStatistic("nodes-fused", group.members.size());
  }
  std::vector<ir::Node *> order, dropped;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    if (created.count(node.get()))
      continue;
    if (ir::Node *fused = fusedAtRoot.lookup(node.get()))
      order.push_back(fused);
    if (members.count(node.get()))
      dropped.push_back(node.get());
    else
      order.push_back(node.get());
  }
  order.insert(order.end(), dropped.begin(), dropped.end());
  module.setSchedule(order);
  module.eraseNodesIf(
      [&](const ir::Node &node) { return members.count(&node) != 0; });
  return true;
}

std::unique_ptr<Pass> createFusePass() { return std::make_unique<Fuse>(); }

} // namespace snug
