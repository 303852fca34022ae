//===- ElementwiseKernels.cpp - Every elementwise op, from the op table ---===//
//
// One generic kernel runs every elementwise op of core/Ops.def through its
// scalar definition in core/ScalarOps.h; registration walks the table
// (core/ScalarOpTable.h), so there is no list of ops here and no formula:
// adding an elementwise op touches Ops.def and ScalarOps.h only.
//
// Per node: the op's attributes bound into scalar::Params once (by its ATTR
// lines in Ops.def); the compute
// type picked by scalar::computeKind from the operand dtypes (float for
// f32/f16/bf16, double for f64 or mixed, int64 for integer math, uint64
// when a u64 takes part); then for
// each result element (operands broadcast to the result, numpy rules) the
// operands loaded and converted, the op applied (a variadic fold left to
// right), and the value stored converted to the result dtype. Where moves
// the chosen element's bytes as they are. A result may alias an operand of
// its own size: each element's operands are read before it is written.
//
//===----------------------------------------------------------------------===//
#include "runtime/host/Kernels.h"

#include "core/ScalarOpTable.h"

#include <cstring>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

/// scalar::bindParams's view of a node's attributes.
struct AttrReader {
  const KernelContext &ctx;
  float getFloat(const char *name, float fallback) const {
    return ctx.getFloat(name, fallback);
  }
  int64_t getInt(const char *name, int64_t fallback) const {
    return ctx.getInt(name, fallback);
  }
  bool stringIs(const char *name, const char *value) const {
    return ctx.getString(name, "") == value;
  }
};

/// An operand is absent when the plan has none there or it is empty (an
/// optional input given as "").
bool isPresent(const KernelContext &ctx, size_t k) {
  return ctx.hasInput(k) && ctx.in(k).numElements > 0;
}

/// The loop of a (non-Where) elementwise op computing in C.
template <class Op, class C>
Status runIn(KernelContext &ctx, const scalar::Params &params) {
  const TensorView &y = ctx.out(0);
  size_t count = ctx.numInputs();
  // Present operands are walked by the broadcast; absent ones (Clip's
  // optional bounds) are the op's constant.
  std::vector<const std::vector<int64_t> *> dims;
  std::vector<int> slot(count, -1);
  C constant[3] = {C(0), C(0), C(0)};
  for (size_t k = 0; k < 3; ++k)
    if (k >= count || !isPresent(ctx, k))
      constant[k] = Op::template absent<C>(int(k), params);
  for (size_t k = 0; k < count; ++k) {
    if (isPresent(ctx, k)) {
      slot[k] = int(dims.size());
      dims.push_back(ctx.in(k).dims);
    }
  }
  Broadcast broadcast(*y.dims, dims);
  if (!broadcast.isValid())
    return ctx.error("operands do not broadcast to the result");
  const std::vector<TensorView> &in = ctx.inputs;
  broadcast.forEach([&](int64_t index, const int64_t *offsets) {
    auto operand = [&](size_t k) -> C {
      if (slot[k] < 0)
        return constant[k];
      return loadAs<C>(in[k].data, in[k].dtype, offsets[slot[k]]);
    };
    if constexpr (Op::kFold) {
      C acc = operand(0);
      for (size_t k = 1; k < count; ++k)
        acc = Op::apply(acc, operand(k), params);
      storeAs<C>(y.data, y.dtype, index, Op::finish(acc, int(count)));
    } else if constexpr (Op::kArity == 1) {
      storeAs<C>(y.data, y.dtype, index, Op::apply(operand(0), params));
    } else if constexpr (Op::kArity == 2) {
      auto r = Op::apply(operand(0), operand(1), params);
      storeAs<decltype(r)>(y.data, y.dtype, index, r);
    } else {
      C x = operand(0), lo = count > 1 ? operand(1) : constant[1],
        hi = count > 2 ? operand(2) : constant[2];
      storeAs<C>(y.data, y.dtype, index, Op::apply(x, lo, hi, params));
    }
  });
  return Status::ok();
}

/// Where(cond, a, b): the chosen element's bytes, unconverted.
template <class Op> Status runSelect(KernelContext &ctx) {
  if (Status s = ctx.expect(3, 1))
    return s;
  const TensorView &c = ctx.in(0), &a = ctx.in(1), &b = ctx.in(2),
                   &y = ctx.out(0);
  if (a.dtype != y.dtype || b.dtype != y.dtype)
    return ctx.error("value operands and result differ in dtype");
  Broadcast broadcast(*y.dims, {c.dims, a.dims, b.dims});
  if (!broadcast.isValid())
    return ctx.error("operands do not broadcast to the result");
  unsigned size = y.elementSize();
  scalar::Params params = {{0, 0}, 0};
  broadcast.forEach([&](int64_t index, const int64_t *offsets) {
    const uint8_t *chosen =
        Op::apply(loadAs<bool>(c.data, c.dtype, offsets[0]),
                  a.data + offsets[1] * size, b.data + offsets[2] * size,
                  params);
    std::memmove(y.data + index * size, chosen, size);
  });
  return Status::ok();
}

template <class Op, unsigned Position>
Status runScalarOp(KernelContext &ctx) {
  if constexpr (Op::kSelect) {
    return runSelect<Op>(ctx);
  } else {
    size_t required = Op::kFold || Op::kArity == 3 ? 1 : size_t(Op::kArity);
    if (Status s = ctx.expect(required, 1))
      return s;
    if (!Op::kFold && ctx.numInputs() > size_t(Op::kArity))
      return ctx.error("expects at most " + std::to_string(Op::kArity) +
                       " operands");
    std::vector<scalar::ElementClass> classes;
    for (size_t k = 0; k < ctx.numInputs(); ++k) {
      if (isPresent(ctx, k))
        classes.push_back(elementClassOf(ctx.in(k).dtype));
      else if (Op::kFold || k < required)
        return ctx.error("operand " + std::to_string(k) + " is absent");
    }
    scalar::Params params =
        scalar::bindParams<Op, Position>(AttrReader{ctx});
    switch (scalar::computeKind<Op>(classes.data(), int(classes.size()))) {
    case scalar::ComputeKind::Float:
      return runIn<Op, float>(ctx, params);
    case scalar::ComputeKind::Double:
      return runIn<Op, double>(ctx, params);
    case scalar::ComputeKind::Int64:
      // Only ops with integer math compute in int64 (computeKind).
      if constexpr (Op::kIntegerMath)
        return runIn<Op, int64_t>(ctx, params);
      break;
    case scalar::ComputeKind::UInt64:
      if constexpr (Op::kIntegerMath)
        return runIn<Op, uint64_t>(ctx, params);
      break;
    }
    return ctx.error("no compute type");
  }
}

struct Registrar {
  KernelTable &table;
  template <class Op, unsigned Position>
  void visit(const char *name, const char *) {
    table.set(OpCode(Position), runScalarOp<Op, Position>);
  }
};

} // namespace

void registerElementwiseKernels(KernelTable &table) {
  Registrar registrar{table};
  scalar::forEachScalarOp(registrar);
}

} // namespace rt
} // namespace snug
