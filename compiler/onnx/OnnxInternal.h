//===- OnnxInternal.h - The importer's shared state -------------*- C++ -*-===//
//
// Private to compiler/onnx: the Importer (the module being built, the value
// map, on-demand constants, error helpers) that OnnxImporter.cpp drives and
// whose per-op normalizers live in OnnxOps.cpp, and the weight reader of
// OnnxWeights.cpp. ONNX protobuf types appear only here and in those files.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_COMPILER_ONNX_ONNXINTERNAL_H
#define SNUG_COMPILER_ONNX_ONNXINTERNAL_H

#include "compiler/onnx/OnnxImporter.h"

#include "ir/Module.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <memory>

#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#include "onnx/onnx_pb.h"

namespace snug {
namespace onnx_import {

/// The most IR nodes one Loop or Scan unrolls into, and the largest
/// --max-trip: a bound on the compile (a loop of a million iterations would
/// build a million-node graph), far above what the loops exporters write
/// for shapes they know (a few to a few hundred iterations of a few nodes).
constexpr size_t kMaxUnrolledNodes = size_t(1) << 16;

/// The snug dtype of an ONNX TensorProto data type; None if unsupported.
llvm::Optional<ir::DType> convertDType(int onnxType);
/// "FLOAT", "STRING", ... for messages.
std::string onnxDTypeName(int onnxType);

class Importer {
public:
  Importer(std::string path, ir::Module &module, int64_t opset)
      : path(std::move(path)), module(module), opset(opset) {}

  const std::string path;
  ir::Module &module;
  const int64_t opset;
  /// The model's own opset when it is older than kMinOnnxOpset (`opset` is
  /// then kMinOnnxOpset, which reads each of its ops the same); else 0.
  int64_t legacyOpset = 0;
  /// ONNX value name to snug value.
  llvm::StringMap<ir::Value *> values;
  /// Outputs of ONNX nodes that snug does not compute (training outputs of
  /// BatchNormalization, Dropout's mask, ...), with the producing node.
  llvm::StringMap<std::string> droppedOutputs;
  /// ImportOptions::allowExternalDataOutsideModelDir and externalFilesRead.
  bool allowExternalDataOutsideModelDir = false;
  std::vector<std::string> *externalFilesRead = nullptr;
  /// ImportOptions::dims, for shape errors that a binding explains.
  llvm::StringMap<int64_t> boundDims;
  /// ImportOptions::trainingDropout; the seed weight training Dropouts
  /// share (made at the first) and how many have been imported (each
  /// one's salt).
  bool trainingDropout = false;
  /// ImportOptions::maxTrips, and the names the Loops took.
  llvm::StringMap<int64_t> maxTrips;
  llvm::StringSet<> usedMaxTrips;
  ir::Value *dropoutSeed = nullptr;
  int64_t dropoutCount = 0;

  /// The order the scan found for the nodes of each subgraph (If branch,
  /// Loop or Scan body).
  std::map<const onnx::GraphProto *, std::vector<int>> branchOrders;

  /// Imports subgraph `graph` (attribute `branchName` of `node`) into the
  /// module, its inputs bound to `inputs` (a Loop's or Scan's body; an If's
  /// branch has none): its initializers and nodes, through the same
  /// normalizers as the model's graph. Returns the values of its outputs.
  /// The names it defines are in `values` only while it is imported, so a
  /// body may be imported again for the next iteration (reading the same
  /// weights for its initializers).
  llvm::Expected<llvm::SmallVector<ir::Value *, 2>>
  importBranch(const onnx::NodeProto &node, onnx::GraphProto &graph,
               llvm::StringRef branchName,
               llvm::ArrayRef<ir::Value *> inputs = {});
  /// Whether a subgraph is being imported (its tensors may be read again:
  /// importTensor copies their bytes rather than moving them).
  bool inSubgraph() const { return branchDepth != 0; }

  /// `path: error: message`.
  llvm::Error error(const llvm::Twine &message) const;
  /// `path: error: message` as an InputBindingError: a graph input the
  /// bindings leave unsettled or contradict (`input`, and `dimIndex` or
  /// -1), or a binding naming nothing (`input` or `symbol`).
  llvm::Error bindingError(llvm::StringRef input, int64_t dimIndex,
                           llvm::StringRef symbol,
                           const llvm::Twine &message) const;
  /// `path: error: node 'name' (Op): message`.
  llvm::Error error(const onnx::NodeProto &node,
                    const llvm::Twine &message) const;
  std::string describe(const onnx::NodeProto &node) const;
  /// What a --dim binding has to do with a shape error among `operands`
  /// (" (--dim seq=600 sets ... the model takes seq up to 512)") or "".
  std::string explainBoundDims(llvm::ArrayRef<ir::Value *> operands) const;

