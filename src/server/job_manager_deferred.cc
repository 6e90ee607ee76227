// Deferred writes (see JobManager::Deferring): records of what has already
// happened ride along with the job's next write, or go in one transaction
// for every job shortly after.

#include <algorithm>

#include "common/log.h"
#include "server/job_manager.h"

namespace tau::server {

Status JobManager::DeferSaveJob(Job& job) {
  job.view.reset();
  if (!Deferring()) return SaveJob(job);
  job.deferred.record = true;
  ArmDeferredFlush();
  return Status::Ok();
}

Status JobManager::DeferSaveAttempt(Job& job, const store::AttemptRecord& attempt) {
  if (!Deferring()) return SaveAttempt(job, attempt);
  job.view.reset();
  auto it = std::find_if(job.attempts.begin(), job.attempts.end(),
                         [&](const store::AttemptRecord& a) { return a.number == attempt.number; });
  if (it != job.attempts.end()) *it = attempt;
  else job.attempts.push_back(attempt);
  if (std::find(job.deferred.attempts.begin(), job.deferred.attempts.end(), attempt.number) ==
      job.deferred.attempts.end()) {
    job.deferred.attempts.push_back(attempt.number);
  }
  ArmDeferredFlush();
  return Status::Ok();
}

Status JobManager::DeferEvent(Job& job, std::string type, std::string reason, std::string message) {
  if (!Deferring()) return AppendEvent(job, std::move(type), std::move(reason), std::move(message));
  // Timed now, written later: the timeline keeps when it happened.
  job.deferred.events.push_back({0, job.rec.id, NowMs(), std::move(type), std::move(reason), std::move(message)});
  ArmDeferredFlush();
  return Status::Ok();
}

Status JobManager::WriteDeferred(Job& job, bool record_follows) {
  if (!job.deferred.any()) return Status::Ok();
  // Taken first: the writes below call back into SaveJob and SaveAttempt.
  Job::Deferred pending = std::move(job.deferred);
  job.deferred = {};
  // Should the caller's transaction not commit, these are lost with it, as
  // a commit of their own would have been: each is found again after a
  // restart (see Deferring), and a later save of the job writes its
  // record and attempts whole.
  if (pending.record && !record_follows) TAU_RETURN_IF_ERROR(store_->UpdateJob(job.rec));
  for (int64_t number : pending.attempts) {
    for (const auto& a : job.attempts) {
      if (a.number == number) TAU_RETURN_IF_ERROR(store_->UpsertAttempt(a));
    }
  }
  for (const store::EventRecord& e : pending.events) {
    TAU_ASSIGN_OR_RETURN(int64_t id, store_->AppendEvent(e));
    last_event_id_ = id;
  }
  return Status::Ok();
}

void JobManager::ArmDeferredFlush() {
  if (deferred_flush_armed_ || !Deferring()) return;
  deferred_flush_armed_ = true;
  options_.after(options_.deferred_write_delay, [this] {
    deferred_flush_armed_ = false;
    FlushDeferred();
  });
}

void JobManager::FlushDeferred() {
  std::vector<Job*> waiting;
  for (const auto& [seq, job] : jobs_by_seq_) {
    if (job->deferred.any()) waiting.push_back(job.get());
  }
  if (waiting.empty()) return;
  std::vector<Job::Deferred> saved;
  for (Job* job : waiting) saved.push_back(job->deferred);
  const int64_t last_event_id = last_event_id_;
  auto txn = store_->Begin();
  Status st = txn.status();
  for (Job* job : waiting) {
    if (st.ok()) st = WriteDeferred(*job);
  }
  if (st.ok()) st = txn->Commit();
  if (!st.ok()) {
    // Still to be written: put back what this transaction took (a full
    // disk: tried again later, never in a busy loop).
    for (size_t i = 0; i < waiting.size(); ++i) waiting[i]->deferred = saved[i];
    last_event_id_ = last_event_id;
    log::Warn("jobs", "could not write the deferred changes; trying again", {{"error", st.ToString()}});
    if (options_.after && !deferred_flush_armed_) {
      deferred_flush_armed_ = true;
      options_.after(kStoreRetryDelay, [this] {
        deferred_flush_armed_ = false;
        FlushDeferred();
      });
    }
    return;
  }
  ScheduleEviction();  // ended jobs whose capsule digest was waiting
}

}  // namespace tau::server
