//===- OnnxImporter.cpp - ONNX models into static snug IR -----------------===//
//
// The driver: load the ModelProto, check the opset, scan the whole graph
// (unsupported ops, duplicate graph inputs and initializers, arity against
// the op table, undefined inputs, duplicate outputs, cycles) and report
// every finding of a kind at once; subgraphs (If branches, Loop and Scan
// bodies) are scanned alike, nested in their graph's names
// (OnnxControlFlow.cpp imports the branch an If takes and unrolls loops),
// bind the graph inputs' dims, read the
// initializers, then import the nodes in a topological order (models are
// usually sorted already; a sorted order is computed anyway, which is also
// the cycle check). Each node's attributes are checked against ONNX's
// schema of its op at the model's opset (OnnxSchema.h: defined there, in
// the schema's type, once), then it goes through its op's normalizer
// (OnnxOps.cpp), which emits canonical snug nodes typed by the shape
// functions. Finally the graph outputs are checked against what
// the model declares and the module is verified (a failure there is
// snug's bug: every user error is caught before).
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxAttrSpecs.h"
#include "compiler/onnx/OnnxInternal.h"
#include "compiler/onnx/OnnxSchema.h"

#include "ir/State.h"
#include "ir/Verifier.h"
#include "ir/ShapeFunctions.h"
#include "core/BundleFormat.h"
#include "core/FileAccess.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cstring>
#include <deque>
#include <set>
#include <map>

namespace snug {

char UnsupportedOpsError::ID = 0;
char InputBindingError::ID = 0;

void UnsupportedOpsError::log(llvm::raw_ostream &os) const {
  // Group nodes by (op, domain, opset), in order of first appearance.
  llvm::MapVector<std::string, std::vector<std::string>,
                  std::map<std::string, unsigned>>
      groups;
  for (const UnsupportedOp &op : ops) {
    std::string key = op.opType + " (domain " + op.domain + ", opset " +
                      std::to_string(op.opset) + ")";
    groups[key].push_back(op.nodeName.empty() ? "<unnamed>" : op.nodeName);
  }
  os << path << ": error: " << ops.size() << " node"
     << (ops.size() == 1 ? " uses an op" : "s use ops")
     << " snug does not support:";
  for (const auto &group : groups) {
    os << "\n  " << group.first << ": " << group.second.size() << " node"
       << (group.second.size() == 1 ? "" : "s") << " (";
    for (size_t i = 0; i < group.second.size() && i < 5; ++i)
      os << (i ? ", " : "") << "'" << group.second[i] << "'";
    if (group.second.size() > 5)
      os << ", ...";
    os << ")";
  }
}

llvm::Expected<InputBinding> parseInputBinding(llvm::StringRef text) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "bad --input '" + text.str() +
                                       "': " + why.str() +
                                       " (expected NAME:DIMS[xDTYPE], e.g. "
                                       "x:1x3x224x224 or x:1x3x224x224xf16)");
  };
  size_t colon = text.rfind(':');
  if (colon == llvm::StringRef::npos || colon == 0)
    return fail("no NAME: before the dims");
  InputBinding binding;
  binding.name = text.substr(0, colon).str();
  llvm::StringRef rest = text.substr(colon + 1);
  if (rest.empty())
    return binding; // a scalar
  llvm::SmallVector<llvm::StringRef, 6> parts;
  rest.split(parts, 'x');
  for (size_t i = 0; i < parts.size(); ++i) {
    llvm::StringRef part = parts[i];
    if (i + 1 == parts.size() && !part.empty() && !llvm::isDigit(part[0])) {
      binding.dtype = ir::parseDType(part);
      if (!binding.dtype)
        return fail("unknown element type '" + part + "'");
      continue;
    }
    int64_t dim;
    if (part.getAsInteger(10, dim))
      return fail("'" + part + "' is not a dim");
    if (dim <= 0)
      return fail("dim " + llvm::Twine(dim) + " is not positive");
    binding.dims.push_back(dim);
  }
  return binding;
}

llvm::Error parseDimBinding(llvm::StringRef text, ImportOptions &options) {
  auto [symbol, value] = text.split('=');
  int64_t dim;
  if (symbol.empty() || value.getAsInteger(10, dim) || dim <= 0)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "bad --dim '" + text.str() +
            "': expected SYMBOL=N with N a positive integer, e.g. batch=8");
  options.dims[symbol] = dim;
  return llvm::Error::success();
}

llvm::Error parseMaxTrip(llvm::StringRef text, ImportOptions &options) {
  auto [name, value] = text.rsplit('=');
  int64_t trips;
  if (name.empty() || value.getAsInteger(10, trips) || trips <= 0 ||
      uint64_t(trips) > onnx_import::kMaxUnrolledNodes)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "bad --max-trip '" + text.str() +
            "': expected LOOP=N, the Loop's node name (or its first "
            "output's) and N in [1, " +
            std::to_string(onnx_import::kMaxUnrolledNodes) +
            "], e.g. decode=64");
  options.maxTrips[name] = trips;
  return llvm::Error::success();
}

using namespace onnx_import;

//===----------------------------------------------------------------------===//
// Loading and checking the model
//===----------------------------------------------------------------------===//

/// How deep a text-format model may nest messages.
static constexpr int kMaxTextNesting = 100;

namespace {
class TextErrorCollector : public google::protobuf::io::ErrorCollector {
public:
  void AddError(int line, int column, const std::string &message) override {
    if (!first.empty())
      return;
    first = std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": ";
    // protobuf words its recursion limit as a parser setting.
    if (llvm::StringRef(message).contains("recursion limit"))
      first += "messages nested deeper than " +
               std::to_string(kMaxTextNesting) + " levels";
    else
      first += message;
  }
  std::string first;
};
} // namespace

