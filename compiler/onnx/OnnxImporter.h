//===- OnnxImporter.h - ONNX models into static snug IR ---------*- C++ -*-===//
//
// Reads an ONNX ModelProto (binary .onnx, or protobuf text format for files
// ending .onnxtxt, .textproto or .pbtxt), binds every symbolic dimension,
// normalizes each node of the default domain (opsets 7 to 27) into one
// canonical snug form, types every value with the shape functions
// (ir/ShapeFunctions.h). It runs no pass: the pipelines live in
// compiler/Pipeline.h. Initializers, and graph inputs that are also
// initializers, become weights; raw_data is moved, not copied, and external
// data is mmap-ed (WeightBlob::addMapped), so a weight is never held twice.
// Constant nodes become weights.
//
// Before building anything the importer checks the whole graph and reports
// every problem of a kind at once: all unsupported ops (type, domain, opset,
// node names) in one UnsupportedOpsError; undefined inputs and cycles with the
// nodes involved. Messages start with the model's path. A node may carry
// only attributes that ONNX's schema of its op defines at the model's opset,
// in the schema's type (OnnxSchema.h), whatever snug's canonical form has.
//
// Input bindings: `NAME:DIMS[xDTYPE]`, DIMS being `x`-separated positive
// integers and DTYPE a snug element type name, e.g. `x:1x3x224x224` or
// `x:1x3x224x224xf16` (the dtype must match the model's); a scalar is
// `NAME:` with nothing after the colon. `SYMBOL=N` binds a symbolic dim
// everywhere it appears. An input whose dims are neither in the model nor
// bound is an error naming the input and the dim.
//
// Canonical forms (what snug keeps, whatever the opset; "attr" = attribute):
//   Shape parameters are attributes, resolved and non-negative:
//   Reshape(x) {shape}: the exact result dims (no 0 or -1).
//   Expand(x) {shape}: the result dims after broadcasting.
//   Tile(x) {repeats}. Squeeze(x) {axes}, Unsqueeze(x) {axes}: sorted,
//   non-negative (Unsqueeze's relative to the result rank); Squeeze without
//   axes gets the unit dims. Split(x) {axis, split}: sizes always given.
//   Slice(x) {starts, ends, axes, steps}: all four, axes non-negative, starts
//   and ends clamped to the dim as ONNX defines (a negative step may end at
//   -1, meaning "through index 0").
//   Reduce*(x) {axes, keepdims}: axes explicit and sorted (all axes when the
//   model gives none); noop_with_empty_axes with no axes becomes Identity.
//   ArgMax/ArgMin {axis, keepdims, select_last_index}.
//   TopK(x) {axis, k, largest, sorted}: k an attribute (ONNX's constant k
//   input from opset 10 on), axis non-negative; two results, values and
//   i64 indices.
//   Pad(x) {pads, mode, value}: pads (begins then ends, may be negative) for
//   every axis; value a float. Clip(x) {min, max}: floats, each optional.
//   Resize(x) {mode = "nearest"|"linear", coordinate_transformation_mode,
//   nearest_mode, cubic_coeff_a, scales, sizes}: sizes are the result dims,
//   scales the per-axis factors; Upsample becomes Resize (asymmetric, floor).
//   Softmax/LogSoftmax {axis}: opset-13 meaning (one axis); older models
//   whose axis is not the last are rewritten as Reshape, Softmax, Reshape.
//   Flatten, Concat, Gather, GatherElements, ScatterElements {axis}:
//   non-negative (Scatter, opsets 9-10, becomes ScatterElements).
//   CumSum(x) {axis, exclusive, reverse}: a constant axis input becomes the
//   non-negative attribute; a runtime one stays operand 1.
//   Transpose {perm}: always.
//   Cast {to}: a snug dtype name string ("f16"). Shape {start, end} only when
//   not the whole shape.
//   Conv/ConvTranspose {kernel_shape, strides, pads, dilations, group}
//   (+ output_padding for ConvTranspose): auto_pad and output_shape resolved
//   into pads. MaxPool {kernel_shape, strides, pads, dilations, ceil_mode}
//   (+ storage_order when the Indices result is kept),
//   AveragePool {kernel_shape, strides, pads, ceil_mode, count_include_pad}.
//   Gemm {alpha, beta, transA, transB}. BatchNormalization {epsilon}, one
//   result (inference).
//   LeakyRelu {alpha}, HardSigmoid {alpha, beta}, Elu {alpha}, Gelu
//   {approximate}, LRN {size, alpha, beta, bias}: defaults made explicit.
//   Dropout(x): one operand; a second result (the mask, all true) only when
//   the model names it; training mode must be a constant false, unless
//   ImportOptions::trainingDropout: then Mul(x, snug.dropout_mask(seed)
//   {shape, ratio, salt}) (+ Cast(mask, bool) for the mask output), seed
//   the one weight ir::kDropoutSeedWeight (ir/State.h), ratio a constant
//   in [0, 1).
//   fold-constants removes a mask-less Dropout like Identity.
//   LayerNormalization {axis, epsilon}: Mean and InvStdDev results only when
//   the model names them.
//   Range and ConstantOfShape are folded into weights at import.
//   Decomposed into canonical ops: CastLike -> Cast {to}; ReduceLogSum ->
//   ReduceSum, Log; Trilu -> Where(constant bool mask, x, 0).
//   Other ops keep their ONNX operands and attributes.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_ONNX_ONNXIMPORTER_H
#define SNUG_COMPILER_ONNX_ONNXIMPORTER_H