  /// The snug value of input `index` of `node`; nullptr when absent (an
  /// empty name or past the end).
  llvm::Expected<ir::Value *> getInput(const onnx::NodeProto &node,
                                       unsigned index);

  /// The data of `value` when it is a weight or computable from weights
  /// and static shapes (evaluated on demand and cached); None otherwise.
  llvm::Expected<llvm::Optional<llvm::ArrayRef<uint8_t>>>
  getConstant(ir::Value *value);
  /// Input `index` of `node` as integers; an error naming the node and
  /// `what` unless it is a constant integer tensor.
  llvm::Expected<llvm::SmallVector<int64_t, 4>>
  getConstantInts(const onnx::NodeProto &node, unsigned index,
                  llvm::StringRef what);
  /// Input `index` as floats (for Resize scales, Clip bounds, Pad value).
  llvm::Expected<llvm::SmallVector<double, 4>>
  getConstantFloats(const onnx::NodeProto &node, unsigned index,
                    llvm::StringRef what);

  /// Types and appends a node; names it after the ONNX node plus `suffix`.
  llvm::Expected<llvm::SmallVector<ir::Value *, 2>>
  emit(const onnx::NodeProto &node, llvm::StringRef opName,
       llvm::ArrayRef<ir::Value *> operands, ir::AttributeMap attributes,
       unsigned numResults = 1, llvm::StringRef suffix = "");
  /// Binds the ONNX node's outputs to `results` in order; outputs past the
  /// end of `results` are recorded as dropped.
  void bindOutputs(const onnx::NodeProto &node,
                   llvm::ArrayRef<ir::Value *> results);
  /// emit + bindOutputs.
  llvm::Error emitAndBind(const onnx::NodeProto &node, llvm::StringRef opName,
                          llvm::ArrayRef<ir::Value *> operands,
                          ir::AttributeMap attributes, unsigned numResults = 1,
                          llvm::StringRef suffix = "");
  /// A new weight holding `bytes`, bound to the node's output 0.
  void bindConstant(const onnx::NodeProto &node, const ir::TensorType &type,
                    llvm::ArrayRef<uint8_t> bytes);

  /// Reads an initializer or tensor attribute into a weight named `name`;
  /// moves raw_data out of `tensor` rather than copying it.
  llvm::Expected<ir::Value *> importTensor(onnx::TensorProto &tensor,
                                           llvm::StringRef name,
                                           llvm::StringRef context);
  /// The type and bytes of a (small) tensor attribute.
  llvm::Expected<std::pair<ir::TensorType, std::vector<uint8_t>>>
  readTensorBytes(onnx::TensorProto &tensor, llvm::StringRef context);

private:
  llvm::Expected<std::shared_ptr<llvm::MemoryBuffer>>
  openExternal(llvm::StringRef location, llvm::StringRef context);

