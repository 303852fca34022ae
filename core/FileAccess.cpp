//===- FileAccess.cpp - Opening, reading and writing files safely ---------===//
//
// POSIX calls behind FileAccess.h: open with O_NONBLOCK and fstat for
// reading, pread in a loop, mkstemp + fsync + rename for writing. Every
// error message is "cannot read|write 'PATH': reason".
//
//===----------------------------------------------------------------------===//
#include "core/FileAccess.h"

#include "core/CheckedArithmetic.h"
#include "core/SignalCleanup.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <csignal>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

namespace snug {

static std::string describeFileType(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISSOCK(mode))
    return "a socket";
  return "not a regular file";
}

static bool readFailure(const std::string &path, const std::string &reason,
                        std::string &error) {
  error = "cannot read '" + path + "': " + reason;
  return false;
}

bool InputFile::fail(const std::string &why, std::string &error) const {
  reason = why;
  return readFailure(path, reason, error);
}

InputFile::~InputFile() { close(); }

void InputFile::close() {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
}

static FileStamp stampOf(const struct stat &info) {
  FileStamp stamp;
  stamp.size = uint64_t(info.st_size);
  stamp.modifiedNs = int64_t(info.st_mtim.tv_sec) * 1000000000 +
                     int64_t(info.st_mtim.tv_nsec);
  return stamp;
}

bool InputFile::open(const std::string &newPath, std::string &error) {
  close();
  path = newPath;
  int opened;
  do
    opened = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  while (opened < 0 && errno == EINTR);
  if (opened < 0)
    return fail(std::strerror(errno), error);
  struct stat info;
  if (fstat(opened, &info) != 0) {
    int saved = errno;
    ::close(opened);
    return fail(std::strerror(saved), error);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(opened);
    std::string type = describeFileType(info.st_mode);
    return fail(type == "not a regular file"
                    ? type
                    : "not a regular file (" + type + ")",
                error);
  }
  int flags = fcntl(opened, F_GETFL);
  if (flags >= 0)
    fcntl(opened, F_SETFL, flags & ~O_NONBLOCK);
  fd = opened;
  size = uint64_t(info.st_size);
  identity.device = uint64_t(info.st_dev);
  identity.inode = uint64_t(info.st_ino);
  stamp = stampOf(info);
  return true;
}

bool readFileStamp(int fd, FileStamp &stamp) {
  struct stat info;
  if (fstat(fd, &info) != 0)
    return false;
  stamp = stampOf(info);
  return true;
}

bool InputFile::readAt(uint64_t offset, void *into, size_t count,
                       std::string &error) const {
  if (fd < 0)
    return fail("not open", error);
  if (!isRangeInside(offset, count, size))
    return fail("bytes [" + std::to_string(offset) + ", " +
                    std::to_string(offset) + "+" + std::to_string(count) +
                    ") lie past its end (" + std::to_string(size) + " bytes)",
                error);
  auto *out = static_cast<uint8_t *>(into);
  size_t done = 0;
  while (done < count) {
    size_t chunk = std::min<size_t>(count - done, size_t(1) << 30);
    ssize_t got = pread(fd, out + done, chunk, off_t(offset + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return fail(std::strerror(errno), error);
    if (got == 0)
      return fail("the file ended after " + std::to_string(offset + done) +
                      " bytes while it was read",
                  error);
    done += size_t(got);
  }
  return true;
}

template <class Bytes>
bool InputFile::readAllInto(Bytes &into, uint64_t limit,
                            std::string &error) const {
  if (size > limit)
    return fail("it holds " + std::to_string(size) + " bytes, more than the " +
                    std::to_string(limit) + " expected",
                error);
  into.resize(size_t(size));
  return size == 0 || readAt(0, &into[0], into.size(), error);
}

bool InputFile::readAll(std::vector<uint8_t> &into, uint64_t limit,
                        std::string &error) const {
  return readAllInto(into, limit, error);
}

bool InputFile::readAll(std::string &into, uint64_t limit,
                        std::string &error) const {
  return readAllInto(into, limit, error);
}

bool readWholeRegularFile(const std::string &path, std::vector<uint8_t> &into,
                          uint64_t limit, std::string &error) {
  InputFile file;
  return file.open(path, error) && file.readAll(into, limit, error);
}

bool readWholeStream(int fd, const std::string &name, std::string &into,
                     uint64_t limit, std::string &error) {
  into.clear();
  char chunk[1 << 16];
  for (;;) {
    ssize_t got = read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      error = "cannot read '" + name + "': " + std::strerror(errno);
      return false;
    }
    if (got == 0)
      return true;
    if (uint64_t(got) > limit - into.size()) {
      error = "cannot read '" + name + "': it holds more than the " +
              std::to_string(limit) + " bytes expected";
      return false;
    }
    into.append(chunk, size_t(got));
  }
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

static std::string parentOf(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

static std::string baseOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// `path` with its symlinks resolved when it exists, else `path`.
static std::string resolveExisting(const std::string &path) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved))
    return resolved;
  return path;
}

