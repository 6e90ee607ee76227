#include "server/attempt_runner.h"

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

RankRemains LocalAttemptRunner::Sweep(const RankSweep& sweep) {
  exec::AttemptProcesses attempt;
  attempt.shim = exec::ReadShimRecord(sweep.lock_path);
  attempt.env = sweep.env;
  attempt.cgroup_dir = sweep.cgroup_dir;
  exec::Leftovers left = exec::KillLeftovers(attempt);
  RankRemains remains;
  remains.alive = left.alive;
  remains.rebooted = left.rebooted;
  remains.may_have_run = exec::StatusReserved(sweep.status_path);
  return remains;
}

}  // namespace tau::server
