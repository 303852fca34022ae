//===- GuardBranches.cpp - Run only the taken branch of an If -------------===//
//
// The importer gives an If on runtime data both branches, and each output
// as Where(c, then's, else's) over the scalar condition c. Both are correct
// to run, but only one side is needed. This pass finds, for every node, the
// condition under which its result is needed (its guard), and lays out the
// schedule so that each branch's nodes are one run of steps preceded by a
// snug.skip_if that the executors obey:
//
//   %c.then = snug.skip_if(%c) {count = 3, when = 0}  skipped when c is false
//   ... the 3 nodes only then's side needs
//   %c.else = snug.skip_if(%c.then) {count = 2, when = 1}
//   ... the 2 nodes only else's side needs
//   %y = Where(%c.else, %a, %b)
//
// Guards: a guard is (c, side, parent guard); the root is "always". The
// guard a use asks for is its user's guard, except the then (else) operand
// of a select (a Where whose condition is a bool scalar computed at run
// time), which asks for (c, then (else), the select's guard). A node's guard
// is the nearest common ancestor of the guards its uses ask for (the root
// for a graph output). So a node that runs (its guard holds) reads only
// nodes that ran: each operand's guard is an ancestor of its own. A skipped
// node's result is read only by the selects, on the side they do not take.
//
// Layout: each guard's nodes (its own and its descendants') become one
// contiguous run, placed just before the first node of the enclosing level
// that reads one of them, the guards inside it laid out the same way. Where
// a run cannot move there (a node of it reads a value the level computes
// later: schedules other passes chose can interleave that way), the guard
// is dropped (its nodes run always, as its parent's) and the layout is
// redone; so the pass never makes a schedule invalid, it can only skip
// less. Runs after every pass that orders the schedule (schedule, offload,
// remat), before plan-memory: liveness then sees both runs in order, and
// the arena holds whichever ran.
//
//===----------------------------------------------------------------------===//
#include "passes/memory/GuardBranches.h"
#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <map>
#include <memory>
#include <tuple>

namespace snug {

bool isRuntimeSelect(const ir::Node &node) {
  if (!node.is(ir::OpCode::Where) || node.getNumOperands() != 3)
    return false;
  const ir::Value *condition = node.getOperand(0);
  return condition && !condition->isWeight() &&
         condition->getType().getRank() == 0 &&
         condition->getType().getDType() == ir::DType::Bool &&
         node.getOperand(1) != node.getOperand(2);
}

namespace {

using ir::Node;
using ir::Value;

struct Guard {
  const Value *condition;
  bool thenSide;
  Guard *parent; // nullptr: the root
  unsigned depth;
  bool dropped = false;
};

/// The laid-out schedule: nodes, and runs of nodes one guard skips.
struct Item {
  Node *node = nullptr;
  Guard *guard = nullptr; // a run's
  std::vector<Item> run;
};

class GuardBranches : public Pass {
public:
  llvm::StringRef getName() const override { return "guard-branches"; }
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  Guard *intern(const Value *condition, bool thenSide, Guard *parent);
  static Guard *live(Guard *guard) {
    while (guard && guard->dropped)
      guard = guard->parent;
    return guard;
  }
  static Guard *common(Guard *a, Guard *b);
  void computeGuards(const ir::Module &module);
  /// Lays out `nodes` (in schedule order), whose guards all lie under
  /// `level`, into `items`; false after dropping a guard that cannot move.
  bool layout(llvm::ArrayRef<Node *> nodes, Guard *level,
              std::vector<Item> &items);
  /// Appends `items` to `order`, a skip node before each run; returns how
  /// many nodes it appended.
  size_t flatten(ir::Module &module, const std::vector<Item> &items,
                 std::vector<Node *> &order);

  std::map<std::tuple<const Value *, bool, Guard *>, std::unique_ptr<Guard>>
      guards;
  llvm::DenseMap<const Node *, Guard *> guardOf;
  /// The values the layout being built has defined so far (and the
  /// arguments).
  llvm::DenseSet<const Value *> defined;
};

} // namespace

Guard *GuardBranches::intern(const Value *condition, bool thenSide,
                             Guard *parent) {
  auto &slot = guards[{condition, thenSide, parent}];
  if (!slot)
    slot.reset(new Guard{condition, thenSide, parent,
                         parent ? parent->depth + 1 : 1});
  return slot.get();
}

Guard *GuardBranches::common(Guard *a, Guard *b) {
  auto depth = [](Guard *g) { return g ? g->depth : 0u; };
  while (depth(a) > depth(b))
    a = a->parent;
  while (depth(b) > depth(a))
    b = b->parent;
  while (a != b) {
    a = a->parent;
    b = b->parent;
  }
  return a;
}

void GuardBranches::computeGuards(const ir::Module &module) {
  auto nodes = module.getNodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    const Node &node = **it;
    Guard *guard = nullptr;
    bool asked = false;
    auto ask = [&](Guard *wanted) {
      guard = asked ? common(guard, wanted) : wanted;
      asked = true;
    };
    for (unsigned r = 0; r < node.getNumResults(); ++r) {
      const Value *result = node.getResult(r);
      if (module.isOutput(result))
        ask(nullptr);
      for (const Value::Use &use : result->getUses()) {
        Guard *user = guardOf.lookup(use.user);
        if (isRuntimeSelect(*use.user) && use.operandIndex != 0)
          ask(intern(use.user->getOperand(0), use.operandIndex == 1, user));
        else
          ask(user);
      }
    }
    // A node with side effects, or none of whose results is read, runs.
    bool always = node.getOpInfo().hasSideEffects();
    guardOf[&node] = asked && !always ? guard : nullptr;
  }
}

