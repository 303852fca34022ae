//===- FileAccess.h - Opening, reading and writing files safely -*- C++ -*-===//
//
// The one place snug opens a file it reads or writes: the model, its
// external data, bundles, IR, the memory report, the timeline and
// snug-run's tensor files all go through here.
//
// Reading: InputFile opens a path (symlinks followed) with O_NONBLOCK, so a
// FIFO cannot block, then fstats it and refuses anything that is not a
// regular file (/dev/zero, a FIFO, a directory); reads are bounded by the
// file's size and by what the caller says it expects, so no input is read
// "until the end" of something endless.
//
// Writing: AtomicFileWriter writes to a temporary file in the target's
// directory (symlinks resolved, so the real file is replaced), checks every
// write, fsyncs, and renames the temporary over the target on commit. On
// any failure (a full disk: EFBIG or ENOSPC) the temporary is removed and
// the old target is left intact; so it is when SIGINT, SIGTERM or SIGHUP
// ends a tool that asked for it (core/SignalCleanup.h), while the
// temporary exists. Renaming never disturbs a reader that has
// the old file open or mapped. A character device (/dev/null) is written
// in place: it has no directory entry to replace.
//
// Same file: getPathKey gives a path's identity (device and inode after
// symlinks; for a file that does not exist yet, its resolved directory and
// name), and checkDistinctFiles refuses an output that is the same file as
// an input or as another output, before anything is written.
//
// Std-only (shared with the runtime, which has no LLVM); errors are
// messages that name the path, for the caller's own error type.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_FILEACCESS_H
#define SNUG_CORE_FILEACCESS_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace snug {

/// A file's identity: st_dev and st_ino after following symlinks.
struct FileIdentity {
  uint64_t device = 0, inode = 0;
  bool operator==(const FileIdentity &other) const {
    return device == other.device && inode == other.inode;
  }
  bool operator!=(const FileIdentity &other) const { return !(*this == other); }
};

/// What writing a file in place changes, though not its identity: its size
/// and its modification time (nanoseconds). A reader that maps a file
/// compares the stamp of the open file with the one taken when it opened
/// it to learn whether the bytes it checked may have changed under the
/// mapping. Not the status-change time: renaming a new file over the
/// mapped one changes that (the link count drops) but not the bytes
/// mapped. A writer that sets the old modification time back (touch -d,
/// rsync --inplace -t) goes unseen.
struct FileStamp {
  uint64_t size = 0;
  int64_t modifiedNs = 0;
  bool operator==(const FileStamp &other) const {
    return size == other.size && modifiedNs == other.modifiedNs;
  }
  bool operator!=(const FileStamp &other) const { return !(*this == other); }
};

/// The stamp of the open file `fd`; false when fstat fails.
bool readFileStamp(int fd, FileStamp &stamp);

/// A regular file open for reading.
class InputFile {
public:
  InputFile() = default;
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;
  ~InputFile();

  /// Opens `path` for reading: follows symlinks, never blocks, and refuses
  /// anything but a regular file. False with `error` set ("cannot read
  /// 'PATH': not a regular file (a FIFO)") otherwise.
  bool open(const std::string &path, std::string &error);
  void close();

  bool isOpen() const { return fd >= 0; }
  int getFd() const { return fd; }
  uint64_t getSize() const { return size; }
  FileIdentity getIdentity() const { return identity; }
  /// The stamp when it was opened.
  FileStamp getStamp() const { return stamp; }
  const std::string &getPath() const { return path; }
  /// Why the last open or read failed ("No such file or directory", "not a
  /// regular file (a FIFO)"), for callers that word the message themselves.
  const std::string &getFailureReason() const { return reason; }

