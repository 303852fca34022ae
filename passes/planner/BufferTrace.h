//===- BufferTrace.h - Buffer-packing problems as CSV -----------*- C++ -*-===//
//
// Reads and writes offset-assignment problems in the CSV format of the packing
// benchmarks (and of MiniMalloc): a header naming the columns id, lower,
// upper and size in any order, then one buffer per line, live over the
// half-open step interval [lower, upper). The reader converts that to the
// planner's closed interval [lower, upper - 1]; an optional "alignment"
// column sets PlanBuffer::alignment (default 1).
//
// Errors are reported as "FILE:LINE: error: ..." for the first malformed
// line: a missing or extra column, a non-number, a negative value,
// lower >= upper, a duplicate id, or an empty file. Blank lines are skipped.
// The reader does not check alignments beyond parsing them; planMemory does.
//
//===----------------------------------------------------------------------===//
#ifndef SNUG_PASSES_PLANNER_BUFFERTRACE_H
#define SNUG_PASSES_PLANNER_BUFFERTRACE_H

#include "passes/planner/MemoryPlanner.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace snug {

/// Parses CSV text; fileName only appears in error messages.
llvm::Expected<std::vector<PlanBuffer>>
parseBufferTrace(llvm::StringRef text, llvm::StringRef fileName);

/// Reads and parses the CSV file at path.
llvm::Expected<std::vector<PlanBuffer>> readBufferTrace(llvm::StringRef path);

/// Writes `buffers` as CSV (id,lower,upper,size): live over [firstStep,
/// lastStep + 1), size the footprint (bytes rounded up to the buffer's
/// alignment), so the problem read back at alignment 1 has the same lower
/// bound. Zero-byte buffers occupy nothing and are left out.
void printBufferTrace(llvm::ArrayRef<PlanBuffer> buffers,
                      llvm::raw_ostream &os);

} // namespace snug

#endif // SNUG_PASSES_PLANNER_BUFFERTRACE_H
