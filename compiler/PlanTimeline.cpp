//===- PlanTimeline.cpp - A picture of the arena plan ---------------------===//
//
// Coordinates are computed here, in C++, so the page needs no script: the
// browser only lays out rectangles and a polyline. Large models have
// thousands of buffers; each is one <rect> with a <title>, which browsers
// render quickly enough.
//
//===----------------------------------------------------------------------===//
#include "compiler/PlanTimeline.h"
#include "passes/memory/PlanMemory.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/DJB.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MathExtras.h"

namespace snug {

static void escapeHtml(llvm::raw_ostream &os, llvm::StringRef text) {
  for (char c : text) {
    switch (c) {
    case '<': os << "&lt;"; break;
    case '>': os << "&gt;"; break;
    case '&': os << "&amp;"; break;
    case '"': os << "&quot;"; break;
    default: os << c;
    }
  }
}

static std::string describe(const ir::Value *value) {
  std::string name = value->getName().empty() ? "(unnamed)"
                                              : "%" + value->getName().str();
  std::string op = value->isInput()
                       ? "input"
                       : value->getDefiningNode()->getOpName().str();
  return name + " = " + op + " " + value->getType().str();
}

/// A stable colour per op name.
static std::string colorFor(llvm::StringRef op) {
  unsigned hue = llvm::djbHash(op) % 360;
  return "hsl(" + std::to_string(hue) + ",60%,62%)";
}

llvm::Error writePlanTimeline(const ir::Module &module, llvm::StringRef title,
                              llvm::raw_ostream &os) {
  if (!module.getAttribute("arena"))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the module has no memory plan to draw");
  llvm::Expected<ModuleMemoryPlan> plan = getModuleMemoryPlan(module);
  if (!plan)
    return plan.takeError();
  uint64_t arena = std::max<uint64_t>(1, plan->arenaBytes);
  uint64_t bound = plan->lowerBoundBytes;
  int64_t steps = plan->numSteps;

  const double width = 900, height = 520, margin = 60;
  double xScale = (width - 2 * margin) / double(steps);
  double yScale = (height - 2 * margin) / double(arena);

  os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>";
  escapeHtml(os, title);
  os << " - snug memory plan</title>\n<style>body{font-family:sans-serif;"
        "margin:16px;background:#fff}rect.b{stroke:#333;stroke-width:0.5}"
        "rect.b:hover{stroke:#000;stroke-width:2}.row{display:flex;"
        "flex-wrap:nowrap;gap:16px}</style></head><body>\n<h2>";
  escapeHtml(os, title);
  os << "</h2>\n<p>arena " << arena << " B, lower bound " << bound << " B, "
     << plan->buffers.size() << " buffers (" << plan->getNumScratchBuffers()
     << " of them scratch) over " << steps
     << " steps. Hover a rectangle for its values.</p>\n<div class=\"row\">\n";

  // The arena: address against time.
  os << "<div><svg xmlns=\"http://www.w3.org/2000/svg\" "
        "width=\""
     << width << "\" height=\"" << height << "\">\n";
  os << llvm::format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                     "height=\"%.1f\" fill=\"#f4f4f4\" stroke=\"#999\"/>\n",
                     margin, margin, width - 2 * margin, height - 2 * margin);
  std::vector<uint64_t> live = plan->getLiveBytesPerStep();
  for (const ArenaBuffer &buffer : plan->buffers) {
    bool scratch = buffer.kind == ArenaBuffer::Kind::Scratch;
    uint64_t base = buffer.offset;
    double x = margin + buffer.firstStep * xScale;
    double w = std::max(1.0, (buffer.lastStep - buffer.firstStep + 1) * xScale);
    double h = std::max(1.0, buffer.bytes * yScale);
    double y = height - margin - (base + buffer.bytes) * yScale;
    const ir::Value *root = scratch ? nullptr : buffer.values.front();
    llvm::StringRef op = scratch          ? llvm::StringRef("scratch")
                         : root->isInput() ? llvm::StringRef("input")
                                           : root->getDefiningNode()->getOpName();
    os << llvm::format("<rect class=\"b\" x=\"%.2f\" y=\"%.2f\" "
                       "width=\"%.2f\" height=\"%.2f\" fill=\"",
                       x, y, w, h)
       << (scratch ? std::string("#455a64") : colorFor(op))
       << "\"><title>";
    std::string text;
    llvm::raw_string_ostream tip(text);
    tip << "offset " << base << ", " << buffer.bytes << " B, live steps ["
        << buffer.firstStep << ", " << buffer.lastStep << "]";
    if (scratch)
      tip << "\nscratch (" << getScratchRequest(*buffer.node, {}).purpose
          << ") of " << buffer.node->describe();
    for (size_t i = 0; i < buffer.values.size(); ++i)
      tip << "\n" << describe(buffer.values[i])
          << (i ? std::string(" (") + buffer.reasons[i] + ")" : "");
    escapeHtml(os, tip.str());
    os << "</title></rect>\n";
  }
  os << llvm::format("<text x=\"%.0f\" y=\"%.0f\">step</text>\n",
                     width / 2, height - 20)
     << llvm::format("<text x=\"8\" y=\"%.0f\">0</text>\n", height - margin)
     << llvm::format("<text x=\"8\" y=\"%.0f\">%llu B</text>\n", margin - 8,
                     (unsigned long long)arena)
     << "</svg></div>\n";

  // Live bytes per step, with the bound and the arena.
  const double curveWidth = 420;
  double cx = (curveWidth - 2 * margin) / double(std::max<int64_t>(1, steps));
  os << "<div><svg xmlns=\"http://www.w3.org/2000/svg\" "
        "width=\""
     << curveWidth << "\" height=\"" << height << "\">\n";
  os << llvm::format("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                     "height=\"%.1f\" fill=\"#f4f4f4\" stroke=\"#999\"/>\n",
                     margin, margin, curveWidth - 2 * margin,
                     height - 2 * margin);
  os << "<polyline fill=\"none\" stroke=\"#1565c0\" stroke-width=\"2\" "
        "points=\"";
  for (int64_t step = 0; step < steps; ++step)
    os << llvm::format("%.2f,%.2f %.2f,%.2f ", margin + step * cx,
                       height - margin - live[step] * yScale,
                       margin + (step + 1) * cx,
                       height - margin - live[step] * yScale);
  os << "\"><title>live bytes per step</title></polyline>\n";
  auto line = [&](uint64_t value, const char *color, const char *label,
                  double labelX) {
    double y = height - margin - value * yScale;
    os << llvm::format("<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.2f\" y2=\"%.2f\" "
                       "stroke=\"%s\" stroke-dasharray=\"6,4\"/>"
                       "<text x=\"%.1f\" y=\"%.2f\" fill=\"%s\">%s</text>\n",
                       margin, curveWidth - margin, y, y, color, margin + labelX,
                       y - 4, color, label);
  };
  // Labels side by side: the two lines often coincide.
  line(arena, "#c62828", "arena", 4);
  line(bound, "#2e7d32", "lower bound", 60);
  os << "</svg></div>\n</div>\n</body></html>\n";
  return llvm::Error::success();
}

} // namespace snug
