// Differential fuzz target for the YAML reader. The reader (libyaml events
// plus the checks in src/spec/yaml_reader.cc) and yaml-cpp, an independent
// parser, read the same bytes; whenever both accept, they must build the
// same documents: same kinds, same scalar text, same keys in the same order.
// A difference means one of them misreads YAML, which is how a parser that
// silently accepts a broken document (a quote never closed) shows itself.
// Acceptance alone is not compared: yaml-cpp accepts malformed documents
// the reader rightly rejects (docs/development.md#yaml-parsing).

#include <yaml-cpp/yaml.h>

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
      if (!theirs.IsNull()) return differ("null here, not in yaml-cpp");
      return "";
    case Node::Kind::kScalar:
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<Node> ours;
  tau::spec::Diagnostics diags;
  if (!tau::spec::ReadYamlDocuments(text, "fuzz.yaml", {}, &ours, &diags) || diags.has_errors()) return 0;
  std::vector<YAML::Node> theirs;
  try {
    for (const YAML::Node& doc : YAML::LoadAll(std::string(text))) {
      if (!doc.IsNull()) theirs.push_back(doc);
    }
  } catch (const std::exception&) {
    return 0;  // yaml-cpp rejects some valid YAML; only agreement on data is checked
  }
  std::string difference;
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
