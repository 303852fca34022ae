//===- CudaEmitter.cpp - The CUDA emitter's driver and shared helpers -----===//
//
// Builds a TensorRef per operand and result from the plan (arena offsets on
// values, weight offsets from the bundle's weights layout), hands each node
// to its family's emitter (with the node's scratch buffer from the memory
// plan), then names the distinct kernels and lays out the translation unit.
// The device arena is the planned arena, the check record of run-time checks
// (core/DevicePlan.h) included; the emitter places nothing. Kernels are
// deduplicated on their whole text, so a model with 16 identical blocks
// compiles each kernel once.
//
//===----------------------------------------------------------------------===//
#include "compiler/cuda/CudaEmitter.h"
#include "compiler/cuda/KernelEmitter.h"
#include "passes/memory/Liveness.h"
#include "passes/memory/PlanMemory.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace snug {
namespace cuda {

using namespace bundle;

std::vector<int64_t> TensorRef::strides() const {
  std::vector<int64_t> result(dims.size(), 1);
  for (int i = int(dims.size()) - 2; i >= 0; --i)
    result[i] = result[i + 1] * dims[i + 1];
  return result;
}

const char *cudaTypeName(ir::DType type) {
  switch (type) {
  case ir::DType::F32: return "float";
  case ir::DType::F16: return "snug_half";
  case ir::DType::BF16: return "snug_bfloat";
  case ir::DType::F64: return "double";
  case ir::DType::I64: return "int64_t";
  case ir::DType::I32: return "int32_t";
  case ir::DType::I16: return "int16_t";
  case ir::DType::I8: return "int8_t";
  case ir::DType::U8: return "uint8_t";
  case ir::DType::U16: return "uint16_t";
  case ir::DType::U32: return "uint32_t";
  case ir::DType::U64: return "uint64_t";
  case ir::DType::Bool: return "bool";
  }
  return "?";
}

const char *cudaComputeTypeName(ir::DType type) {
  if (type == ir::DType::F16 || type == ir::DType::BF16)
    return "float";
  return cudaTypeName(type);
}

std::string cudaFloatLiteral(double value) {
  if (std::isnan(value))
    return "snug_nan()";
  if (std::isinf(value))
    return value > 0 ? "snug_inf()" : "(-snug_inf())";
  char buffer[64];
  // Hex floats are exact and both NVRTC and g++ read them.
  std::snprintf(buffer, sizeof buffer, "%a", value);
  return std::string("(") + buffer + ")";
}

std::string cudaIntLiteral(int64_t value) {
  if (value == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  std::string text = std::to_string(value);
  if (value > INT32_MAX || value < INT32_MIN)
    text += "LL";
  return value < 0 ? "(" + text + ")" : text;
}

void Kernel::addTensor(const std::string &name, const TensorRef &tensor,
                       bool readOnly) {
  addTensorAt(name, tensor, 0, readOnly);
}

void Kernel::addTensorAt(const std::string &name, const TensorRef &tensor,
                         uint64_t byteOffset, bool readOnly) {
  std::string type = std::string(readOnly ? "const " : "") +
                     cudaTypeName(tensor.dtype) + " *";
  params.push_back({type, name, tensor.at(byteOffset)});
}

Dim3 gridFor(int64_t work, uint32_t blockSize, uint32_t maxBlocks) {
  int64_t blocks = (std::max<int64_t>(work, 1) + blockSize - 1) / blockSize;
  Dim3 grid;
  grid.x = uint32_t(std::min<int64_t>(blocks, maxBlocks));
  return grid;
}

EmitContext::EmitContext(const ir::Node &node, unsigned opIndex,
                         std::vector<TensorRef> operands,
                         std::vector<TensorRef> results,
                         std::vector<DeviceStep> &steps,
                         std::vector<Kernel> &kernels)
    : node(node), opIndex(opIndex), operands(std::move(operands)),
      results(std::move(results)), steps(steps), kernels(kernels) {}

int64_t EmitContext::intAttr(llvm::StringRef name, int64_t fallback) const {
  const ir::Attribute *attr = node.getAttribute(name);
  return attr && attr->getKind() == ir::Attribute::Kind::Int ? attr->getInt()
                                                             : fallback;
}

float EmitContext::floatAttr(llvm::StringRef name, float fallback) const {
  const ir::Attribute *attr = node.getAttribute(name);
  if (!attr)
    return fallback;
  if (attr->getKind() == ir::Attribute::Kind::Float)
    return attr->getFloat();
  if (attr->getKind() == ir::Attribute::Kind::Int)
    return float(attr->getInt());
  return fallback;
}

std::vector<int64_t> EmitContext::intsAttr(llvm::StringRef name) const {
  const ir::Attribute *attr = node.getAttribute(name);
  if (!attr)
    return {};
  if (attr->getKind() == ir::Attribute::Kind::Int)
    return {attr->getInt()};
  if (attr->getKind() != ir::Attribute::Kind::Ints)
    return {};
  return std::vector<int64_t>(attr->getInts().begin(), attr->getInts().end());
}

std::vector<float> EmitContext::floatsAttr(llvm::StringRef name) const {
  const ir::Attribute *attr = node.getAttribute(name);
  if (!attr || attr->getKind() != ir::Attribute::Kind::Floats)
    return {};
  return std::vector<float>(attr->getFloats().begin(),
                            attr->getFloats().end());
}

std::string EmitContext::stringAttr(llvm::StringRef name,
                                    llvm::StringRef fallback) const {
  const ir::Attribute *attr = node.getAttribute(name);
  return attr && attr->getKind() == ir::Attribute::Kind::String
             ? attr->getString().str()
             : fallback.str();
}

bool EmitContext::hasAttr(llvm::StringRef name) const {
  return node.getAttribute(name) != nullptr;
}

std::vector<int64_t> EmitContext::windowAttr(llvm::StringRef name,
                                             size_t count,
                                             int64_t fallback) const {
  if (!hasAttr(name))
    return std::vector<int64_t>(count, fallback);
  std::vector<int64_t> values = intsAttr(name);
  return values.size() == count ? values : std::vector<int64_t>();
}

void EmitContext::launch(Kernel kernel) {
  DeviceStep step;
  step.kind = StepLaunch;
  step.op = opIndex;
  step.launch.kernel = uint32_t(kernels.size()); // renumbered by the driver
  step.launch.grid[0] = kernel.grid.x, step.launch.grid[1] = kernel.grid.y;
  step.launch.grid[2] = kernel.grid.z;
  step.launch.block[0] = kernel.block.x, step.launch.block[1] = kernel.block.y;
  step.launch.block[2] = kernel.block.z;
  step.launch.sharedBytes = kernel.sharedBytes;
  for (const KernelParam &param : kernel.params)
    step.launch.args.push_back(param.arg);
  kernels.push_back(std::move(kernel));
  steps.push_back(std::move(step));
}

void EmitContext::gemm(const DeviceGemm &gemm) {
  DeviceStep step;
  step.kind = StepGemm;
  step.op = opIndex;
  step.gemm = gemm;
  // --precision=tf32 marks the node (passes/precision/Tf32Math.cpp); cuBLAS then
  // multiplies f32 in TF32. One place for every GEMM step a node makes.
  if (gemm.dtype == bundle::DTypeF32 && stringAttr("math") == "tf32")
    step.gemm.math = bundle::GemmMathTf32;
  step.gemm.workspaceOffset = scratchBytes ? scratchOffset : 0;
  step.gemm.workspaceBytes = scratchBytes;
  steps.push_back(std::move(step));
}

void EmitContext::copy(DeviceArg dst, DeviceArg src, uint64_t bytes) {
  if (!bytes || (dst.kind == src.kind && dst.value == src.value))
    return;
  DeviceStep step;
  step.kind = StepCopy;
  step.op = opIndex;
  step.copy.dst = dst, step.copy.src = src, step.copy.bytes = bytes;
  steps.push_back(std::move(step));
}

void EmitContext::branch(DeviceArg condition, bool when, uint32_t hostOps) {
  DeviceStep step;
  step.kind = StepBranch;
  step.op = opIndex;
  step.branch.condition = condition;
  step.branch.when = when;
  step.branch.count = hostOps;
  steps.push_back(std::move(step));
}

llvm::Error EmitContext::unsupported(const llvm::Twine &why) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 node.describe() + ": " + why.str());
}

