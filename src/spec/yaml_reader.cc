// The only file that parses YAML. It drives libyaml's event parser (the
// parser PyYAML uses, which rejects what the YAML grammar rejects: a quoted
// scalar never closed, a key after a list at one level, and so on) and turns
// its events into our own Node tree, enforcing size, depth and node limits as
// it goes (so alias bombs and deep nesting fail fast). It also reports what
// libyaml accepts and a job spec must not hold: duplicate keys, aliases to
// unknown anchors, an anchor name defined twice, tags other than the core
// schema's, and a core tag on a value that does not have its form
// (`!!int abc`).

#include <fmt/format.h>
#include <yaml.h>

#include <algorithm>
#include <cctype>
#include <utility>
#include <unordered_map>
#include <unordered_set>

#include "common/strings.h"
#include "spec/yaml_tree.h"

namespace tau::spec {
namespace {

// Thrown inside the tree builder to stop parsing; caught in ReadYamlDocuments.
struct StopParsing {
  Location where;
  std::string message;
};

constexpr std::string_view kCoreTagPrefix = "tag:yaml.org,2002:";

size_t CountNodes(const Node& n) {
  size_t count = 1;
  for (const auto& item : n.items) count += CountNodes(item);
  for (const auto& [k, v] : n.entries) count += CountNodes(k) + CountNodes(v);
  return count;
}

bool IsPlainNull(std::string_view s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

bool IsCoreBool(std::string_view s) {
  return s == "true" || s == "True" || s == "TRUE" || s == "false" || s == "False" || s == "FALSE";
}

// YAML 1.2 core schema integer: decimal, 0o octal or 0x hex.
bool IsCoreInt(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  int base = 10;
  if (s.starts_with("0o")) {
    base = 8;
    s.remove_prefix(2);
  } else if (s.starts_with("0x")) {
    base = 16;
    s.remove_prefix(2);
  }
  if (s.empty()) return false;
  for (char c : s) {
    bool digit = base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                            : c >= '0' && c < static_cast<char>('0' + base);
    if (!digit) return false;
  }
  return true;
}

// YAML 1.2 core schema float (an integer is a float too).
bool IsCoreFloat(std::string_view s) {
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf" || s == "+.Inf" || s == "+.INF" ||
      s == "-.inf" || s == "-.Inf" || s == "-.INF" || s == ".nan" || s == ".NaN" || s == ".NAN") {
    return true;
  }
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  size_t i = 0, digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    size_t exp_start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == exp_start) return false;
  }
  return i == s.size();
}

std::string_view TagOf(const yaml_char_t* tag) {
  return tag ? std::string_view(reinterpret_cast<const char*>(tag)) : std::string_view();
}

// Owns one libyaml event for the scope of a loop turn.
struct Event {
  yaml_event_t e{};
  ~Event() { yaml_event_delete(&e); }
};

class TreeBuilder {
 public:
  TreeBuilder(std::string_view file, const ReadLimits& limits, Diagnostics* diags)
      : file_(file), limits_(limits), diags_(diags) {}

  bool done() const { return done_; }
  Node TakeRoot() { return std::move(root_); }
  void Reset() {
    done_ = false;
    root_ = Node();
    stack_.clear();
    anchors_.clear();
  }

  Location At(const yaml_mark_t& mark) const {
    return Location{std::string(file_), static_cast<int>(mark.line) + 1,
                    static_cast<int>(mark.column) + 1};
  }

  // Feeds one event (not stream or document start/end).
  void Handle(const yaml_event_t& e) {
    switch (e.type) {
      case YAML_ALIAS_EVENT: OnAlias(e); break;
      case YAML_SCALAR_EVENT: OnScalar(e); break;
      case YAML_SEQUENCE_START_EVENT:
        Open(Node::Kind::kSequence, e.start_mark, TagOf(e.data.sequence_start.tag),
             e.data.sequence_start.anchor);
        break;
      case YAML_MAPPING_START_EVENT:
        Open(Node::Kind::kMapping, e.start_mark, TagOf(e.data.mapping_start.tag),
             e.data.mapping_start.anchor);
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: Close(); break;
      default: break;
    }
  }

