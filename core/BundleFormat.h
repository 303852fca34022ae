//===- BundleFormat.h - The .snug file layout, version 9 --------*- C++ -*-===//
//
// Constants and codes shared by the bundle writer (compiler/bundle) and the
// bundle reader (runtime). Header-only and free of LLVM so both sides include
// it. Everything is little-endian.
//
//   header (64 bytes; 32 before version 4)
//     0  char[8]  magic "SNUGBNDL"
//     8  u32      format version (kBundleVersion)
//     12 u32      section count
//     16 u64      file size
//     24 u8[32]   digest: SHA-256 (core/Sha256.h) of the whole file
//                 except this field (bytes [0, 24) then [56, file size))
//     56 u64      zero
//                 Before version 4: at 24 a u64 FNV-1a 64 of the file
//                 except that field, and the section table at 32.
//                 The digest detects corruption and accidental edits; it
//                 does not authenticate (anyone can recompute it): the
//                 reader's plan verifier (runtime/PlanVerifier.h) is what
//                 keeps a crafted bundle inside its buffers.
//   section table (count x 24 bytes): u32 kind, u32 flags, u64 offset, u64 size
//   sections, each starting on a 64-byte boundary of the file:
//     Manifest   names, dtypes, dims and locations of inputs/outputs; arena
//                size and alignment; weights size; pipeline; snug version
//     Weights    raw weight bytes, each weight on a 64-byte boundary of the
//                section (so an mmap of the file gives aligned weights)
//     ExternalWeights (instead of Weights): string file name (no directory:
//                the file lies beside the bundle), u64 size, u8[32] SHA-256
//                of the file; the file holds exactly what Weights would.
//                Readers from before it skip the unknown section and then
//                refuse the bundle for its missing weights.
//     HostPlan   ops in schedule order: name, attributes, operand and result
//                locations (absent | arena offset | weights offset), and
//                from version 3 an op body
//     PinnedHost (optional): u64 bytes of the pinned host region, where
//                offloaded values (snug.offload results) sit between their
//                copy out and their copy back; Host locations lie in it.
//                Readers from before it skip the section and then refuse
//                the bundle for its unknown location kind.
//     DevicePlan, KernelImages (optional, together): the CUDA launch plan and
//                the kernels' cubins and PTX, from version 8 with the
//                toolchain that made them; see core/DevicePlan.h.
//     State      (optional): the persistent state of a training step
//                (ir/State.h): a list of entries, each string name, u8 role
//                (StateRole), u64 weights offset, u64 bytes, u32 output
//                index. The weight at that offset is mutable: its bytes in
//                Weights are only its first value, and after each run the
//                executor copies the output (an arena value of the same
//                bytes) over it. Readers from before it skip the section
//                and run the bundle as a pure step: the same first step,
//                the updated values as outputs.
//
// The encoding inside Manifest and HostPlan is a flat stream: u8/u32/u64/i64/
// f32 little-endian, a string is u32 length + bytes (no terminator), a list is
// u32 count + elements. A location is u8 kind, u8 dtype, u16 zero, u32 rank,
// rank x i64 dims, u64 offset (into the arena, the weights or the pinned host
// region, by kind). An attribute is string name, u8 kind, value.
//
// A host plan op is: string op name, string node name, list of attributes,
// list of operand locations, list of result locations, and (from version 3)
// u8 has-body (0 or 1) followed, when 1, by the body:
//   list of block argument types       (one per operand, in order)
//   list of body ops, each: string op name, string node name, list of
//        attributes, list of u32 operand value indices (kNoValue: absent),
//        list of result types
//   list of u32 yield value indices    (one per result, in order)
// A type is u8 dtype, u8 zero, u16 zero, u32 rank, rank x i64 dims (a
// location without its kind and offset). Body values are numbered block
// arguments first, then each body op's results in order; an operand index
// names a value defined before its op. Bodies do not nest. Version 1 and 2
// files (no has-body byte) are still read; they have no bodies.
//
// Dtype codes are ONNX's TensorProto.DataType numbers, so the C API, the .pb
// reader of snug-run and the bundle agree without a table.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_CORE_BUNDLEFORMAT_H
#define SNUG_CORE_BUNDLEFORMAT_H

#include "core/DType.h"
#include "core/Sha256.h"

#include <cstddef>
#include <cstdint>

