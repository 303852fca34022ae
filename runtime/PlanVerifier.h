//===- PlanVerifier.h - Load-time checks of a decoded plan ------*- C++ -*-===//
//
// The bundle reader (runtime/BundleReader.h) checks that a bundle decodes
// and that every location lies inside the arena or the weights; this checks
// that every op of the host plan (fused-body ops included) and every step
// of the device plan is well-formed for what it is, so that a bundle that
// loads, however it was made (a digest is no authentication: anyone can
// reseal an edited file), can only read and write inside its arena, weights
// and I/O buffers:
//   - the op is one of ir/Ops.def's (the table itself, not a second list),
//     with operand and result counts within its arity, its leading
//     (required) operands present and every result present in the arena;
//   - attributes named in Ops.def's ATTR lines have the kind declared there;
//   - shapes: an elementwise op's operands broadcast to its result, a view
//     keeps its byte size, and the kernel-specific invariants the host
//     kernels (runtime/host/kernels/*) rely on: Conv/ConvTranspose/pool
//     windows whose index arithmetic cannot overflow, Gather's integer
//     indices and a result size that does not wrap, axes within the rank;
//   - device steps name a verified op.
// decodeBundle runs it on every load; messages name the op:
//   "node 'conv1' (Conv): strides[0] = 0 is not positive".
//
// Std-only, like the rest of the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_PLANVERIFIER_H
#define SNUG_RUNTIME_PLANVERIFIER_H

#include "runtime/BundleReader.h"
#include "runtime/Status.h"

namespace snug {
namespace rt {

/// Checks every op and device step of `bundle` (already decoded and
/// bounds-checked). The error is SNUG_ERROR_INVALID_BUNDLE and names the
/// file and the op.
Status verifyPlan(const Bundle &bundle);

/// Whether `opName` is an op of ir/Ops.def.
bool isKnownOp(const std::string &opName);

} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_PLANVERIFIER_H
