//===- PlanVerifier.h - Load-time checks of a decoded plan ------*- C++ -*-===//
//
// The bundle reader (runtime/BundleReader.h) checks that a bundle decodes
// and that every location lies inside the arena or the weights; this checks
// that every op of the host plan (fused-body ops included) and every step
// of the device plan is well-formed for what it is, so that a bundle that
// loads, however it was made (a digest is no authentication: anyone can
// reseal an edited file), can only read and write inside its arena, weights
// and I/O buffers:
//   - the op is one of core/Ops.def's (the table itself, not a second list),
//     with operand and result counts within its arity, its leading
//     (required) operands present and every result present in the arena;
//     body ops of snug.fused likewise, and elementwise;
//   - attributes named in Ops.def's ATTR lines have the kind declared there;
//   - types: operand 0's dtype in the DTYPES column, the family's rule
//     (Unary, Broadcast, Compare), a data-movement op's results in operand
//     0's dtype, an elementwise op's operands broadcasting to its result,
//     a view keeping its byte size;
//   - aliasing: a result lies exactly on an operand only for ops whose
//     kernels are written for it, and apart from it otherwise;
//   - the kernel-specific invariants the host kernels
//     (runtime/host/kernels/*) rely on: Conv/ConvTranspose/pool windows,
//     Slice, Pad and MatMul extents whose index arithmetic cannot overflow,
//     Gather's integer indices, axes within the rank, Resize's scales,
//     DepthToSpace's and LRN's sizes, the indexing ops' (CumSum, the
//     element gathers and scatters) index shapes within the data, and
//     TopK's k within its axis.
//     GridSample's grid and result shapes.
// The reader (not this) bounds every location, the manifest's sizes
// (kMaxTensorBytes), an empty tensor's other dims, and every pointer, copy
// and GEMM extent of the device plan. A kernel image is code: no load-time
// check can bound what a crafted cubin does, so a device plan is as safe as
// the kernels the bundle carries.
// decodeBundle runs it on every load; messages name the op:
//   "node 'conv1' (Conv): strides[0] = 0 is out of range [1, 2147483648]".
//
// Std-only, like the rest of the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_RUNTIME_PLANVERIFIER_H
#define SNUG_RUNTIME_PLANVERIFIER_H

#include "runtime/BundleReader.h"
#include "runtime/Status.h"

#include <string>
#include <vector>

namespace snug {
namespace rt {

/// Checks every op and device step of `bundle` (already decoded and
/// bounds-checked). The error is SNUG_ERROR_INVALID_BUNDLE and names the
/// file and the op.
Status verifyPlan(const Bundle &bundle);

/// Whether `opName` is an op of core/Ops.def.
bool isKnownOp(const std::string &opName);

/// For an op of Ops.def's Epilogue trait, its own operand count (its
/// table arity; an epilogue's extra operands follow, ir/Module.h); -1 for
/// every other op.
int getEpilogueArity(const std::string &opName);

/// True when `dims` broadcasts to `shape` (numpy, right-aligned) without
/// growing it. Shared with the reader's fused-body checks.
bool broadcastsTo(const std::vector<int64_t> &dims,
                  const std::vector<int64_t> &shape);

} // namespace rt
} // namespace snug

#endif // SNUG_RUNTIME_PLANVERIFIER_H
