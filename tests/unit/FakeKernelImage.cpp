//===- FakeKernelImage.cpp - What the fake driver reads from an image -----===//
#include "FakeKernelImage.h"

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <regex>
#include <sstream>

namespace fakecuda {

namespace {

// .nv.info attributes (the EIATTR_ numbers cuobjdump prints by name).
constexpr uint8_t kMaxThreads = 0x05, kParamInfo = 0x17;
constexpr uint8_t kFormatSizedValue = 0x04;

int maxThreadsForRegisters(int registers) {
  if (registers <= 0)
    return 1024;
  int perWarp = (registers * 32 + 255) / 256 * 256;
  return std::min(1024, 65536 / perWarp * 32);
}

bool parseCubin(const uint8_t *data, KernelImage &out, std::string &error) {
  Elf64_Ehdr header;
  std::memcpy(&header, data, sizeof header);
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shoff == 0) {
    error = "not a 64-bit CUDA ELF";
    return false;
  }
  out.kind = KernelImage::Cubin;
  // CUDA's ELF ABI version 8 (CUDA 12.8 and newer) moved the SM to bits
  // 8-15 of e_flags; older cubins have it in bits 0-7.
  out.arch = header.e_ident[EI_ABIVERSION] >= 8 ? (header.e_flags >> 8) & 0xff
                                                : header.e_flags & 0xff;
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  for (size_t i = 0; i < sections.size(); ++i)
    std::memcpy(&sections[i], data + header.e_shoff + i * header.e_shentsize,
                sizeof(Elf64_Shdr));
  const char *names =
      reinterpret_cast<const char *>(data + sections[header.e_shstrndx].sh_offset);
  auto suffix = [](const std::string &name, const char *prefix) {
    size_t n = std::strlen(prefix);
    return name.compare(0, n, prefix) ? std::string() : name.substr(n);
  };
  // Every kernel has its constant bank 0 (parameters and driver data);
  // device functions do not.
  for (const Elf64_Shdr &s : sections) {
    std::string name = names + s.sh_name;
    std::string kernel = suffix(name, ".nv.constant0.");
    if (!kernel.empty())
      out.kernels[kernel];
  }
  std::map<std::string, int> maxntid;
  for (const Elf64_Shdr &s : sections) {
    std::string name = names + s.sh_name;
    if (std::string k = suffix(name, ".text."); out.kernels.count(k))
      out.kernels[k].registers = int(s.sh_info >> 24);
    if (std::string k = suffix(name, ".nv.shared."); out.kernels.count(k))
      out.kernels[k].staticShared = uint32_t(s.sh_size);
    std::string k = suffix(name, ".nv.info.");
    if (!out.kernels.count(k))
      continue;
    KernelInfo &info = out.kernels[k];
    // Records: format, attribute, then a 16-bit value, or for the sized
    // format a 16-bit size and that many bytes.
    const uint8_t *p = data + s.sh_offset, *end = p + s.sh_size;
    std::map<uint16_t, uint32_t> params; // ordinal -> bytes
    while (p + 4 <= end) {
      uint8_t format = p[0], attribute = p[1];
      uint16_t size;
      std::memcpy(&size, p + 2, 2);
      const uint8_t *value = p + 4;
      p += 4 + (format == kFormatSizedValue ? size : 0);
      if (format != kFormatSizedValue)
        continue;
      if (attribute == kParamInfo && size >= 12) {
        uint16_t ordinal;
        uint32_t flags;
        std::memcpy(&ordinal, value + 4, 2);
        std::memcpy(&flags, value + 8, 4);
        params[ordinal] = (flags >> 18) & 0x3fff;
      } else if (attribute == kMaxThreads && size >= 12) {
        uint32_t dims[3];
        std::memcpy(dims, value, 12);
        maxntid[k] = int(dims[0] * dims[1] * dims[2]);
      }
    }
    for (auto &param : params)
      info.paramSizes.push_back(param.second);
  }
  for (auto &[name, info] : out.kernels) {
    info.maxThreads = maxThreadsForRegisters(info.registers);
    if (maxntid.count(name))
      info.maxThreads = std::min(info.maxThreads, maxntid[name]);
  }
  return true;
}

uint32_t ptxTypeBytes(const std::string &type) {
  if (type.size() < 3)
    return 0;
  return uint32_t(std::stoul(type.substr(2))) / 8; // .u64 -> 8, .b8 -> 1
}

/// PTX (or a test image's PTX-style declarations): .version, .target and
/// each .entry's parameters and thread limits.
bool parsePtx(const std::string &text, KernelImage &out, std::string &error) {
  std::smatch m;
  if (std::regex_search(text, m, std::regex(R"(\.version\s+(\d+)\.(\d+))")))
    out.ptxVersion = unsigned(std::stoul(m[1]) * 10 + std::stoul(m[2]));
  if (std::regex_search(text, m, std::regex(R"(\.target\s+sm_(\d+))")))
    out.arch = unsigned(std::stoul(m[1]));
  static const std::regex entry(R"(\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\))");
  static const std::regex param(
      R"(\.param\s+(?:\.align\s+\d+\s+)?(\.[a-z]\d+)\s+(?:\.ptr\s+)?(?:\.\w+\s+)*(?:\.align\s+\d+\s+)?[\w$]+(?:\[(\d+)\])?)");
  static const std::regex threads(R"(^\s*\.(?:maxntid|reqntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), entry);
       it != std::sregex_iterator(); ++it) {
    KernelInfo &info = out.kernels[(*it)[1]];
    std::string list = (*it)[2];
    for (auto p = std::sregex_iterator(list.begin(), list.end(), param);
         p != std::sregex_iterator(); ++p) {
      uint32_t bytes = ptxTypeBytes((*p)[1]);
      if ((*p)[2].matched)
        bytes *= uint32_t(std::stoul((*p)[2]));
      info.paramSizes.push_back(bytes);
    }
    // The performance directives between the parameter list and the body.
    size_t after = size_t(it->position(0) + it->length(0));
    size_t body = text.find('{', after);
    std::istringstream lines(text.substr(after, body - after));
    for (std::string line; std::getline(lines, line);)
      if (std::regex_search(line, m, threads)) {
        int count = 1;
        for (int d = 1; d <= 3; ++d)
          if (m[d].matched)
            count *= std::stoi(m[d]);
        info.maxThreads = std::min(info.maxThreads, count);
      }
  }
  if (out.kernels.empty() && out.kind == KernelImage::Ptx) {
    error = "PTX without an .entry";
    return false;
  }
  return true;
}

} // namespace

bool parseKernelImage(const void *image, KernelImage &out, std::string &error) {
  const auto *bytes = static_cast<const uint8_t *>(image);
  if (!std::memcmp(bytes, ELFMAG, SELFMAG))
    return parseCubin(bytes, out, error);
  const char *text = static_cast<const char *>(image);
  if (!std::strncmp(text, "FAKE", 4)) {
    out.kind = KernelImage::Test;
    return parsePtx(text, out, error);
  }
  std::string ptx(text);
  if (ptx.find(".version") == std::string::npos ||
      ptx.find(".target") == std::string::npos) {
    error = "neither a cubin nor PTX";
    return false;
  }
  out.kind = KernelImage::Ptx;
  return parsePtx(ptx, out, error);
}

} // namespace fakecuda
