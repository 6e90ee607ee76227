#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spec/diagnostics.h"

namespace tau::spec {

struct MapEntry;

// A YAML document as a plain tree with source positions, independent of the
// YAML library. Aliases are expanded; keys are scalars.
struct Node {
  enum class Kind { kNull, kScalar, kSequence, kMapping };

  Kind kind = Kind::kNull;
  Location location;
  // kScalar: the text as written (without quotes).
  std::string scalar;
  // kScalar: true when the text was quoted, a block scalar or tagged !!str,
  // so it is a string and never a number.
  bool quoted = false;
  // kScalar or kNull: the core-schema tag written on the value ("int",
  // "float", "bool", "str", "null" for `!!int` ...), empty when none. The
  // reader has checked the text has that type's form; a decoder rejects a tag
  // that contradicts the field's type.
  std::string tag;
  // kSequence.
  std::vector<Node> items;
  // kMapping, in document order; keys are kScalar nodes and unique.
  std::vector<MapEntry> entries;

  bool IsNull() const { return kind == Kind::kNull; }
  bool IsScalar() const { return kind == Kind::kScalar; }
  bool IsSequence() const { return kind == Kind::kSequence; }
  bool IsMapping() const { return kind == Kind::kMapping; }

  // kMapping only: the value under `key`, or nullptr.
  const Node* Find(std::string_view key) const;
  Node* Find(std::string_view key);

  // "a mapping", "a list", "null", "the string \"x\"", "5".
  std::string Describe() const;
};

// One key/value pair of a mapping.
struct MapEntry {
  Node key;
  Node value;
};

// Limits that keep hostile input from exhausting time or memory.
struct ReadLimits {
  size_t max_bytes = 1 << 20;    // 1 MiB
  int max_depth = 32;            // nesting of mappings and lists
  size_t max_nodes = 20000;      // after expanding aliases
};

// Parses `text` as exactly one YAML document. Problems (syntax errors with
// their position, duplicate keys, several documents, limits) are added to
// `diags`; returns false when no usable tree came out. An empty document
// yields a kNull root and true.
bool ReadYaml(std::string_view text, std::string_view file_name, const ReadLimits& limits,
              Node* root, Diagnostics* diags);

// Parses every document of a multi-document file (Kubernetes manifests);
// empty documents are skipped. The node limit counts the whole file.
bool ReadYamlDocuments(std::string_view text, std::string_view file_name, const ReadLimits& limits,
                       std::vector<Node>* documents, Diagnostics* diags);

}  // namespace tau::spec
