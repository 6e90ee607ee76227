#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"

namespace tau::exec {

// How an attempt's process ended, as tau-shim writes it to its status file
// (docs/shim.md).
struct ExitStatus {
  std::optional<int> exit_code;  // set when the process exited
  std::optional<int> signal;     // set when a signal killed it
  int64_t child_pid = 0;
  int64_t started_at_ms = 0;
  int64_t finished_at_ms = 0;
  int64_t user_cpu_ms = 0;
  int64_t system_cpu_ms = 0;
  int64_t max_rss_kb = 0;
  // "" (it ended by itself), "signal" (stopped on request) or "deadline"
  // (limits.max_runtime ran out).
  std::string terminated_by;
  // Set when the shim could not start the process at all.
  std::string error;
};

// Parses a status file's text.
Result<ExitStatus> ParseExitStatus(std::string_view json);

// Reads and parses the status file at `path`, or the complete status left
// in PATH.tmp when the shim could not rename it; NotFound when neither
// holds one (the attempt has not ended, or its shim was killed).
Result<ExitStatus> ReadExitStatus(const std::string& path);

// Whether the shim reserved the status file (PATH.tmp or PATH exists): it
// does so just before it starts the job, so without it the job never ran.
bool StatusReserved(const std::string& path);

}  // namespace tau::exec
