#pragma once

// Helpers every `tau` subcommand that talks to the server shares.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "cli/api_client.h"
#include "common/result.h"

namespace tau::cli {

// Prints "tau: MESSAGE" to stderr and returns kExitFailure.
int Fail(const Status& st);

// A client for the server (TAU_SERVER, else the local one, started when
// `start_if_needed` and none runs).
Result<ApiClient> Client(bool start_if_needed = true);

// "/api/v1/jobs/ID" with the id or name escaped.
std::string JobPath(const std::string& job);

// `value` as indented JSON, or YAML when output is "yaml".
void PrintJsonOrYaml(const nlohmann::json& value, const std::string& output);

// Milliseconds since the epoch of an RFC 3339 UTC time ("...Z"), or -1.
int64_t ParseTime(const nlohmann::json& value);
int64_t NowMs();

// A job's progress for people, from its "progress" field: "42% ETA 19s"
// (short) or "42% (step 42 of 100), 3.1 steps/s, ETA 19s; loss=0.41"
// (long); "-" when the job reports none.
std::string ProgressText(const nlohmann::json& job, bool detailed);

}  // namespace tau::cli
