//===- KernelLibrary.cpp - Emitted CUDA built as a host library -----------===//
#include "tests/cudasim/KernelLibrary.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace snug {
namespace cudasim {

static std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string buildKernelLibrary(const std::string &source,
                               const std::string &extraFlags,
                               const std::string &cacheDir,
                               const std::string &prefix, std::string &error) {
  // FNV-1a over everything the library depends on.
  uint64_t hash = 1469598103934665603ull;
  for (const std::string &part :
       {source, extraFlags, readText(SNUG_CUDASIM_DIR "/CudaSim.h"),
        readText(SNUG_CUDASIM_DIR "/compile_kernels.sh")})
    for (unsigned char c : part + '\0')
      hash = (hash ^ c) * 1099511628211ull;
  char key[32];
  std::snprintf(key, sizeof key, "%016llx", (unsigned long long)hash);
  std::error_code fsError;
  std::filesystem::create_directories(cacheDir, fsError);
  std::string library = cacheDir + "/" + prefix + "-" + key + ".so";
  if (std::filesystem::exists(library))
    return library;
  std::string stem = library + "." + std::to_string(getpid());
  {
    std::ofstream out(stem + ".cu");
    out << source;
  }
  std::string command = "sh " SNUG_CUDASIM_DIR "/compile_kernels.sh " + stem +
                        ".cu " + stem + ".so " + extraFlags;
  int status = std::system(command.c_str());
  std::error_code ignored;
  std::filesystem::remove(stem + ".cu", ignored);
  if (status != 0) {
    error = "failed: " + command;
    return "";
  }
  std::filesystem::rename(stem + ".so", library, fsError);
  if (fsError) {
    error = fsError.message();
    return "";
  }
  return library;
}

} // namespace cudasim
} // namespace snug
