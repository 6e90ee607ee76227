#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tau::exec {

// The shim of one rank of an attempt as it recorded itself in the
// attempt's lock file ("PID START_TICKS BOOT_ID", docs/shim.md). Its pid is
// also the session id of every process of the job that did not start a
// session of its own.
struct ShimRecord {
  int64_t pid = 0;
  int64_t start_ticks = 0;  // 0: not recorded
  std::string boot_id;      // "": not recorded
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
// those in `cgroup_dir` ("" for none).
struct AttemptProcesses {
  std::optional<ShimRecord> shim;
  std::vector<std::string> env;
  std::string cgroup_dir;
};

// What KillLeftovers found.
struct Leftovers {
  int64_t alive = 0;      // live processes found (and sent SIGKILL); 0: all gone
  bool rebooted = false;  // the shim ran in an earlier boot: nothing of it is left
};

// Sends SIGKILL to every live process of the attempt (zombies are dead and
// not counted; processes started before the shim are never touched) and
// says how many there were. The caller repeats it until none is left. Only
// for an attempt whose shim is gone: a live shim's job is found too.
Leftovers KillLeftovers(const AttemptProcesses& attempt);

}  // namespace tau::exec
