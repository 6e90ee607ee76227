// Recovery after a restart: the job state machine meets the processes
// that ran while no daemon watched them (docs/control-plane.md#crash-safety).

#include <fmt/format.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/open_retrying.h"
#include "common/strings.h"
#include "exec/process_info.h"
#include "server/execution/local_rank_files.h"
#include "server/cancel_request.h"
#include "server/job_manager.h"
#include "server/local_ray.h"

namespace tau::server {
using store::AttemptRecord;
using store::AttemptState;
using store::JobState;

Status JobManager::Recover() {
  // A full disk is found now, not at the first submit: the daemon then
  // starts in the DiskFull condition and serves what it can read.
  ProbeStore();
  TAU_RETURN_IF_ERROR(LoadKueue());
  RestoreAdmissionFairSharing();  // before any attempt's end samples usage
  LoadGpuState();
  // Only unfinished jobs (and ended ones still to seal) come back into
  // memory; the rest stay in the database until asked for.
  TAU_ASSIGN_OR_RETURN(std::vector<store::JobRecord> records, store_->LoadUnfinishedJobs());
  std::vector<std::string> ids;
  for (const auto& rec : records) ids.push_back(rec.id);
  TAU_ASSIGN_OR_RETURN(std::vector<AttemptRecord> attempts, store_->LoadAttemptsOf(ids));
  std::unordered_map<std::string, std::vector<AttemptRecord>> by_job;
  for (auto& a : attempts) by_job[a.job_id].push_back(std::move(a));
  for (auto& rec : records) {
    std::string id = rec.id;
    auto job = JobFromRecord(std::move(rec), std::move(by_job[id]));
    if (!job.ok()) {
      log::Error("jobs", "a stored spec no longer decodes", {{"job", id}, {"error", job.status().ToString()}});
      continue;
    }
    Hold(std::move(*job));
  }
  {
    TAU_ASSIGN_OR_RETURN(store::Statement st, store_->db()->Prepare("SELECT COALESCE(MAX(seq), 0) FROM jobs"));
    TAU_ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) next_seq_ = std::max(next_seq_, st.Int(0) + 1);
  }
  {
    TAU_ASSIGN_OR_RETURN(store::Statement st, store_->db()->Prepare("SELECT COALESCE(MAX(id), 0) FROM events"));
    TAU_ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) last_event_id_ = st.Int(0);
  }

  for (auto& [seq, job_ptr] : jobs_by_seq_) {
    Job& job = *job_ptr;
    if (job.rec.state != JobState::kAdmitted && job.rec.state != JobState::kRunning) continue;
    const int64_t n = job.rec.attempt;
    AttemptRecord current;
    for (const auto& a : job.attempts) {
      if (a.number == n) current = a;
    }
    for (const auto& g : Split(current.gpus, ',')) {
      if (!g.empty()) job.gpu_indexes.push_back(std::stoi(g));
    }
    for (int g : job.gpu_indexes) {
      if (static_cast<size_t>(g) < gpu_busy_.size()) gpu_busy_[static_cast<size_t>(g)] = true;
    }
    used_ += job.request;
    job.holds_resources = true;
    if (auto w = ToWorkload(job); w.ok()) admission_->Restore(*w);
    if (!job.rec.preempted_by.empty()) admission_->MarkEvicting(job.rec.id);

    // Each rank: a live shim (it holds its lock), an exit status, or neither.
    const int workers = AttemptRanks(job.spec);
    job.ranks.assign(static_cast<size_t>(workers), Job::Rank{});
    if (options_.cgroups) {
      for (int r = 0; r < workers; ++r) job.ranks[static_cast<size_t>(r)].cgroup = CgroupLeafName({job.rec.id, n, r});
    }
    RestorePinning(job, current.pinned_cpus);
    std::vector<RankHandle> alive(static_cast<size_t>(workers));
    std::vector<std::optional<Result<exec::ExitStatus>>> ended(static_cast<size_t>(workers));
    std::vector<std::string> alive_pids;
    int seen = 0;
    for (int r = 0; r < workers; ++r) {
      if (std::optional<RankHandle> running = executor_->Adopt({job.rec.id, n, r})) {
        alive[static_cast<size_t>(r)] = *running;
        alive_pids.push_back(std::to_string(running->id));
        ++seen;
        continue;
      }
      auto status = ReadRankStatus(job, r);
      if (status.ok()) {
        ended[static_cast<size_t>(r)] = status;
        ++seen;
      } else if (!job.ranks[static_cast<size_t>(r)].unreadable_status.empty()) {
        ++seen;  // something is where its status belongs: the job ran
      } else if (IsTransientReadError(status.error())) {
        ++seen;  // not readable for now: it may have run, so it is not started again blindly
      }
    }
    if (seen == 0 && current.state == AttemptState::kStarting) {
      // A shim may have started the job and died with the daemon: then the
      // attempt did start, and what is left of it is dealt with below.
      for (int r = 0; r < workers; ++r) {
        RankRemains remains = executor_->Sweep(RefOf(job, r));
        const bool found = remains.killed > 0 || remains.alive > 0;
        job.ranks[static_cast<size_t>(r)].killed_leftovers = found;
        if (found || remains.may_have_run) ++seen;
      }
    }
    if (seen == 0 && current.state == AttemptState::kStarting) {
      // No shim ever ran this attempt: give it back to the queue, same number.
      Release(job);
      job.rec.state = JobState::kQueued;
      job.rec.attempt = n - 1;
      auto txn = store_->Begin();
      Status st = txn.status();
      if (st.ok()) st = SaveJob(job);
      if (st.ok()) {
        st = AppendEvent(job, "Requeued", "DaemonRestart",
                         fmt::format("attempt {} had not started when the daemon stopped", n));
      }
      if (st.ok()) st = txn->Commit();
      if (!st.ok()) {
        // Not queued before it is committed: it waits as a retry does and
        // WakeRetries commits the requeue once the store takes writes.
        LogStoreFailure(job, st);
        job.rec.state = JobState::kRetrying;
        job.rec.reason = "DaemonRestart";
        job.rec.message = fmt::format("attempt {} had not started when the daemon stopped; requeued once the "
                                      "database can record it",
                                      n);
        job.rec.retry_at = NowMs() + kStoreRetryDelay.count();
      }
      continue;
    }
    if (current.state == AttemptState::kStarting) {
      // It started (some rank ran) but the daemon died before recording it.
      current.state = AttemptState::kRunning;
      current.started_at = NowMs();
      if (!alive_pids.empty()) {
        current.shim_pid = alive[0].id;
        current.shim_start_ticks = alive[0].since;
      }
      job.rec.state = JobState::kRunning;
      job.rec.started_at = job.rec.started_at.value_or(*current.started_at);
      bool found = false;
      for (auto& a : job.attempts) {
        if (a.number == n) {
          a = current;
          found = true;
        }
      }
      if (!found) job.attempts.push_back(current);
      if (Status st = CommitFoundStart(job, n); !st.ok()) {
        // The attempt runs whether or not it is recorded; RetryStoreWrites
        // records it once the store takes writes (or its end does).
        LogStoreFailure(job, st);
        unrecorded_starts_[job.rec.id] = n;
      }
    }
    if (!alive_pids.empty()) {
      log::Info("jobs", "re-adopted a running attempt",
                {{"job", job.rec.id}, {"attempt", std::to_string(n)}, {"pids", Join(alive_pids, ",")}});
    }
    for (int r = 0; r < workers; ++r) {
      if (alive[static_cast<size_t>(r)].id > 0) WatchRank(job, r, alive[static_cast<size_t>(r)]);
    }
    if (job.spec.limits.max_runtime && current.started_at) {
      const int64_t left = job.spec.limits.max_runtime->count() - (NowMs() - *current.started_at);
      ArmShimBackstop(job, std::chrono::milliseconds(std::max<int64_t>(0, left)) + ShimGrace(job), true);
    }
    // A shim recorded lost while its job still ran interrupted the attempt,
    // even if its processes were killed before this daemon could see them.
    TAU_ASSIGN_OR_RETURN(std::vector<int> lost_running, RanksLostWhileRunning(job));
    MarkLostWhileRunning(job, lost_running);
    // A cancel of this attempt the database could not record (a full disk)
    // was kept on disk (cancel_request.h): it holds as if it had been committed.
    if (!job.rec.cancel_requested && KeptCancelRequest(home_, job.rec.id) == n) {
      job.rec.cancel_requested = true;
      log::Info("jobs", "honouring a cancel kept while the database could not record it",
                {{"job", job.rec.id}, {"attempt", std::to_string(n)}});
      auto txn = store_->Begin();
      Status st = txn.status();
      if (st.ok()) st = SaveJob(job);
      if (st.ok()) {
        st = AppendEvent(job, "CancelRequested", "Cancelled",
                         "the cancel asked for while the disk was full, kept until the database could record it");
      }
      if (st.ok()) st = txn->Commit();
      // Not committed: the job ends Cancelled all the same, and its end
      // (written once space returns) records it.
      if (!st.ok()) LogStoreFailure(job, st);
    }
    // A stop asked for before the restart is asked again: the signal may
    // not have been sent before the daemon went down.
    if (job.rec.cancel_requested || !job.rec.preempted_by.empty() || !job.rec.gpu_fault.empty() || job.first_failure) {
      StopRanks(job);
    }
    // Ranks that ended meanwhile count now; one with neither a live shim nor
    // a status lost its shim: what is left of it is killed first (ShimLost).
    // The last one finishes the attempt.
    for (int r = 0; r < workers && r < static_cast<int>(job.ranks.size()); ++r) {
      if (alive[static_cast<size_t>(r)].id > 0) continue;
      if (ended[static_cast<size_t>(r)]) RankStatusFound(job, r, **ended[static_cast<size_t>(r)]);
      else ShimLost(job, r);
    }
  }
  ArmRetryTimer();  // backoffs that were running when the daemon stopped
  for (auto& [seq, job] : jobs_by_seq_) {
    if (store::IsTerminal(job->rec.state) && job->rec.evidence.empty()) SealEvidence(*job);  // ended unsealed
  }
  RunAdmission();
  Publish();
  RemoveOrphanFiles();
  ForgetOldSubmitRequests();
  if (options_.history_keep) {
    // history.keep may have been lowered since the last run.
    if (auto removed = PruneEnded(std::nullopt, options_.history_keep); !removed.ok()) {
      log::Warn("jobs", "cannot apply history.keep", {{"error", removed.status().ToString()}});
    }
  }
  return Status::Ok();
}

Status JobManager::CommitFoundStart(Job& job, int64_t n) {
  store::AttemptRecord current;
  for (const auto& a : job.attempts) {
    if (a.number == n) current = a;
  }
  TAU_ASSIGN_OR_RETURN(store::Transaction txn, store_->Begin());
  TAU_RETURN_IF_ERROR(SaveAttempt(job, current));
  TAU_RETURN_IF_ERROR(SaveJob(job));
  TAU_RETURN_IF_ERROR(AppendEvent(job, "Started", "", fmt::format("attempt {}, found after a restart", n)));
  return txn.Commit();
}

}  // namespace tau::server
