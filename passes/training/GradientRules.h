//===- GradientRules.h - Vector-Jacobian products per op --------*- C++ -*-===//
//
// Reverse-mode automatic differentiation (Griewank & Walther, "Evaluating
// Derivatives", 2nd ed., ch. 3) needs, per op, its vector-Jacobian product:
// given the gradient of the loss with respect to each result of a node
// (the adjoints ybar), the gradient with respect to each operand (xbar =
// ybar . dy/dx). A gradient rule builds that product out of IR nodes of
// existing ops, appended to the module, so the backward pass is ordinary
// IR: planned, fused, emitted and run like any forward graph.
//
// Which ops have a rule is declared in the op table (core/Ops.def's GRAD
// lines); the rules are registered by op code in GradientRules*.cpp, one
// file per family, and OpCoverageTest checks the two agree. A rule reads the
// forward node's operands and results (the values the backward pass saves),
// never their data.
//
// Broadcasting: an operand that was broadcast in the forward node receives
// the result's gradient summed over the broadcast dims (reduceTo), so every
// operand gradient has exactly its operand's type.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_TRAINING_GRADIENTRULES_H
#define SNUG_PASSES_TRAINING_GRADIENTRULES_H

#include "ir/Module.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Optional.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"

#include <string>

namespace snug {

/// Appends typed nodes to a module: what gradient rules, the autodiff pass,
/// the loss and optimizer passes build their nodes with.
class GraphBuilder {
public:
  /// New constants are weights named `constantPrefix` + a number, the
  /// next one no value of the module has (a model may name its own
  /// initializers so).
  GraphBuilder(ir::Module &module, llvm::StringRef constantPrefix);

  ir::Module &getModule() const { return module; }

  /// Appends `op` on `operands` with its result types from the op's shape
  /// function; a failure names `subject` (the forward node a rule works
  /// for) when set. Returns the node's first result.
  llvm::Expected<ir::Value *> emit(ir::OpCode op,
                                   llvm::ArrayRef<ir::Value *> operands,
                                   ir::AttributeMap attributes = {});
  /// As emit, all results.
  llvm::Expected<ir::Node *> emitNode(ir::OpCode op,
                                      llvm::ArrayRef<ir::Value *> operands,
                                      ir::AttributeMap attributes = {},
                                      unsigned numResults = 1);
  /// A weight of type `dtype`[] holding `value` (f64, f32, f16, bf16 or an
  /// integer type; rounded to it).
  ir::Value *scalar(double value, ir::DType dtype);
  /// A weight of `type` holding `values` (converted to its dtype).
  ir::Value *constant(const ir::TensorType &type,
                      llvm::ArrayRef<double> values);
  /// `gradient` summed over the dims numpy broadcasting added or stretched
  /// to reach it from `type`, then reshaped to `type`: the gradient of a
  /// broadcast operand. `gradient` itself when the dims already agree.
  llvm::Expected<ir::Value *> reduceTo(ir::Value *gradient,
                                       const ir::TensorType &type);
  /// `value` reshaped to `dims`; `value` itself when it has them.
  llvm::Expected<ir::Value *> reshape(ir::Value *value,
                                      llvm::ArrayRef<int64_t> dims);
  /// x - mean and sqrt(var + epsilon), the mean and (biased) variance of
  /// `x` over `axes`, those kept as dims of 1: what the normalizations and
  /// their gradients share.
  struct Moments {
    ir::Value *centered, *deviation;
    /// The mean and the biased variance themselves.
    ir::Value *mean, *variance;
  };
  llvm::Expected<Moments> moments(ir::Value *x, llvm::ArrayRef<int64_t> axes,
                                  float epsilon);
  /// A tensor of `type` filled with `value`: a scalar weight expanded, so
  /// no weight of the full size is stored.
  llvm::Expected<ir::Value *> fill(double value, const ir::TensorType &type);

  /// The node errors are reported against (a rule's forward node).
  void setSubject(const ir::Node *node) { subject = node; }
  /// New nodes go before schedule position `index` (and on after each
  /// other) instead of at the end: what a rewrite in place builds with.
  void setInsertionPoint(size_t index) { insertAt = index; }

private:
  ir::Module &module;
  std::string constantPrefix;
  unsigned constantCount = 0;
  /// The module's value names, gathered at the first constant.
  llvm::Optional<llvm::StringSet<>> takenNames;
  const ir::Node *subject = nullptr;
  llvm::Optional<size_t> insertAt;
};

/// What a gradient rule sees and fills in.
struct GradientQuery {
  /// The forward node.
  const ir::Node &node;
  /// The loss's gradient with respect to each result; nullptr for a result
  /// no gradient reaches.
  llvm::ArrayRef<ir::Value *> resultGradients;
  /// Per operand: whether its gradient is needed (it depends on a value
  /// differentiated for). A rule builds only those.
  llvm::ArrayRef<bool> wanted;
  /// Per operand, set by the rule: the loss's gradient with respect to it
  /// (its operand's type), nullptr when not wanted.
  llvm::MutableArrayRef<ir::Value *> operandGradients;
};

/// Builds the vector-Jacobian product of one node. Errors are reasons
/// without the subject (an attribute it cannot differentiate, a 1-d
/// MatMul operand); the autodiff pass names the node.
using GradientRule = llvm::Error (*)(GraphBuilder &builder,
                                     const GradientQuery &query);

struct GradientRuleEntry {
  ir::OpCode op;
  GradientRule rule;
};

/// The registered rules, per file: each op at most once across all.
llvm::ArrayRef<GradientRuleEntry> getElementwiseGradientRules();
llvm::ArrayRef<GradientRuleEntry> getLinalgGradientRules();
llvm::ArrayRef<GradientRuleEntry> getDataMovementGradientRules();
llvm::ArrayRef<GradientRuleEntry> getConvGradientRules();
/// All of the above, the one list findGradientRule and the coverage test
/// read.
llvm::ArrayRef<llvm::ArrayRef<GradientRuleEntry>> getGradientRuleTables();

/// The rule of `op`; nullptr when none is registered.
GradientRule findGradientRule(ir::OpCode op);

/// An error whose message is `message` (a rule's reason).
llvm::Error gradientError(const llvm::Twine &message);

/// Sets operand `index`'s gradient in `q` to `gradient`, or passes its
/// error on.
llvm::Error setGradient(const GradientQuery &q, unsigned index,
                        llvm::Expected<ir::Value *> gradient);

} // namespace snug

#endif // SNUG_PASSES_TRAINING_GRADIENTRULES_H
