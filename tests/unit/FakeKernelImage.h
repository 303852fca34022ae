//===- FakeKernelImage.h - What the fake driver reads from an image -*- C++ -*-===//
//
// The fake CUDA driver (FakeCuda.cpp) knows a kernel from the image the
// runtime loads, as the real driver does, never from the plan being
// checked: a cubin's ELF (its arch in e_flags; per kernel the parameters
// of .nv.info.K's KPARAM_INFO records, .maxntid from MAX_THREADS, the
// registers in .text.K's sh_info, static shared memory from .nv.shared.K's
// size), or PTX (.version, .target, each .entry's .param list and
// .maxntid/.reqntid). A test image is "FAKE" followed by PTX-style
// .entry declarations for the fake's hand-written host kernels.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_TESTS_UNIT_FAKEKERNELIMAGE_H
#define SNUG_TESTS_UNIT_FAKEKERNELIMAGE_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fakecuda {

struct KernelInfo {
  std::vector<uint32_t> paramSizes; // bytes, in parameter order
  /// The most threads a block may have: 1024, .maxntid, and what the
  /// registers allow (65536 per block, allocated per warp in 256s).
  int maxThreads = 1024;
  int registers = 0;
  uint32_t staticShared = 0;
};

struct KernelImage {
  enum Kind { Cubin, Ptx, Test } kind = Test;
  unsigned arch = 0;       // sm_XX of a cubin, .target of PTX
  unsigned ptxVersion = 0; // .version X.Y as X * 10 + Y
  std::map<std::string, KernelInfo> kernels;
};

/// Parses the image cuModuleLoadDataEx was given; false with `error` set
/// when it is none of the three.
bool parseKernelImage(const void *image, KernelImage &out, std::string &error);

} // namespace fakecuda

#endif // SNUG_TESTS_UNIT_FAKEKERNELIMAGE_H
