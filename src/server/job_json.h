#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "server/state_view.h"
#include "store/records.h"

namespace tau::server {

// The job object of the API and of `tau ... -o json` (docs/api.md). Field
// names are stable; times are RFC 3339 strings or null.
nlohmann::json JobToJson(const JobView& job);
nlohmann::json EventToJson(const store::EventRecord& event);

// An RFC 3339 time of milliseconds since the epoch, or null.
nlohmann::json TimeToJson(const std::optional<int64_t>& ms);
// The value, or null.
nlohmann::json OptionalToJson(const std::optional<int64_t>& value);
// An attempt's flavors ("resource=flavor,...") as {"resource": "flavor"}.
nlohmann::json FlavorsToJson(const std::string& flavors);

}  // namespace tau::server