static bool isTextFormat(llvm::StringRef path) {
  return path.endswith(".onnxtxt") || path.endswith(".textproto") ||
         path.endswith(".pbtxt") || path.endswith(".prototxt");
}

static llvm::Error loadModel(llvm::StringRef path, onnx::ModelProto &model) {
  auto fail = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path.str() + ": error: " + message.str());
  };
  // A regular file only (core/FileAccess.h): a FIFO or /dev/zero fails.
  InputFile file;
  std::string why;
  if (!file.open(path.str(), why))
    return fail("cannot read the model: " + file.getFailureReason());
  if (file.getSize() == 0)
    return fail("the model file is empty");
  if (isTextFormat(path)) {
    auto buffer = llvm::MemoryBuffer::getOpenFile(
        file.getFd(), path, file.getSize(), /*RequiresNullTerminator=*/false);
    if (!buffer)
      return fail("cannot read the model: " + buffer.getError().message());
    google::protobuf::TextFormat::Parser parser;
    // The default limit is INT_MAX: a hostile file nesting messages 20,000
    // deep would overflow the stack. Real models nest a few levels (graph,
    // node, attribute, subgraph); the binary reader's default is 100 too.
    parser.SetRecursionLimit(kMaxTextNesting);
    TextErrorCollector errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString((*buffer)->getBuffer().str(), &model))
      return fail("not a text-format ONNX ModelProto: " + errors.first);
    return llvm::Error::success();
  }
  if (file.getSize() > static_cast<uint64_t>(INT_MAX))
    return fail("the model is larger than 2 GiB; keep weights in external "
                "data files");
  // Read through a small buffer rather than a mapping of the whole file:
  // parsing copies every initializer's raw_data into the message anyway
  // (the importer then moves it into the weights), so a mapping would hold
  // the weights twice at the peak of compiling a large model.
  google::protobuf::io::FileInputStream input(file.getFd());
  google::protobuf::io::CodedInputStream stream(&input);
  stream.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage())
    return fail(input.GetErrno()
                    ? "cannot read the model: " +
                          std::string(std::strerror(input.GetErrno()))
                    : std::string("not a binary ONNX ModelProto (truncated or "
                                  "corrupt protobuf)"));
  return llvm::Error::success();
}

static bool isDefaultDomain(llvm::StringRef domain) {
  return domain.empty() || domain == "ai.onnx";
}

namespace {
struct ModelScan {
  int64_t opset = 0;
  int64_t legacyOpset = 0; // Importer::legacyOpset
  llvm::StringMap<int64_t> domainOpsets;
  std::vector<int> order; // node indices in a topological order
  /// The order of each subgraph's nodes (Importer::branchOrders).
  std::map<const onnx::GraphProto *, std::vector<int>> branchOrders;
};

/// A scan's findings, reported together (the first 20 in full).
struct Problems {
  const Importer &importer;
  std::string text;
  unsigned count = 0;
  void report(const std::string &message) {
    if (++count <= 20)
      text += (text.empty() ? "" : "\n") + importer.path + ": error: " +
              message;
  }
};
} // namespace

/// The subgraphs snug imports: an If's branches, a Loop's or Scan's body
/// (their GRAPH attributes); none for other ops.
static llvm::SmallVector<const onnx::AttributeProto *, 2>
getBranches(const onnx::NodeProto &node) {
  llvm::SmallVector<const onnx::AttributeProto *, 2> branches;
  if (!isDefaultDomain(node.domain()) ||
      (node.op_type() != "If" && node.op_type() != "Loop" &&
       node.op_type() != "Scan"))
    return branches;
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.has_g())
      branches.push_back(&attr);
  return branches;
}

/// Whether a subgraph of `node` takes inputs: a Loop's or Scan's body
/// does (the iteration's values), an If's branch does not.
static bool takesInputs(const onnx::NodeProto &node) {
  return node.op_type() != "If";
}

/// Calls `fn` on every node of `graph` and of its subgraphs, nested ones
/// too (an If is imported as the nodes of one of its branches, a loop as
/// its body's nodes once per iteration).
static void forEachNode(const onnx::GraphProto &graph,
                        llvm::function_ref<void(const onnx::NodeProto &)> fn) {
  for (const onnx::NodeProto &node : graph.node()) {
    fn(node);
    for (const onnx::AttributeProto *branch : getBranches(node))
      forEachNode(branch->g(), fn);
  }
}

