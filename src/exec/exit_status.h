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
// InvalidArgument, naming the file and what it is, when either is not a
// regular file (a fifo, a link, a folder: not the shim's doing) or PATH
// holds no status: the attempt's end cannot be read, yet its job may have
// run.
Result<ExitStatus> ReadExitStatus(const std::string& path);

// Whether anything is at PATH.tmp or PATH: the shim reserves PATH.tmp just
// before it starts the job, and a file of another kind there was put by the
// job or what it left running. Without either the shim never got that far,
// unless the job removed them: the shim's record (ShimRecord::job_started)
// says so where the job cannot reach.
bool StatusReserved(const std::string& path);

}  // namespace tau::exec
