//===- HostExecutor.cpp - Running a host plan in one host arena -----------===//
//
// Creation does all the work that can fail for reasons other than data:
// kernel lookup, arena allocation or the caller arena's size and alignment
// checks, and binding every operand and result to its address. run() then
// only poisons (when asked) and calls the kernels in schedule order.
//
//===----------------------------------------------------------------------===//
#include "runtime/host/HostExecutor.h"
#include "runtime/host/kernels/FusedKernel.h"

#include "core/CheckedArithmetic.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace snug {
namespace rt {

Status checkHostSupport(const Bundle &bundle) {
  for (size_t i = 0; i < bundle.ops.size(); ++i) {
    const PlanOp &op = bundle.ops[i];
    if (!findHostKernel(op.opName))
      return Status(SNUG_ERROR_UNSUPPORTED,
                    "bundle '" + bundle.path + "': " + op.describe(i) +
                        ": op '" + op.opName + "' has no host kernel");
    // Each op of a body must bind to a scalar op before anything runs.
    if (op.hasBody)
      if (Status s = checkFusedBody(op, i))
        return Status(s.getCode(),
                      "bundle '" + bundle.path + "': " + s.getMessage());
  }
  return Status::ok();
}

Status HostExecutor::create(const Bundle &bundle, void *callerArena,
                            uint64_t arenaBytes, bool poison,
                            std::unique_ptr<HostExecutor> &out) {
  if (Status s = checkHostSupport(bundle))
    return s;
  std::unique_ptr<HostExecutor> executor(new HostExecutor());
  executor->poison = poison;
  uint64_t alignment = std::min<uint64_t>(bundle.alignment ? bundle.alignment : 1, 64);
  if (callerArena) {
    if (arenaBytes < bundle.arenaSize)
      return invalidArgument("caller arena of " + std::to_string(arenaBytes) +
                             " bytes is smaller than the " +
                             std::to_string(bundle.arenaSize) +
                             " bytes the plan of '" + bundle.path +
                             "' needs");
    if (reinterpret_cast<uintptr_t>(callerArena) % alignment)
      return invalidArgument("caller arena is not aligned to " +
                             std::to_string(alignment) + " bytes");
    executor->arena = static_cast<uint8_t *>(callerArena);
  } else {
    // The reader held the arena to kMaxTensorBytes; the round-up is checked
    // anyway so no size can wrap to a small allocation.
    std::optional<uint64_t> bytes =
        checkedAlignUp(std::max<uint64_t>(bundle.arenaSize, 1), 64);
    if (bytes && *bytes <= kMaxTensorBytes)
      executor->arena = static_cast<uint8_t *>(std::aligned_alloc(64, *bytes));
    if (!executor->arena)
      return Status(SNUG_ERROR_OUT_OF_MEMORY,
                    "cannot allocate a host arena of " +
                        std::to_string(bundle.arenaSize) + " bytes");
    executor->ownsArena = true;
  }
  if (bundle.hostSize) {
    executor->hostRegion = static_cast<uint8_t *>(std::malloc(bundle.hostSize));
    if (!executor->hostRegion)
      return Status(SNUG_ERROR_OUT_OF_MEMORY,
                    "cannot allocate a pinned host region of " +
                        std::to_string(bundle.hostSize) + " bytes");
  }
  executor->bundle = &bundle;
  executor->weights = const_cast<uint8_t *>(bundle.getWeights());
  if (!bundle.state.empty() && bundle.weightsSize) {
    executor->ownedWeights = static_cast<uint8_t *>(
        std::aligned_alloc(64, bundle::alignTo(bundle.weightsSize, 64)));
    if (!executor->ownedWeights)
      return Status(SNUG_ERROR_OUT_OF_MEMORY,
                    "cannot allocate " + std::to_string(bundle.weightsSize) +
                        " bytes of weights and state");
    std::memcpy(executor->ownedWeights, bundle.getWeights(),
                bundle.weightsSize);
    executor->weights = executor->ownedWeights;
  }
  // Bind every location once; the reader checked they lie in bounds.
  uint8_t *weights = executor->weights;
  uint8_t *host = executor->hostRegion;
  auto bind = [&](const Location &location) {
    TensorView view;
    if (!location.isPresent())
      return view;
    view.present = true;
    view.data = (location.kind == bundle::Arena    ? executor->arena
                 : location.kind == bundle::Weight ? weights
                                                   : host) +
                location.offset;
    view.dtype = location.dtype;
    view.dims = &location.dims;
    view.numElements = location.numElements;
    view.bytes = location.bytes;
    return view;
  };
  for (size_t i = 0; i < bundle.ops.size(); ++i) {
    const PlanOp &op = bundle.ops[i];
    BoundOp bound{findHostKernel(op.opName), KernelContext(op, i)};
    for (size_t k = op.getNumOwnOperands(); k < op.operands.size(); ++k)
      bound.context.epilogueInputs.push_back(bind(op.operands[k]));
    for (size_t k = 0; k < op.getNumOwnOperands(); ++k) {
      const Location &operand = op.operands[k];
      bound.context.inputs.push_back(bind(operand));
      std::string name;
      for (const TensorDesc &input : bundle.inputs)
        if (operand.kind == bundle::Arena &&
            input.location.kind == bundle::Arena &&
            operand.offset == input.location.offset &&
            operand.bytes == input.location.bytes)
          name = input.name;
      bound.context.inputNames.push_back(name);
    }
    for (const Location &result : op.results)
      bound.context.outputs.push_back(bind(result));
    // The plan verifier held count to the ops that follow.
    if (op.opName == "snug.skip_if") {
      bound.skipCount = size_t(bound.context.getInt("count", 0));
      bound.skipWhen = bound.context.getInt("when", 0) != 0;
    }
    executor->ops.push_back(std::move(bound));
  }
  // Poison ranges: the arena minus the inputs' ranges.
  std::vector<std::pair<uint64_t, uint64_t>> inputs;
  for (const TensorDesc &input : bundle.inputs)
    inputs.push_back({input.location.offset,
                      input.location.offset + input.location.bytes});
  std::sort(inputs.begin(), inputs.end());
  uint64_t at = 0;
  for (const auto &range : inputs) {
    if (range.first > at)
      executor->poisonRanges.push_back({at, range.first});
    at = std::max(at, range.second);
  }
  if (at < bundle.arenaSize)
    executor->poisonRanges.push_back({at, bundle.arenaSize});
  out = std::move(executor);
  return Status::ok();
}

HostExecutor::~HostExecutor() {
  if (ownsArena)
    std::free(arena);
  std::free(hostRegion);
  std::free(ownedWeights);
}

Status HostExecutor::run() {
  if (poison)
    for (const auto &range : poisonRanges)
      std::memset(arena + range.first, 0xff, range.second - range.first);
  for (size_t i = 0; i < ops.size(); ++i) {
    BoundOp &op = ops[i];
    if (Status s = op.kernel(op.context))
      return s;
    if (op.context.op.hasBody && op.context.op.opName != bundle::kFusedOpName)
      if (Status s = applyEpilogue(op.context))
        return s;
    // The branch of an If not taken (passes/memory/GuardBranches.cpp).
    if (op.skipCount && (op.context.in(0).data[0] != 0) == op.skipWhen)
      i += op.skipCount;
  }
  // The reader checked each output is an arena value of the state's bytes.
  for (const StateDesc &entry : bundle->state)
    std::memcpy(weights + entry.weightOffset,
                arena + bundle->outputs[entry.output].location.offset,
                entry.bytes);
  return Status::ok();
}

} // namespace rt
} // namespace snug