/// Checks one graph: the model's (`where` empty, `outer` empty) or a
/// subgraph (`where` says which, " in then_branch of node 'if' (If)"), whose
/// nodes may read any name its enclosing graphs define (`outer`) but may
/// define none of them (ONNX's scoping; snug imports a subgraph into the
/// enclosing graph, where such a name would be defined twice). Only a
/// Loop's or Scan's body (`bodyInputs`) has inputs of its own. Reports
/// what is wrong to `problems`; when nothing is, puts the nodes in a
/// topological order (`order`), in which an If node comes after the
/// producers of every name its branches read, and returns the outer names
/// the graph reads in `reads`. A cycle is an error of its own.
static llvm::Error scanGraph(const Importer &importer,
                             const onnx::GraphProto &graph,
                             const llvm::StringSet<> &outer,
                             const std::string &where, bool bodyInputs,
                             Problems &problems, ModelScan &scan,
                             std::vector<int> &order,
                             llvm::StringSet<> &reads) {
  auto report = [&](const std::string &message) { problems.report(message); };
  auto describe = [&](const onnx::NodeProto &node) {
    return importer.describe(node) + where;
  };
  bool isBranch = !where.empty();
  // Who defines each name; every input must have a definer, and only one
  // of a kind (an initializer may also be listed as a graph input, as
  // models before IR version 4 do).
  llvm::StringSet<> available, initializers;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (isBranch && !bodyInputs)
      report("input '" + input.name() + "'" + where +
             ": an If branch takes no inputs");
    else if (!available.insert(input.name()).second)
      report((isBranch ? "input '" : "graph input '") + input.name() + "'" +
             where + " is listed more than once");
    else if (outer.count(input.name()))
      report("input '" + input.name() + "'" + where +
             " has the name of a value outside the body (snug needs the "
             "names a body defines to be its own)");
  }
  for (const onnx::TensorProto &initializer : graph.initializer()) {
    if (!initializers.insert(initializer.name()).second)
      report("initializer '" + initializer.name() + "'" + where +
             " is defined more than once");
    else if (outer.count(initializer.name()))
      report("initializer '" + initializer.name() + "'" + where +
             " has the name of a value outside the branch (snug needs the "
             "names a branch defines to be its own)");
    available.insert(initializer.name());
  }
  // Arity against the op table, for ONNX ops that keep their name there
  // (trailing empty names are absent optional inputs).
  for (const onnx::NodeProto &node : graph.node()) {
    const ir::OpInfo *info = ir::lookupOp(node.op_type());
    if (!info)
      continue;
    int inputs = node.input_size();
    while (inputs > 0 && node.input(inputs - 1).empty())
      --inputs;
    if (inputs < info->minOperands ||
        (info->maxOperands >= 0 && inputs > info->maxOperands))
      report(describe(node) + ": has " + std::to_string(inputs) + " input" +
             (inputs == 1 ? "" : "s") + ", " + node.op_type() + " takes " +
             (info->minOperands == info->maxOperands
                  ? std::to_string(info->minOperands)
              : info->maxOperands < 0
                  ? "at least " + std::to_string(info->minOperands)
                  : std::to_string(info->minOperands) + " to " +
                        std::to_string(info->maxOperands)));
  }
  llvm::StringMap<int> producer;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string &output : graph.node(i).output()) {
      if (output.empty())
        continue;
      if (available.count(output) || !producer.insert({output, i}).second)
        report(describe(graph.node(i)) + ": output '" + output +
               "' is defined more than once");
      else if (outer.count(output))
        report(describe(graph.node(i)) + ": output '" + output +
               "' has the name of a value outside the branch (snug needs "
               "the names a branch defines to be its own)");
    }
  auto isDefined = [&](llvm::StringRef name) {
    return available.count(name) || producer.count(name);
  };
  // A name of an enclosing graph: read from there.
  auto readsOuter = [&](llvm::StringRef name) {
    if (isDefined(name) || !outer.count(name))
      return false;
    reads.insert(name);
    return true;
  };
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &input : node.input())
      if (!input.empty() && !isDefined(input) && !readsOuter(input))
        report(describe(node) + ": input '" + input +
               "' is not defined by any node, initializer or graph input");
  for (const onnx::ValueInfoProto &output : graph.output())
    if (!isDefined(output.name()) && !readsOuter(output.name()))
      report((isBranch ? "output '" : "graph output '") + output.name() +
             "'" + where + " is not defined");

  // The branches, which may read every name defined here or outside; the
  // names they read from here order their If node like inputs.
  std::vector<std::vector<std::string>> branchReads(graph.node_size());
  llvm::Optional<llvm::StringSet<>> visible;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const onnx::AttributeProto *branch : getBranches(graph.node(i))) {
      if (!visible) {
        visible.emplace();
        for (const auto &entry : outer)
          visible->insert(entry.getKey());
        for (const auto &entry : available)
          visible->insert(entry.getKey());
        for (const auto &entry : producer)
          visible->insert(entry.getKey());
      }
      std::vector<int> branchOrder;
      llvm::StringSet<> inner;
      if (llvm::Error error = scanGraph(
              importer, branch->g(), *visible,
              " in " + branch->name() + " of " + describe(graph.node(i)),
              takesInputs(graph.node(i)), problems, scan, branchOrder, inner))
        return error;
      for (const auto &entry : inner)
        if (!readsOuter(entry.getKey()))
          branchReads[i].push_back(entry.getKey().str());
      scan.branchOrders[&branch->g()] = std::move(branchOrder);
    }
  if (problems.count)
    return llvm::Error::success();

  // Kahn's algorithm; what is left over lies on or behind a cycle.
  std::vector<int> pending(graph.node_size(), 0);
  llvm::StringMap<std::vector<int>> consumers;
  for (int i = 0; i < graph.node_size(); ++i) {
    llvm::StringSet<> seen;
    auto dependOn = [&](const std::string &input) {
      if (!input.empty() && producer.count(input) &&
          seen.insert(input).second) {
        ++pending[i];
        consumers[input].push_back(i);
      }
    };
    for (const std::string &input : graph.node(i).input())
      dependOn(input);
    for (const std::string &input : branchReads[i])
      dependOn(input);
  }
  std::deque<int> ready;
  for (int i = 0; i < graph.node_size(); ++i)
    if (!pending[i])
      ready.push_back(i);
  while (!ready.empty()) {
    int index = ready.front();
    ready.pop_front();
    order.push_back(index);
    for (const std::string &output : graph.node(index).output()) {
      auto it = consumers.find(output);
      if (it == consumers.end())
        continue;
      for (int consumer : it->second)
        if (--pending[consumer] == 0)
          ready.push_back(consumer);
    }
  }
  if (order.size() != static_cast<size_t>(graph.node_size())) {
    std::string names;
    unsigned listed = 0;
    for (int i = 0; i < graph.node_size(); ++i)
      if (pending[i] && listed++ < 8)
        names += (names.empty() ? "" : ", ") + importer.describe(graph.node(i));
    return importer.error("the graph" + where + " has a cycle through " +
                          names);
  }
  return llvm::Error::success();
}

