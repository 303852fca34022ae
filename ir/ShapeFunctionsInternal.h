//===- ShapeFunctionsInternal.h - Helpers shared by shape files -*- C++ -*-===//
//
// Private to the ShapeFunctions*.cpp files: error and operand helpers, and
// the hooks that add the data-movement, neural-network and indexing ops to
// the table.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_SHAPEFUNCTIONSINTERNAL_H
#define SNUG_IR_SHAPEFUNCTIONSINTERNAL_H

#include "ir/ShapeFunctions.h"
#include "core/CheckedArithmetic.h"

#include <array>
#include <string>

namespace snug {

llvm::Error shapeError(const llvm::Twine &message);
llvm::Expected<const ir::TensorType *> requireOperand(const ShapeQuery &query,
                                                      unsigned index);
llvm::Expected<llvm::SmallVector<int64_t, 4>>
requireInts(const ShapeQuery &query, llvm::StringRef name);
llvm::Expected<int64_t> requireAxis(const ShapeQuery &query,
                                    llvm::StringRef name, int64_t rank,
                                    int64_t defaultValue);
/// A string attribute, when present, is one of `choices`.
llvm::Error checkChoice(const ShapeQuery &query, llvm::StringRef name,
                        llvm::ArrayRef<llvm::StringRef> choices);

/// The error for a shape formula that overflowed.
llvm::Error overflowError(const llvm::Twine &what);

using ShapeFunctionPtr = llvm::Expected<ResultTypes> (*)(const ShapeQuery &);
using ShapeFunctionTable =
    std::array<ShapeFunctionPtr, ir::getAllOpsCount()>;
/// Shape, the views, the copies, Pad, Resize, the fills and Dropout
/// (ShapeFunctionsDataMovement.cpp).
void registerDataMovementShapeFunctions(ShapeFunctionTable &map);
void registerNNShapeFunctions(ShapeFunctionTable &map);
/// CumSum, the element gathers, the scatters and TopK
/// (ShapeFunctionsIndexing.cpp).
void registerIndexingShapeFunctions(ShapeFunctionTable &map);

} // namespace snug

#endif // SNUG_IR_SHAPEFUNCTIONSINTERNAL_H