 private:
  struct Frame {
    Node node;
    std::string anchor;
    bool has_key = false;
    Node key;
    std::unordered_set<std::string> keys;
  };

  void OnAlias(const yaml_event_t& e) {
    std::string name(reinterpret_cast<const char*>(e.data.alias.anchor));
    auto it = anchors_.find(name);
    if (it == anchors_.end()) {
      throw StopParsing{At(e.start_mark), fmt::format("alias *{} refers to no anchor &{} before it", name, name)};
    }
    Count(it->second.second, e.start_mark);
    Add(Node(it->second.first), nullptr);
  }

  void OnScalar(const yaml_event_t& e) {
    Count(1, e.start_mark);
    const auto& sc = e.data.scalar;
    std::string_view tag = TagOf(sc.tag);
    Node n;
    n.location = At(e.start_mark);
    n.kind = Node::Kind::kScalar;
    n.scalar.assign(reinterpret_cast<const char*>(sc.value), sc.length);
    bool plain = sc.style == YAML_PLAIN_SCALAR_STYLE || sc.style == YAML_ANY_SCALAR_STYLE;
    if (tag.empty()) {
      if (plain && IsPlainNull(n.scalar)) {
        n.kind = Node::Kind::kNull;
      } else if (!plain) {
        n.quoted = true;
      }
    } else if (tag == "!") {
      n.quoted = true;  // the non-specific tag: a string
    } else if (tag.starts_with(kCoreTagPrefix)) {
      std::string_view type = tag.substr(kCoreTagPrefix.size());
      n.tag = std::string(type);
      CheckTaggedScalar(n, type);
    } else {
      diags_->Error(n.location, fmt::format("unsupported YAML tag \"{}\"; remove it", tag));
    }
    Add(std::move(n), sc.anchor);
  }

  // A core tag fixes the type; the text must have that type's form.
  void CheckTaggedScalar(Node& n, std::string_view type) {
    bool fits = true;
    if (type == "str") {
      n.quoted = true;
    } else if (type == "null") {
      fits = IsPlainNull(n.scalar);
      n.kind = Node::Kind::kNull;
    } else if (type == "bool") {
      fits = IsCoreBool(n.scalar);
    } else if (type == "int") {
      fits = IsCoreInt(n.scalar);
    } else if (type == "float") {
      fits = IsCoreFloat(n.scalar);
    } else {
      diags_->Error(n.location, fmt::format("unsupported YAML tag \"!!{}\"; remove it", type));
      return;
    }
    if (!fits) {
      diags_->Error(n.location, fmt::format("\"{}\" is not a valid !!{}; fix the value or remove the tag",
                                            ShortenUtf8(n.scalar, 40), type));
    }
  }

  void Count(size_t n, const yaml_mark_t& mark) {
    node_count_ += n;
    if (node_count_ > limits_.max_nodes) {
      throw StopParsing{At(mark), fmt::format("document is too large: more than {} values (counting "
                                              "each use of an alias); a job spec is much smaller",
                                              limits_.max_nodes)};
    }
  }