llvm::ArrayRef<llvm::ArrayRef<EmitterEntry>> getEmitterFamilies() {
  static const llvm::ArrayRef<EmitterEntry> families[] = {
      getElementwiseEmitters(), getDataMovementEmitters(),
      getIndexingEmitters(),    getTopKEmitters(),
      getSamplingEmitters(),    getReductionEmitters(),
      getPoolingEmitters(),     getConvEmitters(),
      getGemmEmitters(),        getFusedEmitters(),
      getAttentionEmitters()};
  return families;
}

EmitFn lookupEmitter(ir::OpCode op) {
  for (llvm::ArrayRef<EmitterEntry> table : getEmitterFamilies())
    for (const EmitterEntry &entry : table)
      if (op == entry.op)
        return entry.emit;
  return nullptr;
}

namespace {

/// What stands for a kernel's symbol until the kernel is known to be new.
constexpr const char *kSymbolPlaceholder = "SNUG_KERNEL_SYMBOL";

/// The kernel's text with `symbol` as its name.
std::string kernelText(const Kernel &kernel, llvm::StringRef symbol) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "extern \"C\" __global__ void __launch_bounds__(" << kernel.threads()
     << ") " << symbol << "(";
  for (size_t i = 0; i < kernel.params.size(); ++i)
    os << (i ? ", " : "") << kernel.params[i].type
       << (llvm::StringRef(kernel.params[i].type).endswith("*") ? "" : " ")
       << kernel.params[i].name;
  os << ") {\n" << kernel.body;
  if (!kernel.body.empty() && kernel.body.back() != '\n')
    os << '\n';
  os << "}\n";
  // The simulator calls kernels through a thunk taking cuLaunchKernel's
  // argument array.
  os << "#ifdef SNUG_CUDA_SIM\nextern \"C\" void " << symbol
     << "_sim(void **args) { " << symbol << "(";
  for (size_t i = 0; i < kernel.params.size(); ++i)
    os << (i ? ", " : "") << "*(" << kernel.params[i].type << "*)args[" << i
       << "]";
  os << "); }\n#endif\n";
  return os.str();
}

