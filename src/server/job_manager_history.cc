// Ended jobs (docs/control-plane.md#history): the loop lets them go once
// nothing is left to do for them, reads them back from the database when a
// command names one, removes them (tau rm, tau prune) and keeps at most
// history.keep of them.

#include <fmt/format.h>

#include <filesystem>

#include "common/log.h"
#include "server/job_manager.h"

namespace tau::server {
namespace fs = std::filesystem;

namespace {

// Ended jobs removed per transaction by prune and the retention.
constexpr int kPruneBatch = 500;

}  // namespace

bool JobManager::Evictable(const Job& job) const {
  if (!store::IsTerminal(job.rec.state) || job.holds_resources || job.sealing_evidence ||
      !job.evidence_error.empty() || job.indexing ||
      job.index_again || job.deferred.any() || HasUnrecordedEnd(job.rec.id)) {
    return false;
  }
  for (const auto& rank : job.ranks) {
    if (rank.draining || (rank.token && jobs_by_token_.count(rank.token))) return false;  // a shim still watched
  }
  return true;
}

void JobManager::ScheduleEviction() {
  if (eviction_scheduled_ || !options_.defer) return;
  eviction_scheduled_ = true;
  // After the task that ended the job: no caller still holds it then.
  options_.defer([this] {
    eviction_scheduled_ = false;
    EvictEnded();
  });
}

void JobManager::EvictEnded() {
  std::vector<std::string> ids;
  for (const auto& [seq, job] : jobs_by_seq_) {
    if (Evictable(*job)) ids.push_back(job->rec.id);
  }
  for (const std::string& id : ids) Forget(id);
  if (!ids.empty()) ForgetOldSubmitRequests();
  if (options_.history_keep && !ids.empty()) {
    auto removed = PruneEnded(std::nullopt, options_.history_keep);
    if (!removed.ok()) {
      log::Warn("jobs", "cannot apply history.keep", {{"error", removed.status().ToString()}});
    } else if (!removed->empty()) {
      log::Debug("jobs", "removed ended jobs beyond history.keep",
                {{"removed", std::to_string(removed->size())}, {"keep", std::to_string(*options_.history_keep)}});
    }
  }
  if (!ids.empty()) Publish();
}

void JobManager::Forget(const std::string& id) {
  auto it = jobs_by_id_.find(id);
  if (it == jobs_by_id_.end()) return;
  const int64_t seq = it->second->rec.seq;
  jobs_by_id_.erase(it);
  jobs_by_seq_.erase(seq);
}

size_t JobManager::HeldJobs() const { return jobs_by_seq_.size(); }

void JobManager::RemoveFiles(const store::JobRecord& rec, bool now) {
  std::vector<fs::path> paths = {home_.job_dir(rec.id), home_.shim_dir(rec.id)};
  // The job's evidence capsules name the job: no other job shares them.
  for (const std::string& digest : {rec.evidence_submit, rec.evidence}) {
    if (!digest.empty()) paths.push_back(home_.blob(digest));
  }
  auto remove = [paths = std::move(paths)] {
    std::error_code ec;
    for (const fs::path& p : paths) fs::remove_all(p, ec);
    return [] {};
  };
  if (now) {
    remove();
  } else {
    RunInBackground(std::move(remove));
  }
}

void JobManager::RemoveOrphanFiles() {
  // Job folders (and their shims' locks) whose row is gone: prune deletes
  // rows first and files after (off the loop), so a daemon stopped in
  // between leaves them. Runs before the API serves, when no submit can be
  // between its files and its row.
  std::vector<fs::path> orphans;
  std::error_code ec;
  for (const char* folder : {"jobs", "shims"}) {
    ec.clear();
    for (fs::directory_iterator it(home_.root() / folder, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string id = it->path().filename().string();
      auto exists = store_->JobExists(id);
      if (exists.ok() && !*exists) orphans.push_back(it->path());
    }
  }
  if (orphans.empty()) return;
  log::Info("jobs", "removing the folders of jobs removed while the daemon stopped",
            {{"folders", std::to_string(orphans.size())}});
  RunInBackground([orphans = std::move(orphans)] {
    std::error_code ec;
    for (const fs::path& p : orphans) fs::remove_all(p, ec);
    return [] {};
  });
}

Status JobManager::Remove(const std::string& id_or_name) {
  TAU_ASSIGN_OR_RETURN(Job * job, Find(id_or_name));
  if (!store::IsTerminal(job->rec.state)) {
    return FailedPreconditionError(fmt::format(
        "job {} is {}; cancel it first (tau cancel {})", job->rec.id,
        store::JobStateName(job->rec.state), job->rec.id));
  }
  TAU_RETURN_IF_ERROR(store_->DeleteJob(job->rec.id));
  store::JobRecord rec = job->rec;
  Forget(rec.id);
  executor_->Discard(rec.id);  // anything an earlier daemon left of it
  RemoveFiles(rec, /*now=*/true);  // one job: gone when tau rm returns
  Publish();
  ScheduleAdmission();  // queued jobs that depended on it fail now
  return Status::Ok();
}

Result<std::vector<std::string>> JobManager::PruneEnded(std::optional<std::chrono::milliseconds> age,
                                                        std::optional<int64_t> keep) {
  std::optional<int64_t> cutoff;
  if (age) cutoff = NowMs() - age->count();
  std::vector<std::string> removed;
  while (true) {
    TAU_ASSIGN_OR_RETURN(std::vector<std::string> ids, store_->EndedJobsToPrune(cutoff, keep, kPruneBatch));
    if (ids.empty()) break;
    std::vector<store::JobRecord> records;
    {
      TAU_ASSIGN_OR_RETURN(store::Transaction txn, store_->Begin());
      for (const std::string& id : ids) {
        TAU_ASSIGN_OR_RETURN(std::optional<store::JobRecord> rec, store_->LoadJob(id));
        if (!rec) continue;
        TAU_RETURN_IF_ERROR(store_->DeleteJob(id));
        TAU_RETURN_IF_ERROR(store_->DeleteSubmitRequestsOf(id));
        records.push_back(std::move(*rec));
      }
      TAU_RETURN_IF_ERROR(txn.Commit());
    }
    // Files after the rows: a crash in between leaves files without a job,
    // never a job without its files.
    for (const store::JobRecord& rec : records) {
      Forget(rec.id);
      RemoveFiles(rec, /*now=*/false);
      removed.push_back(rec.id);
    }
    if (static_cast<int>(ids.size()) < kPruneBatch) break;
  }
  ForgetOldSubmitRequests();
  if (!removed.empty()) {
    Publish();
    ScheduleAdmission();  // queued jobs that depended on them fail now
  }
  return removed;
}

void JobManager::ForgetOldSubmitRequests() {
  // A delete needs disk space too; and one that finds nothing to delete
  // would end the DiskFull condition without anything written.
  if (disk_full_) return;
  const int64_t now = NowMs();
  if (submit_requests_swept_at_ != 0 &&
      now - submit_requests_swept_at_ < std::chrono::milliseconds(kSubmitRequestSweepEvery).count()) {
    return;
  }
  const int64_t cutoff = now - std::chrono::duration_cast<std::chrono::milliseconds>(kSubmitRequestKeep).count();
  auto removed = store_->DeleteSubmitRequestsBefore(cutoff);
  if (removed.ok()) submit_requests_swept_at_ = now;
  if (!removed.ok()) {
    log::Warn("jobs", "cannot remove old submit request ids", {{"error", removed.status().ToString()}});
  } else if (*removed > 0) {
    log::Debug("jobs", "removed submit request ids past their retry window", {{"removed", std::to_string(*removed)}});
  }
}

Result<std::vector<std::string>> JobManager::Prune(std::optional<std::chrono::milliseconds> age,
                                                   std::optional<int64_t> keep) {
  if (!age && !keep) return InvalidArgumentError("prune needs older_than, keep or both");
  if (keep && *keep < 0) return InvalidArgumentError(fmt::format("keep {} is negative", *keep));
  return PruneEnded(age, keep);
}

}  // namespace tau::server
