#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tau::exec {

// What one tau-shim runs (docs/shim.md).
struct ShimLaunch {
  std::string shim_path;           // the tau-shim binary
  std::vector<std::string> argv;   // the workload's command
  std::vector<std::string> env;    // the workload's whole environment, KEY=VALUE
  std::string cwd;
  std::string log_path;            // stdout and stderr, appended
  std::string status_path;         // written once the workload has ended
  std::string lock_path;           // held by the shim for its whole life
  int64_t grace_ms = 30000;
  int64_t deadline_ms = 0;         // 0: no deadline
  std::string cgroup_dir;          // a cgroup v2 leaf to run in; "" for none
  // Without cgroups: CPUs to pin the job to ("0,1"; "" for any) and its
  // RLIMIT_DATA in bytes (0 for none).
  std::string cpu_list;
  int64_t rlimit_data = 0;
  // How long a failing status write is retried (0: the shim's default),
  // and, for tests, how many status writes fail on purpose.
  int64_t status_retry_ms = 0;
  int fail_status_writes = 0;
};

struct ShimProcess {
  int64_t pid = 0;
  int64_t start_ticks = 0;
};

// Starts a tau-shim. The attempt's lock file is locked before the shim
// starts and handed to it, so at every instant either this call holds the
// lock or the shim does: a daemon that restarts can always tell whether an
// attempt's shim is alive (AttemptLockHolder), with no window in which an
// attempt could be started twice. AlreadyExists when the lock is held.
Result<ShimProcess> LaunchShim(const ShimLaunch& launch);

// The pid of the shim holding `lock_path`, or nullopt when no process
// holds it (the shim never started, or it has exited).
std::optional<int64_t> AttemptLockHolder(const std::string& lock_path);

// Asks a shim to stop its workload: SIGTERM, which the shim turns into
// SIGTERM to the workload's process group and SIGKILL after the grace
// period. A shim that is already gone is not an error.
// A shim its own job stopped (SIGSTOP) is continued, so that it acts on
// the signal.
Status TerminateShim(const ShimProcess& shim);

// SIGKILL to a shim that did not end its workload when asked (the caller
// then kills what the shim left). A shim that is already gone is not an
// error.
Status KillShim(const ShimProcess& shim);

}  // namespace tau::exec
