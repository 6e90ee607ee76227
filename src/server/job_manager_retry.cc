// Retries, resume and the checkpoint index: what happens between attempts
// (docs/checkpoints.md).

#include <fmt/format.h>

#include <filesystem>

#include "common/log.h"
#include "common/strings.h"
#include "resume/checkpoint_index.h"
#include "resume/retry_policy.h"
#include "sched/requeue_backoff.h"
#include "server/job_manager.h"

namespace tau::server {
namespace fs = std::filesystem;
using store::JobState;

namespace {

resume::EndCause CauseOf(const std::string& reason) {
  if (reason == "Preempted") return resume::EndCause::kPreempted;
  if (reason == "GpuFault") return resume::EndCause::kGpuFault;
  if (reason == "Lost") return resume::EndCause::kNodeLost;
  if (reason == "OOMKilled") return resume::EndCause::kOom;
  if (reason == "ExitCode") return resume::EndCause::kExitCode;
  if (reason == "Unknown") return resume::EndCause::kUnknown;
  if (reason == "Signal") return resume::EndCause::kSignal;
  return resume::EndCause::kFinal;
}

}  // namespace

JobState JobManager::ApplyRetryPolicy(Job& job, const std::string& reason, int signal, std::string* message) {
  const double jitter = options_.jitter ? options_.jitter() : std::uniform_real_distribution<double>(0, 1)(rng_);
  const resume::EndCause cause = CauseOf(reason);
  const int code = cause == resume::EndCause::kSignal ? signal : static_cast<int>(job.rec.exit_code.value_or(0));
  resume::RetryDecision d = resume::DecideRetry(job.spec.retry, cause, code, {job.rec.restarts, job.rec.interruptions},
                                                options_.max_interruptions, jitter);
  job.rec.retry_at.reset();
  if (!d.retry) {
    if (!d.refusal.empty()) *message += "; not retried: " + d.refusal;
    return JobState::kFailed;
  }
  std::string budget;
  if (d.charged) {
    ++job.rec.restarts;
    budget = fmt::format("retry {} of {}", job.rec.restarts, job.spec.retry.max_restarts);
  } else {
    ++job.rec.interruptions;
    budget = fmt::format("interruption {} of {}", job.rec.interruptions, options_.max_interruptions);
  }
  job.rec.retry_reason = d.reason;
  if (d.delay.count() == 0) {
    *message += fmt::format("; queued for attempt {} ({})", job.rec.attempt + 1, budget);
    return JobState::kQueued;
  }
  job.rec.retry_at = NowMs() + d.delay.count();
  *message += fmt::format("; attempt {} in {} ({})", job.rec.attempt + 1, FormatDuration(d.delay), budget);
  return JobState::kRetrying;
}

JobState JobManager::ApplyRequeueBackoff(Job& job, std::string* reason, std::string* message) {
  const auto& strategy = admission_->Config().requeuing_strategy;
  if (!strategy) return JobState::kQueued;
  int64_t evictions = 1;  // this attempt's, and the earlier ones'
  for (const auto& a : job.attempts) {
    if (a.number != job.rec.attempt && a.reason == "Preempted") ++evictions;
  }
  const std::optional<int64_t> delay = sched::RequeueDelayMs(*strategy, evictions);
  if (!delay) {
    *reason = "RequeuingLimitExceeded";
    *message += fmt::format("; not requeued: eviction {} is past waitForPodsReady.requeuingStrategy."
                            "backoffLimitCount ({})", evictions, strategy->backoff_limit_count.value_or(0));
    return JobState::kFailed;
  }
  if (*delay > 0) {
    job.rec.retry_at = NowMs() + *delay;
    *message += fmt::format("; requeue backoff {} (eviction {})", FormatDuration(std::chrono::milliseconds(*delay)),
                            evictions);
  }
  return JobState::kQueued;
}

void JobManager::ArmBackoffTimer() {
  const std::optional<int64_t> next = admission_->NextBackoffEnd();
  if (!next || !options_.after) return;
  if (backoff_timer_at_ && *backoff_timer_at_ <= *next) return;  // an earlier timer covers it
  backoff_timer_at_ = *next;
  options_.after(std::chrono::milliseconds(std::max<int64_t>(0, *next - NowMs())), [this] {
    backoff_timer_at_.reset();
    ScheduleAdmission();
  });
}

void JobManager::ArmRetryTimer() {
  std::optional<int64_t> earliest;
  for (const auto& [seq, job] : jobs_by_seq_) {
    if (job->rec.state != JobState::kRetrying) continue;
    int64_t at = job->rec.retry_at.value_or(0);
    if (!earliest || at < *earliest) earliest = at;
  }
  if (!earliest || !options_.after) return;
  if (retry_timer_at_ && *retry_timer_at_ <= *earliest) return;  // an earlier timer covers it
  retry_timer_at_ = *earliest;
  const int64_t delay = std::max<int64_t>(0, *earliest - NowMs());
  options_.after(std::chrono::milliseconds(delay), [this] {
    retry_timer_at_.reset();
    WakeRetries();
  });
}

void JobManager::WakeRetries() {
  const int64_t now = NowMs();
  bool queued = false;
  for (const auto& [seq, job_ptr] : jobs_by_seq_) {
    Job& job = *job_ptr;
    if (job.rec.state != JobState::kRetrying || job.rec.retry_at.value_or(0) > now) continue;
    job.rec.state = JobState::kQueued;
    job.rec.retry_at.reset();
    job.rec.message = fmt::format("backoff over; waiting for attempt {}", job.rec.attempt + 1);
    auto txn = store_->Begin();
    Status st = txn.status();
    if (st.ok()) st = SaveJob(job);
    if (st.ok()) st = AppendEvent(job, "Requeued", job.rec.reason, job.rec.message);
    if (st.ok()) st = txn->Commit();
    if (!st.ok()) {
      LogStoreFailure(job, st);
      job.rec.state = JobState::kRetrying;  // as the database still says
      job.rec.retry_at = now + kStoreRetryDelay.count();  // tried again later, not at once
      continue;
    }
    queued = true;
  }
  ArmRetryTimer();
  if (queued) ScheduleAdmission();
  Publish();
}

std::string JobManager::ResumePoint(const Job& job) const {
  const fs::path dir = home_.checkpoint_dir(job.rec.id);
  auto list = resume::ListCheckpoints(dir, job.spec.checkpoint);
  if (!list.ok()) {
    log::Warn("jobs", "cannot list checkpoints", {{"job", job.rec.id}, {"error", list.status().ToString()}});
    return "";
  }
  if (!job.rec.resume_from.empty()) {
    for (const auto& cp : *list) {
      if (cp.name == job.rec.resume_from) return (dir / cp.name).string();
    }
    log::Warn("jobs", "the checkpoint chosen with tau resume --from is gone; using the newest",
              {{"job", job.rec.id}, {"checkpoint", job.rec.resume_from}});
  }
  return list->empty() ? "" : (dir / list->front().name).string();
}

Result<std::shared_ptr<const JobView>> JobManager::Resume(const std::string& id_or_name, const std::string& from) {
  TAU_ASSIGN_OR_RETURN(Job * job, Find(id_or_name));
  if (!store::IsTerminal(job->rec.state)) {
    return FailedPreconditionError(fmt::format("job {} is {}; tau resume starts a new attempt of a job that has ended",
                                               job->rec.id, store::JobStateName(job->rec.state)));
  }
  auto list = resume::ListCheckpoints(home_.checkpoint_dir(job->rec.id), job->spec.checkpoint);
  if (!list.ok()) return list.status().WithContext("listing the job's checkpoints");
  if (!from.empty()) {
    bool found = false;
    std::vector<std::string> names;
    for (const auto& cp : *list) {
      found = found || cp.name == from;
      names.push_back(cp.name);
    }
    if (!found) {
      return NotFoundError(fmt::format("job {} has no complete checkpoint named \"{}\"; {}", job->rec.id, from,
                                       names.empty() ? std::string("it has none")
                                                     : "complete ones, newest first: " + Join(names, ", ")));
    }
  }
  Job& j = *job;
  j.rec.state = JobState::kQueued;
  j.rec.reason = "Resumed";
  j.rec.message = !from.empty()        ? fmt::format("resumed from checkpoint {}", from)
                  : !list->empty()     ? fmt::format("resumed from its newest checkpoint, {}", list->front().name)
                                       : std::string("resumed; it has no checkpoint, so it starts from the beginning");
  j.rec.exit_code.reset();
  j.rec.finished_at.reset();
  j.rec.cancel_requested = false;
  j.rec.preempted_by.clear();
  j.rec.restarts = 0;
  j.rec.interruptions = 0;
  j.rec.retry_at.reset();
  j.rec.retry_reason = "resume";
  j.rec.resume_from = from;
  j.rec.evidence.clear();  // sealed again when it ends
  TAU_ASSIGN_OR_RETURN(store::Transaction txn, store_->Begin());
  TAU_RETURN_IF_ERROR(SaveJob(j));
  TAU_RETURN_IF_ERROR(AppendEvent(j, "Resumed", "Resumed", j.rec.message));
  TAU_RETURN_IF_ERROR(txn.Commit());
  ScheduleAdmission();
  Publish();
  return j.view;
}

// ---- the checkpoint index ------------------------------------------------

void JobManager::RefreshCheckpoints(Job& job) {
  if (job.indexing) {
    job.index_again = true;
    return;
  }
  job.indexing = true;
  std::vector<std::string> protect;
  if (!job.resumed_from.empty() && !store::IsTerminal(job.rec.state)) {
    protect.push_back(fs::path(job.resumed_from).filename().string());
  }
  if (!job.rec.resume_from.empty()) protect.push_back(job.rec.resume_from);
  RunInBackground([this, id = job.rec.id, dir = home_.checkpoint_dir(job.rec.id), keep = job.spec.checkpoint.keep,
                   known = resume::CheckpointsFromJson(job.rec.checkpoints), protect,
                   rules = job.spec.checkpoint]() -> std::function<void()> {
    auto index = resume::IndexCheckpoints(dir, known, rules);
    std::vector<std::string> deleted;
    std::string json;
    if (index.ok()) {
      json = resume::CheckpointsToJson(resume::PruneCheckpoints(dir, std::move(*index), keep, protect, &deleted));
    } else {
      log::Warn("jobs", "cannot index checkpoints", {{"job", id}, {"error", index.status().ToString()}});
    }
    return [this, id, json = std::move(json), deleted = std::move(deleted)]() mutable {
      ApplyCheckpointIndex(id, std::move(json), std::move(deleted));
    };
  });
}

void JobManager::RunInBackground(std::function<std::function<void()>()> work) {
  if (!options_.background || !options_.defer) {
    work()();
    return;
  }
  options_.background([this, work = std::move(work)] { options_.defer(work()); });
}

void JobManager::ApplyCheckpointIndex(const std::string& id, std::string index_json, std::vector<std::string> deleted) {
  auto it = jobs_by_id_.find(id);
  if (it == jobs_by_id_.end()) return;  // removed meanwhile
  Job& job = *it->second;
  job.indexing = false;
  // "" (never indexed) and an empty index are the same: nothing to store.
  const bool unchanged = index_json == job.rec.checkpoints || (job.rec.checkpoints.empty() && index_json == "[]");
  if (!index_json.empty() && !unchanged) {
    std::vector<resume::Checkpoint> before = resume::CheckpointsFromJson(job.rec.checkpoints);
    std::vector<resume::Checkpoint> after = resume::CheckpointsFromJson(index_json);
    job.rec.checkpoints = std::move(index_json);
    auto txn = store_->Begin();
    Status st = txn.status();
    if (st.ok()) st = SaveJob(job);
    // The index lists the newest first; new ones are recorded oldest
    // first, so the last Checkpoint event names the newest.
    for (auto cp_it = after.rbegin(); cp_it != after.rend(); ++cp_it) {
      const resume::Checkpoint& cp = *cp_it;
      bool known = false;
      for (const auto& b : before) known = known || (b.name == cp.name && b.digest == cp.digest);
      if (!known && st.ok()) {
        st = AppendEvent(job, "Checkpoint", "",
                         fmt::format("{} ({}, {})", cp.name, FormatBytes(cp.size_bytes), cp.digest));
      }
    }
    if (!deleted.empty() && st.ok()) {
      st = AppendEvent(job, "CheckpointsPruned", "",
                       fmt::format("deleted {} (checkpoint.keep is {})", Join(deleted, ", "), job.spec.checkpoint.keep));
    }
    if (st.ok()) st = txn->Commit();
    if (!st.ok()) LogStoreFailure(job, st);
  }
  if (job.index_again) {
    job.index_again = false;
    RefreshCheckpoints(job);
  }
  if (!job.indexing && store::IsTerminal(job.rec.state) && job.rec.evidence.empty()) SealEvidence(job);
  Publish();
}

void JobManager::RefreshRunningCheckpoints() {
  for (const auto& [seq, job] : jobs_by_seq_) {
    if (job->rec.state == JobState::kRunning) RefreshCheckpoints(*job);
  }
}

}  // namespace tau::server
