// Differential fuzz target for the YAML reader. The reader (libyaml events
// plus the checks in src/spec/yaml_reader.cc) and yaml-cpp, an independent
// parser, read the same bytes; whenever both accept, they must build the
// same documents: same kinds, same scalar text, same keys in the same order.
// A difference means one of them misreads YAML, which is how a parser that
// silently accepts a broken document (a quote never closed) shows itself.
// Acceptance alone is not compared: yaml-cpp accepts malformed documents
// the reader rightly rejects (docs/development.md#yaml-parsing). Inputs with
// a carriage return not followed by a newline are skipped: YAML makes a lone
// CR a line break, yaml-cpp keeps it in the text ("a\r \n" reads as "a\r").
// So are inputs with an anchor or alias name outside [A-Za-z0-9_-]: libyaml
// ends the name there as YAML 1.1 does, yaml-cpp reads on as YAML 1.2 does
// (`&x:y` names "x" for one, "x:y" for the other). And a document count
// that differs on an input with a bare `!` tag is tolerated: yaml-cpp ends
// a top-level plain scalar after a bare `!` at the line's end, so `! :x`
// then `2` is two documents to it and the one string ":x 2" to libyaml and
// PyYAML.

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "spec/yaml_tree.h"

namespace {

using tau::spec::Node;

// Empty string when `ours` and `theirs` hold the same data, else where they differ.
std::string Compare(const Node& ours, const YAML::Node& theirs, const std::string& path) {
  auto differ = [&](const std::string& what) { return path + ": " + what; };
  switch (ours.kind) {
    case Node::Kind::kNull:
      // yaml-cpp keeps `!!null` text as a scalar carrying the tag.
      if (theirs.IsScalar() && theirs.Tag() == "tag:yaml.org,2002:null") return "";
      if (!theirs.IsNull()) return differ("null here, not in yaml-cpp");
      return "";
    case Node::Kind::kScalar:
      // `!` alone is an empty string (the non-specific tag makes it one);
      // yaml-cpp calls it null.
      if (theirs.IsNull() && ours.quoted && ours.scalar.empty()) return "";
      if (!theirs.IsScalar()) return differ("scalar \"" + ours.scalar + "\" here, not in yaml-cpp");
      if (theirs.Scalar() != ours.scalar) return differ("\"" + ours.scalar + "\" vs \"" + theirs.Scalar() + "\"");
      return "";
    case Node::Kind::kSequence: {
      if (!theirs.IsSequence() || theirs.size() != ours.items.size()) return differ("list differs");
      for (size_t i = 0; i < ours.items.size(); ++i) {
        std::string d = Compare(ours.items[i], theirs[i], path + "[" + std::to_string(i) + "]");
        if (!d.empty()) return d;
      }
      return "";
    }
    case Node::Kind::kMapping: {
      if (!theirs.IsMap() || theirs.size() != ours.entries.size()) return differ("mapping differs");
      size_t i = 0;
      for (auto it = theirs.begin(); it != theirs.end(); ++it, ++i) {
        const auto& [key, value] = ours.entries[i];
        std::string d = Compare(key, it->first, path + ".<key " + std::to_string(i) + ">");
        if (d.empty()) d = Compare(value, it->second, path + "." + key.scalar);
        if (!d.empty()) return d;
      }
      return "";
    }
  }
  return "";
}

// Whether `text` holds a bare `!` tag: a `!` that starts a token and is
// followed by a blank or the end.
bool HasBareTag(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '!') continue;
    const bool starts = i == 0 || std::string_view(" \t\n-[{,:?").find(text[i - 1]) != std::string_view::npos;
    const bool bare = i + 1 == text.size() || text[i + 1] == ' ' || text[i + 1] == '\t' || text[i + 1] == '\n' ||
                      text[i + 1] == '\r';
    if (starts && bare) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  for (size_t cr = text.find('\r'); cr != std::string_view::npos; cr = text.find('\r', cr + 1)) {
    if (cr + 1 == text.size() || text[cr + 1] != '\n') return 0;  // yaml-cpp misreads a lone CR
  }
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '&' && text[i] != '*') continue;
    for (size_t j = i + 1; j < text.size(); ++j) {
      char c = text[j];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == '[' || c == ']' || c == '{' ||
          c == '}') {
        break;
      }
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return 0;
    }
  }
  std::vector<Node> ours;
  tau::spec::Diagnostics diags;
  if (!tau::spec::ReadYamlDocuments(text, "fuzz.yaml", {}, &ours, &diags) || diags.has_errors()) return 0;
  std::vector<YAML::Node> theirs;
  try {
    for (const YAML::Node& doc : YAML::LoadAll(std::string(text))) {
      if (!doc.IsNull() && !(doc.IsScalar() && doc.Scalar().empty())) theirs.push_back(doc);
    }
  } catch (const std::exception&) {
    return 0;  // yaml-cpp rejects some valid YAML; only agreement on data is checked
  }
  // A document that is only an empty string (`!`, `""`) is null to yaml-cpp
  // and dropped there; drop it here too.
  std::erase_if(ours, [](const Node& doc) { return doc.IsScalar() && doc.scalar.empty(); });
  std::string difference;
  if (ours.size() != theirs.size() && HasBareTag(text)) return 0;  // yaml-cpp's bare-tag deviation
  if (ours.size() != theirs.size()) {
    difference = "the reader found " + std::to_string(ours.size()) + " documents, yaml-cpp " +
                 std::to_string(theirs.size());
  }
  for (size_t i = 0; difference.empty() && i < ours.size(); ++i) {
    difference = Compare(ours[i], theirs[i], "document " + std::to_string(i));
  }
  if (!difference.empty()) {
    std::fprintf(stderr, "the reader and yaml-cpp read different data: %s\n", difference.c_str());
    std::abort();
  }
  return 0;
}
