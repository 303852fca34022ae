//===- SignalCleanup.h - What a signal leaves behind ------------*- C++ -*-===//
//
// Temporaries: AtomicFileWriter (core/FileAccess.h) writes every product to
// a hidden temporary beside it. A tool ended by SIGINT, SIGTERM or SIGHUP
// in the middle of a write (a --weights=external file of gigabytes) left
// that temporary behind. The writer registers each temporary here while it
// exists; a tool that calls removeTemporariesOnSignals() (snugc, snug-opt,
// snug-run) gets a handler that unlinks them, restores the signal's
// default action and raises it again, so the tool still ends by the signal
// (status 128+N in a shell). A signal the tool inherited as ignored (a
// background job's SIGINT) stays ignored.
//
// Mapped files: the runtime maps a bundle and its external weights
// (runtime/BundleReader.cpp). Overwritten in place while a tool runs
// (`cp other.snug model.snug` truncates it first), the pages past the new
// end fault with SIGBUS. The reader registers each mapping with the words
// that name its file; a tool that calls reportFaultsInMappedFiles
// (snug-run) turns a fault inside one into an error naming the file (after
// removing the temporaries) and an exit status of its choosing. A fault
// anywhere else takes the default action, as before.
//
// The handlers touch only a fixed table of lock-free atomics and character
// arrays that is filled before an entry is published, and call only
// unlink, write, raise, sigaction and _exit: async-signal-safe (POSIX
// 2.4.3), no allocation, no lock. A path or name too long for the table,
// or a full table, leaves that entry unregistered: it behaves as before
// (the temporary stays, the fault is a crash), never wrongly. Nothing is
// installed unless a tool asks: the Python package and programs that link
// the runtime keep their own handlers.
//
// Test hook (for tests only, not a feature): with SNUG_TEST_PAUSE set to
// POINT@FILE, the process creates FILE when it reaches POINT and waits
// there until FILE is removed (60 s at most), so that a test can send a
// signal or truncate a bundle at a known moment. The points:
//   write:NAME  an AtomicFileWriter writing a file named NAME, after its
//               first bytes went to the temporary
//   run         snug-run, bundle loaded and session created, before the
//               first run
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_SIGNALCLEANUP_H
#define SNUG_CORE_SIGNALCLEANUP_H

#include <cstddef>
#include <string>

namespace snug {

/// Registers `path` for removal when a signal ends the process; the slot to
/// unregister it with, or -1 when the table is full or the path too long.
int registerTemporary(const char *path);
/// Forgets a slot registerTemporary returned (-1: nothing).
void unregisterTemporary(int slot);

/// Registers `path` for removal on a signal while the guard lives: a file
/// already in place whose companion is still being written (writeBundle's
/// external weights, which an error removes too).
class RemoveOnSignal {
public:
  explicit RemoveOnSignal(const std::string &path)
      : slot(registerTemporary(path.c_str())) {}
  ~RemoveOnSignal() { unregisterTemporary(slot); }
  RemoveOnSignal(const RemoveOnSignal &) = delete;
  RemoveOnSignal &operator=(const RemoveOnSignal &) = delete;

private:
  int slot;
};

/// Installs the handler for SIGINT, SIGTERM and SIGHUP (each one not
/// ignored) that removes the registered temporaries and ends the process
/// by the signal.
void removeTemporariesOnSignals();

/// Registers the mapping [begin, begin + size) of the file `what` names
/// ("bundle 'model.snug'"); the slot to unregister it with before the
/// mapping goes, or -1 when the table is full.
int registerMappedFile(const void *begin, size_t size, const std::string &what);
/// Forgets a slot registerMappedFile returned (-1: nothing).
void unregisterMappedFile(int slot);

/// Installs the SIGBUS handler: a fault inside a registered mapping prints
/// "error: WHAT ..." on stderr, removes the registered temporaries and
/// exits with `exitCode`; any other SIGBUS takes the default action.
void reportFaultsInMappedFiles(int exitCode);

/// The test hook (see the file comment): waits at `point` when
/// SNUG_TEST_PAUSE names it; returns at once otherwise.
void pauseForTest(const std::string &point);

} // namespace snug

#endif // SNUG_CORE_SIGNALCLEANUP_H
