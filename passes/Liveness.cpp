//===- Liveness.cpp - Buffers and their live intervals --------------------===//
//
// One forward walk over the schedule. Value intervals are computed first;
// buffers then grow by merging: a buffer's interval is the union of its
// members'. A merge is only taken when it cannot let one member's write
// clobber another member's bytes that are still needed:
//  - a view's operand keeps its bytes, so a view is always safe;
//  - in place needs the whole operand buffer (views of it included) to end
//    at this node, so nobody reads the old bytes afterwards;
//  - concat in place takes only operands alone in their buffer, produced by
//    a node and used nowhere as an output, so the slice has no other owner.
//
//===----------------------------------------------------------------------===//
#include "passes/Liveness.h"

#include "ir/OpInfo.h"

#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

namespace snug {

bool isViewOp(llvm::StringRef opName) {
  return llvm::StringSwitch<bool>(opName)
      .Cases("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", true)
      .Default(false);
}

bool isElementwiseOp(llvm::StringRef opName) {
  if (opName == "Softmax" || opName == "LogSoftmax" || isViewOp(opName))
    return false;
  const ir::OpInfo *info = ir::lookupOp(opName);
  if (!info)
    return false;
  return info->family == ir::OpFamily::Unary ||
         info->family == ir::OpFamily::Broadcast ||
         info->family == ir::OpFamily::Compare || opName == "Pow" ||
         opName == "Where";
}

namespace {
class LivenessBuilder {
public:
  LivenessBuilder(const ir::Module &module, const LivenessOptions &options)
      : module(module), options(options) {}
  LivenessInfo build();

private:
  void computeIntervals();
  unsigned newBuffer(const ir::Value *value);
  void join(const ir::Value *value, unsigned buffer, uint64_t offset,
            const char *reason);
  bool isCallerOwned(unsigned buffer) const;
  bool tryView(const ir::Node &node);
  bool tryInPlace(const ir::Node &node, int64_t step);
  void tryConcatInPlace(const ir::Node &node);

