//===- Parser.cpp - Reading the textual IR --------------------------------===//
//
// A hand-written lexer and recursive-descent parser over the grammar
//
//   module  ::= 'func' '@' name '(' args ')' '->' types attrs? '{' node*
//               'return' refs '}'
//   arg     ::= ref ':' type ('weight' ('=' elements)?)? plan?
//   node    ::= ref (',' ref)* '=' op '(' operands ')' dict? ':'
//               type plan? (',' type plan?)* ('loc' '(' string ')')? body?
//   body    ::= '{' '^' 'bb' '(' (ref ':' type plan?)* ')' ':' node*
//               'yield' refs? '}'
//   type    ::= dtype '[' (int (',' int)*)? ']'
//   plan    ::= '{' 'offset' '=' int '}'
//
// `%5` (a number) names an unnamed value; the printer renumbers them, so a
// file's numbers need only be unique, not dense. Everything the parser
// accepts, the printer writes back in canonical form.
//
// A body is a scope of its own: inside it only its block arguments and the
// values it defines are visible, and outside it none of those are. Value
// names and numbers are unique across the whole file, bodies included. A
// `{` after a type opens a plan annotation unless `^` follows it (a body).
// Bodies do not nest.
//
//===----------------------------------------------------------------------===//
#include "ir/Parser.h"
#include "core/CheckedArithmetic.h"
#include "ir/Float16.h"
#include "ir/OpInfo.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <cstring>

namespace snug {
namespace ir {

namespace {

enum class TokenKind {
  Eof,
  Ident,  // func, weight, f32, Relu, nan, ...
  Int,    // 12, -3
  Float,  // 1.5, -2e3
  String, // "..." (text holds the unescaped contents)
  Percent, At, LParen, RParen, LBracket, RBracket, LBrace, RBrace, Less,
  Greater, Comma, Colon, Equal, Arrow, Underscore, Caret,
  Invalid,
};

struct Token {
  TokenKind kind = TokenKind::Eof;
  llvm::StringRef spelling; // the source text of the token
  std::string text;         // unescaped string contents
  const char *location = nullptr;
};

class Lexer {
public:
  explicit Lexer(llvm::StringRef buffer)
      : current(buffer.begin()), end(buffer.end()) {}
  Token next();

private:
  Token make(TokenKind kind, const char *start) {
    Token token;
    token.kind = kind;
    token.spelling = llvm::StringRef(start, current - start);
    token.location = start;
    return token;
  }
  void skipSpaceAndComments();
  Token lexNumber(const char *start);
  Token lexString(const char *start);
  Token malformedString(const char *start) {
    Token token = make(TokenKind::Invalid, start);
    token.text = "malformed string literal (unterminated, or an escape other "
                 "than \\\", \\\\ or \\XX)";
    return token;
  }