  /// Reads exactly `count` bytes at `offset` into `into`; false with `error`
  /// set when they lie past the end of the file or a read fails.
  bool readAt(uint64_t offset, void *into, size_t count,
              std::string &error) const;
  /// Reads the whole file into `into`; false with `error` set when it is
  /// larger than `limit` bytes or a read fails.
  bool readAll(std::vector<uint8_t> &into, uint64_t limit,
               std::string &error) const;
  bool readAll(std::string &into, uint64_t limit, std::string &error) const;

private:
  bool fail(const std::string &why, std::string &error) const;
  template <class Bytes>
  bool readAllInto(Bytes &into, uint64_t limit, std::string &error) const;

  int fd = -1;
  uint64_t size = 0;
  FileIdentity identity;
  FileStamp stamp;
  std::string path;
  mutable std::string reason;
};

/// Reads the regular file at `path` whole, at most `limit` bytes.
bool readWholeRegularFile(const std::string &path, std::vector<uint8_t> &into,
                          uint64_t limit, std::string &error);

/// Reads the stream `fd` (stdin, a pipe) to its end, at most `limit` bytes:
/// a stream has no size to check first, so reading stops, false with
/// `error` set ("'NAME' holds more than LIMIT bytes"), as soon as it passes
/// the limit, not when memory runs out.
bool readWholeStream(int fd, const std::string &name, std::string &into,
                     uint64_t limit, std::string &error);

/// Writes a file atomically (see the file comment).
/// What AtomicFileWriter does with a symbolic link at its path: Follow
/// writes the file it points to (a path the user gave, as -o, may be a
/// link they made); Replace puts the new file in the link's place, never
/// writing through it (names snug chooses inside a directory, where a link
/// planted by someone else could redirect the write anywhere).
enum class LinkPolicy { Follow, Replace };

class AtomicFileWriter {
public:
  AtomicFileWriter() = default;
  AtomicFileWriter(const AtomicFileWriter &) = delete;
  AtomicFileWriter &operator=(const AtomicFileWriter &) = delete;
  /// Removes the temporary unless commit() succeeded.
  ~AtomicFileWriter();

  /// Creates the temporary beside `path`; false with `error` set when the
  /// directory is not writable or `path` is a directory or a FIFO.
  bool open(const std::string &path, std::string &error,
            LinkPolicy links = LinkPolicy::Follow);
  /// Appends `count` bytes; false with `error` set ("cannot write 'PATH':
  /// File too large") when a write fails. Later writes then fail too.
  bool write(const void *data, size_t count, std::string &error);
  /// Flushes to disk and renames the temporary over the target.
  bool commit(std::string &error);
  /// Removes the temporary; the target is untouched.
  void discard();

private:
  bool fail(const std::string &what, int errorNumber, std::string &error);

  int fd = -1;
  std::string target, temporary;
  bool inPlace = false, failed = false;
  /// The temporary's slot in core/SignalCleanup.h's table (-1: none).
  int signalSlot = -1;
  bool pausedForTest = false;
};

/// AtomicFileWriter in one call.
bool writeFileAtomically(const std::string &path, const void *data,
                         size_t count, std::string &error,
                         LinkPolicy links = LinkPolicy::Follow);

/// Writes all `count` bytes to `fd` (stdout, say), retrying short writes;
/// false with `error` naming `name` when a write fails.
bool writeAllToFd(int fd, const void *data, size_t count,
                  const std::string &name, std::string &error);

/// A key that is equal for two paths exactly when they name the same file:
/// "dev:ino" for an existing file (symlinks followed), the resolved
/// directory and the name for one that does not exist yet. Empty for a
/// path that is not a regular file or a would-be one ("-", /dev/null).
std::string getPathKey(const std::string &path);

/// One path a command reads or writes, with what it is for messages
/// ("model", "external data", "--timeline").
struct NamedPath {
  std::string path;
  std::string role;
};

/// False with `error` set ("output 'X' (--timeline) is the same file as
/// input 'Y' (model)") when an output is the same file as an input or as
/// another output. Call it before writing anything.
bool checkDistinctFiles(const std::vector<NamedPath> &inputs,
                        const std::vector<NamedPath> &outputs,
                        std::string &error);

} // namespace snug

#endif // SNUG_CORE_FILEACCESS_H
