//===- SnugcFlagsFuzzer.cpp - libFuzzer target over snugc command lines --===//
//
// Each input is one snugc command line, an argument per line ("compile",
// "model.onnx", "--precision=fp16", ...), run in this process exactly as
// snugc runs it (runCommandLine, the options reset in between). The seeds
// are the lit tests' snugc command lines and the dictionary every snugc
// flag and value (bench/fuzz/flags_seeds.py), so mutation recombines flags
// users can give. Whatever the combination, snugc must:
//  - exit 0 or 1: 2 is snug's own bug, and so is a crash or a sanitizer
//    report;
//  - finish within libFuzzer's -timeout (bench/fuzz/run.sh: 60 s a case)
//    and -rss_limit_mb: every search and multiplier flag is bounded;
//  - leave no temporary behind (".NAME.tmp-XXXXXX", core/FileAccess.cpp),
//    and after exit 1 no product at the -o path: nothing half-written.
// The command lines run in a private scratch directory holding copies of
// the models (SNUG_FUZZ_MODELS, a directory): arguments naming a path
// outside it ("/", "..") or a response file ("@") are skipped, and so are
// the generic flags that exit the process (--help, -h, --version). Files a case
// writes are removed after it and changed models restored. The kernel
// cache goes to the scratch directory's cache/ (XDG_CACHE_HOME).
// Standard output goes to /dev/null unless SNUG_FUZZ_VERBOSE=1; standard
// error (snugc's messages, a sanitizer's report) stays. Built only with
// clang (-DSNUG_FUZZ=ON).
//
//===----------------------------------------------------------------------===//
#include "tools/HelpTypo.h"
#include "tools/snugc/SnugcCommands.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

namespace fs = llvm::sys::fs;

namespace {

/// Longest command line taken, in arguments and bytes per argument: more
/// adds nothing a shorter one cannot reach.
constexpr size_t kMaxArgs = 32;
constexpr size_t kMaxArgBytes = 512;

/// A model of the scratch directory: its bytes, and the file's status as
/// written, so that a case that left it alone costs a stat, not a read.
struct Model {
  std::string bytes;
  fs::file_status written;
};

struct Sandbox {
  std::string work;                   // the commands' directory
  std::map<std::string, Model> files; // by name
};

/// Whether `a` and `b` are the same file unchanged: same inode, size and
/// modification time (snug replaces a file by renaming a new one over it).
bool isSameFile(const fs::file_status &a, const fs::file_status &b) {
  return a.getUniqueID() == b.getUniqueID() && a.getSize() == b.getSize() &&
         a.getLastModificationTime() == b.getLastModificationTime();
}

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "snug-fuzz-flags: %s\n", message.c_str());
  std::abort();
}

Sandbox &getSandbox() {
  static Sandbox sandbox;
  return sandbox;
}

/// The relative paths of every file and directory under the work
/// directory.
std::vector<std::string> listWork() {
  std::vector<std::string> paths;
  std::error_code error;
  const std::string &work = getSandbox().work;
  for (fs::recursive_directory_iterator it(work, error, /*follow=*/false), end;
       it != end && !error; it.increment(error)) {
    llvm::StringRef path = it->path();
    path.consume_front(work);
    path.consume_front("/");
    paths.push_back(path.str());
  }
  return paths;
}

/// Back to the models only, from `paths` (listWork's, taken after the
/// case): whatever the case wrote is removed, a model it replaced or
/// changed is written again.
void restoreSandbox(const std::vector<std::string> &paths) {
  Sandbox &sandbox = getSandbox();
  // Deepest first, so that directories are empty when their turn comes.
  for (auto it = paths.rbegin(); it != paths.rend(); ++it)
    if (!sandbox.files.count(*it))
      fs::remove(sandbox.work + "/" + *it);
  for (auto &[name, model] : sandbox.files) {
    std::string path = sandbox.work + "/" + name;
    fs::file_status now;
    if (!fs::status(path, now, /*follow=*/false) &&
        isSameFile(now, model.written))
      continue;
    fs::remove_directories(path);
    fs::remove(path);
    {
      std::error_code error;
      llvm::raw_fd_ostream out(path, error);
      if (error)
        fail("cannot restore " + path + ": " + error.message());
      out << model.bytes;
    }
    if (fs::status(path, model.written))
      fail("cannot stat " + path);
  }
  if (listWork().size() != sandbox.files.size())
    fail("cannot clean the scratch directory " + sandbox.work);
}

/// An argument the sandbox cannot hold or that leaves the process: a path
/// outside the work directory, a response file, a flag that exits.
bool isRefusedArgument(llvm::StringRef arg) {
  if (arg.contains('/') || arg.contains("..") || arg.startswith("@") ||
      arg.contains('\0'))
    return true;
  llvm::StringRef name = arg.ltrim('-').split('=').first;
  return arg.startswith("-") &&
         (snug::isHelpFlagName(name) || name == "version" ||
          name == "print-options" || name == "print-all-options");
}

