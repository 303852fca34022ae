//===- State.cpp - Weights that are mutable state across steps ------------===//
//
// Parsing and writing the module's `state` attribute (see State.h). The
// lookups are by name and linear: a module has at most a few hundred state
// weights and passes ask once per weight.
//
//===----------------------------------------------------------------------===//
#include "ir/State.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>

namespace snug {
namespace ir {

static constexpr const char *kStateAttribute = "state";
static constexpr const char *kConstantsAttribute = "constants";

llvm::StringRef getStateRoleName(StateRole role) {
  switch (role) {
  case StateRole::Parameter:
    return "parameter";
  case StateRole::Optimizer:
    return "optimizer";
  case StateRole::Statistic:
    return "statistic";
  }
  llvm_unreachable("unknown state role");
}

static llvm::ArrayRef<std::string> getEntries(const Module &module) {
  const Attribute *attr = module.getAttribute(kStateAttribute);
  if (!attr || attr->getKind() != Attribute::Kind::Strings)
    return {};
  return attr->getStrings();
}

/// The weight name of an entry "role:weight=output".
static llvm::StringRef getWeightName(llvm::StringRef entry) {
  return entry.split(':').second.split('=').first;
}

llvm::Expected<std::vector<StateEntry>> getState(const Module &module) {
  std::vector<StateEntry> state;
  const Attribute *attr = module.getAttribute(kStateAttribute);
  if (attr && attr->getKind() != Attribute::Kind::Strings)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "module attribute 'state' must be a list "
                                   "of strings role:weight=output");
  llvm::StringMap<Value *> weights, outputs;
  for (Value *weight : module.getWeights())
    weights[weight->getName()] = weight;
  for (Value *output : module.getOutputs())
    outputs[output->getName()] = output;
  for (llvm::StringRef entry : getEntries(module)) {
    auto fail = [&](const llvm::Twine &why) {
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          ("state entry '" + entry + "': " + why).str());
    };
    auto [roleName, pair] = entry.split(':');
    auto [weightName, outputName] = pair.split('=');
    StateRole role;
    if (roleName == "parameter")
      role = StateRole::Parameter;
    else if (roleName == "optimizer")
      role = StateRole::Optimizer;
    else if (roleName == "statistic")
      role = StateRole::Statistic;
    else
      return fail("the role must be parameter, optimizer or statistic");
    Value *weight = weights.lookup(weightName);
    if (!weight)
      return fail("'" + weightName + "' is not a weight");
    Value *next = outputs.lookup(outputName);
    if (!next)
      return fail("'" + outputName + "' is not a graph output");
    if (next->getType() != weight->getType())
      return fail("the output is " + next->getType().str() + ", the weight " +
                  weight->getType().str());
    state.push_back({weight, next, role});
  }
  return state;
}

void addState(Module &module, const Value &weight, const Value &next,
              StateRole role) {
  std::vector<std::string> entries(getEntries(module).begin(),
                                   getEntries(module).end());
  entries.push_back(
      (getStateRoleName(role) + ":" + weight.getName() + "=" + next.getName())
          .str());
  module.setAttribute(kStateAttribute, Attribute::getStrings(entries));
}

bool isStateWeight(const Module &module, const Value *value) {
  if (!value || !value->isWeight() || value->getName().empty())
    return false;
  for (llvm::StringRef entry : getEntries(module))
    if (getWeightName(entry) == value->getName())
      return true;
  return false;
}

llvm::StringSet<> getConstantWeightNames(const Module &module) {
  llvm::StringSet<> names;
  if (const Attribute *attr = module.getAttribute(kConstantsAttribute))
    if (attr->getKind() == Attribute::Kind::Strings)
      for (const std::string &name : attr->getStrings())
        names.insert(name);
  return names;
}

void setConstantWeightNames(Module &module, std::vector<std::string> names) {
  if (names.empty())
    return;
  std::sort(names.begin(), names.end());
  module.setAttribute(kConstantsAttribute, Attribute::getStrings(names));
}

} // namespace ir
} // namespace snug
