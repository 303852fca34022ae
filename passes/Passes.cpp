//===- Passes.cpp - Pass lookup by name -----------------------------------===//
#include "passes/Passes.h"

#include "llvm/Support/Format.h"

namespace snug {

namespace {
struct PassEntry {
  const char *name;
  std::unique_ptr<Pass> (*factory)();
  const char *description;
};
} // namespace

static const PassEntry passTable[] = {
#define PASS(NAME, FACTORY, DESCRIPTION) {NAME, FACTORY, DESCRIPTION},
#include "passes/Passes.def"
};

llvm::Error Pass::setOption(llvm::StringRef key, llvm::StringRef) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "pass '%s' has no option '%s'",
                                 getName().str().c_str(), key.str().c_str());
}

std::unique_ptr<Pass> createPassByName(llvm::StringRef name) {
  for (const PassEntry &entry : passTable)
    if (name == entry.name)
      return entry.factory();
  return nullptr;
}

void printRegisteredPasses(llvm::raw_ostream &os) {
  for (const PassEntry &entry : passTable)
    os << llvm::format("  %-20s %s\n", entry.name, entry.description);
}

} // namespace snug
