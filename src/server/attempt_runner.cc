#include "server/attempt_runner.h"

#include <algorithm>
#include <chrono>

#include "exec/leftovers.h"

namespace tau::server {

Result<exec::ShimProcess> LocalAttemptRunner::Start(const AttemptStart& s) {
  exec::ShimLaunch launch;
  launch.shim_path = shim_path_;
  launch.argv = s.argv;
  launch.env = s.env;
  launch.cwd = s.cwd;
  launch.log_path = s.log_path;
  launch.status_path = s.status_path;
  launch.lock_path = s.lock_path;
  launch.grace_ms = s.grace_ms;
  launch.deadline_ms = s.deadline_ms;
  launch.cgroup_dir = s.cgroup_dir;
  launch.cpu_list = s.cpu_list;
  launch.rlimit_data = s.rlimit_data;
  return exec::LaunchShim(launch);
}

}  // namespace tau::server

namespace tau::server {

bool LocalAttemptRunner::StatusWrittenByShim(const std::string& lock_path) {
  std::optional<exec::ShimRecord> record = exec::ReadShimRecord(lock_path);
  return record && record->status_written;
}

RankRemains LocalAttemptRunner::Sweep(const RankSweep& sweep) {
  exec::AttemptProcesses attempt;
  attempt.shim = exec::ReadShimRecord(sweep.lock_path);
  attempt.env = sweep.env;
  attempt.cgroup_dir = sweep.cgroup_dir;
  RankRemains remains;
  // The shim's record is in the daemon's state folder; the reservation, in
  // the job's, may have been removed by the job itself.
  remains.may_have_run =
      (attempt.shim && attempt.shim->job_started) || exec::StatusReserved(sweep.status_path);
  // On the control loop: a little patience, then the sweep timer comes
  // back (processes freeing GPU memory can take seconds to end).
  exec::KillLimits limits;
  limits.patience = std::chrono::milliseconds(100);
  Result<exec::Leftovers> left = exec::KillLeftovers(attempt, limits);
  if (!left.ok()) {
    remains.alive = std::max<int64_t>(1, exec::CountLeftovers(attempt));
    remains.killed = remains.alive;
    remains.why_alive = left.status().message();
    return remains;
  }
  remains.killed = left->killed;
  remains.rebooted = left->rebooted;
  remains.contained = left->contained;
  return remains;
}

}  // namespace tau::server
