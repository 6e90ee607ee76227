#pragma once

#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace tau::cli {

// Folds the routine `Checkpoint` events of a timeline (events as the API
// gives them, oldest first): within one attempt of one job (an attempt
// starts at its `Admitted` event), two or more Checkpoint events become a
// single row where the last of them was, "N checkpoints, newest NAME
// (tau events --all lists each)". Other events are kept as they are.
std::vector<nlohmann::json> FoldCheckpointEvents(const std::vector<nlohmann::json>& events);

}  // namespace tau::cli