namespace snug {
namespace bundle {

constexpr char kMagic[8] = {'S', 'N', 'U', 'G', 'B', 'N', 'D', 'L'};
/// 2: each GEMM of the device plan carries its own cuBLAS workspace
/// (core/DevicePlan.h). 3: host plan ops carry a has-body byte and op
/// bodies. 4: a 64-byte header with a SHA-256 digest in place of FNV-1a 64.
/// 5: each GEMM of the device plan carries a math byte (GemmMath, TF32 for
/// --precision=tf32). 6: each GEMM carries an epilogue byte (GemmEpilogue:
/// bias, ReLU, tanh GELU run by cuBLASLt) and, when it has a bias, its
/// arg. 7: the device plan carries the check record's offset (run-time
/// checks such as snug.check_labels; core/DevicePlan.h). 8: the kernel
/// images carry their toolchain (KernelToolchain: compilers, PTX ISA, the
/// oldest driver that loads them). The reader still reads versions 1 to 7
/// (their GEMMs run at default math before 5, and without an epilogue
/// before 6; none has run-time checks before 7; none records its
/// toolchain before 8). 9: the device plan may hold Branch steps (an If on
/// runtime data; core/DevicePlan.h), the host plan snug.skip_if ops; the
/// encoding of everything else is 8's.
constexpr uint32_t kBundleVersion = 9;
/// The oldest version the reader still reads.
constexpr uint32_t kOldestBundleVersion = 1;
/// The first version whose host plan ops carry a has-body byte.
constexpr uint32_t kFirstVersionWithBodies = 3;
/// The one op that carries a body (the reader holds it to that).
constexpr const char *kFusedOpName = "snug.fused";
/// A body operand index meaning "absent" (ONNX's empty input).
constexpr uint32_t kNoValue = 0xffffffffu;
/// The first version with the 64-byte header and the SHA-256 digest.
constexpr uint32_t kFirstVersionWithDigest = 4;
/// The first version whose device plan GEMMs carry a math byte.
constexpr uint32_t kFirstVersionWithGemmMath = 5;
/// The first version whose device plan GEMMs carry an epilogue byte.
constexpr uint32_t kFirstVersionWithGemmEpilogue = 6;
/// The first version whose device plan carries the check record's offset.
constexpr uint32_t kFirstVersionWithCheckRecord = 7;
/// The first version whose kernel images carry their toolchain.
constexpr uint32_t kFirstVersionWithToolchain = 8;
/// The first version whose device plan may hold Branch steps.
constexpr uint32_t kFirstVersionWithBranches = 9;
constexpr uint64_t kHeaderSize = 64;
/// The header size of versions before kFirstVersionWithDigest.
constexpr uint64_t kLegacyHeaderSize = 32;
constexpr uint64_t kSectionEntrySize = 24;
/// Where the digest (the FNV-1a hash before version 4) starts.
constexpr uint64_t kHashOffset = 24;
constexpr uint64_t kDigestSize = 32;
constexpr uint64_t kLegacyHashSize = 8;
constexpr uint64_t kSectionAlignment = 64;
constexpr uint64_t kWeightAlignment = 64;
/// Sanity limits the reader enforces (a bundle past them is corrupt).
constexpr uint32_t kMaxSections = 64;
constexpr uint32_t kMaxRank = 16;
/// The largest arena alignment a manifest may ask for.
constexpr uint64_t kMaxArenaAlignment = uint64_t(1) << 20;

enum SectionKind : uint32_t {
  Manifest = 1,
  Weights = 2,
  HostPlan = 3,
  DevicePlanSection = 4, // CUDA launch plan (core/DevicePlan.h)
  KernelImages = 5,      // cubin per arch + PTX
  ExternalWeights = 6,   // instead of Weights: the weights are in a file
                         // beside the bundle (snugc --weights=external)
  PinnedHost = 7,        // u64 bytes of the pinned host region (offload)
  State = 8,             // persistent state: weights written back per run
};

/// What a state weight is (the State section's role byte).
enum StateRole : uint8_t {
  StateParameter = 0,
  StateOptimizer = 1,
  StateStatistic = 2, // a BatchNorm running mean or variance
};

/// Host: the pinned host region (only snug.offload results and the
/// snug.reload operands that read them).
enum LocationKind : uint8_t { Absent = 0, Arena = 1, Weight = 2, Host = 3 };

enum AttrKind : uint8_t {
  AttrInt = 1,
  AttrFloat = 2,
  AttrString = 3,
  AttrInts = 4,
  AttrFloats = 5,
  AttrStrings = 6,
  AttrTensor = 7,
};

/// The dtype codes the bundle stores (ONNX TensorProto.DataType numbers):
/// DTypeF32, DTypeBF16, ... from core/DTypes.def, the one dtype table.
#define DTYPE(ID, NAME, BYTES, BUNDLE_CODE, CLASS)                             \
  constexpr uint8_t DType##ID = BUNDLE_CODE;
#include "core/DTypes.def"

/// Bytes per element, 0 for a code that is not a snug dtype.
inline unsigned dtypeSize(uint8_t code) {
  std::optional<DType> type = fromBundleCode(code);
  return type ? getDTypeInfo(*type).bytes : 0;
}

inline const char *dtypeName(uint8_t code) {
  std::optional<DType> type = fromBundleCode(code);
  return type ? getDTypeInfo(*type).name : "?";
}

constexpr uint64_t kFnvOffset = 14695981039346656037ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

/// FNV-1a 64 of `size` bytes, continuing from `hash` (versions 1 to 3).
inline uint64_t fnv1a(const uint8_t *data, size_t size,
                      uint64_t hash = kFnvOffset) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= data[i];
    hash *= kFnvPrime;
  }
  return hash;
}