unsigned countLines(llvm::StringRef text) { return unsigned(text.count('\n')); }

} // namespace

llvm::Expected<CudaProgram> emitCuda(const ir::Module &module,
                                     const WeightsLayout &weights,
                                     const CudaOptions &options) {
  const ir::Attribute *arena = module.getAttribute("arena");
  if (!arena || arena->getKind() != ir::Attribute::Kind::Int)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "module '" + module.getName() +
            "' has no memory plan; run plan-memory before emitting CUDA");
  // Only the arena and each node's scratch are needed here: read them as
  // recorded, without re-deriving the buffers' liveness.
  llvm::Expected<std::vector<RecordedScratch>> scratch =
      getRecordedScratch(module);
  if (!scratch)
    return scratch.takeError();
  llvm::DenseMap<int64_t, const RecordedScratch *> scratchAtStep;
  for (const RecordedScratch &entry : *scratch)
    scratchAtStep[entry.step] = &entry;
  llvm::DenseMap<const ir::Value *, uint64_t> weightOffsets;
  for (const auto &[value, offset] : weights.offsets)
    weightOffsets[value] = offset;

  auto makeRef = [&](const ir::Value *value) -> llvm::Expected<TensorRef> {
    TensorRef ref;
    if (!value)
      return ref;
    ref.present = true;
    const ir::TensorType &type = value->getType();
    ref.dtype = type.getDType();
    ref.dims.assign(type.getDims().begin(), type.getDims().end());
    ref.numElements = type.getNumElements();
    ref.bytes = type.getByteSize();
    if (value->isWeight()) {
      auto it = weightOffsets.find(value);
      if (it == weightOffsets.end())
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "internal error: a weight the plan "
                                       "reads is not in the weights layout");
      ref.place = DeviceArg::weight(it->second);
    } else {
      if (!value->getArenaOffset())
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "internal error: value '" + value->getName().str() +
                "' has no arena offset");
      bool onHost = isHostResident(value);
      ref.place = onHost ? DeviceArg::host(*value->getArenaOffset())
                         : DeviceArg::arena(*value->getArenaOffset());
    }
    return ref;
  };

  std::vector<DeviceStep> steps;
  std::vector<Kernel> kernels;
  std::vector<unsigned> kernelNode; // per launched kernel: its op index
  // The check record plan-memory placed for run-time checks, if any.
  const ir::Attribute *record = module.getAttribute("check_record");
  uint64_t checkRecordOffset =
      record && record->getKind() == ir::Attribute::Kind::Int
          ? uint64_t(record->getInt())
          : kNoCheckRecord;
  bool checkRecordUsed = false;
  unsigned opIndex = 0;
  for (const auto &nodePtr : module.getNodes()) {
    const ir::Node &node = *nodePtr;
    std::vector<TensorRef> operands, results;
    for (const ir::Value *operand : node.getOperands()) {
      auto ref = makeRef(operand);
      if (!ref)
        return ref.takeError();
      operands.push_back(std::move(*ref));
    }
    for (unsigned i = 0; i < node.getNumResults(); ++i) {
      auto ref = makeRef(node.getResult(i));
      if (!ref)
        return ref.takeError();
      results.push_back(std::move(*ref));
    }
    EmitContext context(node, opIndex, std::move(operands), std::move(results),
                        steps, kernels);
    context.checkRecordOffset = checkRecordOffset;
    context.index32Limit = options.index32Limit;
    if (const RecordedScratch *entry = scratchAtStep.lookup(opIndex)) {
      context.scratchOffset = entry->offset;
      context.scratchBytes = entry->bytes;
    }
    size_t kernelsBefore = kernels.size();
    if (node.getOpInfo().isView()) {
      context.copy(context.out().place, context.in(0).place,
                   context.out().bytes);
    } else if (EmitFn emit = lookupEmitter(node.getOpCode())) {
      if (llvm::Error error = emit(context))
        return llvm::Error(std::move(error));
    } else {
      return context.unsupported("op '" + node.getOpName() +
                                 "' has no CUDA kernel");
    }
    checkRecordUsed |= context.checkRecordUsed;
    kernelNode.resize(kernels.size(), opIndex);
    (void)kernelsBefore;
    ++opIndex;
  }

  CudaProgram program;
  program.source = getCudaPrelude().str();
  unsigned line = countLines(program.source) + 1;
  llvm::StringMap<unsigned> symbolOf; // kernel text (unnamed) -> index
  std::vector<unsigned> remap(kernels.size());
  std::vector<std::string> nodeNames;
  for (const auto &node : module.getNodes())
    nodeNames.push_back(node->describe());
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::string key = kernelText(kernels[i], kSymbolPlaceholder);
    auto found = symbolOf.find(key);
    if (found != symbolOf.end()) {
      remap[i] = found->second;
      continue;
    }
    unsigned index = unsigned(program.plan.kernels.size());
    std::string symbol =
        "snug_" + kernels[i].tag + "_" + std::to_string(index);
    // The text with its name: the placeholder stands only where the
    // symbol goes (the definition and the simulator thunk).
    std::string text = key;
    for (size_t at = text.find(kSymbolPlaceholder); at != std::string::npos;
         at = text.find(kSymbolPlaceholder, at + symbol.size()))
      text.replace(at, std::strlen(kSymbolPlaceholder), symbol);
    program.source += "\n// " + nodeNames[kernelNode[i]] + "\n" + text;
    unsigned first = line + 2, last = line + 1 + countLines(text);
    line = last + 1;
    program.plan.kernels.push_back(symbol);
    program.kernelNodes.push_back(nodeNames[kernelNode[i]]);
    program.kernelLines.push_back({first, last});
    symbolOf[key] = index;
    remap[i] = index;
  }
  for (DeviceStep &step : steps)
    if (step.kind == StepLaunch)
      step.launch.kernel = remap[step.launch.kernel];
  // A branch skips the steps of the next `count` nodes: as many steps as
  // follow it up to the first of a later node.
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].kind == StepBranch) {
      uint64_t lastOp = uint64_t(steps[i].op) + steps[i].branch.count;
      size_t end = i + 1;
      while (end < steps.size() && steps[end].op <= lastOp)
        ++end;
      steps[i].branch.count = uint32_t(end - i - 1);
    }
  program.plan.steps = std::move(steps);
  // The planned arena, workspaces and check record included: nothing is
  // placed after planning.
  program.plan.arenaBytes = uint64_t(arena->getInt());
  if (checkRecordUsed) {
    if (checkRecordOffset == kNoCheckRecord)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "internal error: a kernel checks data, but plan-memory placed no "
          "check record (planned for the host target?)");
    program.plan.checkRecordOffset = checkRecordOffset;
  }
  return program;
}

