#include "spec/overrides.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace tau::spec {
namespace {

void Relocate(Node* n, const Location& where) {
  n->location = where;
  for (auto& item : n->items) Relocate(&item, where);
  for (auto& [k, v] : n->entries) {
    Relocate(&k, where);
    Relocate(&v, where);
  }
}

}  // namespace

void ApplyOverride(std::string_view assignment, Node* root, Diagnostics* diags) {
  Location here{fmt::format("--set {}", assignment), 0, 0};
  size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    diags->Error(here, "expected PATH=VALUE, for example --set compute.gpus=2");
    return;
  }
  std::vector<std::string> path = Split(assignment.substr(0, eq), '.');
  for (const std::string& segment : path) {
    if (segment.empty()) {
      diags->Error(here, fmt::format("\"{}\" is not a field path (empty part between dots)",
                                     assignment.substr(0, eq)));
      return;
    }
  }
  Node value;
  ReadLimits limits;
  limits.max_bytes = 64 * 1024;
  Diagnostics value_diags;
  if (!ReadYaml(assignment.substr(eq + 1), here.file, limits, &value, &value_diags) ||
      value_diags.has_errors()) {
    for (const Diagnostic& d : value_diags.items()) {
      diags->Error(here, fmt::format("the value is not valid YAML: {}", d.message));
    }
    return;
  }
  Relocate(&value, here);

  if (root->IsNull()) {
    root->kind = Node::Kind::kMapping;
  }
  Node* cur = root;
  std::string walked;
  for (size_t i = 0; i < path.size(); ++i) {
    if (cur->IsNull()) cur->kind = Node::Kind::kMapping;
    if (!cur->IsMapping()) {
      diags->Error(here, fmt::format("cannot set a field inside \"{}\": it is {}, not a mapping",
                                     walked, cur->Describe()));
      return;
    }
    walked = walked.empty() ? path[i] : walked + "." + path[i];
    Node* next = cur->Find(path[i]);
    if (next == nullptr) {
      Node key;
      key.kind = Node::Kind::kScalar;
      key.scalar = path[i];
      key.location = here;
      Node child;
      child.location = here;
      cur->entries.push_back({std::move(key), std::move(child)});
      next = &cur->entries.back().value;
    }
    if (i + 1 == path.size()) {
      *next = value;
      return;
    }
    cur = next;
  }
}

}  // namespace tau::spec
