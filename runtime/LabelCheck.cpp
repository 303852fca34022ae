//===- LabelCheck.cpp - snug.check_labels: the rule and its error ---------===//
//
// See LabelCheck.h. The message says what torch would: a label must be a
// class index, and a negative one (torch's -100 "ignore" convention) is
// only skipped when the loss was given ignore-index, so the message says
// how to ask for that.
//
//===----------------------------------------------------------------------===//
#include "runtime/LabelCheck.h"

namespace snug {
namespace rt {

int64_t getLabelClasses(const PlanOp &op) {
  const Attr *classes = op.getAttr("classes");
  if (!classes || classes->kind != bundle::AttrInt || classes->i < 1)
    return 0;
  return classes->i;
}

/// The op's ignore_index, when it has one.
static const Attr *getIgnoreIndex(const PlanOp &op) {
  const Attr *ignore = op.getAttr("ignore_index");
  return ignore && ignore->kind == bundle::AttrInt ? ignore : nullptr;
}

bool isLabelAccepted(const PlanOp &op, int64_t value) {
  if (value >= 0 && value < getLabelClasses(op))
    return true;
  const Attr *ignore = getIgnoreIndex(op);
  return ignore && value == ignore->i;
}

Status labelCheckError(const PlanOp &op, size_t index, int64_t position,
                       int64_t value) {
  const Attr *input = op.getAttr("input");
  const Attr *offset = op.getAttr("offset");
  if (offset && offset->kind == bundle::AttrInt)
    position += offset->i;
  std::string classes = std::to_string(getLabelClasses(op));
  std::string where =
      input && input->kind == bundle::AttrString && !input->s.empty()
          ? "input '" + input->s + "'"
          : "the operand of " + op.describe(index);
  std::string message = where + " holds " + std::to_string(value) +
                        " at position " + std::to_string(position) +
                        ", which is not a class index in [0, " + classes + ")";
  if (const Attr *ignore = getIgnoreIndex(op))
    return invalidArgument(message + " nor the ignore index " +
                           std::to_string(ignore->i) + " (cross-entropy over " +
                           classes + " classes)");
  message += " (cross-entropy over " + classes + " classes)";
  if (value < 0)
    message += "; to skip the items labelled " + std::to_string(value) +
               ", as torch's ignore_index does, compile the step with "
               "--loss=cross-entropy:LOGITS,LABELS,ignore-index=" +
               std::to_string(value);
  return invalidArgument(message);
}

Status checkRecordStatus(const Bundle &bundle,
                         const uint64_t (&record)[bundle::kCheckRecordWords]) {
  if (record[0] == 0)
    return Status::ok();
  uint64_t index = record[0] - 1;
  if (index < bundle.ops.size() && bundle.ops[index].opName == "snug.fail_if") {
    const Attr *message = bundle.ops[index].getAttr("message");
    return invalidArgument(message && message->kind == bundle::AttrString
                               ? message->s
                               : "a run-time check failed");
  }
  if (index >= bundle.ops.size() ||
      bundle.ops[index].opName != "snug.check_labels")
    return Status(
        SNUG_ERROR_RUNTIME,
        "bundle '" + bundle.path + "': the device's check record names op " +
            std::to_string(index) +
            ", which is not a snug.check_labels or snug.fail_if");
  return labelCheckError(bundle.ops[index], size_t(index), int64_t(record[1]),
                         int64_t(record[2]));
}

} // namespace rt
} // namespace snug