  const ir::Module &module;
  const LivenessOptions &options;
  LivenessInfo info;
};
} // namespace

void LivenessBuilder::computeIntervals() {
  auto nodes = module.getNodes();
  info.numSteps = std::max<int64_t>(1, nodes.size());
  int64_t lastStep = info.numSteps - 1;
  for (const ir::Value *input : module.getInputs())
    info.intervals[input] = {0, 0};
  for (size_t step = 0; step < nodes.size(); ++step) {
    const ir::Node &node = *nodes[step];
    for (const ir::Value *operand : node.getOperands()) {
      auto it = operand ? info.intervals.find(operand) : info.intervals.end();
      if (it != info.intervals.end())
        it->second.second = std::max<int64_t>(it->second.second, step);
    }
    for (unsigned i = 0; i < node.getNumResults(); ++i)
      info.intervals[node.getResult(i)] = {int64_t(step), int64_t(step)};
  }
  for (const ir::Value *output : module.getOutputs()) {
    auto it = info.intervals.find(output);
    if (it != info.intervals.end())
      it->second.second = lastStep;
  }
}

unsigned LivenessBuilder::newBuffer(const ir::Value *value) {
  auto interval = info.intervals.lookup(value);
  LiveBuffer buffer;
  buffer.bytes = value->getType().getByteSize();
  buffer.firstStep = interval.first;
  buffer.lastStep = interval.second;
  buffer.values.push_back(value);
  buffer.reasons.push_back("");
  info.buffers.push_back(std::move(buffer));
  info.storage[value] = {unsigned(info.buffers.size() - 1), 0};
  return info.buffers.size() - 1;
}

void LivenessBuilder::join(const ir::Value *value, unsigned index,
                           uint64_t offset, const char *reason) {
  LiveBuffer &buffer = info.buffers[index];
  auto interval = info.intervals.lookup(value);
  buffer.firstStep = std::min(buffer.firstStep, interval.first);
  buffer.lastStep = std::max(buffer.lastStep, interval.second);
  buffer.bytes =
      std::max(buffer.bytes, offset + value->getType().getByteSize());
  buffer.values.push_back(value);
  buffer.reasons.push_back(reason);
  info.storage[value] = {index, offset};
}

bool LivenessBuilder::isCallerOwned(unsigned index) const {
  for (const ir::Value *value : info.buffers[index].values)
    if (value->isInput() || module.isOutput(value))
      return true;
  return false;
}

bool LivenessBuilder::tryView(const ir::Node &node) {
  if (!options.views || !isViewOp(node.getOpName()) ||
      node.getNumResults() != 1 || node.getNumOperands() == 0)
    return false;
  const ir::Value *operand = node.getOperand(0);
  const ir::Value *result = node.getResult(0);
  auto it = operand ? info.storage.find(operand) : info.storage.end();
  if (it == info.storage.end() ||
      operand->getType().getByteSize() != result->getType().getByteSize())
    return false;
  join(result, it->second.buffer, it->second.offsetInBuffer, "view");
  return true;
}

bool LivenessBuilder::tryInPlace(const ir::Node &node, int64_t step) {
  if (!options.inPlace || node.getNumResults() != 1 ||
      !isElementwiseOp(node.getOpName()))
    return false;
  const ir::Value *result = node.getResult(0);
  for (const ir::Value *operand : node.getOperands()) {
    auto it = operand ? info.storage.find(operand) : info.storage.end();
    if (it == info.storage.end() || operand->getType() != result->getType())
      continue;
    const LiveBuffer &buffer = info.buffers[it->second.buffer];
    if (buffer.lastStep != step || isCallerOwned(it->second.buffer))
      continue;
    // Another operand in the same buffer (a view of it, or the Concat that
    // holds it) would be read at other addresses than the ones written.
    bool sharedWithOtherOperand = llvm::any_of(
        node.getOperands(), [&](const ir::Value *other) {
          auto found = other && other != operand ? info.storage.find(other)
                                                 : info.storage.end();
          return found != info.storage.end() &&
                 found->second.buffer == it->second.buffer;
        });
    if (sharedWithOtherOperand)
      continue;
    join(result, it->second.buffer, it->second.offsetInBuffer, "in-place");
    return true;
  }
  return false;
}

void LivenessBuilder::tryConcatInPlace(const ir::Node &node) {
  const ir::Value *result = node.getResult(0);
  const ir::Attribute *axisAttr = node.getAttribute("axis");
  if (!axisAttr || axisAttr->getKind() != ir::Attribute::Kind::Int)
    return;
  llvm::ArrayRef<int64_t> dims = result->getType().getDims();
  int64_t axis = axisAttr->getInt();
  if (axis < 0)
    axis += dims.size();
  if (axis < 0 || axis >= int64_t(dims.size()))
    return;
  // Operands are contiguous blocks of the result only if nothing outside
  // the axis iterates around them.
  for (int64_t d = 0; d < axis; ++d)
    if (dims[d] != 1)
      return;
  unsigned resultBuffer = info.storage[result].buffer;
  uint64_t offset = 0;
  for (unsigned i = 0; i < node.getNumOperands(); ++i) {
    const ir::Value *operand = node.getOperand(i);
    if (!operand)
      return;
    uint64_t bytes = operand->getType().getByteSize();
    auto it = info.storage.find(operand);
    bool alone = it != info.storage.end() &&
                 info.buffers[it->second.buffer].values.size() == 1;
    bool repeated = llvm::count(node.getOperands(), operand) > 1;
    if (alone && operand->isResult() && !module.isOutput(operand) &&
        !repeated && bytes > 0) {
      // The operand's own buffer is left empty; the result's takes it over.
      LiveBuffer &old = info.buffers[it->second.buffer];
      old.values.clear();
      old.reasons.clear();
      old.bytes = 0;
      join(operand, resultBuffer, offset, "concat");
    }
    offset += bytes;
  }
}

LivenessInfo LivenessBuilder::build() {
  computeIntervals();
  for (const ir::Value *input : module.getInputs())
    newBuffer(input);
  auto nodes = module.getNodes();
  for (size_t step = 0; step < nodes.size(); ++step) {
    const ir::Node &node = *nodes[step];
    if (tryView(node) || tryInPlace(node, step))
      continue;
    for (unsigned i = 0; i < node.getNumResults(); ++i)
      newBuffer(node.getResult(i));
    if (options.concatInPlace && node.getOpName() == "Concat" &&
        node.getNumResults() == 1)
      tryConcatInPlace(node);
  }
  // Drop buffers emptied by concat in place, renumbering the rest.
  std::vector<LiveBuffer> kept;
  for (LiveBuffer &buffer : info.buffers) {
    if (buffer.values.empty())
      continue;
    for (const ir::Value *value : buffer.values)
      info.storage[value].buffer = kept.size();
    kept.push_back(std::move(buffer));
  }
  info.buffers = std::move(kept);
  return std::move(info);
}

LivenessInfo computeLiveness(const ir::Module &module,
                             const LivenessOptions &options) {
  return LivenessBuilder(module, options).build();
}

} // namespace snug
