//===- Printer.cpp - Textual form of a module -----------------------------===//
//
// The parser (Parser.cpp) reads exactly what this writes; a change to one is a
// change to the other, and tests/lit/round-trip checks that they agree.
//
//===----------------------------------------------------------------------===//
#include "ir/Printer.h"
#include "ir/Module.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"

namespace snug {
namespace ir {

namespace {
class ModulePrinter {
public:
  ModulePrinter(const Module &module, llvm::raw_ostream &os,
                const PrintOptions &options)
      : module(module), os(os), options(options) {}
  void print();

private:
  void numberValues();
  void numberNode(const Node &node, unsigned &next);
  void printValueRef(const Value *value);
  void printArgument(const Value *argument);
  void printAttributes(const AttributeMap &attributes);
  void printNode(const Node &node, unsigned depth);
  void printBody(const Region &body, unsigned depth);
  void printPlanAnnotation(const Value *value);

  const Module &module;
  llvm::raw_ostream &os;
  const PrintOptions &options;
  llvm::DenseMap<const Value *, unsigned> numbers;
};
} // namespace

/// Names that the lexer reads as one identifier print bare; others quoted.
static bool isBareName(llvm::StringRef name) {
  if (name.empty() || !(llvm::isAlpha(name[0]) || name[0] == '_'))
    return false;
  return llvm::all_of(name, [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '.';
  });
}

static void printName(llvm::raw_ostream &os, llvm::StringRef name) {
  if (isBareName(name))
    os << name;
  else
    printQuoted(os, name);
}

void ModulePrinter::numberValues() {
  unsigned next = 0;
  for (const std::unique_ptr<Value> &argument : module.getArguments())
    if (argument->getName().empty())
      numbers[argument.get()] = next++;
  for (const std::unique_ptr<Node> &node : module.getNodes())
    numberNode(*node, next);
}

void ModulePrinter::numberNode(const Node &node, unsigned &next) {
  for (unsigned i = 0; i < node.getNumResults(); ++i)
    if (node.getResult(i)->getName().empty())
      numbers[node.getResult(i)] = next++;
  if (!node.hasBody())
    return;
  for (const std::unique_ptr<Value> &argument : node.getBody()->getArguments())
    if (argument->getName().empty())
      numbers[argument.get()] = next++;
  for (const std::unique_ptr<Node> &inner : node.getBody()->getNodes())
    numberNode(*inner, next);
}

void ModulePrinter::printValueRef(const Value *value) {
  if (!value) {
    os << '_';
    return;
  }
  os << '%';
  if (value->getName().empty()) {
    auto it = numbers.find(value);
    // A value defined outside the module (a bug the verifier reports) still
    // prints, so that the dump that shows the bug can be read.
    if (it == numbers.end())
      os << "<<unknown>>";
    else
      os << it->second;
    return;
  }
  printName(os, value->getName());
}

void ModulePrinter::printPlanAnnotation(const Value *value) {
  if (value->getArenaOffset())
    os << " {offset = " << *value->getArenaOffset() << '}';
}

void ModulePrinter::printArgument(const Value *argument) {
  printValueRef(argument);
  os << ": " << argument->getType();
  if (argument->isWeight()) {
    os << " weight";
    if (!argument->isWeightElided() &&
        argument->getType().getNumElements() <= options.elideWeightsOver) {
      os << " = ";
      printElements(os, argument->getType().getDType(),
                    module.getWeightData(argument));
    }
  }
  printPlanAnnotation(argument);
}

void ModulePrinter::printAttributes(const AttributeMap &attributes) {
  os << '{';
  bool first = true;
  for (const auto &entry : attributes) {
    os << (first ? "" : ", ");
    first = false;
    printName(os, entry.first);
    os << " = ";
    entry.second.print(os);
  }
  os << '}';
}

void ModulePrinter::printNode(const Node &node, unsigned depth) {
  os.indent(2 * depth);
  for (unsigned i = 0; i < node.getNumResults(); ++i) {
    os << (i ? ", " : "");
    printValueRef(node.getResult(i));
  }
  os << " = ";
  llvm::StringRef opName = node.getOpName();
  if (isBareName(opName))
    os << opName;
  else
    printQuoted(os, opName);
  os << '(';
  for (unsigned i = 0; i < node.getNumOperands(); ++i) {
    os << (i ? ", " : "");
    printValueRef(node.getOperand(i));
  }
  os << ')';
  if (!node.getAttributes().empty()) {
    os << ' ';
    printAttributes(node.getAttributes());
  }
  os << " : ";
  for (unsigned i = 0; i < node.getNumResults(); ++i) {
    os << (i ? ", " : "") << node.getResult(i)->getType();
    printPlanAnnotation(node.getResult(i));
  }
  if (!node.getName().empty()) {
    os << " loc(";
    printQuoted(os, node.getName());
    os << ')';
  }
  if (node.hasBody()) {
    os << " {\n";
    printBody(*node.getBody(), depth);
    os.indent(2 * depth) << '}';
  }
  os << '\n';
}

void ModulePrinter::printBody(const Region &body, unsigned depth) {
  os.indent(2 * depth) << "^bb(";
  for (unsigned i = 0; i < body.getNumArguments(); ++i) {
    os << (i ? ", " : "");
    printValueRef(body.getArgument(i));
    os << ": " << body.getArgument(i)->getType();
    printPlanAnnotation(body.getArgument(i));
  }
  os << "):\n";
  for (const std::unique_ptr<Node> &node : body.getNodes())
    printNode(*node, depth + 1);
  os.indent(2 * depth + 2) << "yield";
  for (size_t i = 0; i < body.getYield().size(); ++i) {
    os << (i ? ", " : " ");
    printValueRef(body.getYield()[i]);
  }
  os << '\n';
}

void ModulePrinter::print() {
  numberValues();
  os << "func @";
  printName(os, module.getName());
  os << '(';
  bool first = true;
  for (const std::unique_ptr<Value> &argument : module.getArguments()) {
    os << (first ? "" : ", ");
    first = false;
    printArgument(argument.get());
  }
  os << ") -> ";
  llvm::ArrayRef<Value *> outputs = module.getOutputs();
  if (outputs.size() != 1)
    os << '(';
  for (size_t i = 0; i < outputs.size(); ++i)
    os << (i ? ", " : "") << outputs[i]->getType();
  if (outputs.size() != 1)
    os << ')';
  if (!module.getAttributes().empty()) {
    os << " attributes ";
    printAttributes(module.getAttributes());
  }
  os << " {\n";
  for (const std::unique_ptr<Node> &node : module.getNodes())
    printNode(*node, 1);
  os << "  return";
  for (size_t i = 0; i < outputs.size(); ++i) {
    os << (i ? ", " : " ");
    printValueRef(outputs[i]);
  }
  os << "\n}\n";
}

void printModule(const Module &module, llvm::raw_ostream &os,
                 const PrintOptions &options) {
  ModulePrinter(module, os, options).print();
}

} // namespace ir
} // namespace snug
