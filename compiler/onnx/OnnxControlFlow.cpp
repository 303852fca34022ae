//===- OnnxControlFlow.cpp - If, Loop and Scan known at compile time ------===//
//
// snug's IR is a straight-line schedule: it has no branches and no loops.
// Control flow whose path is known when the model is compiled is imported
// as that path's nodes, through the same normalizers as the model's own
// (Importer::importBranch; nested subgraphs the same way):
// - An If whose condition is known then (an initializer, a Constant, a
//   frozen input, or a value the importer folds from shapes the bindings
//   fix, like Equal(Gather(Shape(x), 0), 1) with --dim batch=1) is the
//   branch it takes. Exporters write such Ifs for shape checks a tracer
//   could not resolve (torch.onnx's `if x.size(0) == 1`).
// - A Loop whose trip count and conditions are known then is unrolled:
//   its body once per iteration, the iteration number and condition bound
//   to constants, the loop-carried values threaded through, each scan
//   output's per-iteration values stacked along a new axis 0.
// - A Scan (whose length is a static dim of its scan inputs) is unrolled
//   alike: each scan input split along its axis into one element per
//   iteration, in the direction the node says, each scan output stacked
//   along its axis.
// Unrolled, every executor runs a loop like any other graph, and the
// planner sees each iteration's buffers with their own lifetimes.
//
// Control flow that depends on an input's data:
// - An If on runtime data imports both branches and each output as
//   Where(condition, then's, else's); the guard-branches pass then runs
//   only the taken side (passes/memory/GuardBranches.cpp).
// - A Loop whose trip count or conditions are runtime data is unrolled up
//   to the bound --max-trip gives it, each iteration run while the loop
//   goes on (importBoundedLoop), and refused without one, naming the node
//   and the flag. So is a loop past kMaxUnrolledNodes nodes. The scan
//   (OnnxImporter.cpp) has already checked every subgraph (unsupported
//   ops, undefined names, names that shadow the enclosing graph's) and
//   ordered its nodes.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"
#include "passes/simplify/ConstantEval.h"

#include "llvm/ADT/DenseSet.h"