  void Open(Node::Kind kind, const yaml_mark_t& mark, std::string_view tag, const yaml_char_t* anchor) {
    Count(1, mark);
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      throw StopParsing{At(mark), fmt::format("nesting is deeper than {} levels", limits_.max_depth)};
    }
    Frame f;
    f.node.kind = kind;
    f.node.location = At(mark);
    if (anchor) f.anchor = reinterpret_cast<const char*>(anchor);
    std::string_view want = kind == Node::Kind::kMapping ? "map" : "seq";
    if (!tag.empty() && tag != "!" &&
        !(tag.starts_with(kCoreTagPrefix) && tag.substr(kCoreTagPrefix.size()) == want)) {
      diags_->Error(f.node.location, fmt::format("unsupported YAML tag \"{}\" on {}; remove it", tag,
                                                 kind == Node::Kind::kMapping ? "a mapping" : "a list"));
    }
    stack_.push_back(std::move(f));
  }

  void Close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    Add(std::move(f.node), f.anchor.empty() ? nullptr : f.anchor.c_str());
  }

  void Add(Node n, const void* anchor_name) {
    if (anchor_name) {
      // YAML lets a later anchor take over a name; parsers disagree on what an
      // alias then means (PyYAML refuses), so a document must not do it.
      std::string name = reinterpret_cast<const char*>(anchor_name);
      if (!anchors_.emplace(name, std::pair<Node, size_t>{n, CountNodes(n)}).second) {
        throw StopParsing{n.location, fmt::format("anchor &{} is defined twice; give each anchor its own name", name)};
      }
    }
    if (stack_.empty()) {
      root_ = std::move(n);
      done_ = true;
      return;
    }
    Frame& top = stack_.back();
    if (top.node.kind == Node::Kind::kSequence) {
      top.node.items.push_back(std::move(n));
      return;
    }
    if (!top.has_key) {
      if (n.kind != Node::Kind::kScalar) {
        throw StopParsing{n.location, n.kind == Node::Kind::kNull
                                          ? "empty mapping key"
                                          : "mapping keys must be plain text, not a list or mapping"};
      }
      if (!top.keys.insert(n.scalar).second) {
        diags_->Error(n.location, fmt::format("duplicate key \"{}\"", n.scalar));
        skip_value_ = true;
      }
      top.key = std::move(n);
      top.has_key = true;
      return;
    }
    top.has_key = false;
    if (skip_value_) {
      skip_value_ = false;
      return;
    }
    // An empty value points at its key, which is where a reader looks.
    if (n.kind == Node::Kind::kNull) n.location = top.key.location;
    top.node.entries.push_back({std::move(top.key), std::move(n)});
  }

  std::string_view file_;
  const ReadLimits& limits_;
  Diagnostics* diags_;
  std::vector<Frame> stack_;
  std::unordered_map<std::string, std::pair<Node, size_t>> anchors_;
  size_t node_count_ = 0;
  bool skip_value_ = false;
  bool done_ = false;
  Node root_;
};

// libyaml's messages name the grammar; say what usually causes them, and
// where the construct that failed began.
void ReportParserError(const yaml_parser_t& p, std::string_view file, Diagnostics* diags) {
  auto at = [&](const yaml_mark_t& m) {
    return Location{std::string(file), static_cast<int>(m.line) + 1, static_cast<int>(m.column) + 1};
  };
  std::string problem = p.problem ? p.problem : "unknown error";
  std::string context = p.context ? p.context : "";
  // The file (or the document) ends inside the quotes: the string was
  // never closed, and the place to look is where it opens.
  if (context == "while scanning a quoted scalar" &&
      (problem == "found unexpected end of stream" || problem == "found unexpected document indicator")) {
    diags->Error(at(p.context_mark),
                 "invalid YAML: this quoted string is never closed (its closing quote is missing)");
    return;
  }
  if (p.error == YAML_READER_ERROR) {
    diags->Error(Location{std::string(file), 1, 1}, fmt::format("invalid YAML: {}", problem));
    return;
  }
  Location c = at(p.context_mark);
  std::string opened = fmt::format("it opens at line {} column {}", c.line, c.column);
  std::string message = "invalid YAML: " + problem;
  if (problem == "mapping values are not allowed in this context") {
    message = "invalid YAML: unexpected ':' (a plain value cannot contain \": \"; quote it)";
  } else if (context == "while parsing a flow mapping") {
    message = fmt::format("invalid YAML: '{{' without a matching '}}' ({})", opened);
  } else if (context == "while parsing a flow sequence") {
    message = fmt::format("invalid YAML: '[' without a matching ']' ({})", opened);
  } else if (context == "while parsing a block mapping") {
    message = fmt::format("invalid YAML: a mapping is not closed or is badly indented ({})", opened);
  } else if (context == "while parsing a block collection") {
    message = fmt::format("invalid YAML: a list is not closed or is badly indented ({})", opened);
  } else if (!context.empty()) {
    message += fmt::format(" ({} that starts at line {} column {})",
                           context.starts_with("while ") ? context.substr(6) : context, c.line, c.column);
  }
  diags->Error(at(p.problem_mark), message);
}

