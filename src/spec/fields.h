#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tau::spec {

// The catalogue of spec fields: one entry per dotted path, with the text
// that `tau explain`, `tau schema` and docs/spec.md show. The decoder uses
// it to reject unknown keys with a did-you-mean.
enum class FieldType {
  kObject,
  kInteger,
  kString,
  kQuantity,    // Kubernetes quantity, as a string or a number
  kDuration,    // "30s", "1h30m"
  kEnum,        // one of `values`
  kStringList,
  kStringMap,
};

struct FieldDoc {
  std::string_view path;          // "compute.gpus"
  FieldType type;
  std::string_view type_text;     // "integer >= 0"
  std::string_view default_text;  // "0", or "" when none / required
  bool required = false;
  std::string_view description;
  std::string_view example;       // a YAML fragment
  std::vector<std::string_view> values = {};  // kEnum
  std::string_view pattern = {};  // a regular expression for strings and list items
  // kInteger: the accepted range, which the decoder and the JSON Schema
  // both take from here.
  int64_t minimum = 0;
  int64_t maximum = 0;
};

std::span<const FieldDoc> AllFields();

// The field at `path`, or nullptr.
const FieldDoc* FindField(std::string_view path);

// Names of the direct children of `parent` ("" for the top level), in
// catalogue order.
std::vector<std::string_view> ChildFieldNames(std::string_view parent);

}  // namespace tau::spec

namespace tau::spec {

// The field reference of docs/spec.md (Markdown), generated from the
// catalogue so the document cannot drift from the code.
std::string FieldReferenceMarkdown();

}  // namespace tau::spec