AtomicFileWriter::~AtomicFileWriter() { discard(); }

bool AtomicFileWriter::fail(const std::string &what, int errorNumber,
                            std::string &error) {
  error = "cannot write '" + target + "': " + what +
          (errorNumber ? std::string(what.empty() ? "" : ": ") +
                             std::strerror(errorNumber)
                       : "");
  failed = true;
  return false;
}

void AtomicFileWriter::discard() {
  if (fd >= 0)
    ::close(fd);
  fd = -1;
  if (!temporary.empty())
    unlink(temporary.c_str());
  temporary.clear();
  unregisterTemporary(signalSlot);
  signalSlot = -1;
}

bool AtomicFileWriter::open(const std::string &path, std::string &error,
                            LinkPolicy links) {
  discard();
  failed = false;
  inPlace = false;
  target = path;
  if (path.empty())
    return fail("no path given", 0, error);
  mode_t mode;
  struct stat info;
  bool exists;
  if (links == LinkPolicy::Follow) {
    target = resolveExisting(path);
    exists = stat(target.c_str(), &info) == 0;
  } else {
    // The rename below replaces a link itself; nothing is read through it.
    exists = lstat(target.c_str(), &info) == 0 && !S_ISLNK(info.st_mode);
  }
  if (exists) {
    if (S_ISCHR(info.st_mode)) {
      // /dev/null, a terminal: nothing to replace; write in place.
      fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
      if (fd < 0)
        return fail("", errno, error);
      inPlace = true;
      return true;
    }
    if (!S_ISREG(info.st_mode))
      return fail("not a regular file (" + describeFileType(info.st_mode) +
                      ")",
                  0, error);
    mode = info.st_mode & 07777;
  } else {
    mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  std::string pattern =
      parentOf(target) + "/." + baseOf(target) + ".tmp-XXXXXX";
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  // Registered for removal on a signal (core/SignalCleanup.h) with the
  // termination signals held off in this thread, so that none lands
  // between the file's creation and its registration.
  sigset_t terminating, previous;
  sigemptyset(&terminating);
  sigaddset(&terminating, SIGINT);
  sigaddset(&terminating, SIGTERM);
  sigaddset(&terminating, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &terminating, &previous);
  fd = mkstemp(name.data());
  int created = errno;
  if (fd >= 0)
    signalSlot = registerTemporary(name.data());
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (fd < 0)
    return fail("cannot create a temporary file in '" + parentOf(target) + "'",
                created, error);
  temporary = name.data();
  pausedForTest = false;
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  fchmod(fd, mode);
  return true;
}

bool AtomicFileWriter::write(const void *data, size_t count,
                             std::string &error) {
  if (fd < 0 || failed)
    return fail("the file is not open", 0, error);
  const auto *bytes = static_cast<const uint8_t *>(data);
  size_t done = 0;
  while (done < count) {
    size_t chunk = std::min<size_t>(count - done, size_t(1) << 30);
    ssize_t wrote = ::write(fd, bytes + done, chunk);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote < 0) {
      int saved = errno;
      discard();
      return fail("", saved, error);
    }
    done += size_t(wrote);
  }
  if (count && !pausedForTest && !temporary.empty()) {
    pausedForTest = true;
    pauseForTest("write:" + baseOf(target));
  }
  return true;
}

