#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/status.h"

namespace tau::spec {

// Checks the JSON types of a spec sent as JSON (the API's POST /jobs)
// against the field catalogue, before anything is decoded or committed.
// YAML's untyped scalars may stand for strings (`image: 5` is the string
// "5"); in JSON a number, a boolean or null where a string belongs is a
// mistake of the client, so it is refused: InvalidArgument naming the
// field's dotted path, what was sent and what belongs there ("spec.runtime
// .image: expected a string (container image reference), got the number
// 5"). Fields the catalogue does not know are left to the decoder, which
// rejects them with a did-you-mean.
Status CheckSpecJsonTypes(const nlohmann::json& spec);

}  // namespace tau::spec
