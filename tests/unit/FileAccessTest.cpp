//===- FileAccessTest.cpp - core/FileAccess.h --------------------------===//
//
// Opening only regular files (a FIFO fails at once instead of blocking),
// bounded reads, atomic writes that leave the old file intact when a write
// fails (a file-size limit stands in for a full disk), and same-file keys
// through symlinks and hard links; the temporaries a signal removes and
// the mapped files whose faults are reported (core/SignalCleanup.h).
//
//===----------------------------------------------------------------------===//
#include "core/FileAccess.h"
#include "core/SignalCleanup.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace snug;

namespace {

/// A fresh directory, removed with its files.
class TempDir {
public:
  TempDir() {
    char pattern[] = "/tmp/snug-fileaccess-XXXXXX";
    path = mkdtemp(pattern);
  }
  ~TempDir() {
    for (const std::string &name : list())
      unlink((path + "/" + name).c_str());
    rmdir(path.c_str());
  }
  std::string file(const std::string &name) const { return path + "/" + name; }
  /// Every entry but . and ..
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    if (DIR *dir = opendir(path.c_str())) {
      while (dirent *entry = readdir(dir))
        if (std::string(entry->d_name) != "." &&
            std::string(entry->d_name) != "..")
          names.push_back(entry->d_name);
      closedir(dir);
    }
    return names;
  }
  std::string path;
};

void put(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string get(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

TEST(FileAccessTest, OpensOnlyRegularFiles) {
  TempDir dir;
  put(dir.file("a"), "hello");
  InputFile file;
  std::string error;
  ASSERT_TRUE(file.open(dir.file("a"), error)) << error;
  EXPECT_EQ(file.getSize(), 5u);
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(file.readAll(bytes, 5, error)) << error;
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "hello");
  // More than the caller expects is an error, not a bigger allocation.
  EXPECT_FALSE(file.readAll(bytes, 4, error));
  EXPECT_NE(error.find("more than the 4 expected"), std::string::npos) << error;
  char two[2];
  EXPECT_FALSE(file.readAt(4, two, 2, error));
  EXPECT_NE(error.find("past its end"), std::string::npos) << error;

  // A FIFO with no writer: refused at once (open would block without
  // O_NONBLOCK, and a read would wait forever).
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  EXPECT_FALSE(file.open(dir.file("fifo"), error));
  EXPECT_NE(error.find("not a regular file (a FIFO)"), std::string::npos)
      << error;
  EXPECT_FALSE(file.open("/dev/zero", error));
  EXPECT_NE(error.find("a character device"), std::string::npos) << error;
  EXPECT_FALSE(file.open(dir.path, error));
  EXPECT_NE(error.find("a directory"), std::string::npos) << error;
  EXPECT_FALSE(file.open(dir.file("missing"), error));
  EXPECT_EQ(error, "cannot read '" + dir.file("missing") +
                       "': No such file or directory");
}

// A stream (snug-opt's stdin) has no size to check first: reading stops at
// the limit instead of growing until memory runs out (/dev/zero never
// ends), and a stream within the limit is read whole.
TEST(FileAccessTest, StreamReadsAreBounded) {
  int zero = ::open("/dev/zero", O_RDONLY);
  ASSERT_GE(zero, 0);
  std::string text, error;
  EXPECT_FALSE(readWholeStream(zero, "stdin", text, 300000, error));
  ::close(zero);
  EXPECT_EQ(error,
            "cannot read 'stdin': it holds more than the 300000 bytes expected");
  EXPECT_LE(text.size(), 300000u);

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], "func @f", 7), 7);
  ::close(fds[1]);
  EXPECT_TRUE(readWholeStream(fds[0], "stdin", text, 7, error)) << error;
  ::close(fds[0]);
  EXPECT_EQ(text, "func @f");
}

TEST(FileAccessTest, AtomicWriteReplacesTheRealFile) {
  TempDir dir;
  put(dir.file("target"), "old");
  chmod(dir.file("target").c_str(), 0640);
  ASSERT_EQ(symlink("target", dir.file("link").c_str()), 0);
  std::string error;
  // Through the symlink: the real file is replaced, the link stays a link.
  ASSERT_TRUE(writeFileAtomically(dir.file("link"), "new!", 4, error))
      << error;
  EXPECT_EQ(get(dir.file("target")), "new!");
  struct stat info;
  ASSERT_EQ(lstat(dir.file("link").c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode));
  ASSERT_EQ(stat(dir.file("target").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0640u);
  EXPECT_EQ(dir.list().size(), 2u); // no temporary left
  // Not committed: nothing changes, nothing is left.
  {
    AtomicFileWriter writer;
    ASSERT_TRUE(writer.open(dir.file("target"), error)) << error;
    ASSERT_TRUE(writer.write("discarded", 9, error)) << error;
  }
  EXPECT_EQ(get(dir.file("target")), "new!");
  EXPECT_EQ(dir.list().size(), 2u);
  // /dev/null is written in place; a directory is refused.
  EXPECT_TRUE(writeFileAtomically("/dev/null", "x", 1, error)) << error;
  EXPECT_FALSE(writeFileAtomically(dir.path, "x", 1, error));
  EXPECT_NE(error.find("a directory"), std::string::npos) << error;
}

TEST(FileAccessTest, FailedWriteLeavesTheOldFile) {
  TempDir dir;
  put(dir.file("target"), "the old contents");
  // A 4 KiB file-size limit, SIGXFSZ ignored: writes past it fail with
  // EFBIG, as on a full disk.
  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  struct rlimit small = saved;
  small.rlim_cur = 4096;
  auto oldHandler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string big(64 * 1024, 'x'), error;
  bool ok = writeFileAtomically(dir.file("target"), big.data(), big.size(),
                                error);
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, oldHandler);
  EXPECT_FALSE(ok);
  EXPECT_EQ(error, "cannot write '" + dir.file("target") +
                       "': File too large");
  EXPECT_EQ(get(dir.file("target")), "the old contents");
  EXPECT_EQ(dir.list(), std::vector<std::string>{"target"});
}

