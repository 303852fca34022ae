//===- PrecisionReport.cpp - What precision each op runs in ---------------===//
#include "compiler/PrecisionReport.h"
#include "ir/State.h"

#include "llvm/Support/Format.h"

namespace snug {

static void count(const ir::Node &node, ir::DType low,
                  PrecisionSummary &summary) {
  if (node.hasBody()) {
    for (const std::unique_ptr<ir::Node> &inner : node.getBody()->getNodes())
      count(*inner, low, summary);
    return;
  }
  if (node.is(ir::OpCode::SnugCast)) {
    ++summary.casts;
    return;
  }
  bool isLow = false, isF32 = false;
  for (unsigned i = 0; i < node.getNumResults(); ++i) {
    ir::DType type = node.getResult(i)->getType().getDType();
    isLow |= type == low;
    isF32 |= type == ir::DType::F32;
  }
  std::pair<unsigned, unsigned> &entry = summary.byOp[node.getOpName().str()];
  if (isLow) {
    ++entry.first;
    ++summary.lowered;
  } else if (isF32) {
    ++entry.second;
    ++summary.keptF32;
  }
}

/// --precision=tf32: the f32 contractions, by whether they carry the mark.
static void countTf32(const ir::Module &module, PrecisionSummary &summary) {
  summary.precision = summary.math = "tf32";
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    if (!node->is(ir::OpCode::Conv) && !node->is(ir::OpCode::MatMul) &&
        !node->is(ir::OpCode::Gemm))
      continue;
    if (node->getNumOperands() < 2 ||
        node->getOperand(0)->getType().getDType() != ir::DType::F32 ||
        node->getOperand(1)->getType().getDType() != ir::DType::F32)
      continue;
    std::pair<unsigned, unsigned> &entry =
        summary.byOp[node->getOpName().str()];
    const ir::Attribute *math = node->getAttribute("math");
    if (math && math->getKind() == ir::Attribute::Kind::String &&
        math->getString() == "tf32") {
      ++entry.first;
      ++summary.lowered;
    } else {
      ++entry.second;
      ++summary.keptF32;
    }
  }
}

PrecisionSummary summarizePrecision(const ir::Module &module) {
  PrecisionSummary summary;
  const ir::Attribute *math = module.getAttribute("math");
  if (math && math->getKind() == ir::Attribute::Kind::String &&
      math->getString() == "tf32") {
    countTf32(module, summary);
    return summary;
  }
  const ir::Attribute *attr = module.getAttribute("precision");
  if (!attr || attr->getKind() != ir::Attribute::Kind::String)
    return summary;
  summary.precision = attr->getString().str();
  llvm::Optional<ir::DType> low = ir::parseDType(summary.precision);
  if (!low)
    return summary;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes()) {
    count(*node, *low, summary);
    for (unsigned i = 0; i < node->getNumResults(); ++i) {
      const ir::TensorType &type = node->getResult(i)->getType();
      if (type.getDType() == *low)
        summary.loweredValueBytes += type.getByteSize();
      else if (type.getDType() == ir::DType::F32)
        summary.f32ValueBytes += type.getByteSize();
    }
  }
  // A module whose state attribute does not resolve has no state to show
  // here; the memory report fails on it before this is read.
  if (llvm::Expected<std::vector<ir::StateEntry>> state = ir::getState(module)) {
    for (const ir::StateEntry &entry : *state) {
      std::string dtype =
          ir::getDTypeName(entry.weight->getType().getDType()).str();
      if (summary.stateDType.empty())
        summary.stateDType = dtype;
      else if (summary.stateDType != dtype)
        summary.stateDType = "mixed";
    }
  } else {
    llvm::consumeError(state.takeError());
  }
  auto bytes = [&](llvm::StringRef name) -> uint64_t {
    const ir::Attribute *attr = module.getAttribute(name);
    return attr && attr->getKind() == ir::Attribute::Kind::Int &&
                   attr->getInt() > 0
               ? uint64_t(attr->getInt())
               : 0;
  };
  summary.weightsBeforeBytes = bytes("precision_weights_before");
  summary.arenaBeforeBytes = bytes("precision_arena_before");
  return summary;
}

void printPrecision(const PrecisionSummary &summary, llvm::raw_ostream &os) {
  if (summary.precision.empty()) {
    os << "precision: f32 throughout (no --precision)\n";
    return;
  }
  const char *op = "op", *f32 = "f32";
  os << llvm::format("%-24s %8s %8s\n", op, summary.precision.c_str(), f32);
  for (const auto &entry : summary.byOp)
    if (entry.second.first || entry.second.second)
      os << llvm::format("%-24s %8u %8u\n", entry.first.c_str(),
                         entry.second.first, entry.second.second);
  if (summary.math == "tf32") {
    os << "precision: " << summary.lowered
       << " contractions multiply in tf32 (storage, sums and every other "
          "node f32), "
       << summary.keptF32 << " kept at full f32\n";
    return;
  }
  os << "precision: " << summary.lowered << " nodes in " << summary.precision
     << ", " << summary.keptF32 << " in f32, " << summary.casts
     << " casts inserted\n";
}

} // namespace snug
