#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tau::exec {

// The shim of one rank of an attempt as it recorded itself in the
// attempt's lock file ("PID START_TICKS BOOT_ID [started] [ended]",
// docs/shim.md).
// Its pid is also the session id of every process of the job that did not
// start a session of its own.
struct ShimRecord {
  int64_t pid = 0;
  int64_t start_ticks = 0;  // 0: not recorded
  std::string boot_id;      // "": not recorded
  // The shim recorded, just before it started the job, that it was about
  // to: the job may have run. The lock file lives in the daemon's state
  // folder, so unlike the status reservation in the job's folder nothing
  // the job does there removes this.
  bool job_started = false;
  // The shim wrote the exit status, once nothing of the job was left. A
  // status file without this may be the job's own (it lies in the job's
  // folder); a shim older than this record never writes it.
  bool status_written = false;
};

// The record in `lock_path`, or nullopt when there is none (the shim never
// ran far enough to write it).
std::optional<ShimRecord> ReadShimRecord(const std::string& lock_path);

// This boot's /proc/sys/kernel/random/boot_id, or "".
std::string CurrentBootId();

// How to find every process of one rank of an attempt once its shim is
// gone: the processes of the shim's session, those whose environment holds
// every one of `env` (KEY=VALUE; the job's own TAU_JOB_ID, TAU_ATTEMPT and
// TAU_WORKER_INDEX, which reach processes that left the session too), and
// those in `cgroup_dir` ("" for none). Without a cgroup, a process that
// left the session and cleared its environment is not found.
struct AttemptProcesses {
  std::optional<ShimRecord> shim;
  std::vector<std::string> env;
  std::string cgroup_dir;
};

// What KillLeftovers found.
struct Leftovers {
  int64_t killed = 0;     // live processes found and sent SIGKILL; 0: nothing was left
  bool rebooted = false;  // the shim ran in an earlier boot: nothing of it is left
  // The attempt's cgroup was read, and read empty, once the rest was gone:
  // nothing of the attempt survives, not even a process that left its
  // session and cleared its environment. False without a cgroup, where such
  // a process would go unseen.
  bool contained = false;
};

// How long KillLeftovers keeps at it, and how it signals (a test seam:
// production code leaves `send_signal` unset, which is kill(2)).
struct KillLimits {
  std::chrono::milliseconds patience{500};
  std::function<int(int64_t pid, int sig)> send_signal;
};

// The count-only probe: how many live processes of the attempt there are
// now (zombies are dead and not counted; processes started before the shim
// are never counted). Sends nothing.
int64_t CountLeftovers(const AttemptProcesses& attempt);

// Sends SIGKILL to every live process of the attempt, then probes again
// (CountLeftovers) and repeats both until a probe finds nothing: a process
// one of them forked while it was being killed is caught by the next round.
// Returns once nothing of the attempt is left. DeadlineExceeded, naming how
// many are left and their pids, when processes of it are still alive after
// `limits.patience` (one stuck in the kernel, a fork storm outrunning the
// sweep); the caller calls it again later. Only for an attempt whose shim
// is gone: a live shim's job is found too.
Result<Leftovers> KillLeftovers(const AttemptProcesses& attempt, const KillLimits& limits = {});

}  // namespace tau::exec
