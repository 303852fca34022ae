//===- KeepF32.cpp - The module's list of nodes kept in f32 ---------------===//
#include "passes/precision/KeepF32.h"

#include <string>
#include <vector>

namespace snug {

static constexpr const char *kKeepF32Attribute = "keep_f32";

static llvm::ArrayRef<std::string> getListed(const ir::Module &module) {
  const ir::Attribute *attr = module.getAttribute(kKeepF32Attribute);
  if (!attr || attr->getKind() != ir::Attribute::Kind::Strings)
    return {};
  return attr->getStrings();
}

void markKeepF32From(ir::Module &module, size_t first, llvm::StringRef prefix) {
  auto nodes = module.getNodes();
  if (first >= nodes.size())
    return;
  llvm::ArrayRef<std::string> listed = getListed(module);
  std::vector<std::string> names(listed.begin(), listed.end());
  size_t number = names.size();
  for (size_t i = first; i < nodes.size(); ++i) {
    ir::Node *node = nodes[i].get();
    std::string name = prefix.str() + "." + std::to_string(number++);
    node->setName(name);
    names.push_back(std::move(name));
  }
  module.setAttribute(kKeepF32Attribute, ir::Attribute::getStrings(names));
}

llvm::StringSet<> getKeepF32Names(const ir::Module &module) {
  llvm::StringSet<> names;
  for (const std::string &name : getListed(module))
    names.insert(name);
  return names;
}

void addKeepList(llvm::StringRef list, llvm::StringSet<> &into) {
  llvm::SmallVector<llvm::StringRef, 8> names;
  list.split(names, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef name : names)
    into.insert(name.trim());
}

bool keepNames(const llvm::StringSet<> &keep, const ir::Node &node) {
  return keep.count(node.getName()) || keep.count(node.getOpName());
}

} // namespace snug
