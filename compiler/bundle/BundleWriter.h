//===- BundleWriter.h - Writing a planned module as a .snug bundle -*- C++ -*-===//
//
// Serializes a module that carries a memory plan (module attribute `arena`,
// an arena offset on every graph input and node result) into the version-1
// bundle format of core/BundleFormat.h: manifest, the weights the plan
// uses, and the host plan. The file is written to a temporary beside `path`
// and renamed into place, so an error never leaves a half-written bundle.
// The same module and options give a byte-identical file (no timestamps,
// weights in argument order, attributes sorted).
//
// Not done here: checking that the plan does not overlap live buffers (the
// planner's verifier does that); emitting the device plan (compiler/cuda
// does, and hands it over in BundleOptions).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_BUNDLE_BUNDLEWRITER_H
#define SNUG_COMPILER_BUNDLE_BUNDLEWRITER_H

#include "ir/Module.h"
#include "core/DevicePlan.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace snug {

struct BundleOptions {
  /// The pass pipeline that produced the module (recorded in the manifest).
  std::string pipeline;
  /// The compiler's version string (recorded in the manifest).
  std::string compilerVersion;
  /// The CUDA launch plan and kernel images (compiler/cuda); both or
  /// neither. Without them the bundle runs on the host executor only.
  const bundle::DevicePlan *devicePlan = nullptr;
  const std::vector<bundle::KernelImage> *kernelImages = nullptr;
  /// The toolchain that made kernelImages (cuda::getKernelToolchain);
  /// all zeros: not recorded.
  bundle::KernelToolchain toolchain = {};
  /// When not empty, the weights are not embedded: the bundle names this
  /// file (a plain name, beside the bundle) with their size and SHA-256,
  /// and writeBundle writes it (snugc --weights=external).
  std::string externalWeightsName = "";
};

/// The bundle bytes of `module` in memory (the tests', the Python API's);
/// an error when the module has no plan, a value lacks an offset, a
/// location lies outside the arena, or a used weight is elided. With
/// externalWeightsName, the bundle without its weights file.
/// Where the weights section puts each weight: those the plan reads (or
/// returns), in argument order, each at a 64-byte boundary, the section
/// padded to 64 bytes. The memory report predicts with the same layout the
/// writer writes.
struct WeightsLayout {
  std::vector<std::pair<const ir::Value *, uint64_t>> offsets;
  uint64_t bytes = 0;
};
WeightsLayout computeWeightsLayout(const ir::Module &module);

llvm::Expected<std::vector<uint8_t>>
serializeBundle(const ir::Module &module, const BundleOptions &options);

/// The bundle written atomically to `path`, streamed: the weights go from
/// the module's own data to the file, never copied into a buffer first.
/// With externalWeightsName, the weights file is written beside `path`
/// first and removed again when the bundle cannot be written.
llvm::Error writeBundle(const ir::Module &module, llvm::StringRef path,
                        const BundleOptions &options);

} // namespace snug

#endif // SNUG_COMPILER_BUNDLE_BUNDLEWRITER_H
