//===- BundleWriter.cpp - Writing a planned module as a .snug bundle ------===//
//
// Builds each section but the weights in memory with a little-endian byte
// sink and lays the sections out on 64-byte boundaries after the header and
// section table. The file is then a list of pieces: the header, the small
// sections, padding, and the weights section as the module's own weight
// data, never copied (compiling a model with gigabytes of weights would
// otherwise hold them two or three times over). The digest (SHA-256 of the
// whole file except the digest field, as bundle::sealBundle computes it) is
// one pass over the pieces; writing is a second. Writing goes through
// core/FileAccess.h: a temporary file, every write checked (a full disk
// is an error, not a SIGBUS), renamed over the target on success. Writes
// the current format version (bundle::kBundleVersion, 8): every host plan
// op ends with a has-body byte, and a node with a body (snug.fused) writes
// it after that byte; every device plan GEMM ends with its math byte, its
// epilogue byte and, when the epilogue has one, its bias arg; the device
// plan starts with its check record's offset after the arena size; the
// kernel images start with their toolchain record.
//
//===----------------------------------------------------------------------===//
#include "compiler/bundle/BundleWriter.h"
#include "ir/State.h"

#include "passes/memory/Liveness.h"
#include "passes/Passes.h"
#include "passes/memory/PlanMemory.h"
#include "passes/memory/ScratchRequest.h"
#include "core/BundleFormat.h"
#include "core/FileAccess.h"
#include "core/SignalCleanup.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <deque>

namespace snug {

using namespace bundle;

namespace {

class Sink {
public:
  std::vector<uint8_t> bytes;

  void u8(uint8_t v) { bytes.push_back(v); }
  void u16(uint16_t v) { u8(v & 0xff), u8(v >> 8); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      u8(uint8_t(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i)
      u8(uint8_t(v >> (8 * i)));
  }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    u32(bits);
  }
  void string(llvm::StringRef s) {
    u32(uint32_t(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void raw(llvm::ArrayRef<uint8_t> data) {
    bytes.insert(bytes.end(), data.begin(), data.end());
  }
};


llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 message.str());
}

std::string describeValue(const ir::Value *value) {
  if (!value->getName().empty())
    return "value '" + value->getName().str() + "'";
  if (const ir::Node *node = value->getDefiningNode())
    return "result " + std::to_string(value->getResultIndex()) + " of " +
           node->describe();
  return "an unnamed value";
}

/// The runtime finds inputs, outputs and state by name, as C strings
/// (snug.h), and snug-run names files after them: a NUL byte in one would
/// cut it short there. The ONNX importer refuses such names; this catches
/// the IR's ("%\"x\00a\"").
llvm::Error checkNameHasNoNul(llvm::StringRef what, const ir::Value *value) {
  if (!value->getName().contains('\0'))
    return llvm::Error::success();
  std::string shown;
  llvm::raw_string_ostream os(shown);
  llvm::printEscapedString(value->getName(), os);
  return makeError(what + " '" + os.str() +
                   "' has a NUL byte in its name (a bundle's names of "
                   "inputs, outputs and state end at one)");
}

/// A run of the file's bytes: memory the writer or the module owns.
struct Piece {
  const uint8_t *data;
  size_t size;
};

/// Zeros for the padding pieces (every gap is below the 64-byte alignment).
constexpr uint8_t kZeros[std::max(kSectionAlignment, kWeightAlignment)] = {};

uint64_t sizeOf(llvm::ArrayRef<Piece> pieces) {
  uint64_t size = 0;
  for (const Piece &piece : pieces)
    size += piece.size;
  return size;
}

/// Appends `count` zero bytes (count below the alignment) as one piece.
void pad(std::vector<Piece> &pieces, uint64_t count) {
  assert(count <= sizeof kZeros && "padding past one alignment");
  if (count)
    pieces.push_back({kZeros, size_t(count)});
}

Sha256::Digest digestOf(llvm::ArrayRef<Piece> pieces) {
  Sha256 hasher;
  for (const Piece &piece : pieces)
    hasher.update(piece.data, piece.size);
  return hasher.finish();
}

class Writer {
public:
  Writer(const ir::Module &module, const BundleOptions &options)
      : module(module), options(options) {}
  /// Lays the bundle out: its pieces, in file order, with the header's
  /// size and digest filled in. They point into this writer and into the
  /// module's weights, so both must outlive them.
  llvm::Expected<std::vector<Piece>> run();
  /// The weights section's pieces (or the external weights file's).
  llvm::ArrayRef<Piece> getWeightPieces() const { return weightPieces; }

private:
  llvm::Error layOutWeights();
  llvm::Error writeLocation(Sink &sink, const ir::Value *value);
  void writeAttribute(Sink &sink, const ir::Attribute &attr);
  void writeAttributes(Sink &sink, const ir::AttributeMap &attributes);
  llvm::Error writeBody(Sink &sink, const ir::Node &node);

