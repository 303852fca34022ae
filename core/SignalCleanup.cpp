//===- SignalCleanup.cpp - What a signal leaves behind --------------------===//
//
// Two fixed tables and their handlers (SignalCleanup.h). A slot is Free,
// Claimed (its owner is filling it in; a handler skips it) or Live (a
// handler may read it). The owner fills the slot in before it publishes
// Live with release order, and a handler reads Live with acquire order
// before it reads the rest, so a handler never sees a half-written path.
//
//===----------------------------------------------------------------------===//
#include "core/SignalCleanup.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

namespace snug {

namespace {

enum SlotState : int { Free, Claimed, Live };

constexpr int kMaxTemporaries = 64;
constexpr size_t kMaxPathBytes = 4096;
constexpr int kMaxMappedFiles = 16;
constexpr size_t kMaxWhatBytes = 1024;

struct TemporarySlot {
  std::atomic<int> state{Free};
  char path[kMaxPathBytes];
};

struct MappedSlot {
  std::atomic<int> state{Free};
  uintptr_t begin = 0, end = 0;
  char what[kMaxWhatBytes];
};

static_assert(std::atomic<int>::is_always_lock_free,
              "a handler may only touch lock-free atomics");

TemporarySlot temporaries[kMaxTemporaries];
MappedSlot mappedFiles[kMaxMappedFiles];
std::atomic<int> faultExitCode{1};

/// Claims a free slot of `table`, or -1.
template <class Slot, int N> int claim(Slot (&table)[N]) {
  for (int i = 0; i < N; ++i) {
    int expected = Free;
    if (table[i].state.compare_exchange_strong(expected, Claimed))
      return i;
  }
  return -1;
}

/// Unlinks every live temporary. Async-signal-safe.
void removeLiveTemporaries() {
  for (TemporarySlot &slot : temporaries)
    if (slot.state.load(std::memory_order_acquire) == Live)
      unlink(slot.path);
}

/// Writes `text` to stderr, retrying short writes. Async-signal-safe.
void writeToStderr(const char *text) {
  size_t left = std::strlen(text);
  while (left) {
    ssize_t wrote = write(STDERR_FILENO, text, left);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote <= 0)
      return;
    text += wrote;
    left -= size_t(wrote);
  }
}

extern "C" void onTerminatingSignal(int signo) {
  removeLiveTemporaries();
  // SA_RESETHAND restored the default action on entry; the signal, blocked
  // while this handler runs, is delivered again when it returns and ends
  // the process.
  raise(signo);
}

extern "C" void onBusError(int signo, siginfo_t *info, void *) {
  auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (MappedSlot &slot : mappedFiles) {
    if (slot.state.load(std::memory_order_acquire) != Live ||
        address < slot.begin || address >= slot.end)
      continue;
    writeToStderr("error: ");
    writeToStderr(slot.what);
    writeToStderr(" could not be read where it is mapped: the file shrank "
                  "while in use (overwritten in place? replace a file in use "
                  "by renaming a new one over it) or a read failed\n");
    removeLiveTemporaries();
    _exit(faultExitCode.load());
  }
  // Not a mapped file's: SA_RESETHAND restored the default action, and
  // the faulting access runs again when this returns.
  (void)signo;
}

} // namespace

int registerTemporary(const char *path) {
  size_t length = std::strlen(path);
  if (length >= kMaxPathBytes)
    return -1;
  int slot = claim(temporaries);
  if (slot < 0)
    return -1;
  std::memcpy(temporaries[slot].path, path, length + 1);
  temporaries[slot].state.store(Live, std::memory_order_release);
  return slot;
}

void unregisterTemporary(int slot) {
  if (slot >= 0 && slot < kMaxTemporaries)
    temporaries[slot].state.store(Free, std::memory_order_release);
}

void removeTemporariesOnSignals() {
  int signals[] = {SIGINT, SIGTERM, SIGHUP};
  for (int signo : signals) {
    struct sigaction old;
    if (sigaction(signo, nullptr, &old) != 0 ||
        (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN))
      continue;
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_handler = onTerminatingSignal;
    // The others wait while one is handled: the temporaries go once.
    sigemptyset(&action.sa_mask);
    for (int other : signals)
      sigaddset(&action.sa_mask, other);
    action.sa_flags = SA_RESETHAND;
    sigaction(signo, &action, nullptr);
  }
}

int registerMappedFile(const void *begin, size_t size,
                       const std::string &what) {
  if (!begin || !size)
    return -1;
  int slot = claim(mappedFiles);
  if (slot < 0)
    return -1;
  MappedSlot &entry = mappedFiles[slot];
  entry.begin = reinterpret_cast<uintptr_t>(begin);
  entry.end = entry.begin + size;
  size_t length = std::min(what.size(), kMaxWhatBytes - 1);
  std::memcpy(entry.what, what.data(), length);
  entry.what[length] = '\0';
  entry.state.store(Live, std::memory_order_release);
  return slot;
}

void unregisterMappedFile(int slot) {
  if (slot >= 0 && slot < kMaxMappedFiles)
    mappedFiles[slot].state.store(Free, std::memory_order_release);
}

void reportFaultsInMappedFiles(int exitCode) {
  faultExitCode.store(exitCode);
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_sigaction = onBusError;
  sigemptyset(&action.sa_mask);
  // The termination signals wait, so they cannot remove the temporaries
  // under the fault's report.
  sigaddset(&action.sa_mask, SIGINT);
  sigaddset(&action.sa_mask, SIGTERM);
  sigaddset(&action.sa_mask, SIGHUP);
  action.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigaction(SIGBUS, &action, nullptr);
}

void pauseForTest(const std::string &point) {
  const char *spec = std::getenv("SNUG_TEST_PAUSE");
  if (!spec)
    return;
  const char *at = std::strchr(spec, '@');
  if (!at || point != std::string(spec, at))
    return;
  const char *marker = at + 1;
  int fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  close(fd);
  struct timespec tick = {0, 10 * 1000 * 1000};
  for (int i = 0; i < 6000 && access(marker, F_OK) == 0; ++i)
    nanosleep(&tick, nullptr);
}

} // namespace snug