static llvm::Expected<ModelScan> scanModel(const Importer &importer,
                                           const onnx::ModelProto &model) {
  ModelScan scan;
  bool hasDefault = false;
  for (const onnx::OperatorSetIdProto &entry : model.opset_import()) {
    scan.domainOpsets[entry.domain()] = entry.version();
    if (isDefaultDomain(entry.domain())) {
      scan.opset = entry.version();
      hasDefault = true;
    }
  }
  if (!model.has_graph())
    return importer.error("the model has no graph (an empty or foreign "
                          "protobuf?)");
  if (!hasDefault)
    return importer.error("the model imports no opset of the default ONNX "
                          "domain");
  if (scan.opset > kMaxOnnxOpset)
    return importer.error("the model needs opset " + llvm::Twine(scan.opset) +
                          " of the default domain, newer than snug supports (" +
                          llvm::Twine(kMinOnnxOpset) + " to " +
                          llvm::Twine(kMaxOnnxOpset) + ")");
  auto tooOld = [&](const std::string &why) {
    return importer.error("the model uses opset " + llvm::Twine(scan.opset) +
                          " of the default domain, older than snug supports (" +
                          llvm::Twine(kMinOnnxOpset) + " to " +
                          llvm::Twine(kMaxOnnxOpset) + ")" + why);
  };
  if (scan.opset < 1)
    return tooOld("");

  const onnx::GraphProto &graph = model.graph();
  std::vector<UnsupportedOp> unsupported;
  forEachNode(graph, [&](const onnx::NodeProto &node) {
    bool known = isDefaultDomain(node.domain()) &&
                 lookupOpImporter(node.op_type()) != nullptr;
    if (!known) {
      std::string domain = node.domain().empty() ? "ai.onnx" : node.domain();
      auto it = scan.domainOpsets.find(node.domain());
      int64_t version = it == scan.domainOpsets.end() ? 0 : it->second;
      unsupported.push_back({node.op_type(), domain, version, node.name()});
    }
  });
  if (!unsupported.empty())
    return llvm::make_error<UnsupportedOpsError>(importer.path,
                                                 std::move(unsupported));
  if (scan.opset < kMinOnnxOpset) {
    // Read as kMinOnnxOpset when that reads every op the same.
    std::set<std::string> changed;
    forEachNode(graph, [&](const onnx::NodeProto &node) {
      auto legacy = getOnnxSchemaLegacy(node.op_type());
      if (isDefaultDomain(node.domain()) && (!legacy || *legacy > scan.opset))
        changed.insert(node.op_type());
    });
    if (!changed.empty())
      return tooOld("; its " + llvm::join(changed, ", ") +
                    " had another form at opset " +
                    std::to_string(scan.opset));
    scan.legacyOpset = scan.opset;
    scan.opset = kMinOnnxOpset;
  }

  Problems problems{importer, "", 0};
  // The names that become keys and file names (the bundle's inputs,
  // outputs and state; snug-run's NAME.npy; the C API's C strings) end at
  // a NUL byte there: "W\0x" compiled, then its state was not found.
  auto checkNoNul = [&](const std::string &name, const char *what) {
    if (name.find('\0') == std::string::npos)
      return;
    std::string shown;
    llvm::raw_string_ostream os(shown);
    llvm::printEscapedString(name, os);
    problems.report(std::string(what) + " '" + os.str() +
                    "' has a NUL byte in its name (snug's names of inputs, "
                    "outputs and state end at one)");
  };
  for (const onnx::ValueInfoProto &input : graph.input())
    checkNoNul(input.name(), "graph input");
  for (const onnx::TensorProto &initializer : graph.initializer())
    checkNoNul(initializer.name(), "initializer");
  for (const onnx::ValueInfoProto &output : graph.output())
    checkNoNul(output.name(), "graph output");
  llvm::StringSet<> outer, reads;
  if (llvm::Error error = scanGraph(importer, graph, outer, "", false, problems, scan,
                                    scan.order, reads))
    return error;
  if (problems.count) {
    if (problems.count > 20)
      problems.text +=
          "\n(" + std::to_string(problems.count - 20) + " more errors)";
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   problems.text);
  }
  return scan;
}

/// The bound type of a graph input.
/// A frozen input's value against what the model declares of the input:
/// its element type, and its rank and fixed dims where it declares a shape.
static llvm::Error checkFrozenInput(const Importer &importer,
                                    const onnx::ValueInfoProto &input,
                                    const ir::TensorType &type) {
  std::string subject = "frozen input '" + input.name() + "'";
  const onnx::TypeProto::Tensor &tensor = input.type().tensor_type();
  auto declared = convertDType(tensor.elem_type());
  if (!input.type().has_tensor_type() || !declared ||
      *declared != type.getDType())
    return importer.error(subject + " holds " + type.str() +
                          ", the model declares element type " +
                          onnxDTypeName(tensor.elem_type()));
  if (!tensor.has_shape())
    return llvm::Error::success();
  const auto &dims = tensor.shape().dim();
  bool same = dims.size() == int(type.getRank());
  for (int i = 0; same && i < dims.size(); ++i)
    same = !dims[i].has_dim_value() || dims[i].dim_value() == type.getDims()[i];
  if (!same)
    return importer.error(subject + " holds " + type.str() +
                          ", which does not have the shape the model "
                          "declares");
  return llvm::Error::success();
}

