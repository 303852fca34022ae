//===- BundleReaderHostPlan.cpp - Decoding a bundle's host plan -----------===//
//
// The host plan section: every op with its operands and results (as
// locations checked against the arena, the weights or the pinned host
// region), its attributes, and the body of a snug.fused op or an epilogue
// (body values typed, every operand defined before it is read, the yield
// matching the op's results). Only the layout is checked here; what the ops
// mean is the plan verifier's (PlanVerifier.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/BundleReaderInternal.h"
#include "core/CheckedArithmetic.h"
#include "runtime/PlanVerifier.h"

#include <algorithm>
#include <cstring>

namespace snug {
namespace rt {

using namespace bundle;

namespace {

bool readAttr(Cursor &cursor, Attr &attr) {
  uint32_t n;
  if (!cursor.u8(attr.kind))
    return false;
  switch (attr.kind) {
  case AttrInt:
    return cursor.i64(attr.i);
  case AttrFloat:
    return cursor.f32(attr.f);
  case AttrString:
    return cursor.string(attr.s);
  case AttrInts:
    if (!cursor.count(n, 8))
      return false;
    attr.ints.resize(n);
    for (int64_t &v : attr.ints)
      cursor.i64(v);
    return !cursor.failed();
  case AttrFloats:
    if (!cursor.count(n, 4))
      return false;
    attr.floats.resize(n);
    for (float &v : attr.floats)
      cursor.f32(v);
    return !cursor.failed();
  case AttrStrings:
    if (!cursor.count(n, 4))
      return false;
    attr.strings.resize(n);
    for (std::string &v : attr.strings)
      cursor.string(v);
    return !cursor.failed();
  case AttrTensor: {
    uint32_t rank;
    uint64_t size;
    const uint8_t *p = nullptr;
    if (!cursor.u8(attr.tensorDType) || !cursor.count(rank, 8))
      return false;
    if (rank > kMaxRank)
      return cursor.fail("tensor attribute rank too large");
    attr.tensorDims.resize(rank);
    uint64_t elements = 1;
    for (int64_t &dim : attr.tensorDims) {
      if (!cursor.i64(dim))
        return false;
      if (dim < 0 || (dim && elements > (uint64_t(1) << 40) / uint64_t(dim)))
        return cursor.fail("tensor attribute has a bad dim");
      elements *= uint64_t(dim);
    }
    if (!cursor.u64(size) || !cursor.bytes(p, size))
      return false;
    if (!dtypeSize(attr.tensorDType) ||
        size != elements * dtypeSize(attr.tensorDType))
      return cursor.fail("tensor attribute size does not match its type");
    attr.tensorBytes.assign(p, p + size);
    return true;
  }
  default:
    return cursor.fail("unknown attribute kind " + std::to_string(attr.kind));
  }
}

/// A body value's type: u8 dtype, u8 0, u16 0, u32 rank, dims.
bool readBodyType(Cursor &cursor, BodyType &type, const std::string &what) {
  uint8_t reserved8;
  uint16_t reserved16;
  uint32_t rank;
  if (!cursor.u8(type.dtype) || !cursor.u8(reserved8) ||
      !cursor.u16(reserved16) || !cursor.count(rank, 8))
    return false;
  if (!dtypeSize(type.dtype))
    return cursor.fail(what + ": unknown dtype code " +
                       std::to_string(type.dtype));
  if (rank > kMaxRank)
    return cursor.fail(what + ": rank " + std::to_string(rank) +
                       " exceeds " + std::to_string(kMaxRank));
  type.dims.resize(rank);
  for (int64_t &dim : type.dims) {
    if (!cursor.i64(dim))
      return false;
    if (dim < 0)
      return cursor.fail(what + ": negative dim");
  }
  std::optional<uint64_t> bytes = checkedByteSize(
      type.dims.data(), type.dims.size(), dtypeSize(type.dtype));
  if (!bytes || !hasBoundedDims(type.dims))
    return cursor.fail(what + ": dims " + dimsText(type.dims) +
                       " are too large");
  type.numElements = int64_t(*bytes / dtypeSize(type.dtype));
  return true;
}

bool sameType(const BodyType &type, const Location &location) {
  return type.dtype == location.dtype && type.dims == location.dims;
}

/// Reads op `op`'s body and checks that it is closed and typed (what the
/// per-element executors rely on).
bool readBody(Cursor &cursor, PlanOp &op, const std::string &where) {
  PlanBody &body = op.body;
  uint32_t n;
  if (!cursor.count(n, 8))
    return false;
  // An epilogue's argument 0 is the op's own result, the others its extra
  // operands after the op's own (ir/Module.h).
  int arity = op.opName == kFusedOpName ? -1 : getEpilogueArity(op.opName);
  bool epilogue = arity >= 0;
  if (epilogue && (op.operands.size() < size_t(arity) ||
                   op.results.size() != 1))
    return cursor.fail(where + ": an epilogue needs the op's " +
                       std::to_string(arity) + " operands and one result");
  size_t first = epilogue ? size_t(arity) - 1 : 0;
  size_t bound = op.operands.size() - first;
  if (n != bound)
    return cursor.fail(where + ": body has " + std::to_string(n) +
                       " block arguments for " + std::to_string(bound) +
                       (epilogue ? " (the result and the extra operands)"
                                 : " operands"));
  if (epilogue)
    op.numOwnOperands = size_t(arity);
  body.arguments.resize(n);
  for (uint32_t k = 0; k < n; ++k) {
    std::string what = where + " block argument " + std::to_string(k);
    if (!readBodyType(cursor, body.arguments[k], what))
      return false;
    bool own = epilogue && k == 0;
    const Location &source = own ? op.results[0] : op.operands[first + k];
    if (!source.isPresent() || !sameType(body.arguments[k], source))
      return cursor.fail(what + " does not match " +
                         (own ? std::string("result 0")
                              : "operand " + std::to_string(first + k)));
  }
  body.values = body.arguments;
  if (!cursor.count(n, 20))
    return false;
  body.ops.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    BodyOp &inner = body.ops[i];
    std::string what = where + " body op " + std::to_string(i);
    uint32_t m;
    if (!cursor.string(inner.opName) || !cursor.string(inner.nodeName) ||
        !cursor.count(m, 6))
      return false;
    inner.attributes.resize(m);
    for (auto &entry : inner.attributes)
      if (!cursor.string(entry.first) || !readAttr(cursor, entry.second))
        return false;
    if (!cursor.count(m, 4))
      return false;
    inner.operands.resize(m);
    for (uint32_t &index : inner.operands) {
      if (!cursor.u32(index))
        return false;
      if (index != kNoValue && index >= body.values.size())
        return cursor.fail(what + ": operand value " + std::to_string(index) +
                           " is not defined before it (" +
                           std::to_string(body.values.size()) + " are)");
    }
    if (!cursor.count(m, 8))
      return false;
    inner.results.resize(m);
    for (uint32_t k = 0; k < m; ++k) {
      if (!readBodyType(cursor, inner.results[k],
                        what + " result " + std::to_string(k)))
        return false;
      body.values.push_back(inner.results[k]);
    }
  }
  if (!cursor.count(n, 4))
    return false;
  if (n != op.results.size())
    return cursor.fail(where + ": body yields " + std::to_string(n) +
                       " values for " + std::to_string(op.results.size()) +
                       " results");
  body.yield.resize(n);
  for (uint32_t k = 0; k < n; ++k) {
    if (!cursor.u32(body.yield[k]))
      return false;
    uint32_t index = body.yield[k];
    if (index >= body.values.size() ||
        !sameType(body.values[index], op.results[k]))
      return cursor.fail(where + ": yield value " + std::to_string(k) +
                         " is undefined or does not match result " +
                         std::to_string(k));
  }
  if (op.results.empty())
    return cursor.fail(where + ": a body needs at least one result");
  for (const Location &result : op.results)
    if (result.dims != op.results[0].dims)
      return cursor.fail(where + ": results of a body differ in shape");
  for (const BodyType &type : body.values)
    if (!broadcastsTo(type.dims, op.results[0].dims))
      return cursor.fail(where + ": a body value does not broadcast to the "
                                 "result shape");
  return true;
}

} // namespace

bool readHostPlan(Cursor &cursor, Bundle &b) {
  uint32_t count;
  if (!cursor.count(count, 20))
    return false;
  b.ops.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    PlanOp &op = b.ops[i];
    uint32_t n;
    if (!cursor.string(op.opName) || !cursor.string(op.nodeName) ||
        !cursor.count(n, 6))
      return false;
    op.attributes.resize(n);
    for (auto &entry : op.attributes)
      if (!cursor.string(entry.first) || !readAttr(cursor, entry.second))
        return false;
    for (auto *list : {&op.operands, &op.results}) {
      if (!cursor.count(n, 16))
        return false;
      list->resize(n);
      for (uint32_t k = 0; k < n; ++k) {
        std::string what = op.describe(i) +
                           (list == &op.operands ? " operand " : " result ") +
                           std::to_string(k);
        if (!readLocation(cursor, (*list)[k], b, what))
          return false;
        if (list == &op.results && (*list)[k].kind == Weight)
          return cursor.fail(what + " is a weight");
      }
    }
    op.numOwnOperands = op.operands.size();
    if (b.version < kFirstVersionWithBodies)
      continue;
    uint8_t hasBody;
    if (!cursor.u8(hasBody))
      return false;
    if (hasBody > 1)
      return cursor.fail(op.describe(i) + ": bad has-body byte " +
                         std::to_string(hasBody));
    op.hasBody = hasBody;
    bool mayHaveBody = op.opName == kFusedOpName ||
                       getEpilogueArity(op.opName) >= 0;
    if (op.hasBody ? !mayHaveBody : op.opName == kFusedOpName)
      return cursor.fail(op.describe(i) +
                         (op.hasBody ? ": only snug.fused and ops that take "
                                       "an epilogue have a body"
                                     : ": snug.fused needs a body"));
    if (op.hasBody && !readBody(cursor, op, op.describe(i)))
      return false;
  }
  return true;
}

} // namespace rt
} // namespace snug
