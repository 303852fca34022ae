//===- FusedKernel.cpp - snug.fused: a body of elementwise ops per element ===//
//
// Runs an op body (ir/Module.h's Region, read from the bundle as a PlanBody)
// element by element: for each result index, every block argument's element
// is read at its broadcast offset (numpy rules, as the elementwise kernels
// broadcast), the body ops run in order through their scalar definitions in
// core/ScalarOps.h (the same text the single-op kernels, constant folding
// and the CUDA kernels use), and each yielded value is stored at the index.
//
// Every body value lives in an 8-byte slot holding the element as its dtype
// stores it, so each intermediate is rounded to its type (f16 to nearest
// even, integers wrapped) exactly as the unfused nodes round it in memory:
// a fused region gives the bits its nodes give one by one. Each op picks its
// compute type from its operands' dtypes (scalar::computeKind), as the
// single-op kernel does; a conversion (Cast, snug.cast) from its operand's
// and its result's (scalar::Cast::kind), as the Cast kernel does.
//
// In place is safe: an index reads all its operand elements before it
// writes any result element. The reader checked the body (indices defined
// before use, argument and yield types, every value broadcasting to the
// result shape), so no access leaves the operands' and results' bytes.
//
//===----------------------------------------------------------------------===//
#include "runtime/host/kernels/FusedKernel.h"

#include "core/OpRuleTable.h"
#include "core/ScalarOpTable.h"

#include <algorithm>
#include <cstring>
#include <cassert>
#include <optional>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

/// One body value's element, as its dtype stores it (at most 8 bytes).
struct Slot {
  alignas(8) uint8_t bytes[8];
};

struct Step;
using StepFn = void (*)(const Step &, Slot *values);

/// A body op bound to its compute type and parameters.
struct Step {
  StepFn apply = nullptr;
  scalar::Params params = {};
  std::vector<uint32_t> operands; // value indices; kNoValue: absent
  std::vector<uint8_t> operandTypes;
  uint32_t result = 0;
  uint8_t resultType = 0;
};

/// scalar::bindParams's view of a body op's attributes.
struct BodyAttrReader {
  const BodyOp &op;
  const Attr *find(const char *name) const { return op.getAttr(name); }
  float getFloat(const char *name, float fallback) const {
    const Attr *attr = find(name);
    if (!attr)
      return fallback;
    if (attr->kind == AttrFloat)
      return attr->f;
    return attr->kind == AttrInt ? float(attr->i) : fallback;
  }
  int64_t getInt(const char *name, int64_t fallback) const {
    const Attr *attr = find(name);
    if (!attr)
      return fallback;
    if (attr->kind == AttrInt)
      return attr->i;
    return attr->kind == AttrFloat ? int64_t(attr->f) : fallback;
  }
  bool stringIs(const char *name, const char *value) const {
    const Attr *attr = find(name);
    return attr && attr->kind == AttrString && attr->s == value;
  }
};

template <class Op, class C> void applyIn(const Step &step, Slot *values) {
  size_t count = step.operands.size();
  auto operand = [&](size_t k) -> C {
    if (k >= count || step.operands[k] == kNoValue)
      return Op::template absent<C>(int(k), step.params);
    return loadAs<C>(values[step.operands[k]].bytes, step.operandTypes[k], 0);
  };
  uint8_t *out = values[step.result].bytes;
  if constexpr (Op::kFold) {
    C acc = operand(0);
    for (size_t k = 1; k < count; ++k)
      acc = Op::apply(acc, operand(k), step.params);
    storeAs<C>(out, step.resultType, 0, Op::finish(acc, int(count)));
  } else if constexpr (Op::kArity == 1) {
    storeAs<C>(out, step.resultType, 0, Op::apply(operand(0), step.params));
  } else if constexpr (Op::kArity == 2) {
    auto r = Op::apply(operand(0), operand(1), step.params);
    storeAs<decltype(r)>(out, step.resultType, 0, r);
  } else {
    storeAs<C>(out, step.resultType, 0,
               Op::apply(operand(0), operand(1), operand(2), step.params));
  }
}