/// The -o path of the command line, "" when none (or standard output).
std::string getOutputPath(const std::vector<std::string> &args) {
  std::string output;
  for (size_t i = 0; i < args.size(); ++i) {
    llvm::StringRef arg = args[i];
    if ((arg == "-o" || arg == "--o") && i + 1 < args.size())
      output = args[i + 1];
    else if (arg.consume_front("-o=") || arg.consume_front("--o="))
      output = arg.str();
  }
  return output == "-" ? "" : output;
}

/// Standard output (reports, IR) to /dev/null while a case runs, unless
/// SNUG_FUZZ_VERBOSE; standard error stays, so that a sanitizer's report
/// reaches the log. The case runs in the work directory; the fuzzer's own
/// paths (corpus, artifacts) stay relative to where it was started.
class CaseScope {
public:
  CaseScope() {
    savedDir = ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (savedDir < 0 || ::chdir(getSandbox().work.c_str()) != 0)
      fail("cannot enter " + getSandbox().work);
    if (std::getenv("SNUG_FUZZ_VERBOSE"))
      return;
    int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    savedOut = ::dup(1);
    ::dup2(null, 1);
    ::close(null);
  }
  ~CaseScope() {
    llvm::outs().flush();
    std::fflush(stdout);
    if (savedOut >= 0) {
      ::dup2(savedOut, 1);
      ::close(savedOut);
    }
    if (::fchdir(savedDir) != 0)
      fail("cannot return from " + getSandbox().work);
    ::close(savedDir);
  }

private:
  int savedDir = -1, savedOut = -1;
};

std::string describe(const std::vector<std::string> &args) {
  std::string text = "snugc";
  for (const std::string &arg : args)
    text += " '" + arg + "'";
  return text;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  Sandbox &sandbox = getSandbox();
  const char *models = std::getenv("SNUG_FUZZ_MODELS");
  if (!models)
    fail("set SNUG_FUZZ_MODELS to a directory of models (bench/fuzz/run.sh "
         "does)");
  llvm::SmallString<128> root;
  if (fs::createUniqueDirectory("snug-fuzz-flags", root))
    fail("cannot create a scratch directory");
  static std::string rootPath;
  rootPath = std::string(root.str());
  // Gone when the fuzzer exits; left for a look after a crash.
  std::atexit([] { fs::remove_directories(rootPath); });
  sandbox.work = rootPath + "/work";
  if (fs::create_directory(sandbox.work) ||
      fs::create_directory(rootPath + "/cache"))
    fail("cannot create " + sandbox.work);
  std::error_code error;
  for (fs::directory_iterator it(models, error), end; it != end && !error;
       it.increment(error)) {
    auto bytes = llvm::MemoryBuffer::getFile(it->path());
    if (!bytes)
      continue; // a directory
    sandbox.files[llvm::sys::path::filename(it->path()).str()].bytes =
        (*bytes)->getBuffer().str();
  }
  if (sandbox.files.empty())
    fail(std::string("no models in ") + models);
  ::setenv("XDG_CACHE_HOME", (rootPath + "/cache").c_str(), 1);
  // Nothing is there yet: every model is written, its status taken.
  restoreSandbox(listWork());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> args;
  llvm::SmallVector<llvm::StringRef, 16> lines;
  llvm::StringRef(reinterpret_cast<const char *>(data), size)
      .split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef line : lines) {
    if (args.size() == kMaxArgs || line.size() > kMaxArgBytes ||
        isRefusedArgument(line))
      return 0;
    args.push_back(line.str());
  }
  // A subcommand first: without one, libLLVM's top-level flags parse.
  if (args.empty() || !llvm::is_contained(llvm::ArrayRef<llvm::StringRef>{
                                              "compile", "train", "plan",
                                              "plan-buffers"},
                                          args.front()))
    return 0;

  std::string output = getOutputPath(args);
  std::vector<const char *> argv{"snugc"};
  for (const std::string &arg : args)
    argv.push_back(arg.c_str());
  int exitCode;
  {
    CaseScope scope;
    llvm::cl::ResetAllOptionOccurrences();
    exitCode = snug::snugc::runCommandLine(argv.size(), argv.data(),
                                           &llvm::errs());
  }

  if (exitCode != 0 && exitCode != 1)
    fail("exit " + std::to_string(exitCode) + " from " + describe(args));
  std::vector<std::string> paths = listWork();
  for (const std::string &path : paths) {
    llvm::StringRef name = llvm::sys::path::filename(path);
    if (name.startswith(".") && name.contains(".tmp-"))
      fail("temporary " + path + " left behind by " + describe(args));
    if (exitCode == 1 && !output.empty() && !getSandbox().files.count(path) &&
        (path == output || llvm::StringRef(path).startswith(output + ".")))
      fail(path + " written by " + describe(args) + ", which failed");
  }
  restoreSandbox(paths);
  return 0;
}