/// Whether a dim_param names no dim: empty, or "?" (what some exporters
/// write for an unknown dim). Two such dims need not be equal.
static bool isUnknownDimParam(llvm::StringRef param) {
  return param.empty() || param == "?";
}

std::string getUnknownDimName(llvm::StringRef input, int dim) {
  return (input + "_dim" + llvm::Twine(dim)).str();
}

namespace {
/// The symbol that binds an input dim whose size the model does not give.
struct DimSymbol {
  std::string name;
  bool unknown; ///< no name of its own: getUnknownDimName's
};
} // namespace

/// Dim `index` of graph input `input` as a symbol: its dim_param, or for
/// an unknown dim (-1, "?", neither size nor name) getUnknownDimName's;
/// None for a dim of given size (0 included: bindInputType refuses it).
static llvm::Optional<DimSymbol>
getDimSymbol(llvm::StringRef input, int index,
             const onnx::TensorShapeProto::Dimension &dim) {
  if (dim.has_dim_value() && dim.dim_value() >= 0)
    return llvm::None;
  if (dim.has_dim_param() && !isUnknownDimParam(dim.dim_param()))
    return DimSymbol{dim.dim_param(), false};
  return DimSymbol{getUnknownDimName(input, index), true};
}

static llvm::Expected<ir::TensorType>
bindInputType(const Importer &importer, const onnx::ValueInfoProto &input,
              const ImportOptions &options,
              llvm::ArrayRef<std::string> unboundUnknownDims) {
  std::string subject = "graph input '" + input.name() + "'";
  if (!input.type().has_tensor_type())
    return importer.error(subject + " is not a tensor");
  const onnx::TypeProto::Tensor &tensor = input.type().tensor_type();
  auto dtype = convertDType(tensor.elem_type());
  if (!dtype)
    return importer.error(subject + " has element type " +
                          onnxDTypeName(tensor.elem_type()) +
                          ", which snug does not support");
  const InputBinding *binding = nullptr;
  for (const InputBinding &candidate : options.inputs)
    if (candidate.name == input.name())
      binding = &candidate;
  if (binding) {
    if (binding->dtype && *binding->dtype != *dtype)
      return importer.bindingError(input.name(), -1, "", subject + " has element type " +
                            ir::getDTypeName(*dtype) + ", --input says " +
                            ir::getDTypeName(*binding->dtype));
    if (tensor.has_shape()) {
      const auto &dims = tensor.shape().dim();
      if (dims.size() != static_cast<int>(binding->dims.size()))
        return importer.bindingError(input.name(), -1, "", subject + " has rank " +
                              llvm::Twine(dims.size()) + ", --input gives " +
                              llvm::Twine(binding->dims.size()) + " dims");
      for (int i = 0; i < dims.size(); ++i)
        if (dims[i].has_dim_value() && dims[i].dim_value() > 0 &&
            dims[i].dim_value() != binding->dims[i])
          return importer.bindingError(input.name(), i, "", subject + " dim " + llvm::Twine(i) + " is " +
                                llvm::Twine(dims[i].dim_value()) +
                                ", --input says " +
                                llvm::Twine(binding->dims[i]));
    }
    ir::TensorType type(*dtype, binding->dims);
    if (!getCheckedByteSize(type))
      return importer.bindingError(input.name(), -1, "", subject + ": --input shape " + type.str() +
                            " is too large");
    return type;
  }
  if (!tensor.has_shape())
    return importer.bindingError(input.name(), -1, "", subject + " has no shape; give one with --input " +
                          input.name() + ":DIMS");
  llvm::SmallVector<int64_t, 4> dims;
  for (int i = 0; i < tensor.shape().dim_size(); ++i) {
    const onnx::TensorShapeProto::Dimension &dim = tensor.shape().dim(i);
    llvm::Optional<DimSymbol> dimSymbol = getDimSymbol(input.name(), i, dim);
    if (!dimSymbol) {
      if (dim.dim_value() == 0)
        return importer.error(subject + " dim " + llvm::Twine(i) +
                              " is 0; snug needs positive dims");
      dims.push_back(dim.dim_value());
      continue;
    }
    const std::string &symbol = dimSymbol->name;
    auto bound = options.dims.find(symbol);
    if (bound != options.dims.end()) {
      dims.push_back(bound->second);
      continue;
    }
    if (!dimSymbol->unknown)
      return importer.bindingError(input.name(), i, symbol, subject + " dim " + llvm::Twine(i) +
                            " is symbolic ('" + symbol +
                            "') and unbound: give --dim " + symbol +
                            "=N or --input " + input.name() + ":DIMS");
    // Unknown: a symbolic dim of its own, named so that --dim can bind it.
    return importer.bindingError(
          input.name(), i, symbol,
          subject + " dim " + llvm::Twine(i) + " is unknown (" +
              (dim.has_dim_value() ? std::to_string(dim.dim_value())
               : dim.has_dim_param() && !dim.dim_param().empty()
                   ? "'" + dim.dim_param() + "'"
                   : std::string("no size or name")) +
              "); snug names it '" + symbol + "': give --dim " + symbol +
              "=N or --input " + input.name() + ":DIMS (the unknown dims " +
              "left unbound: " + llvm::join(unboundUnknownDims, ", ") + ")");
  }
  ir::TensorType type(*dtype, dims);
  if (!getCheckedByteSize(type))
    return importer.error(subject + " shape " + type.str() + " is too large");
  return type;
}