  const char *current;
  const char *end;
};

void Lexer::skipSpaceAndComments() {
  while (current != end) {
    if (llvm::isSpace(*current)) {
      ++current;
    } else if (*current == '/' && current + 1 != end && current[1] == '/') {
      while (current != end && *current != '\n')
        ++current;
    } else {
      return;
    }
  }
}

static bool isIdentChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '.';
}

Token Lexer::next() {
  skipSpaceAndComments();
  const char *start = current;
  if (current == end)
    return make(TokenKind::Eof, start);
  char c = *current++;
  switch (c) {
  case '%': return make(TokenKind::Percent, start);
  case '@': return make(TokenKind::At, start);
  case '(': return make(TokenKind::LParen, start);
  case ')': return make(TokenKind::RParen, start);
  case '[': return make(TokenKind::LBracket, start);
  case ']': return make(TokenKind::RBracket, start);
  case '{': return make(TokenKind::LBrace, start);
  case '}': return make(TokenKind::RBrace, start);
  case '<': return make(TokenKind::Less, start);
  case '>': return make(TokenKind::Greater, start);
  case ',': return make(TokenKind::Comma, start);
  case ':': return make(TokenKind::Colon, start);
  case '=': return make(TokenKind::Equal, start);
  case '^': return make(TokenKind::Caret, start);
  case '"': return lexString(start);
  case '-':
    if (current != end && *current == '>') {
      ++current;
      return make(TokenKind::Arrow, start);
    }
    if (current != end && llvm::isDigit(*current))
      return lexNumber(start);
    if (llvm::StringRef(current, end - current).startswith("inf")) {
      current += 3;
      return make(TokenKind::Float, start);
    }
    return make(TokenKind::Invalid, start);
  default:
    break;
  }
  if (llvm::isDigit(c))
    return lexNumber(start);
  if (c == '_' && (current == end || !isIdentChar(*current)))
    return make(TokenKind::Underscore, start);
  if (llvm::isAlpha(c) || c == '_') {
    while (current != end && isIdentChar(*current))
      ++current;
    return make(TokenKind::Ident, start);
  }
  return make(TokenKind::Invalid, start);
}

Token Lexer::lexNumber(const char *start) {
  bool isFloat = false;
  while (current != end && llvm::isDigit(*current))
    ++current;
  if (current != end && *current == '.') {
    isFloat = true;
    ++current;
    while (current != end && llvm::isDigit(*current))
      ++current;
  }
  if (current != end && (*current == 'e' || *current == 'E')) {
    const char *exponent = current + 1;
    if (exponent != end && (*exponent == '+' || *exponent == '-'))
      ++exponent;
    if (exponent != end && llvm::isDigit(*exponent)) {
      isFloat = true;
      current = exponent;
      while (current != end && llvm::isDigit(*current))
        ++current;
    }
  }
  return make(isFloat ? TokenKind::Float : TokenKind::Int, start);
}

Token Lexer::lexString(const char *start) {
  std::string text;
  while (current != end && *current != '"' && *current != '\n') {
    char c = *current++;
    if (c != '\\') {
      text.push_back(c);
      continue;
    }
    if (current == end)
      break;
    if (*current == '"' || *current == '\\') {
      text.push_back(*current++);
      continue;
    }
    if (end - current >= 2 && llvm::isHexDigit(current[0]) &&
        llvm::isHexDigit(current[1])) {
      text.push_back(static_cast<char>(llvm::hexDigitValue(current[0]) * 16 +
                                       llvm::hexDigitValue(current[1])));
      current += 2;
      continue;
    }
    return malformedString(start);
  }
  if (current == end || *current != '"')
    return malformedString(start);
  ++current;
  Token token = make(TokenKind::String, start);
  token.text = std::move(text);
  return token;
}

class Parser {
public:
  Parser(llvm::SourceMgr &sourceMgr, SourceLocations *locations)
      : sourceMgr(sourceMgr), locations(locations),
        lexer(sourceMgr.getMemoryBuffer(1)->getBuffer()) {
    token = lexer.next();
  }
  llvm::Expected<std::unique_ptr<Module>> parse();

private:
  // Every parse function returns true on error, having recorded it.
  bool emitError(const char *location, const llvm::Twine &message);
  bool emitError(const llvm::Twine &message) {
    return emitError(token.location, message);
  }
  void consume() { token = lexer.next(); }
  /// The kind of the token after the current one.
  TokenKind peekKind() const {
    Lexer copy = lexer;
    return copy.next().kind;
  }
  bool atBody() const {
    return token.kind == TokenKind::LBrace && peekKind() == TokenKind::Caret;
  }
  bool consumeIf(TokenKind kind) {
    if (token.kind != kind)
      return false;
    consume();
    return true;
  }
  bool expect(TokenKind kind, llvm::StringRef what);
  bool expectKeyword(llvm::StringRef keyword);
  bool isKeyword(llvm::StringRef keyword) const {
    return token.kind == TokenKind::Ident && token.spelling == keyword;
  }
  std::string locationString(const char *location) const;

  bool parseName(std::string &name, llvm::StringRef what);
  bool parseValueName(std::string &key, std::string &name);
  bool parseValueRef(Value *&value);
  bool parseInt(int64_t &value);
  bool parseType(TensorType &type);
  bool parseElements(const TensorType &type, std::vector<uint8_t> &bytes);
  bool parseAttribute(Attribute &attribute);
  bool parseAttributeValue(Attribute &attribute);
  bool parseAttributeDict(AttributeMap &attributes);
  bool parsePlanAnnotation(llvm::Optional<uint64_t> &offset);
  bool parseArgument();
  bool parseResultTypes();
  bool parseNode();
  bool parseBody(Node &node);
  bool defineValue(const std::string &key, const char *location,
                   Value *value);

