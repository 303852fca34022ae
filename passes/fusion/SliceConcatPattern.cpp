//===- SliceConcatPattern.cpp - A Concat of slices of one tensor as a Gather ===//
//
// torch.roll, and any reordering of a tensor's rows along one axis, is
// exported as Slices of one tensor x along an axis joined again by a
// Concat along that axis:
//   y = Concat(Slice(x, a, 2:16), Slice(x, a, 0:2)) {axis = a}
// (Swin's cyclic shift of its windows, and its inverse). Each strided
// Slice is a kernel and an intermediate, then the Concat copies each
// again. The same y is Gather(x, indices) {axis = a} with the constant
// indices of the rows each operand takes, in order: one kernel that reads
// every element once and writes it once, for an index table of x's dim
// along a (not of x: the table does not grow with the batch unless a is
// the batch axis).
//
// When: every operand of the Concat is x itself or a Slice of x along the
// Concat's axis alone (any start, end and nonzero step, ONNX's clamping),
// each Slice read by this Concat alone; and some Slice is strided in
// memory (a dim before the axis is not 1, or its step is not 1). When
// every slice is a contiguous block, the planner already places the
// slices in the Concat's buffer and the device copies them, which moves
// the bytes a Gather would: nothing to gain.
//
//===----------------------------------------------------------------------===//
#include "passes/fusion/FusePatterns.h"

#include "llvm/ADT/StringSet.h"

namespace snug {

namespace {

using ir::OpCode;
using ir::Value;

/// The ints attribute `name` of `node`, empty when absent.
llvm::ArrayRef<int64_t> intsOf(const ir::Node &node, const char *name) {
  const ir::Attribute *attribute = node.getAttribute(name);
  return attribute && attribute->getKind() == ir::Attribute::Kind::Ints
             ? attribute->getInts()
             : llvm::ArrayRef<int64_t>();
}

/// The rows of dim `size` that Slice(start, end, step) takes, in order
/// (ONNX Slice: negative bounds count from the end, then clamp).
std::vector<int64_t> sliceRows(int64_t size, int64_t start, int64_t end,
                               int64_t step) {
  std::vector<int64_t> rows;
  if (step == 0)
    return rows;
  if (start < 0)
    start += size;
  if (end < 0)
    end += size;
  if (step > 0) {
    start = std::max<int64_t>(0, std::min(start, size));
    end = std::max<int64_t>(0, std::min(end, size));
    for (int64_t i = start; i < end; i += step)
      rows.push_back(i);
  } else {
    start = std::max<int64_t>(0, std::min(start, size - 1));
    end = std::max<int64_t>(-1, std::min(end, size - 1));
    for (int64_t i = start; i > end; i += step)
      rows.push_back(i);
  }
  return rows;
}

struct SliceConcat {
  Value *source = nullptr;
  int64_t axis = 0;
  std::vector<int64_t> rows;
  llvm::SmallVector<ir::Node *, 4> nodes; // the Slices, then the Concat
};

llvm::Optional<SliceConcat> matchAt(const ir::Module &module,
                                    ir::Node &concat) {
  const ir::Attribute *axisAttribute = concat.getAttribute("axis");
  if (!concat.is(OpCode::Concat) || concat.getNumOperands() < 2 ||
      !axisAttribute || axisAttribute->getKind() != ir::Attribute::Kind::Int)
    return llvm::None;
  llvm::ArrayRef<int64_t> dims = concat.getResult(0)->getType().getDims();
  int64_t rank = int64_t(dims.size());
  int64_t axis = axisAttribute->getInt();
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return llvm::None;
  SliceConcat match;
  match.axis = axis;
  bool strided = false;
  for (Value *operand : concat.getOperands()) {
    if (!operand)
      return llvm::None;
    ir::Node *slice = operand->getDefiningNode();
    Value *source = operand;
    std::vector<int64_t> rows;
    if (slice && slice->is(OpCode::Slice) && slice->getNumOperands() == 1) {
      llvm::ArrayRef<int64_t> axes = intsOf(*slice, "axes"),
                              starts = intsOf(*slice, "starts"),
                              ends = intsOf(*slice, "ends"),
                              steps = intsOf(*slice, "steps");
      source = slice->getOperand(0);
      int64_t sliceAxis = axes.size() == 1 ? axes[0] : -rank - 1;
      if (sliceAxis < 0)
        sliceAxis += rank;
      int64_t step = steps.empty() ? 1 : steps[0];
      if (sliceAxis != axis || starts.size() != 1 || ends.size() != 1 ||
          steps.size() > 1 || soleUser(module, operand) != &concat ||
          source->getType().getRank() != rank)
        return llvm::None;
      rows = sliceRows(source->getType().getDims()[size_t(axis)], starts[0],
                       ends[0], step);
      if (int64_t(rows.size()) != operand->getType().getDims()[size_t(axis)])
        return llvm::None;
      int64_t outer = 1;
      for (int64_t d = 0; d < axis; ++d)
        outer *= dims[size_t(d)];
      strided |= outer != 1 || step != 1;
      match.nodes.push_back(slice);
    } else {
      for (int64_t i = 0; i < operand->getType().getDims()[size_t(axis)]; ++i)
        rows.push_back(i);
    }
    if (match.source && match.source != source)
      return llvm::None;
    match.source = source;
    match.rows.insert(match.rows.end(), rows.begin(), rows.end());
  }
  if (!strided || match.source->getType().getDType() !=
                      concat.getResult(0)->getType().getDType())
    return llvm::None;
  match.nodes.push_back(&concat);
  return match;
}

} // namespace

unsigned rewriteSliceConcats(ir::Module &module) {
  return rewriteMatches(
      module, OpCode::Gather, matchAt,
      [&module](const SliceConcat &match, auto current) {
        ir::Node &concat = *match.nodes.back();
        std::vector<uint8_t> bytes(match.rows.size() * sizeof(int64_t));
        if (!bytes.empty())
          std::memcpy(bytes.data(), match.rows.data(), bytes.size());
        // Named after the Concat's result; values share one namespace.
        std::string base = concat.getResult(0)->getName().str();
        if (base.empty())
          base = concat.getName().str();
        std::string name = base + ".rows";
        llvm::StringSet<> taken;
        for (const Value *weight : module.getWeights())
          taken.insert(weight->getName());
        for (unsigned k = 1; taken.count(name); ++k)
          name = base + ".rows" + std::to_string(k);
        Value *indices = module.addWeight(
            name,
            ir::TensorType(ir::DType::I64, {int64_t(match.rows.size())}),
            bytes);
        std::pair<llvm::SmallVector<Value *, 4>, ir::AttributeMap> node;
        node.first = {current(match.source), indices};
        node.second["axis"] = ir::Attribute::getInt(match.axis);
        return node;
      });
}

} // namespace snug