std::string describeDevicePlan(const DevicePlan &plan) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto arg = [&](const DeviceArg &a) {
    switch (a.kind) {
    case ArgArena: os << "arena+" << a.value; break;
    case ArgWeight: os << "weights+" << a.value; break;
    case ArgHost: os << "pinned+" << a.value; break;
    case ArgI32: os << "i32 " << int32_t(a.value); break;
    case ArgI64: os << "i64 " << int64_t(a.value); break;
    case ArgF32: {
      float f;
      uint32_t bits = uint32_t(a.value);
      std::memcpy(&f, &bits, 4);
      os << "f32 " << f;
      break;
    }
    default: os << "?"; break;
    }
  };
  os << "// device plan: arena " << plan.arenaBytes << " bytes, "
     << plan.kernels.size() << " kernels, " << plan.steps.size() << " steps";
  if (plan.hasCheckRecord())
    os << ", check record at arena+" << plan.checkRecordOffset;
  os << "\n";
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const DeviceStep &step = plan.steps[i];
    os << "// step " << i << " op " << step.op << ": ";
    if (step.kind == StepLaunch) {
      const DeviceLaunch &l = step.launch;
      os << "launch " << plan.kernels[l.kernel] << " grid(" << l.grid[0]
         << "," << l.grid[1] << "," << l.grid[2] << ") block(" << l.block[0]
         << "," << l.block[1] << "," << l.block[2] << ")";
      if (l.sharedBytes)
        os << " shared " << l.sharedBytes;
      os << " args(";
      for (size_t k = 0; k < l.args.size(); ++k) {
        os << (k ? ", " : "");
        arg(l.args[k]);
      }
      os << ")";
    } else if (step.kind == StepGemm) {
      const DeviceGemm &g = step.gemm;
      os << "gemm " << dtypeName(g.dtype) << (g.transA ? " T" : " N")
         << (g.transB ? "T" : "N") << " m=" << g.m << " n=" << g.n
         << " k=" << g.k << " batch=" << g.batch << " lda=" << g.lda
         << " ldb=" << g.ldb << " ldc=" << g.ldc << " strides=" << g.strideA
         << "," << g.strideB << "," << g.strideC << " alpha=" << g.alpha
         << " beta=" << g.beta << " A=";
      arg(g.a), os << " B=", arg(g.b), os << " C=", arg(g.c);
      if (g.workspaceBytes)
        os << " workspace=arena+" << g.workspaceOffset << " "
           << g.workspaceBytes << " bytes";
      if (g.math == bundle::GemmMathTf32)
        os << " math=tf32";
      if (g.epilogue != bundle::GemmEpilogueNone) {
        os << " epilogue=" << bundle::gemmEpilogueName(g.epilogue);
        if (bundle::gemmEpilogueHasBias(g.epilogue))
          os << " bias=", arg(g.bias);
      }
    } else if (step.kind == StepBranch) {
      os << "branch: skip " << step.branch.count << " steps when ";
      arg(step.branch.condition);
      os << " is " << (step.branch.when ? "true" : "false");
    } else {
      os << "copy " << step.copy.bytes << " bytes ";
      arg(step.copy.src), os << " -> ", arg(step.copy.dst);
    }
    os << "\n";
  }
  return os.str();
}


} // namespace cuda
} // namespace snug
