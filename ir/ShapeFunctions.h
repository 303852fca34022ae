//===- ShapeFunctions.h - Result types of every supported op ----*- C++ -*-===//
//
// One shape function per op: from the operand types and the attributes of a
// node in snug's canonical form (compiler/onnx/OnnxImporter.h documents it per
// op), the types of its results. The importer calls them to type every node it
// creates; the infer-shapes pass calls them to check a module. They read only
// types and attributes, never tensor data, with two exceptions that exist in
// textual IR only (the importer folds them): ConstantOfShape and Range read
// their operands when these are weights with data.
//
// Errors are plain reasons ("kernel_shape has 3 dims, expected 2"); the
// node-level entry point puts the node's description in front.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_IR_SHAPEFUNCTIONS_H
#define SNUG_IR_SHAPEFUNCTIONS_H

#include "ir/Module.h"
#include "core/AttentionShape.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <string>

namespace snug {

/// What a shape function sees: the op, its operand types (nullptr for an
/// absent optional operand), its attributes, and how many results it has.
struct ShapeQuery {
  ir::OpCode op;
  llvm::ArrayRef<const ir::TensorType *> operands;
  const ir::AttributeMap &attributes;
  unsigned numResults = 1;
  /// Operand data where known (weights); may be empty.
  llvm::ArrayRef<llvm::Optional<llvm::ArrayRef<uint8_t>>> operandData = {};
  /// The node's body, for ops that have one (snug.fused: its yield types
  /// are its result types).
  const ir::Region *body = nullptr;
};

using ResultTypes = llvm::SmallVector<ir::TensorType, 2>;

/// True when snug has a shape function for `op`.
bool hasShapeFunction(ir::OpCode op);

/// Result types from a query; the error is a reason without a subject.
llvm::Expected<ResultTypes> inferResultTypes(const ShapeQuery &query);

/// Result types of an existing node; errors start with the node's
/// description ("node 'conv1' (Conv): ...").
llvm::Expected<ResultTypes> inferResultTypes(const ir::Node &node);

//===----------------------------------------------------------------------===//
// Attribute access shared by shape functions, folding and the importer.
//===----------------------------------------------------------------------===//

/// The sizes of a snug.attention node (core/AttentionShape.h); its
/// error says why when the operands do not fit.
AttentionShape getAttentionShape(const ir::Node &node);
/// The mask kind of a snug.attention node (its mask attribute).
AttentionMaskKind getAttentionMaskKind(const ir::Node &node);

int64_t getIntAttr(const ir::AttributeMap &attributes, llvm::StringRef name,
                   int64_t defaultValue);
float getFloatAttr(const ir::AttributeMap &attributes, llvm::StringRef name,
                   float defaultValue);
llvm::StringRef getStringAttr(const ir::AttributeMap &attributes,
                              llvm::StringRef name,
                              llvm::StringRef defaultValue);
/// None when absent.
llvm::Optional<llvm::SmallVector<int64_t, 4>>
getIntsAttr(const ir::AttributeMap &attributes, llvm::StringRef name);

/// `axis` in [-rank, rank) made non-negative; None when out of range.
llvm::Optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// The byte size of `type`, or None when its element count or byte size
/// overflows or passes 2^50 bytes (no real tensor is that large; a corrupt
/// model's dims are).
llvm::Optional<uint64_t> getCheckedByteSize(const ir::TensorType &type);

/// "[1,3,224,224]" for messages.
std::string dimsString(llvm::ArrayRef<int64_t> dims);

/// Row-major strides of `dims` in elements.
llvm::SmallVector<int64_t, 4> getStrides(llvm::ArrayRef<int64_t> dims);

} // namespace snug

#endif // SNUG_IR_SHAPEFUNCTIONS_H