// Where the first byte that is not part of valid UTF-8 is (line 0: none).
// Overlong forms, surrogates and code points past U+10FFFF are invalid.
Location FirstInvalidUtf8(std::string_view s, std::string_view file) {
  int line = 1, column = 1;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; ok && k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      ok = (cc >> 6) == 0x2;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (ok) {
      static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (!ok) return Location{std::string(file), line, column};
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += len;
  }
  return Location{};
}

// 1-based number of the first line whose indentation contains a tab, or 0.
int FirstTabIndentedLine(std::string_view text) {
  int line = 1;
  bool at_line_start = true;
  for (char c : text) {
    if (c == '\n') {
      ++line;
      at_line_start = true;
    } else if (at_line_start && c == '\t') {
      return line;
    } else if (c != ' ') {
      at_line_start = false;
    }
  }
  return 0;
}

}  // namespace

const Node* Node::Find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k.scalar == key) return &v;
  }
  return nullptr;
}

Node* Node::Find(std::string_view key) {
  for (auto& [k, v] : entries) {
    if (k.scalar == key) return &v;
  }
  return nullptr;
}

std::string Node::Describe() const {
  switch (kind) {
    case Kind::kNull: return "an empty value";
    case Kind::kSequence: return "a list";
    case Kind::kMapping: return "a mapping";
    case Kind::kScalar: break;
  }
  std::string shown = ShortenUtf8(scalar, 40);
  return quoted ? fmt::format("the string \"{}\"", shown) : fmt::format("\"{}\"", shown);
}

namespace {

// Where the first control character is (other than tab, LF and CR: YAML
// allows no others raw, NUL included), with the character; line 0 when
// none.
std::pair<Location, unsigned char> FirstControlCharacter(std::string_view s, std::string_view file) {
  int line = 1, column = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      return {Location{std::string(file), line, column}, c};
    }
    if (c == '\n') {
      ++line;
      column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++column;
    }
  }
  return {Location{}, 0};
}

bool IsHexDigit(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// JSON writes a character outside the Basic Multilingual Plane as a
// surrogate pair of escapes (json.dumps' "\ud83d\ude00"), which YAML
// does not take; YAML writes it "\U0001f600". In a JSON document (it
// starts with '{' or '['), backslashes occur only inside strings, so the
// pairs can be rewritten as they stand. Columns after one on its line move
// 2 to the left. Empty when there is nothing to rewrite.
std::string JsonSurrogatePairsAsYaml(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || (text[first] != '{' && text[first] != '[')) return "";
  std::string out;
  size_t copied = 0;
  for (size_t i = text.find("\\u"); i != std::string_view::npos && i + 12 <= text.size();
       i = text.find("\\u", i + 1)) {
    // Only an escape: an even number of backslashes before this one.
    size_t slashes = 0;
    while (slashes < i && text[i - 1 - slashes] == '\\') ++slashes;
    if (slashes % 2 != 0) continue;
    std::string_view high = text.substr(i + 2, 4), low = text.substr(i + 8, 4);
    if (text.substr(i + 6, 2) != "\\u" || !std::all_of(high.begin(), high.end(), IsHexDigit) ||
        !std::all_of(low.begin(), low.end(), IsHexDigit)) {
      continue;
    }
    const unsigned hi = std::stoul(std::string(high), nullptr, 16), lo = std::stoul(std::string(low), nullptr, 16);
    if (hi < 0xD800 || hi > 0xDBFF || lo < 0xDC00 || lo > 0xDFFF) continue;
    const unsigned cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
    out.append(text.substr(copied, i - copied));
    out.append(fmt::format("\\U{:08x}", cp));
    copied = i + 12;
    i += 11;
  }
  if (copied == 0) return "";
  out.append(text.substr(copied));
  return out;
}

}  // namespace

