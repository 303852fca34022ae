//===- BundleReader.h - Reading and checking a .snug bundle -----*- C++ -*-===//
//
// Reads a bundle of format version 1 to 4 (core/BundleFormat.h; a v1
// device plan's one workspace becomes every GEMM's, v1 and v2 host plans
// have no op bodies, v1 to v3 carry FNV-1a 64 instead of SHA-256) into
// memory and checks it completely before anything runs: magic, version,
// file size, digest, section table, the manifest's arena and weights sizes
// (at most kMaxTensorBytes, before anything is sized by them), that every
// location of the manifest and the host plan lies inside the arena or the
// weights section, and that every op body is closed and typed: value indices in
// range and defined before use, block arguments typed as the op's operands,
// the yield as its results, every result of one shape and every body value
// broadcasting to it. A bundle that passes can be executed without further
// bounds checks on locations, bodies included (a body only reads its
// operands at broadcast offsets of the result index). Last, the plan
// verifier (runtime/PlanVerifier.h) holds every op to what its kernel
// relies on. Errors name the file.
//
// Not done here: whether the host has a kernel for each op (the executor
// checks that when the bundle is loaded through the C API), whether the plan
// overlaps live buffers across ops (the planner's verifier's job, which the
// bundle writer runs before it writes).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_BUNDLEREADER_H
#define SNUG_RUNTIME_BUNDLEREADER_H

#include "core/BundleFormat.h"
#include "core/DevicePlan.h"
#include "core/FileAccess.h"
#include "runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace snug {
namespace rt {

/// Where a tensor of the plan lives.
struct Location {
  uint8_t kind = bundle::Absent; // bundle::LocationKind
  uint8_t dtype = 0;             // bundle::DTypeCode
  std::vector<int64_t> dims;
  uint64_t offset = 0;
  uint64_t bytes = 0;
  int64_t numElements = 0;

  bool isPresent() const { return kind != bundle::Absent; }
};

struct Attr {
  uint8_t kind = bundle::AttrInt; // bundle::AttrKind
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  // Tensor: dtype, dims and bytes.
  uint8_t tensorDType = 0;
  std::vector<int64_t> tensorDims;
  std::vector<uint8_t> tensorBytes;
};

/// The type of a value inside an op body.
struct BodyType {
  uint8_t dtype = 0; // bundle::DTypeCode
  std::vector<int64_t> dims;
  int64_t numElements = 0;
};

/// One op of a body: values are numbered block arguments first, then each
/// op's results in order.
struct BodyOp {
  std::string opName;
  std::string nodeName;
  std::vector<std::pair<std::string, Attr>> attributes; // sorted by name
  std::vector<uint32_t> operands; // value indices; bundle::kNoValue: absent
  std::vector<BodyType> results;

  const Attr *getAttr(const std::string &name) const;
};

/// An op's body (snug.fused): computed per element of the op's results.
struct PlanBody {
  std::vector<BodyType> arguments; // one per operand
  std::vector<BodyOp> ops;
  std::vector<uint32_t> yield; // value indices, one per result
  /// Every value's type, by value index (arguments, then op results).
  std::vector<BodyType> values;
};

struct PlanOp {
  std::string opName;
  std::string nodeName;
  std::vector<std::pair<std::string, Attr>> attributes; // sorted by name
  std::vector<Location> operands;
  std::vector<Location> results;
  bool hasBody = false;
  PlanBody body;
  /// The operands of the op itself; an epilogue's extra operands follow
  /// (ir/Module.h). All of them for every other op.
  size_t numOwnOperands = 0;
  size_t getNumOwnOperands() const { return numOwnOperands; }

