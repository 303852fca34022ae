//===- OnnxEinsum.cpp - Einsum as transposes, products and sums -----------===//
//
// Einsum(x0, x1, ...) {equation} imported as table ops only (Transpose,
// Reshape, Slice, ReduceSum, MatMul, Mul), so folding, the host executor,
// the CUDA kernels and autodiff need nothing new. The equation follows
// numpy.einsum, which onnx's reference runs:
//   - terms of letters (a-z, A-Z), one per operand, each with at most one
//     `...` standing for the operand's leading unnamed dims; whitespace is
//     ignored;
//   - with `->` the output term is explicit (its letters unique and all
//     in some operand; `...` required when the operands have broadcast
//     dims); without it, the broadcast dims, then the letters appearing
//     exactly once, in character order (upper case before lower);
//   - broadcast dims line up from the right; a dim of 1 broadcasts against
//     any size, for letters as well as for `...` (numpy does so too).
//
// Each operand is prepared alone: a letter repeated in it takes the
// diagonal (the two dims moved last, flattened, and every (d+1)-th
// element sliced: exact, where multiplying by an identity mask would turn
// an off-diagonal inf or NaN into NaN), dims of 1 that broadcast are
// dropped, and labels no other operand or the output names are summed
// (ReduceSum). Then the operands are contracted pairwise, left to right:
// labels both hold and something later needs are batch dims, labels both
// hold and nothing later needs are contracted, the rest are each side's
// own; MatMul over [batch, own, contracted] x [batch, contracted, own],
// or a broadcast Mul when nothing is contracted (an outer or elementwise
// product). A last Transpose puts the labels in the output's order.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace snug {
namespace onnx_import {

using ir::Attribute;
using ir::TensorType;

namespace {

/// A dim's label: a letter's character code, or kBroadcast + p for
/// position p of the broadcast dims (counted from the left of the widest
/// `...` among the operands).
using Label = int;
constexpr Label kBroadcast = 128;

std::string labelName(Label label) {
  if (label < kBroadcast)
    return "'" + std::string(1, char(label)) + "'";
  return "broadcast dim " + std::to_string(label - kBroadcast);
}

/// One term of the equation as written: letters around at most one `...`.
struct Term {
  std::string before, after;
  bool ellipsis = false;
};

/// A value in flight with one label per dim.
struct Labeled {
  ir::Value *value = nullptr;
  std::vector<Label> labels;

  llvm::ArrayRef<int64_t> dims() const {
    return value->getType().getDims();
  }
  int64_t dimOf(Label label) const {
    return dims()[llvm::find(labels, label) - labels.begin()];
  }
  bool has(Label label) const { return llvm::is_contained(labels, label); }
};

class EinsumImport {
public:
  EinsumImport(Importer &importer, const onnx::NodeProto &node,
               std::string equation)
      : importer(importer), node(node), equation(std::move(equation)) {}

  llvm::Error run();

private:
  llvm::Error fail(const llvm::Twine &why) const {
    return importer.error(node, "equation '" + equation + "': " + why);
  }
  llvm::Expected<Term> parseTerm(llvm::StringRef text) const;
  llvm::Error parse(std::vector<Term> &terms, Term &output, bool &explicitOut);
  llvm::Error bindSizes(const std::vector<Labeled> &operands);

  llvm::Expected<Labeled> prepare(Labeled operand,
                                  const std::set<Label> &needed);
  llvm::Expected<Labeled> diagonal(Labeled operand, size_t p, size_t q);
  llvm::Expected<Labeled> sumOut(Labeled operand,
                                 const std::set<Label> &needed);
  llvm::Expected<Labeled> contract(Labeled a, Labeled b,
                                   const std::set<Label> &needed);
  /// Transpose so that the labels come in `order` (a permutation).
  llvm::Expected<Labeled> arrange(Labeled operand,
                                  const std::vector<Label> &order);
  llvm::Expected<Labeled> reshape(Labeled operand,
                                  llvm::ArrayRef<int64_t> dims,
                                  std::vector<Label> labels);
  llvm::Expected<ir::Value *> emit(llvm::StringRef op,
                                   llvm::ArrayRef<ir::Value *> operands,
                                   ir::AttributeMap attributes,
                                   llvm::StringRef what) {
    return firstResult(importer.emit(node, op, operands, std::move(attributes),
                                     1,
                                     ("." + what + std::to_string(step++))
                                         .str()));
  }

