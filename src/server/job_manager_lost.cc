// Ranks whose shim is gone without an exit status: nothing of an attempt
// may outlive it, so its leftovers are killed and waited for before the
// attempt ends (and so before any retry starts), and an end nobody saw is
// told apart from an interruption (docs/states.md, reasons Lost and
// Unknown).

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "common/log.h"
#include "common/open_retrying.h"
#include "server/job_manager.h"
#include "server/local_ray.h"

namespace tau::server {
namespace fs = std::filesystem;
using store::JobState;

namespace {

constexpr auto kSweepInterval = std::chrono::milliseconds(200);

// How long after its grace period a shim that has not ended its job is
// killed: it needs a moment to kill what is left and write the status.
constexpr auto kBackstopMargin = std::chrono::seconds(10);

constexpr const char* kLeftoversKilled =
    "the attempt's supervisor (tau-shim) ended without recording an exit status; the processes it left running "
    "were killed";

// Why an attempt whose leftovers were killed without a cgroup is not
// retried as an interruption (after "..., so one that left the job's").
constexpr const char* kUnseen =
    "session and cleared its environment would not have been found: it may still run, so how the attempt ended is "
    "unknown";

// How the ShimLost event of a rank whose processes outlived its shim
// begins; RanksLostWhileRunning finds it by this after a restart.
std::string LostWhileRunningPrefix(int64_t attempt, int rank) {
  return fmt::format("attempt {}: rank {}'s tau-shim ended", attempt, rank);
}

// What a status says, in words ("exit code 1").
std::string DescribeStatus(const exec::ExitStatus& s) {
  if (s.exit_code) return fmt::format("exit code {}", *s.exit_code);
  if (s.signal) return fmt::format("signal {}", *s.signal);
  return "no exit code or signal";
}

}  // namespace

Result<exec::ExitStatus> JobManager::ReadRankStatus(Job& job, int rank) {
  auto status = executor_->ReadEnd(RefOf(job, rank));
  if (status.ok() || status.error().code() == StatusCode::kNotFound) return status;
  // Out of descriptors or memory for longer than the read waits: nothing
  // is known yet (the caller looks again), and the job is not blamed.
  if (IsTransientReadError(status.error())) return status;
  // Something the shim does not write (a fifo, a link, a folder, not
  // JSON) is there: the job's doing, so the job ran.
  job.ranks[static_cast<size_t>(rank)].unreadable_status = status.error().message();
  return NotFoundError(status.error().message());
}

void JobManager::RankStatusFound(Job& job, int rank, const exec::ExitStatus& status) {
  if (executor_->EndVouchedFor(RefOf(job, rank))) {
    RankEnded(job, rank, Result<exec::ExitStatus>(status));
    return;
  }
  job.ranks[static_cast<size_t>(rank)].unvouched_status = status;
  ShimLost(job, rank);
}

RankRef JobManager::RefOf(const Job& job, int rank) { return {job.rec.id, job.rec.attempt, rank}; }

bool JobManager::RecordLostWhileRunning(Job& job, int rank, int64_t found) {
  Job::Rank& r = job.ranks[static_cast<size_t>(rank)];
  const std::string message =
      LostWhileRunningPrefix(job.rec.attempt, rank) +
      fmt::format(" without recording an exit status while {} process{} of the job still ran; killing {} before "
                  "the attempt ends",
                  found, found == 1 ? "" : "es", found == 1 ? "it" : "them");
  auto txn = store_->Begin();
  Status st = txn.status();
  if (st.ok()) st = AppendEvent(job, "ShimLost", "Lost", message);
  if (st.ok()) st = txn->Commit();
  if (!st.ok()) {
    if (!r.loss_unrecorded) LogStoreFailure(job, st);
    r.loss_unrecorded = true;
    return false;
  }
  r.loss_unrecorded = false;
  log::Warn("jobs", "a shim is gone and its job still ran; killing it", {{"job", job.rec.id}, {"message", message}});
  MarkLeftoversKilled(job, rank);
  return true;
}

void JobManager::MarkLeftoversKilled(Job& job, int rank) {
  job.ranks[static_cast<size_t>(rank)].killed_leftovers = true;
  // The attempt is over: its other ranks stop now.
  if (!job.first_failure) {
    job.first_failure = Result<exec::ExitStatus>(NotFoundError(kLeftoversKilled));
    StopRanks(job);
  }
}

void JobManager::ShimLost(Job& job, int rank) {
  Job::Rank& r = job.ranks[static_cast<size_t>(rank)];
  if (r.done) return;
  if (r.token) jobs_by_token_.erase(r.token);
  r.token = 0;
  if (!r.killed_leftovers) {
    // Counted, and the loss committed, before anything is killed: a daemon
    // that dies between the kill and the commit would otherwise find
    // nothing left and no record that the job still ran, and take an
    // interrupted attempt for one whose end nobody saw.
    const int64_t found = executor_->CountRemains(RefOf(job, rank));
    if (found > 0) {
      if (!RecordLostWhileRunning(job, rank, found)) {
        if (!job.rec.cancel_requested) {
          // Not committed (the disk is full): nothing is killed yet; the
          // processes run on as beside a live shim until it can be.
          r.draining = true;
          ArmSweepTimer(kStoreRetryDelay);
          return;
        }
        // Cancelled: killed now, recorded or not (it ends Cancelled either way).
        MarkLeftoversKilled(job, rank);
      }
    }
  }
  const RankRemains remains = executor_->Sweep(RefOf(job, rank));
  if (remains.killed > 0 && !r.killed_leftovers) {
    // Found only by the sweep (one the count missed as it was being made):
    // recorded after the fact, which is as good as it gets, and known here
    // even when that commit fails.
    if (!RecordLostWhileRunning(job, rank, remains.killed)) MarkLeftoversKilled(job, rank);
  }
  if (remains.alive > 0) {
    if (!r.draining) {
      log::Warn("jobs", "processes of a lost attempt outlive SIGKILL; sweeping again",
                {{"job", job.rec.id}, {"error", remains.why_alive}});
    }
    r.draining = true;
    ArmSweepTimer(kSweepInterval);
    return;
  }
  r.draining = false;
  std::string message;
  if (remains.rebooted) {
    message = "the attempt's supervisor (tau-shim) ended without recording an exit status: the machine restarted";
  } else if (r.killed_leftovers && remains.contained) {
    message = kLeftoversKilled;
  } else if (r.killed_leftovers) {
    // Killed were those of its session and environment; one that left
    // both may still run. A retry beside it would run the job twice.
    job.end_unknown = true;
    message = std::string(kLeftoversKilled) + ", but no cgroup held the attempt, so one that left the job's " +
              kUnseen;
  } else if (r.unvouched_status) {
    // Nothing of the rank ran on, but one that left the job's session and
    // cleared its environment would not have been found (the job that wrote
    // the status may have left one), so the status is not taken.
    job.end_unknown = true;
    message = fmt::format(
        "the attempt's supervisor (tau-shim) ended without recording that it wrote the exit status in the job's "
        "folder ({}), which the job may have written itself; nothing of the job is left running, but how it ended "
        "is unknown",
        DescribeStatus(*r.unvouched_status));
  } else if (!r.unreadable_status.empty()) {
    job.end_unknown = true;
    message = fmt::format(
        "the attempt's supervisor (tau-shim) ended, but its exit status cannot be read: {}; the job may have run, so "
        "how it ended is unknown",
        r.unreadable_status);
  } else if (!remains.may_have_run) {
    message = "the attempt's supervisor (tau-shim) ended before it started the job";
  } else {
    job.end_unknown = true;
    message = "the attempt's supervisor (tau-shim) ended without recording an exit status and nothing of the job "
              "is left running: it may have run to its end, so how it ended is unknown";
  }
  // The attempt's first failure (its message is the attempt's) says the
  // same when it was this loss.
  if (job.end_unknown && job.first_failure && !job.first_failure->ok() &&
      job.first_failure->error().code() == StatusCode::kNotFound) {
    job.first_failure = Result<exec::ExitStatus>(NotFoundError(message));
  }
  RankEnded(job, rank, Result<exec::ExitStatus>(NotFoundError(message)));
}

Result<std::vector<int>> JobManager::RanksLostWhileRunning(const Job& job) {
  TAU_ASSIGN_OR_RETURN(store::Statement st,
                       store_->db()->Prepare("SELECT message FROM events WHERE job_id = ? AND type = 'ShimLost'"));
  st.Bind(1, job.rec.id);
  std::vector<int> ranks;
  for (;;) {
    TAU_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    const std::string message = st.Text(0);
    for (int r = 0; r < static_cast<int>(job.ranks.size()); ++r) {
      const std::string prefix = LostWhileRunningPrefix(job.rec.attempt, r);
      if (message.compare(0, prefix.size(), prefix) == 0) ranks.push_back(r);
    }
  }
  return ranks;
}

void JobManager::MarkLostWhileRunning(Job& job, const std::vector<int>& ranks) {
  for (int r : ranks) job.ranks[static_cast<size_t>(r)].killed_leftovers = true;
  if (!ranks.empty() && !job.first_failure) job.first_failure = Result<exec::ExitStatus>(NotFoundError(kLeftoversKilled));
}

void JobManager::SweepLostRanks() {
  for (auto& [seq, job_ptr] : jobs_by_seq_) {
    Job& job = *job_ptr;
    for (size_t r = 0; r < job.ranks.size(); ++r) {
      // ShimLost may end the attempt, which clears the ranks.
      if (r < job.ranks.size() && job.ranks[r].draining) ShimLost(job, static_cast<int>(r));
    }
  }
  RunAdmission();
  Publish();
}

void JobManager::ArmSweepTimer(std::chrono::milliseconds delay) {
  if (sweep_timer_armed_ || !options_.after) return;
  sweep_timer_armed_ = true;
  options_.after(delay, [this] {
    sweep_timer_armed_ = false;
    SweepLostRanks();
  });
}

std::chrono::milliseconds JobManager::ShimGrace(const Job& job) {
  int64_t ms = job.spec.checkpoint.grace_period.count();
  if (job.spec.run.workload_kind == spec::WorkloadKind::kRayJob) ms += kLocalRayStopMs;
  return std::chrono::milliseconds(ms);
}

void JobManager::ArmShimBackstop(Job& job, std::chrono::milliseconds after, bool deadline) {
  if (!options_.after) return;
  std::vector<uint64_t> tokens;  // a token is never reused: a rank that ended has none
  for (const Job::Rank& r : job.ranks) {
    if (r.token && !r.done) tokens.push_back(r.token);
  }
  if (tokens.empty()) return;
  options_.after(after + kBackstopMargin, [this, tokens, deadline] {
    for (uint64_t token : tokens) {
      auto it = jobs_by_token_.find(token);
      if (it == jobs_by_token_.end()) continue;
      auto [job, rank] = it->second;
      Job::Rank& r = job->ranks[static_cast<size_t>(rank)];
      if (r.done || !r.handle) continue;
      log::Warn("jobs", "a tau-shim did not end its job when it should have (stopped by its job?); killing it",
                {{"job", job->rec.id}, {"rank", std::to_string(rank)}, {"pid", std::to_string(r.handle->id)}});
      if (deadline) job->deadline_backstop = true;
      if (Status st = executor_->Kill(*r.handle); !st.ok()) {
        log::Error("jobs", "cannot kill a tau-shim", {{"job", job->rec.id}, {"error", st.ToString()}});
      }
    }
  });
}

}  // namespace tau::server