/// Checks a graph output's type against what the model declares.
static llvm::Error checkOutput(const Importer &importer,
                               const onnx::ValueInfoProto &output,
                               const ir::Value *value) {
  if (!output.type().has_tensor_type())
    return llvm::Error::success();
  const onnx::TypeProto::Tensor &tensor = output.type().tensor_type();
  const ir::TensorType &type = value->getType();
  auto dtype = convertDType(tensor.elem_type());
  if (tensor.elem_type() != 0 && dtype && *dtype != type.getDType())
    return importer.error("graph output '" + output.name() + "' has type " +
                          type.str() + ", the model declares element type " +
                          ir::getDTypeName(*dtype));
  if (!tensor.has_shape())
    return llvm::Error::success();
  const auto &dims = tensor.shape().dim();
  bool matches = dims.size() == static_cast<int>(type.getRank());
  // Only the dims it knows: -1 (Paddle's unknown) is no size either.
  for (int i = 0; matches && i < dims.size(); ++i)
    matches = !dims[i].has_dim_value() || dims[i].dim_value() < 0 ||
              dims[i].dim_value() == type.getDims()[i];
  if (matches)
    return llvm::Error::success();
  std::string declared = "[";
  for (int i = 0; i < dims.size(); ++i)
    declared += (i ? "," : "") +
                (dims[i].has_dim_value() ? std::to_string(dims[i].dim_value())
                 : dims[i].dim_param().empty() ? std::string("?")
                                               : dims[i].dim_param());
  return importer.error("graph output '" + output.name() + "' has type " +
                        type.str() + ", the model declares " + declared + "]");
}

/// Opsets 1 to 5's `consumed_inputs`, an in-place hint the result does not
/// depend on, which opset 7's schemas (what a legacy model is read as) lack.
static void dropConsumedInputs(onnx::NodeProto &node) {
  auto *attrs = node.mutable_attribute();
  for (int i = attrs->size() - 1; i >= 0; --i)
    if (attrs->Get(i).name() == "consumed_inputs")
      attrs->DeleteSubrange(i, 1);
}

/// The ONNX attributes of `node` against ONNX's schema of its op at the
/// model's opset (OnnxSchemaAttrs.def): each one that schema defines, in
/// the schema's type, and at most once. Otherwise an attribute of another
/// opset or of snug's canonical form (Tile's repeats at opset 13) would be
/// used or dropped without a word, an INT axis written as FLOAT would read
/// as 0, and a misspelt one would be ignored (onnxruntime refuses such
/// models too). Every schema attribute has its handling in core/Ops.def (an
/// ATTR of the op of that name, or an ONNX_ATTR), which OnnxSchemaTest
/// checks; the last test here only guards that.
static llvm::Error checkAttributes(Importer &importer,
                                   const onnx::NodeProto &node) {
  if (!isDefaultDomain(node.domain()))
    return llvm::Error::success();
  llvm::StringRef op = node.op_type();
  llvm::StringSet<> seen;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (!seen.insert(attr.name()).second)
      return importer.error(node, "attribute '" + attr.name() +
                                      "' is given more than once");
    const OnnxSchemaAttr *schema =
        findOnnxSchemaAttr(op, attr.name(), importer.opset);
    if (!schema)
      return importer.error(
          node, explainMissingOnnxAttr(op, attr.name(), importer.opset));
    // Strict, unlike the textual IR's `alpha = 1`: the readers take an
    // ONNX FLOAT's f field, which an INT leaves 0.
    if (int(attr.type()) != int(schema->type))
      return importer.error(node, "attribute '" + attr.name() + "' is " +
                                      describeOnnxAttrType(attr.type()) +
                                      ", expected " +
                                      describeOnnxAttrType(int(schema->type)));
    if (!ir::findOnnxAttrSpec(op, attr.name()) &&
        !(ir::lookupOp(op) &&
          ir::findAttrSpec(ir::lookupOp(op)->code, attr.name())))
      return importer.error(node, "attribute '" + attr.name() + "' of " + op +
                                      " is not one snug handles (it takes: " +
                                      ir::listOnnxAttrs(op) + ")");
  }
  return llvm::Error::success();
}

/// The bundle holds at most bundle::kMaxRank dims a tensor; the shape
/// functions check every result, this the values that come in.
static llvm::Error checkRank(const Importer &importer,
                             const std::string &subject,
                             const ir::TensorType &type) {
  if (type.getRank() <= bundle::kMaxRank)
    return llvm::Error::success();
  return importer.error(subject + " has rank " + llvm::Twine(type.getRank()) +
                        ", more than the " + llvm::Twine(bundle::kMaxRank) +
                        " the runtime supports");
}

/// Imports the nodes of `graph` in `order` through their ops' normalizers.
static llvm::Error importNodes(Importer &importer, onnx::GraphProto &graph,
                               llvm::ArrayRef<int> order) {
  for (int index : order) {
    onnx::NodeProto &node = *graph.mutable_node(index);
    OpImporter importOp = lookupOpImporter(node.op_type());
    assert(importOp && "unsupported ops are rejected by the scan");
    if (importer.legacyOpset)
      dropConsumedInputs(node);
    if (llvm::Error error = checkAttributes(importer, node))
      return error;
    if (llvm::Error error = importOp(importer, node))
      return error;
  }
  return llvm::Error::success();
}