  llvm::SourceMgr &sourceMgr;
  SourceLocations *locations;
  Lexer lexer;
  Token token;
  std::string errorText;
  std::unique_ptr<Module> module;
  /// Every value defined so far, with the scope it is visible in (0: the
  /// function, n > 0: the n-th body parsed).
  struct Definition {
    Value *value;
    unsigned scope;
  };
  llvm::StringMap<Definition> values;
  unsigned scope = 0, nextScope = 1;
  /// The body being parsed; nodes go into it instead of the schedule.
  Region *body = nullptr;
  llvm::SmallVector<TensorType, 2> outputTypes;
  /// How deep parseAttribute has recursed (lists in lists).
  unsigned attributeDepth = 0;
  static constexpr unsigned kMaxAttributeDepth = 32;
};

} // namespace

bool Parser::emitError(const char *location, const llvm::Twine &message) {
  if (!errorText.empty())
    return true;
  llvm::raw_string_ostream os(errorText);
  // A malformed token explains itself better than what was expected there.
  if (token.kind == TokenKind::Invalid && !token.text.empty())
    sourceMgr.PrintMessage(os, llvm::SMLoc::getFromPointer(token.location),
                           llvm::SourceMgr::DK_Error, token.text);
  else
    sourceMgr.PrintMessage(os, llvm::SMLoc::getFromPointer(location),
                           llvm::SourceMgr::DK_Error, message);
  os.flush();
  // SourceMgr ends with a newline; llvm::Error text conventionally does not.
  while (!errorText.empty() && errorText.back() == '\n')
    errorText.pop_back();
  return true;
}

std::string Parser::locationString(const char *location) const {
  auto lineAndColumn =
      sourceMgr.getLineAndColumn(llvm::SMLoc::getFromPointer(location));
  return (sourceMgr.getMemoryBuffer(1)->getBufferIdentifier() + ":" +
          llvm::Twine(lineAndColumn.first) + ":" +
          llvm::Twine(lineAndColumn.second))
      .str();
}

static llvm::StringRef describe(TokenKind kind) {
  switch (kind) {
  case TokenKind::Eof: return "end of input";
  case TokenKind::Ident: return "identifier";
  case TokenKind::Int: return "integer";
  case TokenKind::Float: return "float";
  case TokenKind::String: return "string";
  case TokenKind::Percent: return "'%'";
  case TokenKind::At: return "'@'";
  case TokenKind::LParen: return "'('";
  case TokenKind::RParen: return "')'";
  case TokenKind::LBracket: return "'['";
  case TokenKind::RBracket: return "']'";
  case TokenKind::LBrace: return "'{'";
  case TokenKind::RBrace: return "'}'";
  case TokenKind::Less: return "'<'";
  case TokenKind::Greater: return "'>'";
  case TokenKind::Comma: return "','";
  case TokenKind::Colon: return "':'";
  case TokenKind::Equal: return "'='";
  case TokenKind::Arrow: return "'->'";
  case TokenKind::Underscore: return "'_'";
  case TokenKind::Caret: return "'^'";
  case TokenKind::Invalid: return "invalid token";
  }
  llvm_unreachable("unknown token kind");
}

bool Parser::expect(TokenKind kind, llvm::StringRef what) {
  if (token.kind != kind) {
    llvm::StringRef found =
        token.kind == TokenKind::Eof ? "end of input" : token.spelling;
    return emitError("expected " + describe(kind) + " " + what + ", found '" +
                     found + "'");
  }
  consume();
  return false;
}

bool Parser::expectKeyword(llvm::StringRef keyword) {
  if (!isKeyword(keyword))
    return emitError("expected '" + keyword + "', found '" + token.spelling +
                     "'");
  consume();
  return false;
}

bool Parser::parseName(std::string &name, llvm::StringRef what) {
  if (token.kind == TokenKind::Ident) {
    name = token.spelling.str();
  } else if (token.kind == TokenKind::String) {
    name = token.text;
  } else {
    return emitError("expected " + what);
  }
  consume();
  return false;
}

/// `%name`, `%"any name"` or `%7`. `key` identifies the value in this module
/// (numbers and names live in separate spaces); `name` is empty for numbers.
bool Parser::parseValueName(std::string &key, std::string &name) {
  if (expect(TokenKind::Percent, "before a value name"))
    return true;
  if (token.kind == TokenKind::Int) {
    key = "#" + token.spelling.str();
    name.clear();
    consume();
    return false;
  }
  if (parseName(name, "a value name after '%'"))
    return true;
  key = "$" + name;
  return false;
}

bool Parser::parseValueRef(Value *&value) {
  const char *location = token.location;
  std::string key, name;
  if (parseValueName(key, name))
    return true;
  auto it = values.find(key);
  llvm::StringRef spelling =
      llvm::StringRef(location, token.location - location).rtrim();
  if (it == values.end())
    return emitError(location, "use of undefined value '" + spelling + "'");
  if (it->second.scope != scope)
    return emitError(
        location,
        "value '" + spelling + "' is not visible here: " +
            (scope ? "a body sees only its block arguments and the values "
                     "it defines"
                   : "it is defined inside a body"));
  value = it->second.value;
  return false;
}

bool Parser::defineValue(const std::string &key, const char *location,
                         Value *value) {
  if (!values.insert({key, {value, scope}}).second)
    return emitError(location, "redefinition of value '%" +
                                   llvm::StringRef(key).drop_front() + "'");
  return false;
}

bool Parser::parseInt(int64_t &value) {
  if (token.kind != TokenKind::Int)
    return emitError("expected an integer, found '" + token.spelling + "'");
  if (token.spelling.getAsInteger(10, value))
    return emitError("integer '" + token.spelling + "' out of range");
  consume();
  return false;
}

bool Parser::parseType(TensorType &type) {
  if (token.kind != TokenKind::Ident)
    return emitError("expected a tensor type such as f32[1,64], found '" +
                     token.spelling + "'");
  llvm::Optional<DType> dtype = parseDType(token.spelling);
  if (!dtype)
    return emitError("unknown element type '" + token.spelling + "'");
  consume();
  if (expect(TokenKind::LBracket, "after the element type"))
    return true;
  llvm::SmallVector<int64_t, 4> dims;
  if (token.kind != TokenKind::RBracket) {
    do {
      const char *location = token.location;
      int64_t dim;
      if (parseInt(dim))
        return true;
      if (dim < 0)
        return emitError(location, "negative dimension " + llvm::Twine(dim));
      dims.push_back(dim);
    } while (consumeIf(TokenKind::Comma));
  }
  if (expect(TokenKind::RBracket, "to close the dimensions"))
    return true;
  type = TensorType(*dtype, dims);
  // Keep byte sizes representable: reject types whose element count
  // overflows 2^56, by the runtime's rule (core/CheckedArithmetic.h): a
  // zero dim makes the count 0 whatever the other dims are, so every type
  // the shape functions can give reads back.
  if (!checkedElementCount(dims.data(), dims.size(), uint64_t(1) << 56))
    return emitError("tensor type " + type.str() + " is too large");
  return false;
}

template <typename T> static void append(std::vector<uint8_t> &bytes, T value) {
  uint8_t raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  bytes.insert(bytes.end(), raw, raw + sizeof(T));
}

bool Parser::parseElements(const TensorType &type,
                           std::vector<uint8_t> &bytes) {
  const char *start = token.location;
  if (expect(TokenKind::LBracket, "to open the element list"))
    return true;
  DType dtype = type.getDType();
  int64_t count = 0;
  if (token.kind != TokenKind::RBracket) {
    do {
      ++count;
      if (dtype == DType::Bool) {
        if (isKeyword("true") || isKeyword("false")) {
          bytes.push_back(isKeyword("true"));
          consume();
          continue;
        }
        return emitError("expected true or false in a bool tensor");
      }
      if (isFloatDType(dtype)) {
        double value;
        if (isKeyword("nan") || isKeyword("inf")) {
          value = isKeyword("nan") ? NAN : INFINITY;
        } else if (token.kind == TokenKind::Float && token.spelling == "-inf") {
          value = -INFINITY;
        } else if (token.kind == TokenKind::Float ||
                   token.kind == TokenKind::Int) {
          value = strtod(token.spelling.str().c_str(), nullptr);
        } else {
          return emitError("expected a number in a " +
                           getDTypeName(dtype) + " tensor, found '" +
                           token.spelling + "'");
        }
        consume();
        switch (dtype) {
        case DType::F32: append(bytes, static_cast<float>(value)); break;
        case DType::F64: append(bytes, value); break;
        case DType::F16:
          append(bytes, floatToF16(static_cast<float>(value)));
          break;
        default:
          append(bytes, floatToBf16(static_cast<float>(value)));
          break;
        }
        continue;
      }
      const char *location = token.location;
      if (dtype == DType::U64) {
        // The full u64 range: past INT64_MAX, so not through parseInt.
        uint64_t value;
        if (token.kind != TokenKind::Int || token.spelling.startswith("-") ||
            token.spelling.getAsInteger(10, value))
          return emitError("expected an integer in [0, 18446744073709551615] "
                           "in a u64 tensor, found '" +
                           token.spelling + "'");
        consume();
        append(bytes, value);
        continue;
      }
      int64_t value;
      if (parseInt(value))
        return true;
      auto check = [&](int64_t low, int64_t high) {
        if (value < low || value > high)
          return emitError(location, "value " + llvm::Twine(value) +
                                         " out of range for " +
                                         getDTypeName(dtype));
        return false;
      };
      switch (dtype) {
      case DType::I64: append(bytes, value); break;
      case DType::I32:
        if (check(INT32_MIN, INT32_MAX)) return true;
        append(bytes, static_cast<int32_t>(value));
        break;
      case DType::I16:
        if (check(INT16_MIN, INT16_MAX)) return true;
        append(bytes, static_cast<int16_t>(value));
        break;
      case DType::I8:
        if (check(INT8_MIN, INT8_MAX)) return true;
        append(bytes, static_cast<int8_t>(value));
        break;
      case DType::U32:
        if (check(0, UINT32_MAX)) return true;
        append(bytes, static_cast<uint32_t>(value));
        break;
      case DType::U16:
        if (check(0, UINT16_MAX)) return true;
        append(bytes, static_cast<uint16_t>(value));
        break;
      default:
        if (check(0, UINT8_MAX)) return true;
        append(bytes, static_cast<uint8_t>(value));
        break;
      }
    } while (consumeIf(TokenKind::Comma));
  }
  if (expect(TokenKind::RBracket, "to close the element list"))
    return true;
  if (count != type.getNumElements())
    return emitError(start, "element list has " + llvm::Twine(count) +
                                " elements, type " + type.str() + " has " +
                                llvm::Twine(type.getNumElements()));
  return false;
}

bool Parser::parseAttribute(Attribute &attribute) {
  // Lists recurse into their elements; a hostile input nests them until the
  // stack overflows. No valid attribute nests at all (list elements are
  // scalars), so a small bound refuses nothing real.
  if (attributeDepth >= kMaxAttributeDepth)
    return emitError("attribute nested deeper than " +
                     llvm::Twine(kMaxAttributeDepth) + " levels");
  ++attributeDepth;
  bool failed = parseAttributeValue(attribute);
  --attributeDepth;
  return failed;
}

bool Parser::parseAttributeValue(Attribute &attribute) {
  if (token.kind == TokenKind::Int) {
    int64_t value;
    if (parseInt(value))
      return true;
    attribute = Attribute::getInt(value);
    return false;
  }
  if (token.kind == TokenKind::Float || isKeyword("nan") || isKeyword("inf")) {
    float value = isKeyword("nan")   ? NAN
                  : isKeyword("inf") ? INFINITY
                                     : strtof(token.spelling.str().c_str(),
                                              nullptr);
    consume();
    attribute = Attribute::getFloat(value);
    return false;
  }
  if (token.kind == TokenKind::String) {
    attribute = Attribute::getString(token.text);
    consume();
    return false;
  }
  if (isKeyword("dense")) {
    consume();
    TensorType type;
    std::vector<uint8_t> bytes;
    if (expect(TokenKind::Less, "after 'dense'") || parseType(type) ||
        parseElements(type, bytes) ||
        expect(TokenKind::Greater, "to close 'dense<'"))
      return true;
    attribute = Attribute::getTensor(type, bytes);
    return false;
  }
  if (token.kind != TokenKind::LBracket)
    return emitError("expected an attribute value, found '" + token.spelling +
                     "'");
  consume();
  // The first element decides the list's kind; an empty list is ints.
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  Attribute::Kind kind = Attribute::Kind::Ints;
  if (token.kind == TokenKind::String)
    kind = Attribute::Kind::Strings;
  else if (token.kind == TokenKind::Float || isKeyword("nan") ||
           isKeyword("inf"))
    kind = Attribute::Kind::Floats;
  if (token.kind != TokenKind::RBracket) {
    do {
      Attribute element;
      const char *location = token.location;
      if (parseAttribute(element))
        return true;
      Attribute::Kind elementKind = element.getKind();
      bool matches =
          (kind == Attribute::Kind::Ints &&
           elementKind == Attribute::Kind::Int) ||
          (kind == Attribute::Kind::Floats &&
           (elementKind == Attribute::Kind::Float ||
            elementKind == Attribute::Kind::Int)) ||
          (kind == Attribute::Kind::Strings &&
           elementKind == Attribute::Kind::String);
      if (!matches)
        return emitError(location, "list elements must all be of one kind "
                                   "(ints, floats or strings)");
      if (kind == Attribute::Kind::Ints)
        ints.push_back(element.getInt());
      else if (kind == Attribute::Kind::Strings)
        strings.push_back(element.getString().str());
      else
        floats.push_back(elementKind == Attribute::Kind::Int
                             ? static_cast<float>(element.getInt())
                             : element.getFloat());
    } while (consumeIf(TokenKind::Comma));
  }
  if (expect(TokenKind::RBracket, "to close the list"))
    return true;
  if (kind == Attribute::Kind::Ints)
    attribute = Attribute::getInts(ints);
  else if (kind == Attribute::Kind::Floats)
    attribute = Attribute::getFloats(floats);
  else
    attribute = Attribute::getStrings(strings);
  return false;
}

bool Parser::parseAttributeDict(AttributeMap &attributes) {
  if (expect(TokenKind::LBrace, "to open the attributes"))
    return true;
  if (token.kind != TokenKind::RBrace) {
    do {
      const char *location = token.location;
      std::string key;
      Attribute value;
      if (parseName(key, "an attribute name") ||
          expect(TokenKind::Equal, "after the attribute name") ||
          parseAttribute(value))
        return true;
      if (!attributes.emplace(key, std::move(value)).second)
        return emitError(location, "duplicate attribute '" + key + "'");
    } while (consumeIf(TokenKind::Comma));
  }
  return expect(TokenKind::RBrace, "to close the attributes");
}

bool Parser::parsePlanAnnotation(llvm::Optional<uint64_t> &offsetOut) {
  if (token.kind != TokenKind::LBrace || atBody())
    return false;
  consume();
  int64_t offset;
  if (expectKeyword("offset") ||
      expect(TokenKind::Equal, "after 'offset'"))
    return true;
  const char *location = token.location;
  if (parseInt(offset))
    return true;
  if (offset < 0)
    return emitError(location, "negative arena offset");
  offsetOut = static_cast<uint64_t>(offset);
  return expect(TokenKind::RBrace, "to close the plan annotation");
}

bool Parser::parseArgument() {
  const char *location = token.location;
  std::string key, name;
  TensorType type;
  if (parseValueName(key, name) ||
      expect(TokenKind::Colon, "after the argument name") || parseType(type))
    return true;
  Value *argument;
  if (isKeyword("weight")) {
    consume();
    if (consumeIf(TokenKind::Equal)) {
      std::vector<uint8_t> bytes;
      if (parseElements(type, bytes))
        return true;
      argument = module->addWeight(name, type, bytes);
    } else {
      argument = module->addElidedWeight(name, type);
    }
  } else {
    argument = module->addInput(name, type);
  }
  llvm::Optional<uint64_t> offset;
  if (defineValue(key, location, argument) || parsePlanAnnotation(offset))
    return true;
  argument->setArenaOffset(offset);
  return false;
}

bool Parser::parseResultTypes() {
  bool parenthesized = consumeIf(TokenKind::LParen);
  if (parenthesized && consumeIf(TokenKind::RParen))
    return false;
  do {
    TensorType type;
    if (parseType(type))
      return true;
    outputTypes.push_back(type);
  } while (parenthesized && consumeIf(TokenKind::Comma));
  return parenthesized && expect(TokenKind::RParen, "to close the result types");
}

bool Parser::parseNode() {
  const char *start = token.location;
  llvm::SmallVector<std::pair<std::string, const char *>, 2> resultKeys;
  llvm::SmallVector<std::string, 2> resultNames;
  do {
    const char *location = token.location;
    std::string key, name;
    if (parseValueName(key, name))
      return true;
    resultKeys.push_back({key, location});
    resultNames.push_back(name);
  } while (consumeIf(TokenKind::Comma));
  if (expect(TokenKind::Equal, "after the result names"))
    return true;

  const char *opLocation = token.location;
  std::string opName;
  if (parseName(opName, "an op name"))
    return true;
  const OpInfo *opInfo = lookupOp(opName);
  if (!opInfo)
    return emitError(opLocation, "unknown op '" + opName + "'");

  llvm::SmallVector<Value *, 4> operands;
  if (expect(TokenKind::LParen, "to open the operands"))
    return true;
  if (token.kind != TokenKind::RParen) {
    do {
      Value *operand = nullptr;
      if (!consumeIf(TokenKind::Underscore) && parseValueRef(operand))
        return true;
      operands.push_back(operand);
    } while (consumeIf(TokenKind::Comma));
  }
  if (expect(TokenKind::RParen, "to close the operands"))
    return true;

  AttributeMap attributes;
  if (token.kind == TokenKind::LBrace && parseAttributeDict(attributes))
    return true;
  if (expect(TokenKind::Colon, "before the result types"))
    return true;

  // Types and plan annotations interleave; annotations are applied once the
  // node (and so its result values) exists.
  llvm::SmallVector<TensorType, 2> types;
  llvm::SmallVector<llvm::Optional<uint64_t>, 2> offsets;
  do {
    TensorType type;
    llvm::Optional<uint64_t> offset;
    if (parseType(type) || parsePlanAnnotation(offset))
      return true;
    types.push_back(type);
    offsets.push_back(offset);
  } while (consumeIf(TokenKind::Comma));
  if (types.size() != resultKeys.size())
    return emitError(start, llvm::Twine(resultKeys.size()) +
                                " result names but " +
                                llvm::Twine(types.size()) + " result types");

  std::string nodeName;
  if (isKeyword("loc")) {
    consume();
    if (expect(TokenKind::LParen, "after 'loc'"))
      return true;
    if (token.kind != TokenKind::String)
      return emitError("expected a quoted node name in loc(...)");
    nodeName = token.text;
    consume();
    if (expect(TokenKind::RParen, "to close 'loc('"))
      return true;
  }

  Node *node = body ? body->addNode(opInfo->code, operands, types,
                                    std::move(attributes))
                   : module->addNode(opInfo->code, operands, types,
                                     std::move(attributes));
  node->setName(nodeName);
  if (locations)
    locations->nodes[node] = locationString(start);
  for (unsigned i = 0; i < node->getNumResults(); ++i) {
    Value *result = node->getResult(i);
    result->setName(resultNames[i]);
    result->setArenaOffset(offsets[i]);
    if (defineValue(resultKeys[i].first, resultKeys[i].second, result))
      return true;
  }
  if (atBody())
    return parseBody(*node);
  return false;
}

bool Parser::parseBody(Node &node) {
  // The verifier rejects nesting too; refusing it here also bounds the
  // parser's recursion.
  if (body)
    return emitError("nested bodies are not supported");
  consume(); // '{'
  consume(); // '^'
  if (expectKeyword("bb") || expect(TokenKind::LParen, "to open the block "
                                                       "arguments"))
    return true;
  Region &region = node.createBody();
  unsigned outerScope = scope;
  Region *outerBody = body;
  scope = nextScope++;
  body = &region;
  auto leave = [&](bool failed) {
    scope = outerScope;
    body = outerBody;
    return failed;
  };
  if (token.kind != TokenKind::RParen) {
    do {
      const char *location = token.location;
      std::string key, name;
      TensorType type;
      llvm::Optional<uint64_t> offset;
      if (parseValueName(key, name) ||
          expect(TokenKind::Colon, "after the block argument name") ||
          parseType(type) || parsePlanAnnotation(offset))
        return leave(true);
      Value *argument = region.addArgument(type, name);
      argument->setArenaOffset(offset);
      if (defineValue(key, location, argument))
        return leave(true);
    } while (consumeIf(TokenKind::Comma));
  }
  if (expect(TokenKind::RParen, "to close the block arguments") ||
      expect(TokenKind::Colon, "after the block arguments"))
    return leave(true);
  while (!isKeyword("yield")) {
    if (token.kind == TokenKind::Eof || token.kind == TokenKind::RBrace ||
        isKeyword("return"))
      return leave(emitError("expected 'yield' before the end of the body"));
    if (parseNode())
      return leave(true);
  }
  consume(); // 'yield'
  llvm::SmallVector<Value *, 2> yielded;
  if (token.kind == TokenKind::Percent) {
    do {
      Value *value;
      if (parseValueRef(value))
        return leave(true);
      yielded.push_back(value);
    } while (consumeIf(TokenKind::Comma));
  }
  region.setYield(yielded);
  return leave(expect(TokenKind::RBrace, "to close the body"));
}

llvm::Expected<std::unique_ptr<Module>> Parser::parse() {
  module = std::make_unique<Module>();
  if (locations)
    locations->module = locationString(token.location);
  std::string moduleName;
  if (expectKeyword("func") || expect(TokenKind::At, "before the name") ||
      parseName(moduleName, "a function name after '@'"))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), errorText);
  module->setName(moduleName);
  bool failed = expect(TokenKind::LParen, "to open the arguments");
  if (!failed && token.kind != TokenKind::RParen) {
    do
      failed = parseArgument();
    while (!failed && consumeIf(TokenKind::Comma));
  }
  failed = failed || expect(TokenKind::RParen, "to close the arguments") ||
           expect(TokenKind::Arrow, "before the result types") ||
           parseResultTypes();
  if (!failed && isKeyword("attributes")) {
    consume();
    AttributeMap attributes;
    failed = parseAttributeDict(attributes);
    for (auto &entry : attributes)
      module->setAttribute(entry.first, entry.second);
  }
  failed = failed || expect(TokenKind::LBrace, "to open the body");
  while (!failed && !isKeyword("return")) {
    if (token.kind == TokenKind::Eof || token.kind == TokenKind::RBrace) {
      failed = emitError("expected 'return' before the end of the function");
      break;
    }
    if (isKeyword("yield")) {
      failed = emitError("'yield' outside a body");
      break;
    }
    failed = parseNode();
  }
  const char *returnLocation = token.location;
  llvm::SmallVector<Value *, 2> outputs;
  if (!failed) {
    consume(); // 'return'
    if (token.kind == TokenKind::Percent) {
      do {
        Value *output;
        failed = parseValueRef(output);
        outputs.push_back(output);
      } while (!failed && consumeIf(TokenKind::Comma));
    }
  }
  failed = failed || expect(TokenKind::RBrace, "to close the body");
  if (!failed && token.kind != TokenKind::Eof)
    failed = emitError("unexpected '" + token.spelling +
                       "' after the end of the function");
  if (!failed && outputs.size() != outputTypes.size())
    failed = emitError(returnLocation,
                       "return has " + llvm::Twine(outputs.size()) +
                           " values but the signature declares " +
                           llvm::Twine(outputTypes.size()) + " results");
  for (size_t i = 0; !failed && i < outputs.size(); ++i)
    if (outputs[i]->getType() != outputTypes[i])
      failed = emitError(returnLocation,
                         "return value " + llvm::Twine(i) + " has type " +
                             outputs[i]->getType().str() +
                             " but the signature declares " +
                             outputTypes[i].str());
  if (failed)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), errorText);
  module->setOutputs(outputs);
  return std::move(module);
}

llvm::Expected<std::unique_ptr<Module>>
parseModule(llvm::StringRef text, llvm::StringRef bufferName,
            SourceLocations *locations, unsigned firstLine) {
  // Leading newlines shift line numbers so that a chunk of a split file
  // reports the lines of the whole file.
  std::string padded(firstLine > 0 ? firstLine - 1 : 0, '\n');
  padded += text.str();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(padded, bufferName), llvm::SMLoc());
  return Parser(sourceMgr, locations).parse();
}

} // namespace ir
} // namespace snug