  /// The IR names of the values imported branches defined, and how deep
  /// importBranch is (importBranch keeps those names unique).
  llvm::StringSet<> branchValueNames;
  /// The last suffix importBranch gave each name (".1", ".2", ...).
  llvm::StringMap<unsigned> branchNameSuffixes;
  unsigned branchDepth = 0;
  /// The weights importBranch made of subgraph initializers.
  std::map<const onnx::TensorProto *, ir::Value *> subgraphWeights;
  llvm::DenseMap<const ir::Value *, std::vector<uint8_t>> constants;
  llvm::DenseSet<const ir::Value *> notConstant;
  std::map<std::string, std::shared_ptr<llvm::MemoryBuffer>> externalFiles;
};

/// Attribute readers over a NodeProto.
const onnx::AttributeProto *findAttr(const onnx::NodeProto &node,
                                     llvm::StringRef name);
int64_t attrInt(const onnx::NodeProto &node, llvm::StringRef name,
                int64_t defaultValue);
float attrFloat(const onnx::NodeProto &node, llvm::StringRef name,
                float defaultValue);
std::string attrString(const onnx::NodeProto &node, llvm::StringRef name,
                       llvm::StringRef defaultValue);
llvm::Optional<llvm::SmallVector<int64_t, 4>>
attrInts(const onnx::NodeProto &node, llvm::StringRef name);
llvm::Optional<llvm::SmallVector<float, 4>>
attrFloats(const onnx::NodeProto &node, llvm::StringRef name);

/// The normalizer of one op: reads the ONNX node, emits canonical snug
/// nodes and binds the node's outputs.
using OpImporter = llvm::Error (*)(Importer &, onnx::NodeProto &);
/// nullptr when snug does not import `opType` of the default domain.
OpImporter lookupOpImporter(llvm::StringRef opType);
/// The normalizers of OnnxShapeOps.cpp, OnnxNNOps.cpp, OnnxLossOps.cpp,
/// OnnxCompositeOps.cpp, OnnxRecurrentOps.cpp, OnnxAttentionOps.cpp and
/// OnnxQuantOps.cpp.
void registerShapeOpImporters(llvm::StringMap<OpImporter> &map);
void registerNNOpImporters(llvm::StringMap<OpImporter> &map);
void registerLossOpImporters(llvm::StringMap<OpImporter> &map);
void registerCompositeOpImporters(llvm::StringMap<OpImporter> &map);
void registerRecurrentOpImporters(llvm::StringMap<OpImporter> &map);
/// Einsum as a composition (OnnxEinsum.cpp; registered with the
/// compositions).
llvm::Error importEinsum(Importer &importer, onnx::NodeProto &node);
void registerAttentionOpImporters(llvm::StringMap<OpImporter> &map);
void registerQuantOpImporters(llvm::StringMap<OpImporter> &map);
/// If with a condition known at compile time, as its chosen branch; Loop
/// and Scan unrolled (OnnxControlFlow.cpp).
llvm::Error importIf(Importer &importer, onnx::NodeProto &node);
llvm::Error importLoop(Importer &importer, onnx::NodeProto &node);
llvm::Error importScan(Importer &importer, onnx::NodeProto &node);

//===----------------------------------------------------------------------===//
// Helpers the normalizers share (OnnxOps.cpp, OnnxShapeOps.cpp)
//===----------------------------------------------------------------------===//

using Ints = llvm::SmallVector<int64_t, 4>;

/// All inputs of `node`, absent ones as nullptr, trailing absent ones
/// dropped.
llvm::Expected<llvm::SmallVector<ir::Value *, 4>>
getInputs(Importer &importer, const onnx::NodeProto &node);
/// Input `index`, which must be present.
llvm::Expected<ir::Value *>
requireInput(Importer &importer, const onnx::NodeProto &node, unsigned index);
/// How many results to keep: up to the last named output, at most `limit`.
unsigned countNamedOutputs(const onnx::NodeProto &node, unsigned limit);
/// All of the node's attributes, converted.
llvm::Expected<ir::AttributeMap> convertAttributes(Importer &importer,
                                                   onnx::NodeProto &node);
/// `axis` made non-negative for `rank`, or an error naming the node.
llvm::Expected<int64_t> axisFor(Importer &importer, const onnx::NodeProto &node,
                                int64_t axis, int64_t rank);
/// Non-negative, sorted, unique axes.
llvm::Expected<Ints> axesFor(Importer &importer, const onnx::NodeProto &node,
                             Ints axes, int64_t rank);
/// Axes of Squeeze/Unsqueeze/Reduce*: an attribute before `inputOpset`, an
/// optional input from it on. None when the model gives none.
llvm::Expected<llvm::Optional<Ints>>
readAxes(Importer &importer, onnx::NodeProto &node, int64_t inputOpset);
/// The one result of an emit (the compositions chain single-result nodes).
inline llvm::Expected<ir::Value *>
firstResult(llvm::Expected<llvm::SmallVector<ir::Value *, 2>> results) {
  if (!results)
    return results.takeError();
  return (*results)[0];
}
/// A scalar weight `value` of `dtype`, named after the node's output 0
/// plus `suffix` (the constants of a composition: an epsilon, a zero).
ir::Value *addScalarWeight(Importer &importer, const onnx::NodeProto &node,
                           llvm::StringRef suffix, ir::DType dtype,
                           double value);
/// Refuses constants too large to hold at import (Trilu's mask; Range and
/// ConstantOfShape import as ops).
llvm::Error checkMaterialized(Importer &importer, const onnx::NodeProto &node,
                              const ir::TensorType &type);

} // namespace onnx_import
} // namespace snug

#endif // SNUG_COMPILER_ONNX_ONNXINTERNAL_H