/// Where: the chosen operand's stored bytes, unconverted.
template <class Op> void applySelect(const Step &step, Slot *values) {
  bool condition =
      loadAs<bool>(values[step.operands[0]].bytes, step.operandTypes[0], 0);
  const uint8_t *chosen =
      Op::apply(condition, (const uint8_t *)values[step.operands[1]].bytes,
                (const uint8_t *)values[step.operands[2]].bytes, step.params);
  std::memmove(values[step.result].bytes, chosen, sizeof(Slot));
}

/// A conversion (Cast, snug.cast): scalar::Cast's load, apply and store,
/// as the standalone Cast kernel runs them.
template <class C> void applyCast(const Step &step, Slot *values) {
  C value = loadAs<C>(values[step.operands[0]].bytes, step.operandTypes[0], 0);
  storeAs<C>(values[step.result].bytes, step.resultType, 0,
             scalar::Cast::apply(value));
}

/// Binds `op` (operands' dtypes known) to a Step, or says why not.
using Binder = std::string (*)(const BodyOp &op, const PlanBody &body,
                               Step &step);

template <class Op, unsigned Position>
std::string bind(const BodyOp &op, const PlanBody &body, Step &step) {
  if (op.results.size() != 1)
    return "expects one result";
  step.operands = op.operands;
  step.resultType = op.results[0].dtype;
  std::vector<scalar::ElementClass> classes;
  for (uint32_t index : op.operands) {
    step.operandTypes.push_back(index == kNoValue ? 0
                                                  : body.values[index].dtype);
    if (index != kNoValue)
      classes.push_back(elementClassOf(body.values[index].dtype));
  }
  if constexpr (Op::kSelect) {
    if (op.operands.size() != 3 ||
        std::find(op.operands.begin(), op.operands.end(), kNoValue) !=
            op.operands.end())
      return "expects three operands";
    if (step.operandTypes[1] != step.resultType ||
        step.operandTypes[2] != step.resultType)
      return "has value operands of another dtype than its result";
    step.apply = applySelect<Op>;
    return "";
  } else {
    size_t required = Op::kFold || Op::kArity == 3 ? 1 : size_t(Op::kArity);
    if (op.operands.size() < required ||
        (!Op::kFold && op.operands.size() > size_t(Op::kArity)))
      return "takes " + std::to_string(required) +
             (Op::kFold ? " or more" : " to " + std::to_string(Op::kArity)) +
             " operands, not " + std::to_string(op.operands.size());
    for (size_t k = 0; k < op.operands.size(); ++k)
      if (op.operands[k] == kNoValue && (Op::kFold || k < required))
        return "operand " + std::to_string(k) + " is absent";
    step.params = scalar::bindParams<Op, Position>(BodyAttrReader{op});
    switch (scalar::computeKind<Op>(classes.data(), int(classes.size()))) {
    case scalar::ComputeKind::Float:
      step.apply = applyIn<Op, float>;
      return "";
    case scalar::ComputeKind::Double:
      step.apply = applyIn<Op, double>;
      return "";
    case scalar::ComputeKind::Int64:
      if constexpr (Op::kIntegerMath) {
        step.apply = applyIn<Op, int64_t>;
        return "";
      }
      break;
    case scalar::ComputeKind::UInt64:
      if constexpr (Op::kIntegerMath) {
        step.apply = applyIn<Op, uint64_t>;
        return "";
      }
      break;
    }
    return "has no compute type for these operands";
  }
}

/// A conversion's Step: its compute type from both dtypes (scalar::Cast).
std::string bindCast(const BodyOp &op, const PlanBody &body, Step &step) {
  if (op.results.size() != 1 || op.operands.size() != 1 ||
      op.operands[0] == kNoValue)
    return "expects one operand and one result";
  step.operands = op.operands;
  step.operandTypes = {body.values[op.operands[0]].dtype};
  step.resultType = op.results[0].dtype;
  bool viaDouble = scalar::Cast::kind(elementClassOf(step.operandTypes[0]),
                                      elementClassOf(step.resultType)) ==
                   scalar::ComputeKind::Double;
  step.apply = viaDouble ? applyCast<double> : applyCast<int64_t>;
  return "";
}

