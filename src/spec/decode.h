#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "spec/diagnostics.h"
#include "spec/job_spec.h"
#include "spec/yaml_tree.h"

namespace tau::spec {

// Where each value of a decoded spec was written. Keys are field paths as
// they appear in messages: "compute.gpus", "run.args[1]", "runtime.env.HOME";
// "" is the document itself.
class PositionMap {
 public:
  void Set(std::string path, Location where) { map_[std::move(path)] = std::move(where); }
  bool Has(std::string_view path) const { return map_.find(std::string(path)) != map_.end(); }
  // The location of `path`, else of its nearest parent that has one.
  Location At(std::string_view path) const;

 private:
  std::map<std::string, Location> map_;
};

// Decodes a parsed document into `spec` (which starts with defaults) and
// applies the defaults that depend on other fields. Every problem is added
// to `diags`; the spec is meaningful only when no error was added.
void DecodeJobSpec(const Node& root, JobSpec* spec, PositionMap* positions, Diagnostics* diags);

// The cross-field rules (torchrun needs a .py entrypoint, workers > 1 needs
// a launcher that can start a gang, ...). Adds errors and warnings.
void ValidateJobSpec(const JobSpec& spec, const PositionMap& positions, Diagnostics* diags);

// What is wrong with `name` as the metadata.name of the objects `spec`
// renders to, beyond the DNS-1123 label form (a rayjob's name length, a
// gang's Service name and its pods' hostnames NAME-INDEX); empty when
// nothing. Used for the spec's name and for `tau render --object-name`.
std::vector<std::string> WorkloadNameProblems(std::string_view name, const JobSpec& spec);

}  // namespace tau::spec