bool AtomicFileWriter::commit(std::string &error) {
  if (fd < 0 || failed)
    return fail("the file is not open", 0, error);
  if (inPlace) {
    int result = ::close(fd);
    fd = -1;
    return result == 0 ? true : fail("", errno, error);
  }
  if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS) {
    int saved = errno;
    discard();
    return fail("", saved, error);
  }
  int result = ::close(fd);
  fd = -1;
  if (result != 0) {
    int saved = errno;
    discard();
    return fail("", saved, error);
  }
  if (rename(temporary.c_str(), target.c_str()) != 0) {
    int saved = errno;
    discard();
    return fail("", saved, error);
  }
  // After the rename: a signal in between unlinks a name that is gone.
  temporary.clear();
  unregisterTemporary(signalSlot);
  signalSlot = -1;
  return true;
}

bool writeFileAtomically(const std::string &path, const void *data,
                         size_t count, std::string &error, LinkPolicy links) {
  AtomicFileWriter writer;
  return writer.open(path, error, links) && writer.write(data, count, error) &&
         writer.commit(error);
}

bool writeAllToFd(int fd, const void *data, size_t count,
                  const std::string &name, std::string &error) {
  const auto *bytes = static_cast<const uint8_t *>(data);
  size_t done = 0;
  while (done < count) {
    ssize_t wrote = ::write(fd, bytes + done, count - done);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote < 0) {
      error = "cannot write " + name + ": " + std::strerror(errno);
      return false;
    }
    done += size_t(wrote);
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Same file
//===----------------------------------------------------------------------===//

std::string getPathKey(const std::string &path) {
  if (path.empty() || path == "-")
    return "";
  struct stat info;
  if (stat(path.c_str(), &info) == 0)
    return S_ISREG(info.st_mode) ? "file:" + std::to_string(info.st_dev) +
                                       ":" + std::to_string(info.st_ino)
                                 : "";
  if (errno != ENOENT)
    return "";
  // A dangling symlink is created where it points.
  char link[PATH_MAX];
  ssize_t length = readlink(path.c_str(), link, sizeof link - 1);
  std::string where = path;
  if (length > 0) {
    link[length] = '\0';
    where = link[0] == '/' ? std::string(link)
                           : parentOf(path) + "/" + std::string(link);
  }
  char directory[PATH_MAX];
  if (!realpath(parentOf(where).c_str(), directory))
    return "";
  return "new:" + std::string(directory) + "/" + baseOf(where);
}

bool checkDistinctFiles(const std::vector<NamedPath> &inputs,
                        const std::vector<NamedPath> &outputs,
                        std::string &error) {
  std::vector<std::string> inputKeys;
  for (const NamedPath &input : inputs)
    inputKeys.push_back(getPathKey(input.path));
  std::vector<std::string> outputKeys;
  for (const NamedPath &output : outputs) {
    std::string key = getPathKey(output.path);
    outputKeys.push_back(key);
    if (key.empty())
      continue;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputKeys[i] == key) {
        error = "output '" + output.path + "' is the same file as input '" +
                inputs[i].path + "' (" + output.role + " would overwrite the " +
                inputs[i].role + ")";
        return false;
      }
    for (size_t i = 0; i + 1 < outputKeys.size(); ++i)
      if (outputKeys[i] == key) {
        error = "output '" + output.path + "' is the same file as output '" +
                outputs[i].path + "' (" + output.role + " and " +
                outputs[i].role + ")";
        return false;
      }
  }
  return true;
}

} // namespace snug
