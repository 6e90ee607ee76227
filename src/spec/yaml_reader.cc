// The only file that uses yaml-cpp. It turns parser events into our own Node
// tree, enforcing size, depth and node limits as it goes (so alias bombs and
// deep nesting fail fast), and reports duplicate keys, which yaml-cpp accepts.

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "common/strings.h"
#include "spec/yaml_tree.h"

namespace tau::spec {
namespace {

// Thrown inside the event handler to stop parsing; caught in ReadYaml.
struct StopParsing {
  Location where;
  std::string message;
};

size_t CountNodes(const Node& n) {
  size_t count = 1;
  for (const auto& item : n.items) count += CountNodes(item);
  for (const auto& [k, v] : n.entries) count += CountNodes(k) + CountNodes(v);
  return count;
}

bool IsPlainNull(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

class TreeBuilder final : public YAML::EventHandler {
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

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Count(1, mark);
    Node n;
    n.kind = Node::Kind::kNull;
    n.location = At(mark);
    Add(std::move(n), anchor);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) throw StopParsing{At(mark), "alias to an unknown anchor"};
    Count(it->second.second, mark);
    Add(Node(it->second.first), 0);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    Count(1, mark);
    Node n;
    n.location = At(mark);
    if (tag == "?" && IsPlainNull(value)) {
      n.kind = Node::Kind::kNull;
    } else {
      n.kind = Node::Kind::kScalar;
      n.scalar = value;
      if (tag == "!" || tag == "tag:yaml.org,2002:str") {
        n.quoted = true;
      } else if (tag == "tag:yaml.org,2002:null") {
        n.kind = Node::Kind::kNull;
      } else if (tag != "?" && tag != "tag:yaml.org,2002:int" &&
                 tag != "tag:yaml.org,2002:float" && tag != "tag:yaml.org,2002:bool") {
        diags_->Error(n.location, fmt::format("unsupported YAML tag \"{}\"; remove it", tag));
      }
    }
    Add(std::move(n), anchor);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(Node::Kind::kSequence, mark, tag, anchor);
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(Node::Kind::kMapping, mark, tag, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Frame {
    Node node;
    YAML::anchor_t anchor = 0;
    bool has_key = false;
    Node key;
    std::unordered_set<std::string> keys;
  };

  Location At(const YAML::Mark& mark) const {
    return Location{std::string(file_), mark.line + 1, mark.column + 1};
  }

  void Count(size_t n, const YAML::Mark& mark) {
    node_count_ += n;
    if (node_count_ > limits_.max_nodes) {
      throw StopParsing{At(mark), fmt::format("document is too large: more than {} values (counting "
                                              "each use of an alias); a job spec is much smaller",
                                              limits_.max_nodes)};
    }
  }

  void Open(Node::Kind kind, const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor) {
    Count(1, mark);
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) {
      throw StopParsing{At(mark), fmt::format("nesting is deeper than {} levels", limits_.max_depth)};
    }
    Frame f;
    f.node.kind = kind;
    f.node.location = At(mark);
    f.anchor = anchor;
    if (tag != "?" && tag != "!" && tag != "tag:yaml.org,2002:map" && tag != "tag:yaml.org,2002:seq") {
      diags_->Error(f.node.location, fmt::format("unsupported YAML tag \"{}\"; remove it", tag));
    }
    stack_.push_back(std::move(f));
  }

  void Close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    Add(std::move(f.node), f.anchor);
  }

  void Add(Node n, YAML::anchor_t anchor) {
    if (anchor != 0) anchors_[anchor] = {n, CountNodes(n)};
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
  std::unordered_map<YAML::anchor_t, std::pair<Node, size_t>> anchors_;
  size_t node_count_ = 0;
  bool skip_value_ = false;
  bool done_ = false;
  Node root_;
};

// yaml-cpp's messages are terse; say what usually causes them.
std::string ExplainParserMessage(const std::string& msg) {
  if (msg == "illegal map value") {
    return "invalid YAML: unexpected ':' (a plain value cannot contain \": \"; quote it)";
  }
  if (msg == "end of map not found") return "invalid YAML: a mapping is not closed or is badly indented";
  if (msg == "end of sequence not found") return "invalid YAML: a list is not closed or is badly indented";
  if (msg == "end of sequence flow not found") return "invalid YAML: '[' without a matching ']'";
  if (msg == "end of map flow not found") return "invalid YAML: '{' without a matching '}'";
  if (msg.find("tab") != std::string::npos) return "invalid YAML: tabs cannot indent YAML; use spaces";
  return "invalid YAML: " + msg;
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

bool ReadYamlDocuments(std::string_view text, std::string_view file_name, const ReadLimits& limits,
                       std::vector<Node>* documents, Diagnostics* diags) {
  Location file_start{std::string(file_name), 1, 1};
  if (text.size() > limits.max_bytes) {
    diags->Error(file_start, fmt::format("file is {} bytes; at most {} bytes are read", text.size(),
                                         limits.max_bytes));
    return false;
  }
  if (text.find('\0') != std::string_view::npos) {
    diags->Error(file_start, "file contains NUL bytes; a job spec is UTF-8 text");
    return false;
  }
  if (Location bad = FirstInvalidUtf8(text, file_name); bad.line > 0) {
    diags->Error(bad, "the file is not valid UTF-8 text; save it as UTF-8");
    return false;
  }
  std::istringstream in{std::string(text)};
  TreeBuilder builder(file_name, limits, diags);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
      if (builder.done()) {
        Node doc = builder.TakeRoot();
        if (!doc.IsNull()) documents->push_back(std::move(doc));
      }
      builder.Reset();
    }
  } catch (const StopParsing& stop) {
    diags->Error(stop.where, stop.message);
    return false;
  } catch (const YAML::Exception& e) {
    // yaml-cpp reports tab indentation as some later, unrelated error; name
    // the first tab-indented line instead when there is one before it.
    if (int tab_line = FirstTabIndentedLine(text); tab_line > 0 && tab_line <= e.mark.line + 1) {
      diags->Error(Location{std::string(file_name), tab_line, 1},
                   "invalid YAML: a tab indents this line; YAML indents with spaces only");
      return false;
    }
    diags->Error(Location{std::string(file_name), e.mark.line + 1, e.mark.column + 1},
                 ExplainParserMessage(e.msg));
    return false;
  } catch (const std::exception& e) {
    diags->Error(file_start, fmt::format("invalid YAML: {}", e.what()));
    return false;
  }
  return true;
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
