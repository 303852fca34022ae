//===- ParserMutationTest.cpp - The parser survives mutated inputs --------===//
//
// Feeds deterministic mutations of every .ir file under tests/ (byte flips,
// deletions, truncations, duplicated and swapped spans, and splices of IR
// tokens) to the parser and the verifier. Each must either succeed or fail
// with a `file:line:col: error:` message; run under ASan and UBSan in
// `make test`, a crash or an undefined behaviour fails the test.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <random>

using namespace snug::ir;

static std::vector<std::string> loadCorpus() {
  std::vector<std::string> corpus;
  std::error_code error;
  for (llvm::sys::fs::recursive_directory_iterator it(SNUG_TESTS_DIR, error),
       end;
       it != end && !error; it.increment(error)) {
    if (llvm::sys::path::extension(it->path()) != ".ir")
      continue;
    auto buffer = llvm::MemoryBuffer::getFile(it->path());
    if (buffer)
      corpus.push_back((*buffer)->getBuffer().str());
  }
  std::sort(corpus.begin(), corpus.end());
  return corpus;
}

static std::string mutate(const std::string &input, std::mt19937_64 &rng) {
  static const char *const tokens[] = {
      "%",  "@",     "(",      ")",    "[",      "]",     "{",   "}",
      "<",  ">",     ",",      ":",    "=",      "->",    "_",   "\"",
      "\\", "-1",    "0",      "1e999", "nan",   "-inf",  "f32", "bool[",
      "weight", "dense<", "loc(", "return", "func @", "// -----", "\n",
      "99999999999999999999", "%0", "Relu", "Split", "^bb(", "yield",
      "snug.fused"};
  std::string text = input;
  auto pick = [&](size_t bound) {
    return bound == 0 ? size_t(0) : size_t(rng() % bound);
  };
  int edits = 1 + pick(4);
  for (int i = 0; i < edits && !text.empty(); ++i) {
    size_t at = pick(text.size());
    switch (pick(6)) {
    case 0: // flip a byte
      text[at] = static_cast<char>(rng());
      break;
    case 1: // delete a span
      text.erase(at, 1 + pick(16));
      break;
    case 2: // truncate
      text.resize(at);
      break;
    case 3: // duplicate a span
      text.insert(at, text.substr(pick(text.size()), 1 + pick(32)));
      break;
    case 4: // insert an IR token
      text.insert(at, tokens[pick(sizeof(tokens) / sizeof(tokens[0]))]);
      break;
    default: { // swap two spans
      size_t other = pick(text.size());
      size_t length = 1 + pick(8);
      if (at + length <= text.size() && other + length <= text.size())
        for (size_t k = 0; k < length; ++k)
          std::swap(text[at + k], text[other + k]);
      break;
    }
    }
  }
  return text;
}

TEST(ParserMutationTest, MutatedInputsParseOrFailCleanly) {
  std::vector<std::string> corpus = loadCorpus();
  ASSERT_FALSE(corpus.empty()) << "no .ir files under " << SNUG_TESTS_DIR;
  std::mt19937_64 rng(20261129);
  const int mutations = 600;
  int parsed = 0, rejected = 0;
  for (int i = 0; i < mutations; ++i) {
    std::string text = mutate(corpus[i % corpus.size()], rng);
    SourceLocations locations;
    auto module = parseModule(text, "mutant.ir", &locations);
    if (!module) {
      std::string message = toString(module.takeError());
      EXPECT_EQ(message.rfind("mutant.ir:", 0), 0u) << message;
      EXPECT_NE(message.find(": error: "), std::string::npos) << message;
      ++rejected;
      continue;
    }
    ++parsed;
    // Whatever parsed must verify or fail with a message, and print.
    if (llvm::Error error = verifyModule(**module, &locations)) {
      EXPECT_FALSE(toString(std::move(error)).empty());
    }
    std::string printed;
    llvm::raw_string_ostream os(printed);
    printModule(**module, os);
    EXPECT_FALSE(os.str().empty());
  }
  EXPECT_EQ(parsed + rejected, mutations);
  // Most mutants must be rejected, or the mutator is not mutating.
  EXPECT_GT(rejected, mutations / 2);
}