#include "ir/Module.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace snug {

/// The opsets of the default domain the importer accepts. The ONNX schema
/// table (OnnxSchemaAttrs.def, generated by tools/onnx_schema_attrs.py)
/// covers the same range. A model of an older opset is read as one of
/// kMinOnnxOpset when every op it uses has the same schema there
/// (ONNX_SCHEMA_LEGACY lines), and refused otherwise.
constexpr int64_t kMinOnnxOpset = 7, kMaxOnnxOpset = 27;

/// One `--input NAME:DIMS[xDTYPE]` binding.
struct InputBinding {
  std::string name;
  std::vector<int64_t> dims;
  llvm::Optional<ir::DType> dtype;
};

/// The symbol an input dim of no known size has (-1, Paddle's convention;
/// a dim_param "?" or empty; neither value nor name): "INPUT_dimI", which
/// `--dim` binds like a named one. Each such dim has its own.
std::string getUnknownDimName(llvm::StringRef input, int dim);

struct ImportOptions {
  std::vector<InputBinding> inputs;
  /// `--dim SYMBOL=N` bindings (named dims, and unknown ones by
  /// getUnknownDimName).
  llvm::StringMap<int64_t> dims;
  /// Graph inputs to treat as constants (weights) with these contents, as
  /// if they were initializers: for tests that feed shape parameters
  /// (Reshape's shape, Slice's starts) as inputs.
  std::map<std::string, std::pair<ir::TensorType, std::vector<uint8_t>>>
      frozenInputs;
  /// Whether external data may resolve (symlinks followed) outside the
  /// model's real directory (snugc --allow-external-data-outside-model-dir).
  bool allowExternalDataOutsideModelDir = false;
  /// When set, receives the path of every external data file read, so a
  /// tool can refuse to overwrite one.
  std::vector<std::string> *externalFilesRead = nullptr;
  /// Import training-mode Dropout (snugc train) as x * snug.dropout_mask
  /// of the weight ir::kDropoutSeedWeight; without it such a Dropout is
  /// refused (an inference compile cannot mean it).
  bool trainingDropout = false;
  /// `--max-trip NAME=N`: the most iterations of the Loop of that name (its
  /// node name, or its first output's when it has none) whose trip count
  /// or condition is runtime data (OnnxControlFlow.cpp).
  llvm::StringMap<int64_t> maxTrips;
};

/// The snug element type of an ONNX TensorProto.DataType code; None for
/// the types snug lacks.
llvm::Optional<ir::DType> getDTypeOfOnnxDataType(int onnxType);

/// Parses `NAME:DIMS[xDTYPE]`; the error says what is wrong.
llvm::Expected<InputBinding> parseInputBinding(llvm::StringRef text);
/// Parses `SYMBOL=N` into `options.dims`.
llvm::Error parseDimBinding(llvm::StringRef text, ImportOptions &options);
/// Parses `NAME=N` into `options.maxTrips`.
llvm::Error parseMaxTrip(llvm::StringRef text, ImportOptions &options);

/// One node of an op snug does not import.
struct UnsupportedOp {
  std::string opType;
  std::string domain;
  int64_t opset = 0;
  std::string nodeName;
};

/// The error for a model with unsupported ops: all of them, in graph order.
class UnsupportedOpsError : public llvm::ErrorInfo<UnsupportedOpsError> {
public:
  static char ID;
  UnsupportedOpsError(std::string path, std::vector<UnsupportedOp> ops)
      : path(std::move(path)), ops(std::move(ops)) {}
  void log(llvm::raw_ostream &os) const override;
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  const std::vector<UnsupportedOp> &getOps() const { return ops; }

private:
  std::string path;
  std::vector<UnsupportedOp> ops;
};

/// The ONNX ops of the default domain the importer imports, sorted.
std::vector<std::string> getImportedOnnxOps();

/// The error for a graph input the bindings leave unsettled (a symbolic
/// dim unbound, no shape) or contradict (dtype, rank, a dim), or a binding
/// that names no graph input or symbol. Which input (or ""), which dim
/// (index, or -1) and which symbol (or "") it is about.
class InputBindingError : public llvm::ErrorInfo<InputBindingError> {
public:
  static char ID;
  InputBindingError(std::string message, std::string input, int64_t dimIndex,
                    std::string symbol)
      : message(std::move(message)), input(std::move(input)),
        dimIndex(dimIndex), symbol(std::move(symbol)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  const std::string &getInput() const { return input; }
  int64_t getDimIndex() const { return dimIndex; }
  const std::string &getSymbol() const { return symbol; }

private:
  std::string message;
  std::string input;
  int64_t dimIndex;
  std::string symbol;
};

/// Reads the model at `path` and imports it into static IR. No pass runs:
/// the module still holds the shape subgraphs the importer read
/// (fold-constants removes them); compiler/Pipeline.h has the pipelines.
llvm::Expected<std::unique_ptr<ir::Module>>
importOnnxModel(llvm::StringRef path, const ImportOptions &options);

} // namespace snug

#endif // SNUG_COMPILER_ONNX_ONNXIMPORTER_H