namespace snug {
namespace onnx_import {

using ir::Attribute;
using ir::Value;

namespace {
/// The tail of a refusal of control flow that depends on data.
constexpr const char *kNeedsCompileTime =
    "; snug needs it known at compile time";
} // namespace

/// Binds `node`'s outputs to `results`, each through an Identity unless it
/// is a value made while `node` was imported (a node result from
/// `firstNode` on, a weight from `firstArgument` on) that no earlier output
/// took: binding renames the value, and an outer one (a graph input passed
/// through, a loop's initial value) keeps its name. The Identity, which the
/// pipeline forwards, is named after the node (".I" past output 0).
static llvm::Error bindThroughCopies(Importer &importer,
                                     const onnx::NodeProto &node,
                                     size_t firstNode, size_t firstArgument,
                                     llvm::SmallVectorImpl<Value *> &results) {
  llvm::DenseSet<const Value *> made;
  const ir::Module &module = importer.module;
  for (size_t i = firstNode; i < module.getNodes().size(); ++i)
    for (unsigned r = 0; r < module.getNodes()[i]->getNumResults(); ++r)
      made.insert(module.getNodes()[i]->getResult(r));
  for (size_t i = firstArgument; i < module.getArguments().size(); ++i)
    made.insert(module.getArguments()[i].get());
  llvm::DenseSet<Value *> bound;
  for (size_t i = 0; i < results.size(); ++i) {
    Value *value = results[i];
    if (made.count(value) && bound.insert(value).second)
      continue;
    auto copy = firstResult(importer.emit(
        node, "Identity", {value}, {}, 1,
        i ? "." + std::to_string(i) : std::string()));
    if (!copy)
      return copy.takeError();
    results[i] = *copy;
  }
  importer.bindOutputs(node, results);
  return llvm::Error::success();
}

/// The graph attribute `name` of an If; an error naming the node without.
static llvm::Expected<onnx::GraphProto *>
getBranch(Importer &importer, onnx::NodeProto &node, llvm::StringRef name) {
  for (onnx::AttributeProto &attr : *node.mutable_attribute())
    if (attr.name() == name && attr.has_g()) {
      if (attr.g().output_size() != node.output_size())
        return importer.error(node, name + " has " +
                                        llvm::Twine(attr.g().output_size()) +
                                        " outputs, the If has " +
                                        llvm::Twine(node.output_size()));
      return attr.mutable_g();
    }
  return importer.error(node, "has no graph attribute '" + name + "'");
}

/// `value`, a tensor of one element, as a scalar (a Reshape when its rank
/// is not 0).
static llvm::Expected<Value *> asScalar(Importer &importer,
                                        const onnx::NodeProto &node,
                                        Value *value,
                                        const std::string &suffix) {
  if (value->getType().getRank() == 0)
    return value;
  return firstResult(importer.emit(node, "Reshape", {value},
                                   {{"shape", Attribute::getInts({})}}, 1,
                                   suffix));
}

/// Imports the body of Loop `node` for iteration `k`: the iteration number
/// and a true condition as constants, then the carried values.
static llvm::Expected<llvm::SmallVector<Value *, 2>>
importIteration(Importer &importer, const onnx::NodeProto &node,
                onnx::GraphProto &body, int64_t k,
                llvm::ArrayRef<Value *> carried) {
  std::string step = ".iteration" + std::to_string(k);
  llvm::SmallVector<Value *, 6> inputs{
      addScalarWeight(importer, node, step, ir::DType::I64,
                      static_cast<double>(k)),
      addScalarWeight(importer, node, step + ".cond", ir::DType::Bool, 1)};
  inputs.append(carried.begin(), carried.end());
  return importer.importBranch(node, body, "body", inputs);
}

/// An If whose condition is runtime data: both branches are imported, and
/// each output is Where(condition, then's, else's) over a scalar condition.
/// The guard-branches pass (passes/memory/GuardBranches.h) then makes the
/// nodes only one side needs a guarded run of steps, so each executor runs
/// just the taken branch. The branches must agree on each output's type:
/// snug's shapes are static.
static llvm::Error importRuntimeIf(Importer &importer, onnx::NodeProto &node,
                                   Value *condition) {
  const ir::TensorType &type = condition->getType();
  if (type.getDType() != ir::DType::Bool)
    return importer.error(node, "condition '" + node.input(0) +
                                    "' has type " + type.str() +
                                    "; If takes a bool");
  auto thenGraph = getBranch(importer, node, "then_branch");
  if (!thenGraph)
    return thenGraph.takeError();
  auto elseGraph = getBranch(importer, node, "else_branch");
  if (!elseGraph)
    return elseGraph.takeError();
  size_t firstNode = importer.module.getNodes().size();
  size_t firstArgument = importer.module.getArguments().size();
  // Both branches must compile at the bound shapes, though a model may
  // only ever take one at them (Silero VAD's 8 kHz network at a 16 kHz
  // window): say why both are compiled and how to fix the condition.
  auto explain = [&](llvm::StringRef branch, llvm::Error error) {
    std::string why = llvm::toString(std::move(error));
    size_t at = why.find("error: ");
    if (at != std::string::npos)
      why = why.substr(at + 7);
    return importer.error(
        node, "condition '" + node.input(0) +
                  "' is runtime data, so snug compiles both branches, and " +
                  branch + " does not compile at these shapes: " + why +
                  " (--freeze-input fixes a graph input the condition "
                  "reads, and the If takes one branch)");
  };
  auto thenResults = importer.importBranch(node, **thenGraph, "then_branch");
  if (!thenResults)
    return explain("then_branch", thenResults.takeError());
  auto elseResults = importer.importBranch(node, **elseGraph, "else_branch");
  if (!elseResults)
    return explain("else_branch", elseResults.takeError());
  auto scalar = asScalar(importer, node, condition, ".condition");
  if (!scalar)
    return scalar.takeError();
  llvm::SmallVector<Value *, 2> results;
  for (int i = 0; i < node.output_size(); ++i) {
    Value *thenValue = (*thenResults)[i];
    Value *elseValue = (*elseResults)[i];
    if (thenValue->getType() != elseValue->getType())
      return importer.error(
          node, "output " + llvm::Twine(i) + " is " +
                    thenValue->getType().str() + " in then_branch and " +
                    elseValue->getType().str() +
                    " in else_branch; an If on runtime data needs both "
                    "branches to give the same type (snug's shapes are "
                    "static)");
    auto selected = firstResult(importer.emit(
        node, "Where", {*scalar, thenValue, elseValue}, {}, 1,
        i ? "." + std::to_string(i) : std::string()));
    if (!selected)
      return selected.takeError();
    results.push_back(*selected);
  }
  return bindThroughCopies(importer, node, firstNode, firstArgument, results);
}

llvm::Error importIf(Importer &importer, onnx::NodeProto &node) {
  auto condition = requireInput(importer, node, 0);
  if (!condition)
    return condition.takeError();
  const std::string &name = node.input(0);
  const ir::TensorType &type = (*condition)->getType();
  if (type.getNumElements() != 1)
    return importer.error(node, "condition '" + name + "' has type " +
                                    type.str() +
                                    "; If takes a tensor of one element");
  auto data = importer.getConstant(*condition);
  if (!data)
    return data.takeError();
  if (!*data)
    return importRuntimeIf(importer, node, *condition);
  bool taken = readElementAsDouble(type.getDType(), (*data)->data(), 0) != 0;
  llvm::StringRef branchName = taken ? "then_branch" : "else_branch";
  auto branch = getBranch(importer, node, branchName);
  if (!branch)
    return branch.takeError();
  size_t firstNode = importer.module.getNodes().size();
  size_t firstArgument = importer.module.getArguments().size();
  auto results = importer.importBranch(node, **branch, branchName);
  if (!results)
    return results.takeError();
  // A branch output that is a value of the enclosing graphs is copied.
  return bindThroughCopies(importer, node, firstNode, firstArgument, *results);
}

/// Input `index` of `node` as one number known at compile time; None when
/// the input is absent. `what` names it in errors ("M", "cond").
static llvm::Expected<llvm::Optional<double>>
readCompileTimeScalar(Importer &importer, const onnx::NodeProto &node,
                      unsigned index, llvm::StringRef what,
                      llvm::StringRef why) {
  auto input = importer.getInput(node, index);
  if (!input)
    return input.takeError();
  if (!*input)
    return llvm::None;
  const ir::TensorType &type = (*input)->getType();
  const std::string &name = node.input(index);
  if (type.getNumElements() != 1)
    return importer.error(node, what + " '" + name + "' has type " +
                                    type.str() + "; " + node.op_type() +
                                    " takes a tensor of one element");
  auto data = importer.getConstant(*input);
  if (!data)
    return data.takeError();
  if (!*data)
    return importer.error(node, what + " '" + name + "' is not a constant" +
                                    kNeedsCompileTime + " (" + why + ")");
  return readElementAsDouble(type.getDType(), (*data)->data(), 0);
}

/// The body attribute of a Loop or Scan.
static llvm::Expected<onnx::GraphProto *> getBody(Importer &importer,
                                                  onnx::NodeProto &node) {
  for (onnx::AttributeProto &attr : *node.mutable_attribute())
    if (attr.name() == "body" && attr.has_g())
      return attr.mutable_g();
  return importer.error(node, "has no graph attribute 'body'");
}

/// Refuses a loop whose unrolling has grown past kMaxUnrolledNodes, or past
/// as many iterations (a body of no nodes adds none, but each iteration
/// still costs its constants).
static llvm::Error checkUnrolledSize(Importer &importer,
                                     const onnx::NodeProto &node,
                                     size_t firstNode, int64_t iterations) {
  size_t nodes = importer.module.getNodes().size() - firstNode;
  if (nodes <= kMaxUnrolledNodes &&
      static_cast<uint64_t>(iterations) <= kMaxUnrolledNodes)
    return llvm::Error::success();
  std::string what =
      nodes > kMaxUnrolledNodes
          ? "unrolls into " + std::to_string(nodes) + " nodes after " +
                std::to_string(iterations) + " iterations"
          : "runs " + std::to_string(iterations) + " iterations";
  return importer.error(
      node, what +
                "; snug unrolls a loop into straight-line code and stops at " +
                llvm::Twine(kMaxUnrolledNodes) + " nodes or iterations");
}

/// Stacks one scan output's per-iteration values along a new axis `axis`
/// (of the result's rank), in order.
static llvm::Expected<Value *> stack(Importer &importer,
                                     const onnx::NodeProto &node,
                                     llvm::ArrayRef<Value *> parts,
                                     int64_t axis, const std::string &suffix) {
  llvm::SmallVector<Value *, 8> wide;
  for (size_t i = 0; i < parts.size(); ++i) {
    auto part = firstResult(importer.emit(
        node, "Unsqueeze", {parts[i]},
        {{"axes", Attribute::getInts({axis})}}, 1,
        suffix + ".step" + std::to_string(i)));
    if (!part)
      return part.takeError();
    wide.push_back(*part);
  }
  if (wide.size() == 1)
    return wide[0];
  return firstResult(importer.emit(node, "Concat", wide,
                                   {{"axis", Attribute::getInt(axis)}}, 1,
                                   suffix));
}


/// A Loop whose trip count or conditions may be runtime data, bounded by
/// --max-trip: `bound` iterations unrolled, each running while the loop
/// does. `active` (a bool scalar computed at run time) says whether
/// iteration k runs: cond, k < M, and every earlier iteration's condition.
/// Each loop-carried value is Where(active, the body's, the value before),
/// so the guard-branches pass runs iteration k's nodes only when it is
/// active (passes/memory/GuardBranches.cpp), and the condition the next
/// iteration reads is Where(active, the body's, false). A loop still
/// running after the bound fails the run (snug.fail_if): a result cut
/// short would be silently wrong. Scan outputs are refused: their length
/// is the trip count, and snug's shapes are static.
static llvm::Error importBoundedLoop(Importer &importer,
                                     onnx::NodeProto &node,
                                     onnx::GraphProto &body, int64_t bound,
                                     llvm::StringRef loopName,
                                     llvm::SmallVectorImpl<Value *> &carried,
                                     size_t numScans) {
  if (numScans)
    return importer.error(
        node, "has scan output '" + body.output(1 + carried.size()).name() +
                  "', whose length is the trip count; a Loop bounded by "
                  "--max-trip runs a runtime number of iterations, and "
                  "snug's shapes are static");
  size_t firstNode = importer.module.getNodes().size();
  size_t firstArgument = importer.module.getArguments().size();
  auto tripCount = importer.getInput(node, 0);
  if (!tripCount)
    return tripCount.takeError();
  auto initial = importer.getInput(node, 1);
  if (!initial)
    return initial.takeError();
  for (auto [value, what, dtype] :
       {std::make_tuple(*tripCount, "M", ir::DType::I64),
        std::make_tuple(*initial, "cond", ir::DType::Bool)})
    if (value && (value->getType().getNumElements() != 1 ||
                  value->getType().getDType() != dtype))
      return importer.error(node, llvm::Twine(what) + " has type " +
                                      value->getType().str() +
                                      "; a Loop takes one " +
                                      ir::getDTypeName(dtype));
  Value *active = addScalarWeight(importer, node, ".running", ir::DType::Bool,
                                  1);
  if (*initial) {
    auto scalar = asScalar(importer, node, *initial, ".cond");
    if (!scalar)
      return scalar.takeError();
    active = *scalar;
  }
  Value *trips = nullptr;
  if (*tripCount) {
    auto scalar = asScalar(importer, node, *tripCount, ".trips");
    if (!scalar)
      return scalar.takeError();
    trips = *scalar;
  }
  // Whether iteration `k` may run by the trip count, and'ed into `active`.
  auto withinTrips = [&](int64_t k, const std::string &step) -> llvm::Error {
    if (!trips)
      return llvm::Error::success();
    Value *index = addScalarWeight(importer, node, step + ".index",
                                   ir::DType::I64, static_cast<double>(k));
    auto below = firstResult(
        importer.emit(node, "Less", {index, trips}, {}, 1, step + ".within"));
    if (!below)
      return below.takeError();
    auto both = firstResult(
        importer.emit(node, "And", {active, *below}, {}, 1, step + ".active"));
    if (!both)
      return both.takeError();
    active = *both;
    return llvm::Error::success();
  };
  if (llvm::Error error = withinTrips(0, ".iteration0"))
    return error;
  Value *no = addScalarWeight(importer, node, ".stopped", ir::DType::Bool, 0);
  for (int64_t k = 0; k < bound; ++k) {
    std::string step = ".iteration" + std::to_string(k);
    auto results = importIteration(importer, node, body, k, carried);
    if (!results)
      return results.takeError();
    for (size_t i = 0; i < carried.size(); ++i) {
      Value *next = (*results)[1 + i];
      if (next->getType() != carried[i]->getType())
        return importer.error(
            node, "body output '" + body.output(1 + i).name() + "' has type " +
                      next->getType().str() + ", its loop-carried value " +
                      carried[i]->getType().str());
      auto kept = firstResult(importer.emit(
          node, "Where", {active, next, carried[i]}, {}, 1,
          step + ".carried" + std::to_string(i)));
      if (!kept)
        return kept.takeError();
      carried[i] = *kept;
    }
    Value *condition = (*results)[0];
    if (condition->getType().getNumElements() != 1 ||
        condition->getType().getDType() != ir::DType::Bool)
      return importer.error(node, "body's condition output '" +
                                      body.output(0).name() + "' has type " +
                                      condition->getType().str() +
                                      "; a Loop's condition is one bool");
    auto scalar = asScalar(importer, node, condition, step + ".stop");
    if (!scalar)
      return scalar.takeError();
    auto goesOn = firstResult(importer.emit(
        node, "Where", {active, *scalar, no}, {}, 1, step + ".goes_on"));
    if (!goesOn)
      return goesOn.takeError();
    active = *goesOn;
    if (llvm::Error error = withinTrips(k + 1, ".iteration" +
                                                   std::to_string(k + 1)))
      return error;
    if (llvm::Error error = checkUnrolledSize(importer, node, firstNode, k + 1))
      return error;
  }
  std::string message =
      importer.describe(node) + " is still running after " +
      std::to_string(bound) + " iterations, the bound --max-trip=" +
      loopName.str() + "=" + std::to_string(bound) +
      " gave it (compile with a larger bound)";
  auto check = importer.emit(node, "snug.fail_if", {active},
                             {{"message", Attribute::getString(message)}}, 1,
                             ".bound");
  if (!check)
    return check.takeError();
  llvm::SmallVector<Value *, 4> outputs(carried.begin(), carried.end());
  outputs.resize(std::min<size_t>(outputs.size(), node.output_size()));
  return bindThroughCopies(importer, node, firstNode, firstArgument, outputs);
}

llvm::Error importLoop(Importer &importer, onnx::NodeProto &node) {
  auto body = getBody(importer, node);
  if (!body)
    return body.takeError();
  llvm::SmallVector<Value *, 4> carried;
  for (int i = 2; i < node.input_size(); ++i) {
    auto value = requireInput(importer, node, i);
    if (!value)
      return value.takeError();
    carried.push_back(*value);
  }
  const onnx::GraphProto &graph = **body;
  size_t numCarried = carried.size();
  if (graph.input_size() != static_cast<int>(2 + numCarried) ||
      graph.output_size() < static_cast<int>(1 + numCarried))
    return importer.error(
        node, "body has " + llvm::Twine(graph.input_size()) + " inputs and " +
                  llvm::Twine(graph.output_size()) + " outputs; with " +
                  llvm::Twine(numCarried) +
                  " loop-carried values it needs " +
                  llvm::Twine(2 + numCarried) + " inputs and at least " +
                  llvm::Twine(1 + numCarried) + " outputs");
  size_t numScans = graph.output_size() - 1 - numCarried;
  if (node.output_size() > static_cast<int>(numCarried + numScans))
    return importer.error(node, "has " + llvm::Twine(node.output_size()) +
                                    " outputs, its body computes " +
                                    llvm::Twine(numCarried + numScans));
  std::string loopName = !node.name().empty()  ? node.name()
                         : node.output_size() ? node.output(0)
                                              : std::string();
  auto bound = importer.maxTrips.find(loopName);
  if (bound != importer.maxTrips.end()) {
    importer.usedMaxTrips.insert(loopName);
    return importBoundedLoop(importer, node, **body, bound->second, loopName,
                             carried, numScans);
  }
  std::string hint = "; --max-trip=" + loopName +
                     "=N bounds it by N iterations, each run while the loop "
                     "goes on";
  auto tripCount = readCompileTimeScalar(
      importer, node, 0, "M",
      "the trip count of a Loop, which snug unrolls" + hint);
  if (!tripCount)
    return tripCount.takeError();
  auto initialCondition = readCompileTimeScalar(
      importer, node, 1, "cond",
      "the condition of a Loop, which snug unrolls" + hint);
  if (!initialCondition)
    return initialCondition.takeError();
  if (!*tripCount && !*initialCondition)
    return importer.error(node, "has neither a trip count M nor a condition "
                                "cond; the loop would never end");

  size_t firstNode = importer.module.getNodes().size();
  size_t firstArgument = importer.module.getArguments().size();
  std::vector<llvm::SmallVector<Value *, 8>> scans(numScans);
  bool running = !*initialCondition || **initialCondition != 0;
  int64_t iteration = 0;
  for (; running && (!*tripCount || iteration < **tripCount); ++iteration) {
    auto results = importIteration(importer, node, **body, iteration, carried);
    if (!results)
      return results.takeError();
    Value *condition = (*results)[0];
    if (condition->getType().getNumElements() != 1)
      return importer.error(node, "body's condition output '" +
                                      graph.output(0).name() + "' has type " +
                                      condition->getType().str() +
                                      "; a Loop's condition is one element");
    auto data = importer.getConstant(condition);
    if (!data)
      return data.takeError();
    if (!*data)
      return importer.error(
          node, "condition '" + graph.output(0).name() + "' (its body's "
                "output 0) depends on runtime data in iteration " +
                llvm::Twine(iteration) + kNeedsCompileTime +
                " (snug unrolls a Loop" + hint + ")");
    running = readElementAsDouble(condition->getType().getDType(),
                                  (*data)->data(), 0) != 0;
    for (size_t i = 0; i < numCarried; ++i)
      carried[i] = (*results)[1 + i];
    for (size_t k = 0; k < numScans; ++k)
      scans[k].push_back((*results)[1 + numCarried + k]);
    if (llvm::Error error =
            checkUnrolledSize(importer, node, firstNode, iteration + 1))
      return error;
  }

  llvm::SmallVector<Value *, 4> outputs(carried.begin(), carried.end());
  for (size_t k = 0; k < numScans; ++k) {
    if (scans[k].empty())
      return importer.error(
          node, "runs no iteration and has scan output '" +
                    graph.output(1 + numCarried + k).name() +
                    "'; snug needs the shape of its elements, which only an "
                    "iteration gives");
    auto stacked = stack(importer, node, scans[k], 0,
                         ".scan" + std::to_string(k));
    if (!stacked)
      return stacked.takeError();
    outputs.push_back(*stacked);
  }
  outputs.resize(std::min<size_t>(outputs.size(), node.output_size()));
  return bindThroughCopies(importer, node, firstNode, firstArgument, outputs);
}

namespace {
/// A Scan's attributes (opset 9 on; opset 8's batch form is unrolled per
/// batch entry through the same steps).
struct ScanForm {
  size_t numStates = 0, numScanInputs = 0, numScanOutputs = 0;
  Ints inputAxes, inputDirections, outputAxes, outputDirections;
};
} // namespace

/// Unrolls a Scan's body over `scanInputs` (scanned along `form`'s axes,
/// in its directions) from `states`; `states` become the final states, and
/// the stacked scan outputs are appended to `outputs`.
static llvm::Error unrollScan(Importer &importer, onnx::NodeProto &node,
                              onnx::GraphProto &body, const ScanForm &form,
                              llvm::SmallVectorImpl<Value *> &states,
                              llvm::ArrayRef<Value *> scanInputs,
                              size_t firstNode, const std::string &suffix,
                              llvm::SmallVectorImpl<Value *> &outputs) {
  // The sequence length: the scanned dim, the same in every scan input.
  int64_t length = -1;
  llvm::SmallVector<llvm::SmallVector<Value *, 8>, 2> elements;
  for (size_t j = 0; j < scanInputs.size(); ++j) {
    const ir::TensorType &type = scanInputs[j]->getType();
    auto axis = axisFor(importer, node, form.inputAxes[j], type.getRank());
    if (!axis)
      return axis.takeError();
    int64_t dim = type.getDims()[*axis];
    if (length >= 0 && dim != length)
      return importer.error(
          node, "scan input '" + node.input(node.input_size() -
                                            scanInputs.size() + j) +
                    "' has " + llvm::Twine(dim) +
                    " elements along its scan axis, an earlier one " +
                    llvm::Twine(length));
    length = dim;
    // Checked before the split, which makes one value per step.
    if (llvm::Error error =
            checkUnrolledSize(importer, node, firstNode, length))
      return error;
    if (length == 0)
      return importer.error(node, "scans a sequence of length 0; snug needs "
                                  "the shape of the body's outputs, which "
                                  "only an iteration gives");
    std::string name = suffix + ".in" + std::to_string(j);
    llvm::SmallVector<Value *, 8> parts;
    if (length == 1) {
      parts.push_back(scanInputs[j]);
    } else {
      auto split = importer.emit(
          node, "Split", {scanInputs[j]},
          {{"axis", Attribute::getInt(*axis)},
           {"split", Attribute::getInts(Ints(length, 1))}},
          static_cast<unsigned>(length), name + ".split");
      if (!split)
        return split.takeError();
      parts.assign(split->begin(), split->end());
    }
    for (int64_t t = 0; t < length; ++t) {
      auto element = firstResult(importer.emit(
          node, "Squeeze", {parts[t]}, {{"axes", Attribute::getInts({*axis})}},
          1, name + ".step" + std::to_string(t)));
      if (!element)
        return element.takeError();
      parts[t] = *element;
    }
    if (form.inputDirections[j])
      std::reverse(parts.begin(), parts.end());
    elements.push_back(std::move(parts));
  }

  std::vector<llvm::SmallVector<Value *, 8>> scans(form.numScanOutputs);
  for (int64_t t = 0; t < length; ++t) {
    llvm::SmallVector<Value *, 6> inputs(states.begin(), states.end());
    for (const auto &parts : elements)
      inputs.push_back(parts[t]);
    auto results = importer.importBranch(node, body, "body", inputs);
    if (!results)
      return results.takeError();
    for (size_t i = 0; i < form.numStates; ++i)
      states[i] = (*results)[i];
    for (size_t k = 0; k < form.numScanOutputs; ++k)
      scans[k].push_back((*results)[form.numStates + k]);
    if (llvm::Error error =
            checkUnrolledSize(importer, node, firstNode, t + 1))
      return error;
  }
  for (size_t k = 0; k < form.numScanOutputs; ++k) {
    if (form.outputDirections[k])
      std::reverse(scans[k].begin(), scans[k].end());
    auto axis = axisFor(importer, node, form.outputAxes[k],
                        scans[k][0]->getType().getRank() + 1);
    if (!axis)
      return axis.takeError();
    auto stacked = stack(importer, node, scans[k], *axis,
                         suffix + ".out" + std::to_string(k));
    if (!stacked)
      return stacked.takeError();
    outputs.push_back(*stacked);
  }
  return llvm::Error::success();
}

/// An axes or directions attribute of a Scan: `count` entries, `fill`
/// each when absent; directions are 0 or 1.
static llvm::Expected<Ints> scanAttr(Importer &importer,
                                     const onnx::NodeProto &node,
                                     llvm::StringRef name, size_t count,
                                     bool isDirection) {
  auto given = attrInts(node, name);
  if (!given)
    return Ints(count, 0);
  if (given->size() != count)
    return importer.error(node, "attribute '" + name + "' has " +
                                    llvm::Twine(given->size()) +
                                    " entries, the node has " +
                                    llvm::Twine(count) + " to describe");
  if (isDirection)
    for (int64_t direction : *given)
      if (direction != 0 && direction != 1)
        return importer.error(node, "attribute '" + name + "' holds " +
                                        llvm::Twine(direction) +
                                        "; a direction is 0 or 1");
  return Ints(given->begin(), given->end());
}

llvm::Error importScan(Importer &importer, onnx::NodeProto &node) {
  auto body = getBody(importer, node);
  if (!body)
    return body.takeError();
  // Opset 8's Scan takes an optional sequence_lens first and scans every
  // input along axis 1 per batch entry (axis 0); opset 9's has neither.
  bool batched = importer.opset < 9;
  int firstState = batched ? 1 : 0;
  if (batched && node.input_size() > 0 && !node.input(0).empty())
    return importer.error(node, "has sequence_lens '" + node.input(0) +
                                    "'; snug scans whole sequences only");
  int64_t numScanInputs = attrInt(node, "num_scan_inputs", 0);
  int numInputs = node.input_size() - firstState;
  if (numScanInputs < 1 || numScanInputs > numInputs)
    return importer.error(node, "num_scan_inputs is " +
                                    llvm::Twine(numScanInputs) + " for " +
                                    llvm::Twine(numInputs) + " inputs");
  ScanForm form;
  form.numScanInputs = numScanInputs;
  form.numStates = numInputs - numScanInputs;
  const onnx::GraphProto &graph = **body;
  if (graph.input_size() != numInputs ||
      graph.output_size() < static_cast<int>(form.numStates))
    return importer.error(
        node, "body has " + llvm::Twine(graph.input_size()) + " inputs and " +
                  llvm::Twine(graph.output_size()) + " outputs; with " +
                  llvm::Twine(form.numStates) + " states and " +
                  llvm::Twine(numScanInputs) + " scan inputs it needs " +
                  llvm::Twine(numInputs) + " inputs and at least " +
                  llvm::Twine(form.numStates) + " outputs");
  form.numScanOutputs = graph.output_size() - form.numStates;
  auto read = [&](llvm::StringRef name, size_t count, bool isDirection,
                  Ints &into) -> llvm::Error {
    auto value = scanAttr(importer, node, name, count, isDirection);
    if (!value)
      return value.takeError();
    into = std::move(*value);
    return llvm::Error::success();
  };
  if (batched) {
    if (llvm::Error error = read("directions", form.numScanInputs, true,
                                 form.inputDirections))
      return error;
    form.inputAxes.assign(form.numScanInputs, 0);
    form.outputAxes.assign(form.numScanOutputs, 0);
    form.outputDirections.assign(form.numScanOutputs, 0);
  } else if (llvm::Error error = joinErrors(
                 joinErrors(read("scan_input_axes", form.numScanInputs,
                                 false, form.inputAxes),
                            read("scan_input_directions", form.numScanInputs,
                                 true, form.inputDirections)),
                 joinErrors(read("scan_output_axes", form.numScanOutputs,
                                 false, form.outputAxes),
                            read("scan_output_directions",
                                 form.numScanOutputs, true,
                                 form.outputDirections)))) {
    return error;
  }

  llvm::SmallVector<Value *, 4> states, scanInputs;
  for (int i = 0; i < numInputs; ++i) {
    auto value = requireInput(importer, node, firstState + i);
    if (!value)
      return value.takeError();
    (i < static_cast<int>(form.numStates) ? states : scanInputs)
        .push_back(*value);
  }
  size_t firstNode = importer.module.getNodes().size();
  size_t firstArgument = importer.module.getArguments().size();
  llvm::SmallVector<Value *, 4> outputs;
  if (!batched) {
    if (llvm::Error error = unrollScan(importer, node, **body, form, states,
                                       scanInputs, firstNode, "", outputs))
      return error;
    states.append(outputs.begin(), outputs.end());
  } else {
    // Per batch entry: its states and scan inputs (axis 0 dropped), the
    // scan over what was axis 1, and every result stacked back on axis 0.
    int64_t batch = -1;
    for (int i = 0; i < numInputs; ++i) {
      bool isState = i < static_cast<int>(form.numStates);
      Value *value = isState ? states[i] : scanInputs[i - form.numStates];
      const ir::TensorType &type = value->getType();
      if (type.getRank() < (isState ? 1u : 2u) ||
          (batch >= 0 && type.getDims()[0] != batch))
        return importer.error(node, "input '" + node.input(firstState + i) +
                                        "' has type " + type.str() +
                                        "; opset 8's Scan needs every input "
                                        "batched alike along axis 0");
      batch = type.getDims()[0];
    }
    std::vector<llvm::SmallVector<Value *, 8>> perBatch;
    for (int64_t b = 0; b < batch; ++b) {
      std::string suffix = ".batch" + std::to_string(b);
      auto entry = [&](Value *value, size_t i) -> llvm::Expected<Value *> {
        auto slice = firstResult(importer.emit(
            node, "Slice", {value},
            {{"starts", Attribute::getInts({b})},
             {"ends", Attribute::getInts({b + 1})},
             {"axes", Attribute::getInts({0})},
             {"steps", Attribute::getInts({1})}},
            1, suffix + ".arg" + std::to_string(i) + ".slice"));
        if (!slice)
          return slice.takeError();
        return firstResult(importer.emit(
            node, "Squeeze", {*slice}, {{"axes", Attribute::getInts({0})}},
            1, suffix + ".arg" + std::to_string(i)));
      };
      llvm::SmallVector<Value *, 4> batchStates, batchInputs, results;
      for (size_t i = 0; i < states.size() + scanInputs.size(); ++i) {
        Value *whole =
            i < states.size() ? states[i] : scanInputs[i - states.size()];
        auto value = entry(whole, i);
        if (!value)
          return value.takeError();
        (i < states.size() ? batchStates : batchInputs).push_back(*value);
      }
      if (llvm::Error error =
              unrollScan(importer, node, **body, form, batchStates,
                         batchInputs, firstNode, suffix, results))
        return error;
      batchStates.append(results.begin(), results.end());
      perBatch.emplace_back(batchStates.begin(), batchStates.end());
    }
    states.clear();
    for (size_t i = 0; batch > 0 && i < perBatch[0].size(); ++i) {
      llvm::SmallVector<Value *, 8> parts;
      for (const auto &results : perBatch)
        parts.push_back(results[i]);
      auto stacked =
          stack(importer, node, parts, 0, ".batched" + std::to_string(i));
      if (!stacked)
        return stacked.takeError();
      states.push_back(*stacked);
    }
  }
  if (node.output_size() > static_cast<int>(states.size()))
    return importer.error(node, "has " + llvm::Twine(node.output_size()) +
                                    " outputs, its body computes " +
                                    llvm::Twine(states.size()));
  states.resize(node.output_size());
  return bindThroughCopies(importer, node, firstNode, firstArgument, states);
}

} // namespace onnx_import
} // namespace snug