/// The format version in a header of at least 12 bytes.
inline uint32_t headerVersion(const uint8_t *data) {
  return uint32_t(data[8]) | uint32_t(data[9]) << 8 |
         uint32_t(data[10]) << 16 | uint32_t(data[11]) << 24;
}

/// The header size, and so where the section table starts, of `version`.
inline uint64_t headerSize(uint32_t version) {
  return version >= kFirstVersionWithDigest ? kHeaderSize : kLegacyHeaderSize;
}

/// The size of the digest field of `version` at kHashOffset.
inline uint64_t digestSize(uint32_t version) {
  return version >= kFirstVersionWithDigest ? kDigestSize : kLegacyHashSize;
}

/// The digest of a whole bundle of `size` >= headerSize(version) bytes, as
/// the header stores it: SHA-256 of everything but the digest field, or for
/// versions before 4 the FNV-1a 64 of the same, little-endian in 8 bytes.
inline Sha256::Digest bundleDigest(const uint8_t *data, size_t size) {
  uint32_t version = headerVersion(data);
  uint64_t skip = kHashOffset + digestSize(version);
  Sha256::Digest digest{};
  if (version >= kFirstVersionWithDigest) {
    Sha256 hasher;
    hasher.update(data, kHashOffset);
    hasher.update(data + skip, size - skip);
    return hasher.finish();
  }
  uint64_t hash = fnv1a(data + skip, size - skip, fnv1a(data, kHashOffset));
  for (int i = 0; i < 8; ++i)
    digest[i] = uint8_t(hash >> (8 * i));
  return digest;
}

/// Whether the digest field of a bundle of `size` >= headerSize(version)
/// bytes holds its digest.
inline bool isSealed(const uint8_t *data, size_t size) {
  Sha256::Digest digest = bundleDigest(data, size);
  uint64_t length = digestSize(headerVersion(data));
  for (uint64_t i = 0; i < length; ++i)
    if (data[kHashOffset + i] != digest[i])
      return false;
  return true;
}

/// Recomputes the digest of a whole bundle of `size` >= headerSize(version)
/// bytes (the version read from its header) and stores it in its header
/// field. The writer calls it last; the fuzzers and mutation tests call it
/// on a mutated bundle so that the reader's structural checks and the plan
/// verifier, not the digest, are what they exercise. A buffer too short for
/// its header is left as it is.
inline void sealBundle(uint8_t *data, size_t size) {
  if (size < kLegacyHeaderSize || size < headerSize(headerVersion(data)))
    return;
  Sha256::Digest digest = bundleDigest(data, size);
  uint64_t length = digestSize(headerVersion(data));
  for (uint64_t i = 0; i < length; ++i)
    data[kHashOffset + i] = digest[i];
}

inline uint64_t alignTo(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

} // namespace bundle
} // namespace snug

#endif // SNUG_CORE_BUNDLEFORMAT_H
