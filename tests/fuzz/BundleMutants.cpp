//===- BundleMutants.cpp - snug-bundle-mutants: structured mutation run ---===//
//
//   snug-bundle-mutants [--count N] [--seed S] [--jobs J] [--timeout SEC]
//                       [--only I] [--write DIR] [--logs DIR] BUNDLE...
//
// Makes N hash-fixed structured mutants (tests/fuzz/BundleMutator.h) of the
// given bundles, mutant I of bundle I mod B with seed mixSeed(S + I), and
// loads and runs each on the host executor (tests/fuzz/HostRun.h) in a
// forked child, J at a time, so that a crash or a sanitizer report ends that
// child only. Each mutant must be refused at load, fail its run with a
// status, or run; anything else is a finding: a child killed by a signal,
// one that exits with another code (ASan and UBSan exit 1 after their
// report), or one still running after SEC seconds (a hang). Findings print
// with their mutant number, seed and what was mutated, and the child's
// sanitizer summary; the child's whole log is kept in the --logs directory.
// `--only I --write DIR` writes mutant I as DIR/mutant-I.snug to reproduce
// it with snug-run.
//
// Prints the counts (refused, run failed, ran, crashed, hung) and exits 0
// when there is no finding, 1 when there is one or the arguments are bad.
// Built with the sanitizers (bench/fuzz/mutants.sh, or an -DSNUG_SANITIZE=ON
// build) it is the acceptance run of issue 12; `ctest -R bundle-mutants`
// runs a short one.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/BundleMutator.h"
#include "tests/fuzz/HostRun.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace snug::fuzz;

namespace {

// Child exit codes for the three acceptable outcomes; sanitizers exit 1.
constexpr int kExitRefused = 40, kExitRunFailed = 41, kExitRan = 42;

struct Options {
  uint64_t count = 1000;
  uint64_t seed = 1;
  unsigned jobs = 1;
  unsigned timeout = 20;
  long long only = -1;
  std::string writeDir;
  std::string logDir;
  std::vector<std::string> bundles;
};

[[noreturn]] void usage(const std::string &error) {
  std::fprintf(stderr,
               "error: %s\nusage: snug-bundle-mutants [--count N] [--seed S] "
               "[--jobs J] [--timeout SEC] [--only I] [--write DIR] "
               "[--logs DIR] BUNDLE...\n",
               error.c_str());
  std::exit(1);
}

uint64_t parseNumber(const char *flag, const char *text) {
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text, &end, 0);
  if (!*text || *end || errno || text[0] == '-')
    usage(std::string(flag) + ": '" + text + "' is not a non-negative number");
  return value;
}

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc)
        usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--count")
      options.count = parseNumber("--count", value());
    else if (arg == "--seed")
      options.seed = parseNumber("--seed", value());
    else if (arg == "--jobs")
      options.jobs = unsigned(parseNumber("--jobs", value()));
    else if (arg == "--timeout")
      options.timeout = unsigned(parseNumber("--timeout", value()));
    else if (arg == "--only")
      options.only = (long long)parseNumber("--only", value());
    else if (arg == "--write")
      options.writeDir = value();
    else if (arg == "--logs")
      options.logDir = value();
    else if (!arg.empty() && arg[0] == '-')
      usage("unknown flag '" + arg + "'");
    else
      options.bundles.push_back(arg);
  }
  if (options.bundles.empty())
    usage("no bundle given");
  if (options.jobs == 0 || options.jobs > 256)
    usage("--jobs must be 1 to 256");
  if (!options.writeDir.empty() && options.only < 0)
    usage("--write needs --only I");
  return options;
}

bool readFile(const std::string &path, std::vector<uint8_t> &bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  bytes.assign(std::istreambuf_iterator<char>(in),
               std::istreambuf_iterator<char>());
  return !in.bad();
}

bool writeFile(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()),
            std::streamsize(bytes.size()));
  return bool(out.flush());
}

struct Mutant {
  uint64_t index = 0, seed = 0;
  size_t bundle = 0;
  std::string logPath;
};