namespace onnx_import {
llvm::Expected<llvm::SmallVector<ir::Value *, 2>>
Importer::importBranch(const onnx::NodeProto &node, onnx::GraphProto &graph,
                       llvm::StringRef branchName,
                       llvm::ArrayRef<ir::Value *> inputs) {
  auto order = branchOrders.find(&graph);
  assert(order != branchOrders.end() && "every branch is scanned");
  std::string where = describe(node) + ": " + branchName.str();
  if (inputs.size() != static_cast<size_t>(graph.input_size()))
    return error(where + " takes " + llvm::Twine(graph.input_size()) +
                 " inputs, the node gives it " + llvm::Twine(inputs.size()));
  ++branchDepth;
  size_t firstArgument = module.getArguments().size();
  size_t firstNode = module.getNodes().size();
  // The names the branch defines: the scan made sure no enclosing graph
  // defines them, and they are forgotten after it (another If's branch
  // may use them again, a loop's body in its next iteration).
  std::vector<std::string> defined;
  for (int i = 0; i < graph.input_size(); ++i) {
    values[graph.input(i).name()] = inputs[i];
    defined.push_back(graph.input(i).name());
  }
  for (onnx::TensorProto &initializer : *graph.mutable_initializer()) {
    // A body imported once per iteration reads the one weight its first
    // import made.
    auto imported = subgraphWeights.find(&initializer);
    if (imported != subgraphWeights.end()) {
      values[initializer.name()] = imported->second;
      defined.push_back(initializer.name());
      continue;
    }
    auto weight = importTensor(initializer, initializer.name(),
                               where + ": initializer '" + initializer.name() +
                                   "'");
    if (!weight)
      return weight.takeError();
    if (llvm::Error error =
            checkRank(*this, where + ": initializer '" + initializer.name() +
                                 "'",
                      (*weight)->getType()))
      return error;
    values[initializer.name()] = *weight;
    subgraphWeights[&initializer] = *weight;
    defined.push_back(initializer.name());
  }
  for (const onnx::NodeProto &inner : graph.node())
    for (const std::string &output : inner.output())
      if (!output.empty())
        defined.push_back(output);
  if (llvm::Error error = importNodes(*this, graph, order->second))
    return error;

  llvm::SmallVector<ir::Value *, 2> results;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    auto it = values.find(output.name());
    if (it == values.end())
      return error(where + ": output '" + output.name() +
                   "' is not computed (a dropped optional output?)");
    const onnx::TypeProto::Tensor &tensor = output.type().tensor_type();
    auto dtype = convertDType(tensor.elem_type());
    ir::DType actual = it->second->getType().getDType();
    if (tensor.elem_type() != 0 && dtype && *dtype != actual)
      return error(where + ": output '" + output.name() + "' has type " +
                   it->second->getType().str() +
                   ", the model declares element type " +
                   ir::getDTypeName(*dtype));
    results.push_back(it->second);
  }
  for (const std::string &name : defined) {
    values.erase(name);
    droppedOutputs.erase(name);
  }
  // Another If's branch may have defined the same names before: its
  // values keep theirs, these get a suffix, so that the IR's names stay
  // unique. The outermost branch renames for the branches inside it.
  if (--branchDepth)
    return results;
  // Suffixes only ever get taken, so the search for a free one resumes
  // where the last one for the same name stopped (a loop unrolled over
  // thousands of iterations names each body value that many times).
  auto rename = [&](ir::Value *value) {
    std::string base = value->getName().str();
    if (base.empty())
      return;
    std::string name = base;
    unsigned &suffix = branchNameSuffixes[base];
    while (!branchValueNames.insert(name).second)
      name = base + "." + std::to_string(++suffix);
    if (name != base)
      value->setName(name);
  };
  for (size_t i = firstArgument; i < module.getArguments().size(); ++i)
    rename(module.getArguments()[i].get());
  for (size_t i = firstNode; i < module.getNodes().size(); ++i)
    for (unsigned r = 0; r < module.getNodes()[i]->getNumResults(); ++r)
      rename(module.getNodes()[i]->getResult(r));
  return results;
}
} // namespace onnx_import

