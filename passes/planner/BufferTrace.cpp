//===- BufferTrace.cpp - Buffer-packing problems as CSV -------------------===//
//
// A strict reader for "id,lower,upper,size" problem files: every field must
// be a plain non-negative decimal integer, so a truncated or hand-edited file
// fails loudly at the offending line instead of producing a different
// problem. Ids must be unique because plans are reported per id.
//
//===----------------------------------------------------------------------===//
#include "passes/planner/BufferTrace.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"

#include <limits>
#include <string>

using namespace snug;

namespace {
enum Column { Id, Lower, Upper, Size, Alignment, NumColumns };
const char *const kColumnNames[NumColumns] = {"id", "lower", "upper", "size",
                                              "alignment"};
} // namespace

static llvm::Error lineError(llvm::StringRef fileName, size_t line,
                             const llvm::Twine &message) {
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(), "%s",
      (fileName + ":" + llvm::Twine(line) + ": error: " + message)
          .str()
          .c_str());
}

llvm::Expected<std::vector<PlanBuffer>>
snug::parseBufferTrace(llvm::StringRef text, llvm::StringRef fileName) {
  llvm::SmallVector<llvm::StringRef, 0> lines;
  text.split(lines, '\n');
  size_t lineNo = 0;
  // Find the header: the first non-blank line.
  int position[NumColumns] = {-1, -1, -1, -1, -1};
  size_t numFields = 0;
  while (lineNo < lines.size() && lines[lineNo].trim().empty())
    ++lineNo;
  if (lineNo == lines.size())
    return lineError(fileName, 1,
                     "empty file, expected a header 'id,lower,upper,size'");
  {
    llvm::SmallVector<llvm::StringRef, 8> fields;
    lines[lineNo].trim().split(fields, ',');
    numFields = fields.size();
    for (size_t f = 0; f < fields.size(); ++f) {
      std::string name = fields[f].trim().lower();
      int column = -1;
      for (int c = 0; c < NumColumns; ++c)
        if (name == kColumnNames[c])
          column = c;
      if (column < 0)
        return lineError(fileName, lineNo + 1,
                         "unknown column '" + fields[f].trim() +
                             "' in header (expected id,lower,upper,size)");
      if (position[column] >= 0)
        return lineError(fileName, lineNo + 1,
                         "duplicate column '" + name + "' in header");
      position[column] = f;
    }
    for (int c = Id; c <= Size; ++c)
      if (position[c] < 0)
        return lineError(fileName, lineNo + 1,
                         llvm::Twine("header lacks column '") +
                             kColumnNames[c] +
                             "' (expected id,lower,upper,size)");
  }
  ++lineNo;

  std::vector<PlanBuffer> buffers;
  llvm::DenseMap<int64_t, size_t> lineOfId;
  for (; lineNo < lines.size(); ++lineNo) {
    llvm::StringRef line = lines[lineNo].trim();
    size_t where = lineNo + 1;
    if (line.empty())
      continue;
    llvm::SmallVector<llvm::StringRef, 8> fields;
    line.split(fields, ',');
    if (fields.size() != numFields)
      return lineError(fileName, where,
                       "expected " + llvm::Twine(numFields) +
                           " comma-separated fields, found " +
                           llvm::Twine(fields.size()));
    uint64_t values[NumColumns] = {0, 0, 0, 0, 1};
    for (int c = 0; c < NumColumns; ++c) {
      if (position[c] < 0)
        continue;
      llvm::StringRef field = fields[position[c]].trim();
      if (field.startswith("-"))
        return lineError(fileName, where,
                         llvm::Twine(kColumnNames[c]) + " '" + field +
                             "' is negative");
      // Steps and ids become int64_t, so they must fit one.
      uint64_t limit = c == Size || c == Alignment
                           ? std::numeric_limits<uint64_t>::max()
                           : uint64_t(std::numeric_limits<int64_t>::max());
      if (field.empty() || field.getAsInteger(10, values[c]) ||
          values[c] > limit)
        return lineError(fileName, where,
                         llvm::Twine(kColumnNames[c]) + " '" + field +
                             "' is not a non-negative integer");
    }
    if (values[Lower] >= values[Upper])
      return lineError(fileName, where,
                       "lower " + llvm::Twine(values[Lower]) +
                           " is not below upper " + llvm::Twine(values[Upper]) +
                           " (the interval [lower, upper) is empty)");
    int64_t id = int64_t(values[Id]);
    auto inserted = lineOfId.insert({id, where});
    if (!inserted.second)
      return lineError(fileName, where,
                       "duplicate id " + llvm::Twine(id) +
                           " (first defined on line " +
                           llvm::Twine(inserted.first->second) + ")");
    PlanBuffer buffer;
    buffer.id = id;
    buffer.bytes = values[Size];
    buffer.alignment = values[Alignment];
    buffer.firstStep = int64_t(values[Lower]);
    buffer.lastStep = int64_t(values[Upper]) - 1;
    buffers.push_back(buffer);
  }
  return buffers;
}

llvm::Expected<std::vector<PlanBuffer>>
snug::readBufferTrace(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file)
    return llvm::createStringError(file.getError(), "%s: error: %s",
                                   path.str().c_str(),
                                   file.getError().message().c_str());
  return parseBufferTrace((*file)->getBuffer(), path);
}

void snug::printBufferTrace(llvm::ArrayRef<PlanBuffer> buffers,
                            llvm::raw_ostream &os) {
  os << "id,lower,upper,size\n";
  for (const PlanBuffer &buffer : buffers)
    if (buffer.bytes)
      os << buffer.id << ',' << buffer.firstStep << ',' << buffer.lastStep + 1
         << ',' << llvm::alignTo(buffer.bytes, buffer.alignment) << '\n';
}
