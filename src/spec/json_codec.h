#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "spec/job_spec.h"

namespace tau::spec {

// The resolved spec as JSON, every field present with its default applied;
// keys sorted. Quantities and durations are strings in canonical form
// ("64Gi", "30s"). The canonical text (JobSpecToJson with indent -1) is what
// the spec's sha256 is computed over. It decodes back to an equal JobSpec
// through the YAML decoder (JSON is YAML).
nlohmann::json JobSpecToJsonValue(const JobSpec& spec);
std::string JobSpecToJson(const JobSpec& spec, int indent = -1);

// sha256 of the canonical JSON, 64 hex characters.
std::string JobSpecSha256(const JobSpec& spec);

// A JSON Schema (draft 2020-12) of the spec, from the field catalogue.
std::string JobSpecJsonSchema();

}  // namespace tau::spec
