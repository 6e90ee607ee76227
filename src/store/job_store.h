#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "store/records.h"
#include "store/sqlite.h"

namespace tau::store {

// What a job list asks for; every filter given must match.
struct JobFilter {
  std::optional<JobState> state;
  std::string workspace;
  std::string name;
  std::string project;  // experiment.project
  std::vector<std::pair<std::string, std::string>> tags;  // experiment.tags: each KEY=VALUE
};

// How many ended jobs have one state, workspace and queue.
struct JobCount {
  JobState state = JobState::kSucceeded;
  std::string workspace;
  std::string queue;
  int64_t count = 0;
};

// The jobs, attempts and events tables (docs/database.md). Every method
// runs in the caller's transaction when one is open; the control loop opens
// one per batch of changes so a change is durable before it is acted on.
class JobStore {
 public:
  // Opens the database at `path` and applies pending migrations. `vfs`:
  // see Database::Open.
  static Result<std::unique_ptr<JobStore>> Open(const std::string& path, const std::string& vfs = "");

  // The schema version after migrations (PRAGMA user_version).
  Result<int> SchemaVersion();

  Status InsertJob(const JobRecord& job);
  // Writes what changes over a job's life (state, reasons, times, attempt,
  // retry and checkpoint fields, evidence, ...). What is fixed when the job
  // is submitted (id, seq, name, workspace, queue, spec, snapshot, submit
  // command, created_at, depends_on, secret_env, reproduces,
  // evidence_submit) is kept as InsertJob wrote it.
  Status UpdateJob(const JobRecord& job);
  Status DeleteJob(const std::string& id);  // with its attempts and events
  Status UpsertAttempt(const AttemptRecord& attempt);
  // Appends an event and returns its id.
  Result<int64_t> AppendEvent(const EventRecord& event);

  // Submit request ids. DeleteJob keeps them (a submit sent again after
  // `tau rm` is told its job was removed); prune removes them with their
  // job, and every id goes once it is older than the retry window.
  // Find: nullopt when the id is unknown.
  Status InsertSubmitRequest(const SubmitRequestRecord& request);
  Result<std::optional<SubmitRequestRecord>> FindSubmitRequest(const std::string& request_id);
  Status DeleteSubmitRequestsOf(const std::string& job_id);
  // Deletes the ids created before `created_before_ms`; returns how many.
  Result<int64_t> DeleteSubmitRequestsBefore(int64_t created_before_ms);

  Result<std::vector<JobRecord>> LoadJobs();
  Result<std::vector<AttemptRecord>> LoadAttempts();

  // History (job_store_history.cc): the control loop keeps only unfinished
  // jobs in memory; ended ones are read from here when asked for.
  //
  // The jobs a restarted daemon keeps in memory: those that have not ended,
  // and ended ones whose evidence is not sealed yet (of those that have
  // evidence at all). Submission order.
  Result<std::vector<JobRecord>> LoadUnfinishedJobs();
  // One job by id; nullopt when there is none.
  Result<std::optional<JobRecord>> LoadJob(const std::string& id);
  Result<bool> JobExists(const std::string& id);
  // The id of the job with this id, else of the newest job (highest seq)
  // with this name; "" when there is none.
  Result<std::string> ResolveJobId(const std::string& id_or_name);
  // The attempts of these jobs, by job id then number.
  Result<std::vector<AttemptRecord>> LoadAttemptsOf(const std::vector<std::string>& job_ids);
  // Up to `limit` jobs that match `filter` and have seq < `before_seq`
  // (0: no bound), newest (highest seq) first.
  Result<std::vector<JobRecord>> ListJobs(const JobFilter& filter, int64_t before_seq, int limit);
  // Ended jobs to prune, oldest end first, at most `limit`: those that
  // ended before `ended_before_ms` (when set), and those older than the
  // `keep` most recently ended (when set).
  Result<std::vector<std::string>> EndedJobsToPrune(std::optional<int64_t> ended_before_ms,
                                                    std::optional<int64_t> keep, int limit);
  // Ended jobs by state, workspace and queue.
  Result<std::vector<JobCount>> CountEndedJobs();
  // Events with id > after_id, oldest first; all jobs when job_id is empty.
  Result<std::vector<EventRecord>> LoadEvents(const std::string& job_id, int64_t after_id, int limit);

  // The Kueue configuration objects, in the order applied; replacing
  // writes the whole set (call inside a transaction).
  Result<std::vector<KueueObjectRecord>> LoadKueueObjects();
  Status ReplaceKueueObjects(const std::vector<KueueObjectRecord>& objects);
  // Small named values ("" when unset): kueue_config_version, ...
  Result<std::string> Setting(const std::string& key);
  Status SetSetting(const std::string& key, const std::string& value);

  // GPU health: one row per GPU (upserted), and the GPU event log.
  Status UpsertGpu(const GpuRecord& gpu);
  Result<std::vector<GpuRecord>> LoadGpus();
  Result<int64_t> AppendGpuEvent(const GpuEventRecord& event);
  // Newest last; `uuid` "" for every GPU.
  Result<std::vector<GpuEventRecord>> LoadGpuEvents(const std::string& uuid, int limit);

  Result<Transaction> Begin() { return Transaction::Begin(db_.get()); }
  Database* db() { return db_.get(); }

 private:
  explicit JobStore(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  Status Migrate();

  std::unique_ptr<Database> db_;
};

}  // namespace tau::store