/// Collects a Binder per scalar op and per conversion of the table, by op
/// name.
/// The binder of each op a body may hold, by OpCode (nullptr elsewhere).
using BinderTable = OpRuleTable<Binder>;

struct BinderCollector {
  BinderTable table;
  template <class Op, unsigned Position>
  void visit(const char *name, const char *) {
    table.set(OpCode(Position), bind<Op, Position>);
  }
  void visitConversion(const char *name) {
    table.set(*findOpCode(name), bindCast);
  }
};

const BinderTable &getBinders() {
  static const BinderTable binders = [] {
    BinderCollector collector;
    scalar::forEachScalarOp(collector);
    scalar::forEachConversionOp(collector);
    assert(collector.table.hasNoOpTwice() && "an op has two binders");
    return collector.table;
  }();
  return binders;
}

/// The steps of `op`'s body, or an error naming the body op that has no
/// scalar definition or takes other operands.
Status bindBody(const PlanOp &op, size_t index, std::vector<Step> &steps) {
  const PlanBody &body = op.body;
  uint32_t next = uint32_t(body.arguments.size());
  for (size_t i = 0; i < body.ops.size(); ++i) {
    const BodyOp &inner = body.ops[i];
    auto failure = [&](const std::string &why) {
      return Status(SNUG_ERROR_UNSUPPORTED,
                    op.describe(index) + ": body op " + std::to_string(i) +
                        " (" + inner.opName + ") " + why);
    };
    std::optional<OpCode> code = findOpCode(inner.opName);
    Binder binder = code ? getBinders().get(*code) : nullptr;
    if (!binder)
      return failure("is not an elementwise op or conversion of the host");
    Step step;
    std::string why = binder(inner, body, step);
    if (!why.empty())
      return failure(why);
    step.result = next;
    next += uint32_t(inner.results.size());
    steps.push_back(std::move(step));
  }
  return Status::ok();
}

/// Runs `ctx`'s op body per element of its results, block argument k
/// reading `in[k]`.
Status runBody(const KernelContext &ctx, const std::vector<TensorView> &in) {
  const PlanOp &op = ctx.op;
  if (!op.hasBody)
    return ctx.error("has no body");
  std::vector<Step> steps;
  if (Status s = bindBody(op, ctx.index, steps))
    return s;
  const PlanBody &body = op.body;
  std::vector<const std::vector<int64_t> *> dims;
  for (const TensorView &input : in)
    dims.push_back(input.dims);
  Broadcast broadcast(*ctx.out(0).dims, dims);
  if (!broadcast.isValid())
    return ctx.error("operands do not broadcast to the result");
  std::vector<Slot> values(body.values.size());
  const std::vector<TensorView> &out = ctx.outputs;
  broadcast.forEach([&](int64_t index, const int64_t *offsets) {
    for (size_t k = 0; k < in.size(); ++k) {
      unsigned size = in[k].elementSize();
      std::memcpy(values[k].bytes, in[k].data + offsets[k] * size, size);
    }
    for (const Step &step : steps)
      step.apply(step, values.data());
    for (size_t k = 0; k < out.size(); ++k) {
      unsigned size = out[k].elementSize();
      std::memcpy(out[k].data + index * size, values[body.yield[k]].bytes,
                  size);
    }
  });
  return Status::ok();
}

Status fusedKernel(KernelContext &ctx) { return runBody(ctx, ctx.inputs); }

} // namespace

Status applyEpilogue(KernelContext &ctx) {
  std::vector<TensorView> in{ctx.out(0)};
  in.insert(in.end(), ctx.epilogueInputs.begin(), ctx.epilogueInputs.end());
  return runBody(ctx, in);
}

Status checkFusedBody(const PlanOp &op, size_t index) {
  std::vector<Step> steps;
  return bindBody(op, index, steps);
}

void registerFusedKernels(KernelTable &table) {
  table.set(OpCode::SnugFused, fusedKernel);
}

} // namespace rt
} // namespace snug