TEST(FileAccessTest, SameFileThroughLinks) {
  TempDir dir;
  put(dir.file("model"), "m");
  put(dir.file("other"), "o");
  ASSERT_EQ(symlink("model", dir.file("soft").c_str()), 0);
  ASSERT_EQ(link(dir.file("model").c_str(), dir.file("hard").c_str()), 0);
  EXPECT_EQ(getPathKey(dir.file("soft")), getPathKey(dir.file("model")));
  EXPECT_EQ(getPathKey(dir.file("hard")), getPathKey(dir.file("model")));
  EXPECT_NE(getPathKey(dir.file("other")), getPathKey(dir.file("model")));
  EXPECT_EQ(getPathKey(dir.file("new")), getPathKey(dir.path + "/./new"));
  EXPECT_EQ(getPathKey("/dev/null"), "");
  EXPECT_EQ(getPathKey("-"), "");

  std::string error;
  std::vector<NamedPath> inputs = {{dir.file("model"), "model"}};
  EXPECT_TRUE(checkDistinctFiles(
      inputs, {{dir.file("new"), "-o"}, {"/dev/null", "--timeline"}}, error));
  EXPECT_FALSE(checkDistinctFiles(inputs, {{dir.file("hard"), "-o"}}, error));
  EXPECT_EQ(error, "output '" + dir.file("hard") +
                       "' is the same file as input '" + dir.file("model") +
                       "' (-o would overwrite the model)");
  // Two outputs onto one file that does not exist yet.
  EXPECT_FALSE(checkDistinctFiles(
      inputs, {{dir.file("new"), "-o"}, {dir.path + "/./new", "--timeline"}},
      error));
  EXPECT_NE(error.find("is the same file as output"), std::string::npos)
      << error;
}

// core/SignalCleanup.h, in forked children (death tests): the handlers
// end the process.

TEST(FileAccessTest, SignalRemovesTheTemporary) {
  TempDir dir;
  put(dir.file("old"), "old");
  for (int signo : {SIGTERM, SIGINT, SIGHUP}) {
    EXPECT_EXIT(
        {
          removeTemporariesOnSignals();
          AtomicFileWriter writer;
          std::string error;
          if (!writer.open(dir.file("old"), error) ||
              !writer.write("new", 3, error) || dir.list().size() != 2)
            std::_Exit(3);
          std::raise(signo);
          std::_Exit(4);
        },
        testing::KilledBySignal(signo), "");
    EXPECT_EQ(dir.list(), std::vector<std::string>{"old"});
    EXPECT_EQ(get(dir.file("old")), "old");
  }
  // A signal the process inherited as ignored stays ignored.
  EXPECT_EXIT(
      {
        std::signal(SIGTERM, SIG_IGN);
        removeTemporariesOnSignals();
        std::raise(SIGTERM);
        std::_Exit(5);
      },
      testing::ExitedWithCode(5), "");
}

TEST(FileAccessTest, TemporaryTableHasRoomAndLimits) {
  std::vector<int> slots;
  for (int i = 0; i < 64; ++i)
    slots.push_back(
        registerTemporary(("/nowhere/" + std::to_string(i)).c_str()));
  EXPECT_EQ(std::count(slots.begin(), slots.end(), -1), 0);
  EXPECT_EQ(registerTemporary("/nowhere/full"), -1);
  for (int slot : slots)
    unregisterTemporary(slot);
  EXPECT_EQ(registerTemporary(std::string(5000, 'x').c_str()), -1);
  int slot = registerTemporary("/nowhere/again");
  EXPECT_GE(slot, 0);
  unregisterTemporary(slot);
}

/// A file of two pages mapped read-only, then cut to nothing: a read
/// faults with SIGBUS.
static void readShrunkMapping(const std::string &path, bool registered) {
  put(path, std::string(8192, 'w'));
  int fd = open(path.c_str(), O_RDONLY);
  void *map = mmap(nullptr, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED)
    std::_Exit(3);
  if (registered)
    registerMappedFile(map, 8192, "bundle '" + path + "'");
  reportFaultsInMappedFiles(1);
  if (truncate(path.c_str(), 0) != 0)
    std::_Exit(4);
  volatile const char *bytes = static_cast<const char *>(map);
  std::_Exit(bytes[4096] == 'w' ? 5 : 6);
}

TEST(FileAccessTest, FaultInAMappedFileIsAnError) {
  TempDir dir;
  EXPECT_EXIT(readShrunkMapping(dir.file("m.snug"), true),
              testing::ExitedWithCode(1),
              "error: bundle '.*m.snug' could not be read where it is "
              "mapped: the file shrank while in use");
  // Outside every registered mapping: the default action, as before.
  EXPECT_EXIT(readShrunkMapping(dir.file("other.snug"), false),
              testing::KilledBySignal(SIGBUS), "");
}