/// The child: mutate, write, load and run; exits with the outcome's code.
[[noreturn]] void runChild(const Options &options,
                           const std::vector<std::vector<uint8_t>> &bundles,
                           const Mutant &mutant, const std::string &scratch) {
  int log = open(mutant.logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (log >= 0) {
    dup2(log, 2);
    close(log);
  }
  alarm(options.timeout);
  std::string description;
  std::vector<uint8_t> bytes =
      mutateBundle(bundles[mutant.bundle], mutant.seed, description);
  std::fprintf(stderr, "mutant %llu of %s (seed 0x%016llx): %s\n",
               (unsigned long long)mutant.index,
               options.bundles[mutant.bundle].c_str(),
               (unsigned long long)mutant.seed, description.c_str());
  std::string path = scratch + "/mutant-" + std::to_string(mutant.index) +
                     ".snug";
  if (!writeFile(path, bytes)) {
    std::fprintf(stderr, "error: cannot write '%s'\n", path.c_str());
    _exit(3);
  }
  std::string message;
  HostRunOutcome outcome = loadAndRunOnHost(path, message);
  unlink(path.c_str());
  std::fprintf(stderr, "%s: %s\n", outcomeName(outcome), message.c_str());
  std::fflush(stderr);
  // _exit: no leak check per child (a leak is reported by the fuzzers).
  _exit(outcome == HostRunOutcome::Refused     ? kExitRefused
        : outcome == HostRunOutcome::RunFailed ? kExitRunFailed
                                               : kExitRan);
}

/// The first line of the child's log naming the mutant and the sanitizer's
/// summary, for the finding's report.
std::string summarize(const std::string &logPath) {
  std::ifstream in(logPath);
  std::string line, first, summary, error;
  while (std::getline(in, line)) {
    if (first.empty())
      first = line;
    if (line.rfind("SUMMARY:", 0) == 0 && summary.empty())
      summary = line;
    if (error.empty() && line.find("runtime error:") != std::string::npos)
      error = line;
  }
  std::string text = "  " + first;
  if (!error.empty())
    text += "\n  " + error;
  if (!summary.empty())
    text += "\n  " + summary;
  return text;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  std::vector<std::vector<uint8_t>> bundles;
  for (const std::string &path : options.bundles) {
    bundles.emplace_back();
    if (!readFile(path, bundles.back()) || bundles.back().empty()) {
      std::fprintf(stderr, "error: cannot read bundle '%s'\n", path.c_str());
      return 1;
    }
  }
  auto mutantAt = [&](uint64_t index) {
    Mutant mutant;
    mutant.index = index;
    mutant.seed = mixSeed(options.seed + index);
    mutant.bundle = size_t(index % bundles.size());
    return mutant;
  };

  if (!options.writeDir.empty()) {
    Mutant mutant = mutantAt(uint64_t(options.only));
    std::string description;
    std::vector<uint8_t> bytes =
        mutateBundle(bundles[mutant.bundle], mutant.seed, description);
    std::string path =
        options.writeDir + "/mutant-" + std::to_string(mutant.index) + ".snug";
    if (!writeFile(path, bytes)) {
      std::fprintf(stderr, "error: cannot write '%s'\n", path.c_str());
      return 1;
    }
    std::printf("wrote %s: %s\n", path.c_str(), description.c_str());
    return 0;
  }

  char scratchTemplate[] = "/tmp/snug-mutants-XXXXXX";
  if (!mkdtemp(scratchTemplate)) {
    std::fprintf(stderr, "error: cannot create a scratch directory: %s\n",
                 std::strerror(errno));
    return 1;
  }
  std::string scratch = scratchTemplate;
  std::string logDir = options.logDir.empty() ? scratch : options.logDir;
  mkdir(logDir.c_str(), 0755);

  uint64_t first = options.only >= 0 ? uint64_t(options.only) : 0;
  uint64_t end = options.only >= 0 ? first + 1 : options.count;
  std::map<pid_t, Mutant> running;
  uint64_t refused = 0, runFailed = 0, ran = 0, crashed = 0, hung = 0;
  uint64_t next = first;
  while (next < end || !running.empty()) {
    while (next < end && running.size() < options.jobs) {
      Mutant mutant = mutantAt(next++);
      mutant.logPath = logDir + "/mutant-" + std::to_string(mutant.index) +
                       ".log";
      std::fflush(stdout);
      pid_t pid = fork();
      if (pid < 0) {
        std::fprintf(stderr, "error: fork failed: %s\n", std::strerror(errno));
        return 1;
      }
      if (pid == 0)
        runChild(options, bundles, mutant, scratch);
      running[pid] = mutant;
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0)
      break;
    auto it = running.find(pid);
    if (it == running.end())
      continue;
    Mutant mutant = it->second;
    running.erase(it);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == kExitRefused || code == kExitRunFailed || code == kExitRan) {
      ++(code == kExitRefused ? refused : code == kExitRunFailed ? runFailed
                                                                 : ran);
      if (options.only < 0)
        unlink(mutant.logPath.c_str());
      else
        std::fprintf(stderr, "%s", summarize(mutant.logPath).c_str());
      continue;
    }
    bool timedOut = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM;
    ++(timedOut ? hung : crashed);
    std::string how =
        timedOut ? "HANG (still running after " +
                       std::to_string(options.timeout) + " s)"
        : WIFSIGNALED(status)
            ? "CRASH (signal " + std::to_string(WTERMSIG(status)) + ")"
            : "CRASH (exit " + std::to_string(code) + ")";
    std::printf("mutant %llu (seed 0x%016llx, --only %llu): %s, log %s\n%s\n",
                (unsigned long long)mutant.index,
                (unsigned long long)mutant.seed,
                (unsigned long long)mutant.index, how.c_str(),
                mutant.logPath.c_str(), summarize(mutant.logPath).c_str());
  }
  rmdir(scratch.c_str());
  uint64_t total = refused + runFailed + ran + crashed + hung;
  std::printf("%llu mutants (seed %llu): %llu refused at load, %llu failed "
              "their run, %llu ran, %llu crashed, %llu hung\n",
              (unsigned long long)total, (unsigned long long)options.seed,
              (unsigned long long)refused, (unsigned long long)runFailed,
              (unsigned long long)ran, (unsigned long long)crashed,
              (unsigned long long)hung);
  return crashed || hung ? 1 : 0;
}