bool GuardBranches::layout(llvm::ArrayRef<Node *> nodes, Guard *level,
                           std::vector<Item> &items) {
  // The guard right under `level` on the way to a node's own; nullptr for
  // the level's own nodes.
  auto childOf = [&](Node *node) -> Guard * {
    Guard *guard = live(guardOf.lookup(node));
    Guard *child = nullptr;
    while (guard != level) {
      child = guard;
      guard = live(guard->parent);
    }
    return child;
  };
  llvm::MapVector<Guard *, std::vector<Node *>> members;
  llvm::DenseMap<const Value *, Guard *> memberValue;
  std::vector<Node *> own;
  for (Node *node : nodes) {
    Guard *child = childOf(node);
    if (!child) {
      own.push_back(node);
      continue;
    }
    members[child].push_back(node);
    for (unsigned r = 0; r < node->getNumResults(); ++r)
      memberValue[node->getResult(r)] = child;
  }
  llvm::DenseSet<Guard *> placed;
  // A run goes where the level first reads it, if everything it reads from
  // outside is defined by then.
  auto place = [&](Guard *child) {
    if (!placed.insert(child).second)
      return true;
    const std::vector<Node *> &run = members[child];
    for (Node *member : run)
      for (const Value *operand : member->getOperands())
        if (operand && memberValue.lookup(operand) != child &&
            !defined.count(operand)) {
          child->dropped = true;
          return false;
        }
    Item item;
    item.guard = child;
    if (!layout(run, child, item.run))
      return false;
    items.push_back(std::move(item));
    return true;
  };
  for (Node *node : own) {
    for (const Value *operand : node->getOperands()) {
      Guard *child = operand ? memberValue.lookup(operand) : nullptr;
      if (child && !place(child))
        return false;
    }
    Item item;
    item.node = node;
    items.push_back(std::move(item));
    for (unsigned r = 0; r < node->getNumResults(); ++r)
      defined.insert(node->getResult(r));
  }
  // Runs no node of the level reads (the selects read them at an outer
  // level) go last.
  for (auto &entry : members)
    if (!place(entry.first))
      return false;
  return true;
}

size_t GuardBranches::flatten(ir::Module &module,
                              const std::vector<Item> &items,
                              std::vector<Node *> &order) {
  size_t appended = 0;
  for (const Item &item : items) {
    if (item.node) {
      order.push_back(item.node);
      ++appended;
      continue;
    }
    Value *condition = const_cast<Value *>(item.guard->condition);
    Node *skip = module.addNode(
        ir::OpCode::SnugSkipIf, {condition}, {condition->getType()},
        {{"count", ir::Attribute::getInt(0)},
         {"when", ir::Attribute::getInt(item.guard->thenSide ? 0 : 1)}});
    // Named after the condition; an unnamed one (a fused loop condition)
    // after the skip's role.
    std::string base = condition->getName().empty()
                           ? std::string("condition")
                           : condition->getName().str();
    skip->setName(base + (item.guard->thenSide ? ".then" : ".else"));
    order.push_back(skip);
    size_t count = flatten(module, item.run, order);
    skip->setAttribute("count", ir::Attribute::getInt(count));
    appended += count + 1;
    addStatistic("runs-guarded");
    addStatistic("nodes-guarded", count);
  }
  return appended;
}

llvm::Expected<bool> GuardBranches::run(ir::Module &module) {
  bool anySelect = false;
  for (const auto &node : module.getNodes())
    anySelect |= isRuntimeSelect(*node);
  if (!anySelect)
    return false;
  computeGuards(module);
  std::vector<Node *> schedule;
  for (const auto &node : module.getNodes())
    schedule.push_back(node.get());
  // Each failed layout drops a guard, so this ends.
  std::vector<Item> items;
  for (;;) {
    items.clear();
    defined.clear();
    for (const auto &argument : module.getArguments())
      defined.insert(argument.get());
    if (layout(schedule, nullptr, items))
      break;
    addStatistic("guards-dropped");
  }
  std::vector<Node *> order;
  flatten(module, items, order);
  if (order.size() == schedule.size())
    return false;
  module.setSchedule(order);
  return true;
}

std::unique_ptr<Pass> createGuardBranchesPass() {
  return std::make_unique<GuardBranches>();
}

} // namespace snug