bool ReadYamlDocuments(std::string_view text, std::string_view file_name, const ReadLimits& limits,
                       std::vector<Node>* documents, Diagnostics* diags) {
  if (std::string rewritten = JsonSurrogatePairsAsYaml(text); !rewritten.empty()) {
    return ReadYamlDocuments(rewritten, file_name, limits, documents, diags);
  }
  Location file_start{std::string(file_name), 1, 1};
  if (text.size() > limits.max_bytes) {
    diags->Error(file_start, fmt::format("file is {} bytes; at most {} bytes are read", text.size(),
                                         limits.max_bytes));
    return false;
  }
  if (auto [at, c] = FirstControlCharacter(text, file_name); at.line > 0) {
    diags->Error(at, c == 0 ? std::string("the file holds a NUL byte here; a YAML file is UTF-8 text")
                            : fmt::format("a control character (U+{:04X}) is not allowed in YAML; write it as an "
                                          "escape in double quotes (\"\\x{:02x}\")",
                                          c, c));
    return false;
  }
  if (Location bad = FirstInvalidUtf8(text, file_name); bad.line > 0) {
    diags->Error(bad, "the file is not valid UTF-8 text; save it as UTF-8");
    return false;
  }
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) {
    diags->Error(file_start, "out of memory starting the YAML parser");
    return false;
  }
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  yaml_parser_set_encoding(&parser, YAML_UTF8_ENCODING);
  TreeBuilder builder(file_name, limits, diags);
  bool ok = true;
  try {
    for (bool end = false; !end;) {
      Event ev;
      if (!yaml_parser_parse(&parser, &ev.e)) {
        // libyaml reports tab indentation as some later, unrelated error;
        // name the first tab-indented line instead when there is one before it.
        int tab_line = FirstTabIndentedLine(text);
        if (tab_line > 0 && tab_line <= static_cast<int>(parser.problem_mark.line) + 1) {
          diags->Error(Location{std::string(file_name), tab_line, 1},
                       "invalid YAML: a tab indents this line; YAML indents with spaces only");
        } else {
          ReportParserError(parser, file_name, diags);
        }
        ok = false;
        break;
      }
      switch (ev.e.type) {
        case YAML_STREAM_END_EVENT: end = true; break;
        case YAML_DOCUMENT_END_EVENT:
          if (builder.done()) {
            Node doc = builder.TakeRoot();
            if (!doc.IsNull()) documents->push_back(std::move(doc));
          }
          builder.Reset();
          break;
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_START_EVENT:
        case YAML_NO_EVENT: break;
        default: builder.Handle(ev.e); break;
      }
    }
  } catch (const StopParsing& stop) {
    diags->Error(stop.where, stop.message);
    ok = false;
  }
  yaml_parser_delete(&parser);
  if (!ok) documents->clear();
  return ok;
}

bool ReadYaml(std::string_view text, std::string_view file_name, const ReadLimits& limits,
              Node* root, Diagnostics* diags) {
  std::vector<Node> documents;
  if (!ReadYamlDocuments(text, file_name, limits, &documents, diags)) return false;
  if (documents.size() > 1) {
    diags->Error(documents[1].location,
                 "the file holds several YAML documents; a job spec file holds exactly one "
                 "(remove the '---' separators)");
    return false;
  }
  if (documents.empty()) {
    *root = Node();
    root->location = Location{std::string(file_name), 1, 1};
    return true;
  }
  *root = std::move(documents[0]);
  return true;
}

}  // namespace tau::spec