  Importer &importer;
  const onnx::NodeProto &node;
  std::string equation;
  /// Each label's size after broadcasting.
  std::map<Label, int64_t> sizes;
  int step = 0;
};

llvm::Expected<Term> EinsumImport::parseTerm(llvm::StringRef text) const {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (std::isalpha(static_cast<unsigned char>(c))) {
      (term.ellipsis ? term.after : term.before) += c;
      continue;
    }
    if (c == '.' && text.substr(i, 3) == "..." && !term.ellipsis) {
      term.ellipsis = true;
      i += 2;
      continue;
    }
    if (c == '.')
      return fail("term '" + text + "' has a '.' outside one '...'");
    return fail("term '" + text + "' holds '" + llvm::Twine(c) +
                "', which is not a letter");
  }
  return term;
}

llvm::Error EinsumImport::parse(std::vector<Term> &terms, Term &output,
                                bool &explicitOut) {
  // Whitespace is not part of the grammar (onnx's own tests hold some).
  equation.erase(std::remove_if(equation.begin(), equation.end(),
                                [](unsigned char c) { return std::isspace(c); }),
                 equation.end());
  llvm::StringRef text = equation;
  size_t arrow = text.find("->");
  explicitOut = arrow != llvm::StringRef::npos;
  llvm::StringRef lhs = explicitOut ? text.take_front(arrow) : text;
  if (explicitOut) {
    llvm::StringRef rhs = text.drop_front(arrow + 2);
    if (rhs.contains("->") || rhs.contains(','))
      return fail("the output term '" + rhs + "' is not one term");
    auto term = parseTerm(rhs);
    if (!term)
      return term.takeError();
    output = *term;
  }
  llvm::SmallVector<llvm::StringRef, 4> pieces;
  lhs.split(pieces, ',');
  for (llvm::StringRef piece : pieces) {
    auto term = parseTerm(piece);
    if (!term)
      return term.takeError();
    terms.push_back(*term);
  }
  return llvm::Error::success();
}

/// Each label's size: equal wherever it appears, or 1 (broadcast).
llvm::Error EinsumImport::bindSizes(const std::vector<Labeled> &operands) {
  for (size_t i = 0; i < operands.size(); ++i)
    for (size_t d = 0; d < operands[i].labels.size(); ++d) {
      Label label = operands[i].labels[d];
      int64_t dim = operands[i].dims()[d];
      auto [it, added] = sizes.emplace(label, dim);
      if (added || it->second == dim || dim == 1)
        continue;
      if (it->second != 1)
        return fail(labelName(label) + " is " + llvm::Twine(it->second) +
                    " in one place and " + llvm::Twine(dim) +
                    " in operand " + llvm::Twine(i));
      it->second = dim;
    }
  // A repeated letter takes a diagonal: both of its dims must be its size.
  for (size_t i = 0; i < operands.size(); ++i) {
    const Labeled &operand = operands[i];
    for (size_t p = 0; p < operand.labels.size(); ++p)
      for (size_t q = p + 1; q < operand.labels.size(); ++q)
        if (operand.labels[p] == operand.labels[q] &&
            operand.dims()[p] != operand.dims()[q])
          return fail(labelName(operand.labels[p]) + " repeats in operand " +
                      llvm::Twine(i) + " with sizes " +
                      llvm::Twine(operand.dims()[p]) + " and " +
                      llvm::Twine(operand.dims()[q]));
  }
  return llvm::Error::success();
}

llvm::Expected<Labeled> EinsumImport::reshape(Labeled operand,
                                              llvm::ArrayRef<int64_t> dims,
                                              std::vector<Label> labels) {
  operand.labels = std::move(labels);
  if (operand.dims() == dims)
    return operand;
  auto value = emit("Reshape", {operand.value},
                    {{"shape", Attribute::getInts(dims)}}, "reshape");
  if (!value)
    return value.takeError();
  operand.value = *value;
  return operand;
}

llvm::Expected<Labeled> EinsumImport::arrange(Labeled operand,
                                              const std::vector<Label> &order) {
  if (operand.labels == order)
    return operand;
  llvm::SmallVector<int64_t, 4> perm;
  for (Label label : order)
    perm.push_back(llvm::find(operand.labels, label) - operand.labels.begin());
  auto value = emit("Transpose", {operand.value},
                    {{"perm", Attribute::getInts(perm)}}, "transpose");
  if (!value)
    return value.takeError();
  return Labeled{*value, order};
}

/// The diagonal of dims p < q (one label, equal sizes): both moved last,
/// flattened to d * d, every (d + 1)-th element kept.
llvm::Expected<Labeled> EinsumImport::diagonal(Labeled operand, size_t p,
                                               size_t q) {
  Label label = operand.labels[p];
  int64_t d = operand.dims()[p];
  // Give the two dims distinct stand-in labels while they move.
  std::vector<Label> order, kept;
  llvm::SmallVector<int64_t, 4> flat;
  for (size_t i = 0; i < operand.labels.size(); ++i)
    if (i != p && i != q) {
      order.push_back(int(i));
      kept.push_back(operand.labels[i]);
      flat.push_back(operand.dims()[i]);
    }
  order.push_back(int(p));
  order.push_back(int(q));
  Labeled positions{operand.value, {}};
  for (size_t i = 0; i < operand.labels.size(); ++i)
    positions.labels.push_back(int(i));
  auto moved = arrange(positions, order);
  if (!moved)
    return moved.takeError();
  flat.push_back(d * d);
  kept.push_back(label);
  auto flattened = reshape(*moved, flat, kept);
  if (!flattened)
    return flattened.takeError();
  int64_t last = int64_t(flat.size()) - 1;
  auto value = emit("Slice", {flattened->value},
                    {{"starts", Attribute::getInts({0})},
                     {"ends", Attribute::getInts({d * d})},
                     {"axes", Attribute::getInts({last})},
                     {"steps", Attribute::getInts({d + 1})}},
                    "diagonal");
  if (!value)
    return value.takeError();
  return Labeled{*value, kept};
}

/// Sums the dims whose labels `needed` lacks.
llvm::Expected<Labeled> EinsumImport::sumOut(Labeled operand,
                                             const std::set<Label> &needed) {
  llvm::SmallVector<int64_t, 4> axes;
  std::vector<Label> kept;
  for (size_t i = 0; i < operand.labels.size(); ++i)
    if (needed.count(operand.labels[i]))
      kept.push_back(operand.labels[i]);
    else
      axes.push_back(int64_t(i));
  if (axes.empty())
    return operand;
  auto value = emit("ReduceSum", {operand.value},
                    {{"axes", Attribute::getInts(axes)},
                     {"keepdims", Attribute::getInt(0)}},
                    "sum");
  if (!value)
    return value.takeError();
  return Labeled{*value, kept};
}

/// Diagonals, broadcast dims of 1 dropped, and what nothing else needs
/// summed.
llvm::Expected<Labeled> EinsumImport::prepare(Labeled operand,
                                              const std::set<Label> &needed) {
  for (bool repeated = true; repeated;) {
    repeated = false;
    for (size_t p = 0; p < operand.labels.size() && !repeated; ++p)
      for (size_t q = p + 1; q < operand.labels.size() && !repeated; ++q)
        if (operand.labels[p] == operand.labels[q]) {
          auto taken = diagonal(operand, p, q);
          if (!taken)
            return taken.takeError();
          operand = *taken;
          repeated = true;
        }
  }
  std::vector<Label> labels;
  llvm::SmallVector<int64_t, 4> dims;
  for (size_t i = 0; i < operand.labels.size(); ++i)
    if (operand.dims()[i] == sizes[operand.labels[i]]) {
      labels.push_back(operand.labels[i]);
      dims.push_back(operand.dims()[i]);
    }
  auto squeezed = reshape(operand, dims, labels);
  if (!squeezed)
    return squeezed.takeError();
  return sumOut(*squeezed, needed);
}

llvm::Expected<Labeled> EinsumImport::contract(Labeled a, Labeled b,
                                               const std::set<Label> &needed) {
  std::vector<Label> batch, summed, aOwn, bOwn;
  for (Label label : a.labels)
    (b.has(label) ? (needed.count(label) ? batch : summed) : aOwn)
        .push_back(label);
  for (Label label : b.labels)
    if (!a.has(label))
      bOwn.push_back(label);
  auto sizesOf = [&](const std::vector<Label> &labels) {
    llvm::SmallVector<int64_t, 4> dims;
    for (Label label : labels)
      dims.push_back(sizes[label]);
    return dims;
  };
  auto product = [&](const std::vector<Label> &labels) {
    int64_t count = 1;
    for (Label label : labels)
      count *= sizes[label];
    return count;
  };
  auto concat = [](std::vector<Label> x, const std::vector<Label> &y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  std::vector<Label> result = concat(concat(batch, aOwn), bOwn);
  llvm::SmallVector<int64_t, 4> resultDims = sizesOf(result);

  auto left = arrange(a, concat(concat(batch, aOwn), summed));
  if (!left)
    return left.takeError();
  auto right = arrange(b, concat(concat(batch, summed), bOwn));
  if (!right)
    return right.takeError();
  if (summed.empty()) {
    // An outer or elementwise product: unit dims where the other side's
    // own labels go, then a broadcast Mul.
    llvm::SmallVector<int64_t, 4> leftDims = sizesOf(concat(batch, aOwn)),
                                  rightDims = sizesOf(batch);
    leftDims.append(bOwn.size(), 1);
    rightDims.append(aOwn.size(), 1);
    llvm::SmallVector<int64_t, 4> bDims = sizesOf(bOwn);
    rightDims.append(bDims.begin(), bDims.end());
    auto x = reshape(*left, leftDims, {});
    if (!x)
      return x.takeError();
    auto y = reshape(*right, rightDims, {});
    if (!y)
      return y.takeError();
    auto value = emit("Mul", {x->value, y->value}, {}, "mul");
    if (!value)
      return value.takeError();
    return Labeled{*value, result};
  }
  // [batch, M, K] x [batch, K, N], the batch flattened to one dim.
  int64_t m = product(aOwn), k = product(summed), n = product(bOwn);
  llvm::SmallVector<int64_t, 4> leftDims, rightDims;
  if (!batch.empty()) {
    leftDims.push_back(product(batch));
    rightDims.push_back(product(batch));
  }
  leftDims.append({m, k});
  rightDims.append({k, n});
  auto x = reshape(*left, leftDims, {});
  if (!x)
    return x.takeError();
  auto y = reshape(*right, rightDims, {});
  if (!y)
    return y.takeError();
  auto value = emit("MatMul", {x->value, y->value}, {}, "matmul");
  if (!value)
    return value.takeError();
  Labeled multiplied{*value, {}};
  return reshape(multiplied, resultDims, result);
}

llvm::Error EinsumImport::run() {
  std::vector<Term> terms;
  Term outputTerm;
  bool explicitOut = false;
  if (llvm::Error error = parse(terms, outputTerm, explicitOut))
    return error;
  auto inputs = getInputs(importer, node);
  if (!inputs)
    return inputs.takeError();
  if (terms.size() != inputs->size())
    return fail("it names " + llvm::Twine(terms.size()) +
                " operands, the node has " + llvm::Twine(inputs->size()) +
                " inputs");
  // Each term's labels; the broadcast dims right-aligned across operands.
  int64_t widest = 0;
  std::vector<int64_t> unnamed(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    if (!(*inputs)[i])
      return fail("operand " + llvm::Twine(i) + " is absent");
    int64_t rank = (*inputs)[i]->getType().getRank();
    int64_t named = int64_t(terms[i].before.size() + terms[i].after.size());
    if (terms[i].ellipsis ? rank < named : rank != named)
      return fail("operand " + llvm::Twine(i) + " " +
                  (*inputs)[i]->getType().str() + " does not have the " +
                  llvm::Twine(named) + (terms[i].ellipsis ? " or more" : "") +
                  " dims its term names");
    unnamed[i] = rank - named;
    widest = std::max(widest, unnamed[i]);
  }
  std::vector<Labeled> operands;
  std::map<Label, int> letterCount;
  for (size_t i = 0; i < terms.size(); ++i) {
    Labeled operand{(*inputs)[i], {}};
    for (char c : terms[i].before)
      operand.labels.push_back(Label(c));
    for (int64_t p = widest - unnamed[i]; p < widest; ++p)
      operand.labels.push_back(kBroadcast + int(p));
    for (char c : terms[i].after)
      operand.labels.push_back(Label(c));
    for (char c : terms[i].before + terms[i].after)
      ++letterCount[Label(c)];
    operands.push_back(std::move(operand));
  }
  if (llvm::Error error = bindSizes(operands))
    return error;

  std::vector<Label> output;
  if (explicitOut) {
    if (widest > 0 && !outputTerm.ellipsis)
      return fail("the operands have broadcast dims ('...') the output "
                  "does not name");
    for (char c : outputTerm.before)
      output.push_back(Label(c));
    if (outputTerm.ellipsis)
      for (int64_t p = 0; p < widest; ++p)
        output.push_back(kBroadcast + int(p));
    for (char c : outputTerm.after)
      output.push_back(Label(c));
    std::set<Label> seen;
    for (Label label : output) {
      if (!seen.insert(label).second)
        return fail("the output names " + labelName(label) + " twice");
      if (label < kBroadcast && !letterCount.count(label))
        return fail("the output's " + labelName(label) +
                    " is in no operand");
    }
  } else {
    for (int64_t p = 0; p < widest; ++p)
      output.push_back(kBroadcast + int(p));
    for (auto [label, count] : letterCount) // std::map: character order
      if (count == 1)
        output.push_back(label);
  }

  // What each step still needs: the output's labels and those of the
  // operands not yet contracted.
  auto neededAfter = [&](size_t i, const Labeled *also) {
    std::set<Label> needed(output.begin(), output.end());
    for (size_t j = i + 1; j < operands.size(); ++j)
      needed.insert(operands[j].labels.begin(), operands[j].labels.end());
    if (also)
      needed.insert(also->labels.begin(), also->labels.end());
    return needed;
  };
  auto result = prepare(operands[0], neededAfter(0, nullptr));
  if (!result)
    return result.takeError();
  for (size_t i = 1; i < operands.size(); ++i) {
    auto next = prepare(operands[i], neededAfter(i, &*result));
    if (!next)
      return next.takeError();
    result = contract(*result, *next, neededAfter(i, nullptr));
    if (!result)
      return result.takeError();
  }
  result = sumOut(*result, std::set<Label>(output.begin(), output.end()));
  if (!result)
    return result.takeError();
  result = arrange(*result, output);
  if (!result)
    return result.takeError();
  if (result->value == operands[0].value) // nothing to compute: "ij->ij"
    return importer.emitAndBind(node, "Identity", {result->value}, {});
  importer.bindOutputs(node, {result->value});
  return llvm::Error::success();
}

} // namespace

llvm::Error importEinsum(Importer &importer, onnx::NodeProto &node) {
  if (!findAttr(node, "equation"))
    return importer.error(node, "attribute equation is required");
  return EinsumImport(importer, node, attrString(node, "equation", ""))
      .run();
}

} // namespace onnx_import
} // namespace snug
