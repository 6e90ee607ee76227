#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace tau::cli {

// How evidence capsule `b` differs from `a` (docs/evidence.md), as lines
// grouped under "spec:", "code:", "git:", "environment:", "python:" and
// "host:" headings; a section without differences is left out. Empty when
// they ran the same spec, code and environment on the same kind of host.
std::vector<std::string> DiffCapsules(const nlohmann::json& a, const nlohmann::json& b);

// "a.b[2].c" -> value text, for every leaf of `value`.
void FlattenJson(const nlohmann::json& value, const std::string& prefix, std::vector<std::pair<std::string, std::string>>* out);

}  // namespace tau::cli
