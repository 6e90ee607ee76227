#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace tau::render {

// Writes a JSON value as block-style YAML the way `kubectl get -o yaml` does:
// keys in the value's order (sorted for nlohmann::json), lists at their
// key's indentation, strings quoted only when YAML would read them as
// something else ("0", "true", "null", ": " inside, ...), multi-line strings
// as literal blocks. The output parses back to the same value.
std::string EmitYaml(const nlohmann::json& value);

// True when `text` must be quoted to stay a string in YAML 1.1 and 1.2.
bool NeedsQuotes(std::string_view text);

}  // namespace tau::render