  const Attr *getAttr(const std::string &name) const;
  /// "node 'conv1' (Conv)" or "op #3 (Conv)".
  std::string describe(size_t index) const;
};

/// A kernel image inside the bundle's storage (not copied).
struct KernelImageRef {
  uint8_t kind = 0; // bundle::KernelImageKind
  uint32_t arch = 0;
  const uint8_t *data = nullptr;
  uint64_t size = 0;
};

struct TensorDesc {
  std::string name;
  Location location;
};

/// A weight that is persistent state (the State section): after each run
/// output `output` is copied over weights bytes [weightOffset, + bytes).
struct StateDesc {
  std::string name;
  uint8_t role = bundle::StateParameter; // bundle::StateRole
  uint64_t weightOffset = 0;
  uint64_t bytes = 0;
  uint32_t output = 0; // index into Bundle::outputs
};

/// A loaded bundle. The file stays mapped (or copied, 64-byte aligned) for
/// the weights, which are used in place; everything else is decoded.
class Bundle {
public:
  std::string path;
  uint32_t version = 0;
  uint64_t planHash = 0;
  std::string compilerVersion;
  std::string pipeline;
  std::string moduleName;
  uint64_t arenaSize = 0;
  uint64_t alignment = 0;
  uint64_t weightsSize = 0;
  /// The pinned host region offloaded values use (0 without offload).
  uint64_t hostSize = 0;
  uint64_t lowerBound = 0;
  std::vector<TensorDesc> inputs;
  std::vector<TensorDesc> outputs;
  std::vector<PlanOp> ops;
  /// Persistent state, in the writer's order (empty: a pure function).
  std::vector<StateDesc> state;
  /// The state entry named `name`, or null.
  const StateDesc *findState(const std::string &name) const;
  /// The CUDA launch plan and kernel images, when the bundle was compiled
  /// for CUDA; every pointer, copy and GEMM extent in it was checked against
  /// the device arena and the weights.
  bool hasDevicePlan = false;
  bundle::DevicePlan devicePlan;
  std::vector<KernelImageRef> kernelImages;
  /// What made the kernel images and the oldest driver that loads them
  /// (all zeros: not recorded, as before format 8).
  bundle::KernelToolchain toolchain;

  const uint8_t *getWeights() const { return weights; }
  /// The weights file's path when they are external ("" when embedded).
  std::string externalWeightsPath;

  /// Keeps `file` (mapped for this bundle) open with the stamp it had when
  /// opened, before its bytes were checked; `what` names it in messages
  /// ("bundle 'model.snug'").
  Status watchFile(const InputFile &file, const std::string &what);
  /// An error naming the first watched file written in place since it was
  /// opened (a new size or modification time): the mapping may then show other
  /// bytes than the ones checked at load. A file replaced by renaming a new
  /// one over it is not: the mapping keeps the old one. The executors call
  /// it after reading from the mapping, not the byte parser: a bundle
  /// parsed from memory watches nothing.
  Status checkFilesUnchanged() const;

  ~Bundle();

private:
  friend Status decodeBundle(const uint8_t *, size_t, const std::string &,
                             std::unique_ptr<Bundle> &);
  friend Status parseBundle(const uint8_t *, size_t, const std::string &,
                            std::unique_ptr<Bundle> &);
  friend Status readBundle(const std::string &, std::unique_ptr<Bundle> &);
  /// The file's bytes: a read-only mapping of the file (readBundle) or a
  /// 64-byte aligned copy (parseBundle).
  uint8_t *storage = nullptr;
  size_t storageSize = 0;
  bool mapped = false;
  const uint8_t *weights = nullptr;
  /// The mapping of an external weights file (null when embedded).
  void *weightsMap = nullptr;
  size_t weightsMapSize = 0;
  /// The mappings' slots in core/SignalCleanup.h's table (-1: none), so
  /// that a tool can name the file whose mapping faults.
  int storageFaultSlot = -1, weightsFaultSlot = -1;
  struct WatchedFile {
    int fd = -1;
    FileStamp stamp;
    std::string what;
  };
  std::vector<WatchedFile> watchedFiles;
};

/// Maps (mmap, read-only) and checks the bundle at `path`; the weights are
/// used from the mapping without a copy.
Status readBundle(const std::string &path, std::unique_ptr<Bundle> &out);
/// Checks and decodes `size` bytes; `name` names them in messages. Copies
/// the bytes (the result does not refer to `data`).
Status parseBundle(const uint8_t *data, size_t size, const std::string &name,
                   std::unique_ptr<Bundle> &out);

} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_BUNDLEREADER_H
