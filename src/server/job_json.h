#pragma once

#include <nlohmann/json_fwd.hpp>

#include "server/state_view.h"
#include "store/records.h"

namespace tau::server {

// The job object of the API and of `tau ... -o json` (docs/api.md). Field
// names are stable; times are RFC 3339 strings or null.
nlohmann::json JobToJson(const JobView& job);
nlohmann::json EventToJson(const store::EventRecord& event);

}  // namespace tau::server
