#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "store/records.h"
#include "store/sqlite.h"

namespace tau::store {

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
  Status UpdateJob(const JobRecord& job);
  Status DeleteJob(const std::string& id);  // with its attempts and events
  Status UpsertAttempt(const AttemptRecord& attempt);
  // Appends an event and returns its id.
  Result<int64_t> AppendEvent(const EventRecord& event);

  // Submit request ids (kept after their job is removed, so an old id is
  // never taken for a new submit). Find: nullopt when the id is unknown.
  Status InsertSubmitRequest(const SubmitRequestRecord& request);
  Result<std::optional<SubmitRequestRecord>> FindSubmitRequest(const std::string& request_id);

  Result<std::vector<JobRecord>> LoadJobs();
  Result<std::vector<AttemptRecord>> LoadAttempts();
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
