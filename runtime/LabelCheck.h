//===- LabelCheck.h - snug.check_labels: the rule and its error -*- C++ -*-===//
//
// What snug.check_labels (core/Ops.def) accepts and what a run that finds
// a bad label reports, in one place for the three executors that run it:
// the host kernel (runtime/host/kernels/IndexingKernels.cpp) reports the
// first bad label itself; the CUDA executor and the simulator read the
// device plan's check record (core/DevicePlan.h) after the step and turn it
// into the same error. The error is the caller's (SNUG_ERROR_INVALID_ARGUMENT:
// snug-run exits 1), naming the graph input, the label and its position.
// The check record may also name a snug.fail_if (a bounded Loop still
// running after its last iteration), whose error is its message.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_LABELCHECK_H
#define SNUG_RUNTIME_LABELCHECK_H

#include "core/DevicePlan.h"
#include "runtime/BundleReader.h"

#include <cstdint>

namespace snug {
namespace rt {

/// The op's `classes`, or 0 when it has none (or one below 1): the op is
/// then malformed, a runtime error of the executor.
int64_t getLabelClasses(const PlanOp &op);

/// Whether snug.check_labels op `op` accepts `value`: a class index in
/// [0, classes), or its ignore_index when it has one.
bool isLabelAccepted(const PlanOp &op, int64_t value);

/// The error for `value` at element `position` of op `op`'s operand (host
/// plan op `index`): "input 'labels' holds 8 at position 3, which is not a
/// class index in [0, 8): ...".
Status labelCheckError(const PlanOp &op, size_t index, int64_t position,
                       int64_t value);

/// The run's outcome from the device plan's check record (read back after
/// the plan's steps): ok when word 0 is 0, else the failing check's error;
/// a record naming no snug.check_labels op is a runtime error.
Status checkRecordStatus(const Bundle &bundle,
                         const uint64_t (&record)[bundle::kCheckRecordWords]);

} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_LABELCHECK_H