  const ir::Module &module;
  const BundleOptions &options;
  uint64_t arenaSize = 0;
  /// The pinned host region (the module's host_arena; 0 without offload).
  uint64_t hostSize = 0;
  llvm::DenseMap<const ir::Value *, uint64_t> weightOffsets;
  std::vector<Piece> weightPieces;
  uint64_t weightBytes = 0;
  /// The header and section table.
  Sink file;
  /// The other sections the pieces point into (a deque: its elements stay
  /// where they are as it grows).
  std::deque<Sink> sinks;
};

void writeArg(Sink &sink, const DeviceArg &arg) {
  sink.u8(arg.kind), sink.u64(arg.value);
}

void writeDevicePlan(Sink &sink, const DevicePlan &plan) {
  sink.u64(plan.arenaBytes);
  sink.u64(plan.checkRecordOffset);
  sink.u32(plan.kernels.size());
  for (const std::string &kernel : plan.kernels)
    sink.string(kernel);
  sink.u32(plan.steps.size());
  for (const DeviceStep &step : plan.steps) {
    sink.u8(step.kind), sink.u32(step.op);
    switch (step.kind) {
    case StepLaunch: {
      const DeviceLaunch &l = step.launch;
      sink.u32(l.kernel);
      for (const uint32_t *dims : {l.grid, l.block})
        for (int d = 0; d < 3; ++d)
          sink.u32(dims[d]);
      sink.u32(l.sharedBytes);
      sink.u32(l.args.size());
      for (const DeviceArg &arg : l.args)
        writeArg(sink, arg);
      break;
    }
    case StepGemm: {
      const DeviceGemm &g = step.gemm;
      sink.u8(g.dtype), sink.u8(g.transA), sink.u8(g.transB);
      sink.u32(uint32_t(g.m)), sink.u32(uint32_t(g.n)), sink.u32(uint32_t(g.k));
      sink.u32(uint32_t(g.batch));
      for (int64_t v : {g.lda, g.ldb, g.ldc, g.strideA, g.strideB, g.strideC})
        sink.i64(v);
      sink.f32(g.alpha), sink.f32(g.beta);
      writeArg(sink, g.a), writeArg(sink, g.b), writeArg(sink, g.c);
      sink.u64(g.workspaceOffset), sink.u64(g.workspaceBytes);
      sink.u8(g.math);
      sink.u8(g.epilogue);
      if (gemmEpilogueHasBias(g.epilogue))
        writeArg(sink, g.bias);
      break;
    }
    case StepCopy:
      writeArg(sink, step.copy.dst), writeArg(sink, step.copy.src);
      sink.u64(step.copy.bytes);
      break;
    case StepBranch:
      writeArg(sink, step.branch.condition);
      sink.u8(step.branch.when), sink.u32(step.branch.count);
      break;
    }
  }
}

} // namespace

WeightsLayout computeWeightsLayout(const ir::Module &module) {
  llvm::DenseSet<const ir::Value *> used;
  for (const auto &node : module.getNodes())
    for (const ir::Value *operand : node->getOperands())
      if (operand && operand->isWeight())
        used.insert(operand);
  for (const ir::Value *output : module.getOutputs())
    if (output->isWeight())
      used.insert(output);
  // A state weight keeps its place even if no node reads it: the runtime
  // writes its next value there.
  if (auto state = ir::getState(module))
    for (const ir::StateEntry &entry : *state)
      used.insert(entry.weight);
  else
    llvm::consumeError(state.takeError());
  WeightsLayout layout;
  for (const ir::Value *weight : module.getWeights()) {
    if (!used.count(weight))
      continue;
    layout.bytes = alignTo(layout.bytes, kWeightAlignment);
    layout.offsets.push_back({weight, layout.bytes});
    layout.bytes += weight->getType().getByteSize();
  }
  layout.bytes = alignTo(layout.bytes, kWeightAlignment);
  return layout;
}

namespace {

llvm::Error Writer::layOutWeights() {
  WeightsLayout layout = computeWeightsLayout(module);
  uint64_t at = 0;
  for (const auto &[weight, offset] : layout.offsets) {
    if (weight->isWeightElided())
      return makeError("weight " + describeValue(weight) +
                       " has no data (elided); a bundle needs every weight");
    llvm::ArrayRef<uint8_t> data = module.getWeightData(weight);
    if (data.size() != weight->getType().getByteSize())
      return makeError("weight " + describeValue(weight) + " holds " +
                       std::to_string(data.size()) + " bytes, its type " +
                       std::to_string(weight->getType().getByteSize()));
    pad(weightPieces, offset - at);
    weightPieces.push_back({data.data(), data.size()});
    at = offset + data.size();
    weightOffsets[weight] = offset;
  }
  pad(weightPieces, layout.bytes - at);
  weightBytes = layout.bytes;
  return llvm::Error::success();
}

llvm::Error Writer::writeLocation(Sink &sink, const ir::Value *value) {
  if (!value) {
    sink.u8(Absent), sink.u8(0), sink.u16(0), sink.u32(0), sink.u64(0);
    return llvm::Error::success();
  }
  const ir::TensorType &type = value->getType();
  // The reader refuses more dims than kMaxRank (BundleReader.cpp), so a
  // bundle holding one would never load: refuse it here, naming the value.
  if (type.getRank() > kMaxRank)
    return makeError(describeValue(value) + " has rank " +
                     llvm::Twine(type.getRank()) + ", more than the " +
                     llvm::Twine(kMaxRank) + " a bundle holds");
  uint64_t offset;
  uint8_t kind;
  if (value->isWeight()) {
    kind = Weight;
    offset = weightOffsets.lookup(value);
  } else {
    bool onHost = isHostResident(value);
    kind = onHost ? Host : Arena;
    uint64_t space = onHost ? hostSize : arenaSize;
    if (!value->getArenaOffset())
      return makeError(describeValue(value) +
                       " has no arena offset (run plan-memory first)");
    offset = *value->getArenaOffset();
    if (offset > space || type.getByteSize() > space - offset)
      return makeError(describeValue(value) + " (" +
                       llvm::Twine(type.getByteSize()) + " bytes at offset " +
                       llvm::Twine(offset) + ") lies outside the " +
                       (onHost ? "pinned host region" : "arena") + " of " +
                       llvm::Twine(space) + " bytes");
  }
  sink.u8(kind), sink.u8(toBundleCode(type.getDType())), sink.u16(0);
  sink.u32(type.getRank());
  for (int64_t dim : type.getDims())
    sink.i64(dim);
  sink.u64(offset);
  return llvm::Error::success();
}

void Writer::writeAttribute(Sink &sink, const ir::Attribute &attr) {
  using Kind = ir::Attribute::Kind;
  switch (attr.getKind()) {
  case Kind::Int:
    sink.u8(AttrInt), sink.i64(attr.getInt());
    return;
  case Kind::Float:
    sink.u8(AttrFloat), sink.f32(attr.getFloat());
    return;
  case Kind::String:
    sink.u8(AttrString), sink.string(attr.getString());
    return;
  case Kind::Ints:
    sink.u8(AttrInts), sink.u32(attr.getInts().size());
    for (int64_t v : attr.getInts())
      sink.i64(v);
    return;
  case Kind::Floats:
    sink.u8(AttrFloats), sink.u32(attr.getFloats().size());
    for (float v : attr.getFloats())
      sink.f32(v);
    return;
  case Kind::Strings:
    sink.u8(AttrStrings), sink.u32(attr.getStrings().size());
    for (const std::string &v : attr.getStrings())
      sink.string(v);
    return;
  case Kind::Tensor: {
    const ir::TensorType &type = attr.getTensorType();
    sink.u8(AttrTensor), sink.u8(toBundleCode(type.getDType()));
    sink.u32(type.getRank());
    for (int64_t dim : type.getDims())
      sink.i64(dim);
    sink.u64(attr.getTensorBytes().size());
    sink.raw(attr.getTensorBytes());
    return;
  }
  }
}

void Writer::writeAttributes(Sink &sink, const ir::AttributeMap &attributes) {
  sink.u32(attributes.size());
  for (const auto &entry : attributes) {
    sink.string(entry.first);
    writeAttribute(sink, entry.second);
  }
}

void writeBodyType(Sink &sink, const ir::TensorType &type) {
  sink.u8(toBundleCode(type.getDType())), sink.u8(0), sink.u16(0);
  sink.u32(type.getRank());
  for (int64_t dim : type.getDims())
    sink.i64(dim);
}

/// The body of `node` (BundleFormat.h): values numbered block arguments
/// first, then body results in order. The verifier has checked that the
/// body is closed; a value it does not define is an internal error here.
llvm::Error Writer::writeBody(Sink &sink, const ir::Node &node) {
  const ir::Region &body = *node.getBody();
  llvm::DenseMap<const ir::Value *, uint32_t> index;
  uint32_t next = 0;
  sink.u32(body.getNumArguments());
  for (const std::unique_ptr<ir::Value> &argument : body.getArguments()) {
    index[argument.get()] = next++;
    writeBodyType(sink, argument->getType());
  }
  auto indexOf = [&](const ir::Value *value) -> llvm::Expected<uint32_t> {
    if (!value)
      return kNoValue;
    auto it = index.find(value);
    if (it == index.end())
      return makeError(node.describe() + ": its body uses a value it does "
                                         "not define (verify the module)");
    return it->second;
  };
  sink.u32(body.getNodes().size());
  for (const std::unique_ptr<ir::Node> &inner : body.getNodes()) {
    if (inner->hasBody())
      return makeError(inner->describe() + ": nested bodies cannot be "
                                            "written");
    sink.string(inner->getOpName());
    sink.string(inner->getName());
    writeAttributes(sink, inner->getAttributes());
    sink.u32(inner->getNumOperands());
    for (const ir::Value *operand : inner->getOperands()) {
      auto at = indexOf(operand);
      if (!at)
        return at.takeError();
      sink.u32(*at);
    }
    sink.u32(inner->getNumResults());
    for (unsigned i = 0; i < inner->getNumResults(); ++i) {
      index[inner->getResult(i)] = next++;
      writeBodyType(sink, inner->getResult(i)->getType());
    }
  }
  sink.u32(body.getYield().size());
  for (const ir::Value *value : body.getYield()) {
    auto at = value ? indexOf(value)
                    : llvm::Expected<uint32_t>(makeError(
                          node.describe() + ": its body yields no value"));
    if (!at)
      return at.takeError();
    sink.u32(*at);
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<Piece>> Writer::run() {
  const ir::Attribute *arena = module.getAttribute("arena");
  if (!arena || arena->getKind() != ir::Attribute::Kind::Int ||
      arena->getInt() < 0)
    return makeError("module '" + module.getName() +
                     "' has no memory plan (no 'arena' attribute); run "
                     "plan-memory before writing a bundle");
  arenaSize = uint64_t(arena->getInt());
  if (const ir::Attribute *host = module.getAttribute("host_arena"))
    if (host->getKind() == ir::Attribute::Kind::Int && host->getInt() > 0)
      hostSize = uint64_t(host->getInt());
  auto intAttr = [&](llvm::StringRef name, uint64_t fallback) {
    const ir::Attribute *attr = module.getAttribute(name);
    return attr && attr->getKind() == ir::Attribute::Kind::Int &&
                   attr->getInt() > 0
               ? uint64_t(attr->getInt())
               : fallback;
  };
  if (llvm::Error error = layOutWeights())
    return llvm::Error(std::move(error));

  Sink &manifest = sinks.emplace_back();
  manifest.string(options.compilerVersion);
  manifest.string(options.pipeline);
  manifest.string(module.getName());
  manifest.u64(arenaSize);
  manifest.u64(intAttr("alignment", 64));
  manifest.u64(weightBytes);
  manifest.u64(intAttr("lower_bound", 0));
  auto inputs = module.getInputs();
  manifest.u32(inputs.size());
  for (const ir::Value *input : inputs) {
    if (llvm::Error error = checkNameHasNoNul("graph input", input))
      return llvm::Error(std::move(error));
    manifest.string(input->getName());
    if (llvm::Error error = writeLocation(manifest, input))
      return llvm::Error(std::move(error));
  }
  manifest.u32(module.getOutputs().size());
  for (size_t i = 0; i < module.getOutputs().size(); ++i) {
    const ir::Value *output = module.getOutputs()[i];
    if (llvm::Error error = checkNameHasNoNul("graph output", output))
      return llvm::Error(std::move(error));
    // An unnamed output is called output_N, as in ONNX test data.
    manifest.string(output->getName().empty()
                        ? "output_" + std::to_string(i)
                        : output->getName().str());
    if (llvm::Error error = writeLocation(manifest, output))
      return llvm::Error(std::move(error));
  }

  // A node whose host kernel takes scratch (it asks for some on the host
  // target) finds its planned buffer as one more result, u8 [bytes].
  // The recorded triples are in step order (getRecordedScratch checks it).
  llvm::Expected<std::vector<RecordedScratch>> scratch =
      getRecordedScratch(module);
  if (!scratch)
    return scratch.takeError();
  auto nextScratch = scratch->begin();
  ScratchOptions host;
  host.cuda = false;
  Sink &plan = sinks.emplace_back();
  plan.u32(module.getNodes().size());
  int64_t step = 0;
  for (const auto &node : module.getNodes()) {
    plan.string(node->getOpName());
    plan.string(node->getName());
    writeAttributes(plan, node->getAttributes());
    plan.u32(node->getNumOperands());
    for (const ir::Value *operand : node->getOperands())
      if (llvm::Error error = writeLocation(plan, operand))
        return llvm::Error(std::move(error));
    const RecordedScratch *hostScratch = nullptr;
    if (nextScratch != scratch->end() && nextScratch->step == step)
      hostScratch = &*nextScratch++;
    ++step;
    if (hostScratch && !getScratchRequest(*node, host).bytes)
      hostScratch = nullptr;
    plan.u32(node->getNumResults() + (hostScratch ? 1 : 0));
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      if (llvm::Error error = writeLocation(plan, node->getResult(i)))
        return llvm::Error(std::move(error));
    if (hostScratch) {
      plan.u8(Arena), plan.u8(toBundleCode(ir::DType::U8)), plan.u16(0);
      plan.u32(1), plan.i64(int64_t(hostScratch->bytes));
      plan.u64(hostScratch->offset);
    }
    plan.u8(node->hasBody());
    if (node->hasBody())
      if (llvm::Error error = writeBody(plan, *node))
        return llvm::Error(std::move(error));
  }

  struct Entry {
    uint32_t kind;
    std::vector<Piece> pieces;
  };
  auto whole = [](const Sink &sink) {
    return std::vector<Piece>{{sink.bytes.data(), sink.bytes.size()}};
  };
  // External weights: the section names the file and its digest, and
  // writeBundle writes the file beside the bundle from getWeightPieces().
  Sink &external = sinks.emplace_back();
  std::vector<Entry> sections = {{Manifest, whole(manifest)}};
  if (!options.externalWeightsName.empty()) {
    llvm::StringRef name = options.externalWeightsName;
    if (name.empty() || name == "." || name == ".." || name.contains('/'))
      return makeError("external weights file name '" + name.str() +
                       "' is not a plain file name");
    external.string(name);
    external.u64(weightBytes);
    Sha256::Digest digest = digestOf(weightPieces);
    external.raw(llvm::ArrayRef<uint8_t>(digest.data(), digest.size()));
    sections.push_back({ExternalWeights, whole(external)});
  } else {
    sections.push_back({Weights, weightPieces});
  }
  sections.push_back({HostPlan, whole(plan)});
  Sink &pinned = sinks.emplace_back();
  if (hostSize) {
    pinned.u64(hostSize);
    sections.push_back({PinnedHost, whole(pinned)});
  }
  Sink &state = sinks.emplace_back();
  llvm::Expected<std::vector<ir::StateEntry>> stateEntries =
      ir::getState(module);
  if (!stateEntries)
    return stateEntries.takeError();
  if (!stateEntries->empty()) {
    state.u32(stateEntries->size());
    for (const ir::StateEntry &entry : *stateEntries) {
      const auto &outputs = module.getOutputs();
      auto next = std::find(outputs.begin(), outputs.end(), entry.next);
      if (entry.next->isWeight() || isHostResident(entry.next))
        return makeError("state " + describeValue(entry.weight) +
                         ": its next value " + describeValue(entry.next) +
                         " is not an arena value");
      if (llvm::Error error = checkNameHasNoNul("state", entry.weight))
        return llvm::Error(std::move(error));
      state.string(entry.weight->getName());
      state.u8(entry.role == ir::StateRole::Parameter   ? StateParameter
               : entry.role == ir::StateRole::Optimizer ? StateOptimizer
                                                        : StateStatistic);
      state.u64(weightOffsets.lookup(entry.weight));
      state.u64(entry.weight->getType().getByteSize());
      state.u32(uint32_t(next - outputs.begin()));
    }
    sections.push_back({SectionKind::State, whole(state)});
  }
  Sink &device = sinks.emplace_back(), &images = sinks.emplace_back();
  if (options.devicePlan && options.kernelImages) {
    writeDevicePlan(device, *options.devicePlan);
    const KernelToolchain &toolchain = options.toolchain;
    images.u32(toolchain.nvrtcVersion), images.u32(toolchain.jitLinkVersion);
    images.u32(toolchain.ptxIsa), images.u32(toolchain.minDriverVersion);
    images.u32(options.kernelImages->size());
    for (const KernelImage &image : *options.kernelImages) {
      images.u8(image.kind), images.u32(image.arch);
      images.u64(image.bytes.size());
      images.raw(image.bytes);
    }
    sections.push_back({DevicePlanSection, whole(device)});
    sections.push_back({KernelImages, whole(images)});
  }
  // The runtime runs exactly the plan it is given: a plan whose live
  // buffers overlap would run to wrong numbers, so it is refused with the
  // verify-plan pass's message (passes/memory/VerifyPlan.cpp; the pass changes
  // nothing), after the location checks above have named any value that
  // has no offset or lies outside the arena.
  llvm::Expected<bool> changed =
      createVerifyPlanPass()->run(const_cast<ir::Module &>(module));
  if (!changed)
    return makeError("cannot write a bundle of module '" + module.getName() +
                     "': " + toString(changed.takeError()));
  const uint32_t count = sections.size();
  file.raw(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(kMagic), 8));
  file.u32(kBundleVersion);
  file.u32(count);
  file.u64(0); // file size, patched below
  // The digest field and the reserved word, patched below.
  file.bytes.resize(kHeaderSize, 0);
  uint64_t offset = alignTo(kHeaderSize + count * kSectionEntrySize,
                            kSectionAlignment);
  for (const Entry &entry : sections) {
    uint64_t size = sizeOf(entry.pieces);
    file.u32(entry.kind), file.u32(0), file.u64(offset);
    file.u64(size);
    offset = alignTo(offset + size, kSectionAlignment);
  }
  std::vector<Piece> pieces = {{file.bytes.data(), file.bytes.size()}};
  uint64_t at = file.bytes.size();
  for (const Entry &entry : sections) {
    pad(pieces, alignTo(at, kSectionAlignment) - at);
    pieces.insert(pieces.end(), entry.pieces.begin(), entry.pieces.end());
    at = alignTo(at, kSectionAlignment) + sizeOf(entry.pieces);
  }
  for (int i = 0; i < 8; ++i)
    file.bytes[16 + i] = uint8_t(at >> (8 * i));
  // bundle::bundleDigest over the pieces: everything but the digest field,
  // which lies inside the header piece.
  static_assert(kHashOffset + kDigestSize <= kHeaderSize,
                "the digest field lies in the header");
  std::vector<Piece> hashed = pieces;
  hashed[0] = {file.bytes.data(), kHashOffset};
  hashed.insert(hashed.begin() + 1,
                {file.bytes.data() + kHashOffset + kDigestSize,
                 file.bytes.size() - kHashOffset - kDigestSize});
  Sha256::Digest digest = digestOf(hashed);
  std::copy(digest.begin(), digest.end(), file.bytes.begin() + kHashOffset);
  return pieces;
}

/// Writes `pieces` to `path` atomically: nothing is left at `path` on an
/// error (a temporary file renamed into place).
llvm::Error writePieces(llvm::ArrayRef<Piece> pieces, const std::string &path) {
  AtomicFileWriter writer;
  std::string error;
  if (!writer.open(path, error))
    return makeError(error);
  for (const Piece &piece : pieces)
    if (!writer.write(piece.data, piece.size, error))
      return makeError(error);
  if (!writer.commit(error))
    return makeError(error);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<std::vector<uint8_t>>
serializeBundle(const ir::Module &module, const BundleOptions &options) {
  Writer writer(module, options);
  llvm::Expected<std::vector<Piece>> pieces = writer.run();
  if (!pieces)
    return pieces.takeError();
  std::vector<uint8_t> bytes;
  bytes.reserve(sizeOf(*pieces));
  for (const Piece &piece : *pieces)
    bytes.insert(bytes.end(), piece.data, piece.data + piece.size);
  return bytes;
}

llvm::Error writeBundle(const ir::Module &module, llvm::StringRef path,
                        const BundleOptions &options) {
  Writer writer(module, options);
  llvm::Expected<std::vector<Piece>> pieces = writer.run();
  if (!pieces)
    return pieces.takeError();
  if (options.externalWeightsName.empty())
    return writePieces(*pieces, path.str());
  // The weights file first, beside the bundle; removed again if the bundle
  // cannot be written, so an error leaves neither behind.
  llvm::SmallString<256> weightsPath = llvm::sys::path::parent_path(path);
  llvm::sys::path::append(weightsPath, options.externalWeightsName);
  if (llvm::Error error =
          writePieces(writer.getWeightPieces(), weightsPath.str().str()))
    return error;
  // A signal that ends the tool before the bundle is in place removes the
  // weights too, as an error does.
  RemoveOnSignal weightsUntilBundle(weightsPath.str().str());
  if (llvm::Error error = writePieces(*pieces, path.str())) {
    llvm::sys::fs::remove(weightsPath);
    return error;
  }
  return llvm::Error::success();
}

} // namespace snug