static llvm::Error importGraph(Importer &importer, onnx::ModelProto &model,
                               const ModelScan &scan,
                               const ImportOptions &options) {
  onnx::GraphProto &graph = *model.mutable_graph();
  ir::Module &module = importer.module;
  module.setName(graph.name().empty() ? "main" : graph.name());

  llvm::StringSet<> initializerNames;
  for (const onnx::TensorProto &initializer : graph.initializer())
    initializerNames.insert(initializer.name());
  llvm::StringSet<> graphInputs;
  for (const onnx::ValueInfoProto &input : graph.input())
    if (!initializerNames.count(input.name()))
      graphInputs.insert(input.name());
  for (const InputBinding &binding : options.inputs)
    if (!graphInputs.count(binding.name))
      return importer.bindingError(binding.name, -1, "", "--input names '" + binding.name +
                            "', which is not a graph input of the model");
  for (const auto &frozen : options.frozenInputs) {
    if (!graphInputs.count(frozen.first))
      return importer.error("--freeze-input names '" + frozen.first +
                            "', which is not a graph input of the model");
    for (const InputBinding &binding : options.inputs)
      if (binding.name == frozen.first)
        return importer.error("graph input '" + frozen.first +
                              "' is given both --input and --freeze-input");
  }
  // The symbols --dim can bind: those of inputs whose shape neither
  // --input nor --freeze-input gives (a symbol only they have would be
  // accepted and bind nothing).
  llvm::StringSet<> symbols;
  llvm::StringMap<std::string> givenOnly;
  // For bindInputType's message: every unknown dim still to bind, at once.
  std::vector<std::string> unboundUnknownDims;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    bool given = options.frozenInputs.count(input.name()) != 0;
    for (const InputBinding &binding : options.inputs)
      given |= binding.name == input.name();
    const auto &dims = input.type().tensor_type().shape().dim();
    for (int i = 0; i < dims.size(); ++i) {
      llvm::Optional<DimSymbol> symbol =
          getDimSymbol(input.name(), i, dims[i]);
      if (!symbol)
        continue;
      if (given) {
        givenOnly.try_emplace(symbol->name, input.name());
        continue;
      }
      symbols.insert(symbol->name);
      if (symbol->unknown && !options.dims.count(symbol->name))
        unboundUnknownDims.push_back(symbol->name);
    }
  }
  for (const auto &bound : options.dims) {
    if (!symbols.count(bound.getKey()) && givenOnly.count(bound.getKey()))
      return importer.bindingError(
          "", -1, bound.getKey(),
          "--dim names '" + bound.getKey().str() + "', which only input '" +
              givenOnly.lookup(bound.getKey()) +
              "' has, and its shape is given by --input or --freeze-input: "
              "the binding would have no effect");
    if (!symbols.count(bound.getKey()))
      return importer.bindingError("", -1, bound.getKey(), "--dim names '" + bound.getKey() +
                            "', which is not a symbolic dim of the model's "
                            "inputs");
  }
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (initializerNames.count(input.name()))
      continue;
    auto frozen = options.frozenInputs.find(input.name());
    if (frozen != options.frozenInputs.end()) {
      const auto &[type, bytes] = frozen->second;
      if (llvm::Error error = checkFrozenInput(importer, input, type))
        return error;
      if (llvm::Error error = checkRank(
              importer, "frozen input '" + input.name() + "'", type))
        return error;
      if (bytes.size() != type.getByteSize())
        return importer.error("frozen input '" + input.name() + "' has " +
                              llvm::Twine(bytes.size()) + " bytes, type " +
                              type.str() + " needs " +
                              llvm::Twine(type.getByteSize()));
      importer.values[input.name()] =
          module.addWeight(input.name(), type, bytes);
      continue;
    }
    auto type = bindInputType(importer, input, options, unboundUnknownDims);
    if (!type)
      return type.takeError();
    if (llvm::Error error = checkRank(importer, "graph input '" +
                                                    input.name() + "'",
                                      *type))
      return error;
    importer.values[input.name()] = module.addInput(input.name(), *type);
  }

  // The weights the initializers give; the rest are the model's constants
  // (below).
  llvm::DenseSet<const ir::Value *> fromInitializers;
  for (onnx::TensorProto &initializer : *graph.mutable_initializer()) {
    auto weight =
        importer.importTensor(initializer, initializer.name(),
                              "initializer '" + initializer.name() + "'");
    if (!weight)
      return weight.takeError();
    fromInitializers.insert(*weight);
    if (llvm::Error error = checkRank(
            importer, "initializer '" + initializer.name() + "'",
            (*weight)->getType()))
      return error;
    importer.values[initializer.name()] = *weight;
  }

  if (llvm::Error error = importNodes(importer, graph, scan.order))
    return error;

  // The floating-point weights no initializer gave are the model's
  // constants (ir/State.h): a training step leaves them as they are.
  std::vector<std::string> constants;
  for (const ir::Value *weight : module.getWeights())
    if (ir::isFloatDType(weight->getType().getDType()) &&
        !fromInitializers.count(weight))
      constants.push_back(weight->getName().str());
  ir::setConstantWeightNames(module, std::move(constants));

  llvm::SmallVector<ir::Value *, 4> outputs;
  for (const onnx::ValueInfoProto &output : graph.output()) {
    auto it = importer.values.find(output.name());
    if (it == importer.values.end())
      return importer.error("graph output '" + output.name() +
                            "' is not computed (a dropped optional output?)");
    if (llvm::Error error = checkOutput(importer, output, it->second))
      return error;
    outputs.push_back(it->second);
  }
  module.setOutputs(outputs);
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<ir::Module>>
importOnnxModel(llvm::StringRef path, const ImportOptions &options) {
  onnx::ModelProto model;
  if (llvm::Error error = loadModel(path, model))
    return error;
  auto module = std::make_unique<ir::Module>();
  Importer probe(path.str(), *module, 0);
  auto scan = scanModel(probe, model);
  if (!scan)
    return scan.takeError();
  Importer importer(path.str(), *module, scan->opset);
  importer.legacyOpset = scan->legacyOpset;
  importer.allowExternalDataOutsideModelDir =
      options.allowExternalDataOutsideModelDir;
  importer.externalFilesRead = options.externalFilesRead;
  importer.boundDims = options.dims;
  importer.trainingDropout = options.trainingDropout;
  importer.maxTrips = options.maxTrips;
  importer.branchOrders = std::move(scan->branchOrders);
  if (llvm::Error error = importGraph(importer, model, *scan, options))
    return error;
  // A bound no Loop took is a typo or a Loop that runs without it.
  for (const auto &entry : importer.maxTrips)
    if (!importer.usedMaxTrips.count(entry.getKey()))
      return importer.error("--max-trip names '" + entry.getKey() +
                            "', which is no Loop of the model whose trip "
                            "count or condition is runtime data");
  if (llvm::Error error = ir::verifyModule(*module))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        path.str() +
            ": internal error: the imported module does not "
            "verify:\n" +
            toString(std::move(error)));
  return module;
}

} // namespace snug
