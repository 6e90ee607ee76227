#include "server/execution/local_executor.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "exec/leftovers.h"
#include "exec/process_info.h"
#include "exec/shim_launcher.h"

namespace tau::server {

Result<RankHandle> LocalExecutor::Start(const AttemptStart& s) {
  exec::ShimLaunch launch;
  launch.shim_path = shim_path_;
  launch.argv = s.argv;
  launch.env = s.env;
  launch.cwd = s.cwd;
  launch.log_path = s.log_path;
  // A new attempt's lock is in the state folder, never the legacy place.
  launch.status_path = home_.status_file(s.ref.job_id, s.ref.attempt, s.ref.rank).string();
  launch.lock_path = home_.attempt_lock(s.ref.job_id, s.ref.attempt, s.ref.rank).string();
  launch.grace_ms = s.grace_ms;
  launch.deadline_ms = s.deadline_ms;
  launch.cgroup_dir = s.cgroup_dir;
  launch.cpu_list = s.cpu_list;
  launch.rlimit_data = s.rlimit_data;
  Result<exec::ShimProcess> shim = exec::LaunchShim(launch);
  if (!shim.ok()) return shim.status();
  return RankHandle{shim->pid, shim->start_ticks};
}

Status LocalExecutor::Stop(const RankHandle& rank) {
  return exec::TerminateShim(exec::ShimProcess{rank.id, rank.since});
}

Status LocalExecutor::Kill(const RankHandle& rank) {
  return exec::KillShim(exec::ShimProcess{rank.id, rank.since});
}

bool LocalExecutor::EndVouchedFor(const RankRef& ref) {
  // The record is only ever in the state folder: a lock an earlier version
  // left in the job's folder could say anything.
  std::optional<exec::ShimRecord> record =
      exec::ReadShimRecord(home_.attempt_lock(ref.job_id, ref.attempt, ref.rank).string());
  return record && record->status_written;
}

std::optional<RankHandle> LocalExecutor::Adopt(const RankRef& ref) {
  const std::string lock_path = LocateRank(home_, cgroups_, ref).lock_path;
  auto holder = exec::AttemptLockHolder(lock_path);
  // A shim that holds the lock but has not written its pid yet is moments
  // old; its pid appears as soon as it runs.
  for (int i = 0; i < 200 && holder && *holder == 0; ++i) {
    ::usleep(5000);
    holder = exec::AttemptLockHolder(lock_path);
  }
  if (!holder || *holder <= 0) return std::nullopt;
  return RankHandle{*holder, exec::ProcessStartTicks(*holder).value_or(0)};
}

Result<exec::ExitStatus> LocalExecutor::ReadEnd(const RankRef& ref) {
  return exec::ReadExitStatus(LocateRank(home_, cgroups_, ref).status_path);
}

namespace {

exec::AttemptProcesses ProcessesOf(const RankSweep& sweep) {
  exec::AttemptProcesses attempt;
  attempt.shim = exec::ReadShimRecord(sweep.lock_path);
  attempt.env = sweep.env;
  attempt.cgroup_dir = sweep.cgroup_dir;
  return attempt;
}

}  // namespace

int64_t LocalExecutor::CountAt(const RankSweep& sweep) { return exec::CountLeftovers(ProcessesOf(sweep)); }

RankRemains LocalExecutor::SweepAt(const RankSweep& sweep) {
  const exec::AttemptProcesses attempt = ProcessesOf(sweep);
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
