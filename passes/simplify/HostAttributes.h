//===- HostAttributes.h - IR attributes as the runtime's -------*- C++ -*-===//
//
// ir::Attribute -> rt::Attr, and ir::DType -> the bundle's dtype code, for
// running the host reference kernels on IR nodes (constant folding,
// ConstantEval.cpp) exactly as the host executor runs them from a bundle:
// the same values the bundle writer stores (floats as f32, tensors with
// their dtype code, dims and bytes).
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_SIMPLIFY_HOSTATTRIBUTES_H
#define SNUG_PASSES_SIMPLIFY_HOSTATTRIBUTES_H

#include "ir/Attribute.h"
#include "ir/DType.h"
#include "runtime/BundleReader.h"

#include <cstdint>

namespace snug {

/// `attr` as the host executor would read it from a bundle.
rt::Attr toHostAttr(const ir::Attribute &attr);

} // namespace snug

#endif // SNUG_PASSES_SIMPLIFY_HOSTATTRIBUTES_H
