#include "store/job_store.h"

#include <fmt/format.h>

#include <algorithm>

#include "store/job_rows.h"
#include "store/migrations.h"

namespace tau::store {

Result<std::unique_ptr<JobStore>> JobStore::Open(const std::string& path, const std::string& vfs) {
  TAU_ASSIGN_OR_RETURN(std::unique_ptr<Database> db, Database::Open(path, vfs));
  std::unique_ptr<JobStore> store(new JobStore(std::move(db)));
  TAU_RETURN_IF_ERROR(store->Migrate());
  return store;
}

Result<int> JobStore::SchemaVersion() {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("PRAGMA user_version"));
  TAU_ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? static_cast<int>(st.Int(0)) : 0;
}

Status JobStore::Migrate() {
  TAU_ASSIGN_OR_RETURN(int version, SchemaVersion());
  auto migrations = Migrations();
  if (version > static_cast<int>(migrations.size())) {
    return FailedPreconditionError(fmt::format(
        "the database has schema version {}, newer than this taugridd knows ({}); use a newer "
        "taugridd",
        version, migrations.size()));
  }
  for (size_t i = static_cast<size_t>(version); i < migrations.size(); ++i) {
    TAU_ASSIGN_OR_RETURN(Transaction txn, Transaction::Begin(db_.get()));
    TAU_RETURN_IF_ERROR(db_->Exec(migrations[i]).WithContext(fmt::format("migration {}", i + 1)));
    TAU_RETURN_IF_ERROR(db_->Exec(fmt::format("PRAGMA user_version = {}", i + 1)));
    TAU_RETURN_IF_ERROR(txn.Commit());
  }
  return Status::Ok();
}


Status JobStore::InsertJob(const JobRecord& job) {
  TAU_ASSIGN_OR_RETURN(Statement st,
                       db_->Prepare(fmt::format("INSERT INTO jobs ({}) VALUES "
                                                "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                                                kJobColumns)));
  BindJob(st, job);
  return st.Run();
}

Status JobStore::UpdateJob(const JobRecord& job) {
  // Only the columns that change after the insert: an index none of whose
  // columns is set is left alone, so a state change rewrites three of the
  // seven indexes of jobs, not all of them. Parameter numbers are
  // BindJob's.
  TAU_ASSIGN_OR_RETURN(Statement st,
                       db_->Prepare("UPDATE jobs SET state=?6, reason=?7, message=?8, exit_code=?9, attempt=?10, "
                                    "cancel_requested=?15, admitted_at=?17, started_at=?18, finished_at=?19, "
                                    "held=?22, priority_class=?23, preempted_by=?24, restarts=?25, "
                                    "interruptions=?26, retry_at=?27, retry_reason=?28, resume_from=?29, "
                                    "checkpoints=?30, evidence=?33, gpu_fault=?34 WHERE id=?1"));
  BindJob(st, job);
  TAU_RETURN_IF_ERROR(st.Run());
  if (db_->Changes() != 1) return NotFoundError(fmt::format("job {} is not in the database", job.id));
  return Status::Ok();
}

Status JobStore::InsertSubmitRequest(const SubmitRequestRecord& r) {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("INSERT INTO submit_requests (request_id, job_id, spec_sha256, "
                                                  "created_at) VALUES (?,?,?,?)"));
  st.Bind(1, r.request_id).Bind(2, r.job_id).Bind(3, r.spec_sha256).Bind(4, r.created_at);
  return st.Run();
}

Result<std::optional<SubmitRequestRecord>> JobStore::FindSubmitRequest(const std::string& request_id) {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("SELECT request_id, job_id, spec_sha256, created_at FROM "
                                                  "submit_requests WHERE request_id=?"));
  st.Bind(1, request_id);
  TAU_ASSIGN_OR_RETURN(auto rows, ReadRows<SubmitRequestRecord>(st, [](Statement& row) -> Result<SubmitRequestRecord> {
                         return SubmitRequestRecord{row.Text(0), row.Text(1), row.Text(2), row.Int(3)};
                       }));
  if (rows.empty()) return std::optional<SubmitRequestRecord>();
  return std::optional<SubmitRequestRecord>(std::move(rows.front()));
}

Status JobStore::DeleteSubmitRequestsOf(const std::string& job_id) {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("DELETE FROM submit_requests WHERE job_id=?"));
  st.Bind(1, job_id);
  return st.Run();
}

Result<int64_t> JobStore::DeleteSubmitRequestsBefore(int64_t created_before_ms) {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("DELETE FROM submit_requests WHERE created_at < ?"));
  st.Bind(1, created_before_ms);
  TAU_RETURN_IF_ERROR(st.Run());
  return int64_t{db_->Changes()};
}

Status JobStore::DeleteJob(const std::string& id) {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("DELETE FROM jobs WHERE id=?"));
  st.Bind(1, id);
  return st.Run();
}

Status JobStore::UpsertAttempt(const AttemptRecord& a) {
  TAU_ASSIGN_OR_RETURN(
      Statement st,
      db_->Prepare("INSERT INTO attempts (job_id, number, state, reason, exit_code, signal, shim_pid, "
                   "shim_start_ticks, gpus, started_at, finished_at, pinned_cpus, retry_reason, resumed_from, "
                   "peak_rss_kb, cluster_queue, flavors) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
                   "ON CONFLICT(job_id, number) DO UPDATE SET state=excluded.state, "
                   "reason=excluded.reason, exit_code=excluded.exit_code, signal=excluded.signal, "
                   "shim_pid=excluded.shim_pid, shim_start_ticks=excluded.shim_start_ticks, "
                   "gpus=excluded.gpus, started_at=excluded.started_at, "
                   "finished_at=excluded.finished_at, pinned_cpus=excluded.pinned_cpus, "
                   "retry_reason=excluded.retry_reason, resumed_from=excluded.resumed_from, "
                   "peak_rss_kb=excluded.peak_rss_kb, cluster_queue=excluded.cluster_queue, "
                   "flavors=excluded.flavors"));
  st.Bind(1, a.job_id).Bind(2, a.number).Bind(3, AttemptStateName(a.state)).Bind(4, a.reason)
      .Bind(5, a.exit_code).Bind(6, a.signal).Bind(7, a.shim_pid).Bind(8, a.shim_start_ticks)
      .Bind(9, a.gpus).Bind(10, a.started_at).Bind(11, a.finished_at).Bind(12, a.pinned_cpus)
      .Bind(13, a.retry_reason).Bind(14, a.resumed_from).Bind(15, a.peak_rss_kb)
      .Bind(16, a.cluster_queue).Bind(17, a.flavors);
  return st.Run();
}

Result<int64_t> JobStore::AppendEvent(const EventRecord& e) {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("INSERT INTO events (job_id, at, type, reason, "
                                                  "message) VALUES (?,?,?,?,?)"));
  st.Bind(1, e.job_id).Bind(2, e.at).Bind(3, e.type).Bind(4, e.reason).Bind(5, e.message);
  TAU_RETURN_IF_ERROR(st.Run());
  return db_->LastInsertRowId();
}

Result<std::vector<JobRecord>> JobStore::LoadJobs() {
  TAU_ASSIGN_OR_RETURN(Statement st,
                       db_->Prepare(fmt::format("SELECT {} FROM jobs ORDER BY seq", kJobColumns)));
  return ReadJobRows(st);
}

Result<std::vector<AttemptRecord>> JobStore::LoadAttempts() {
  TAU_ASSIGN_OR_RETURN(Statement st,
                       db_->Prepare(fmt::format("SELECT {} FROM attempts ORDER BY job_id, number", kAttemptColumns)));
  return ReadAttemptRows(st);
}

Result<std::vector<KueueObjectRecord>> JobStore::LoadKueueObjects() {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("SELECT kind, namespace, name, json FROM kueue_objects "
                                                  "ORDER BY rowid"));
  return ReadRows<KueueObjectRecord>(st, [](Statement& row) -> Result<KueueObjectRecord> {
    return KueueObjectRecord{row.Text(0), row.Text(1), row.Text(2), row.Text(3)};
  });
}

Status JobStore::ReplaceKueueObjects(const std::vector<KueueObjectRecord>& objects) {
  TAU_RETURN_IF_ERROR(db_->Exec("DELETE FROM kueue_objects"));
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("INSERT INTO kueue_objects (kind, namespace, name, json) "
                                                  "VALUES (?,?,?,?)"));
  for (const auto& o : objects) {
    st.Reset();
    st.Bind(1, o.kind).Bind(2, o.namespace_).Bind(3, o.name).Bind(4, o.json);
    TAU_RETURN_IF_ERROR(st.Run());
  }
  return Status::Ok();
}

Result<std::string> JobStore::Setting(const std::string& key) {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("SELECT value FROM settings WHERE key = ?"));
  st.Bind(1, key);
  TAU_ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Text(0) : std::string();
}

Status JobStore::SetSetting(const std::string& key, const std::string& value) {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("INSERT INTO settings (key, value) VALUES (?, ?) "
                                                  "ON CONFLICT(key) DO UPDATE SET value = excluded.value"));
  st.Bind(1, key).Bind(2, value);
  return st.Run();
}

Result<std::vector<EventRecord>> JobStore::LoadEvents(const std::string& job_id, int64_t after_id,
                                                      int limit) {
  std::string sql = "SELECT id, job_id, at, type, reason, message FROM events WHERE id > ?1";
  if (!job_id.empty()) sql += " AND job_id = ?2";
  sql += " ORDER BY id LIMIT ?3";
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare(sql));
  st.Bind(1, after_id).Bind(3, int64_t{limit});
  if (!job_id.empty()) st.Bind(2, job_id);
  return ReadRows<EventRecord>(st, [](Statement& row) -> Result<EventRecord> {
    return EventRecord{row.Int(0), row.Text(1), row.Int(2), row.Text(3), row.Text(4), row.Text(5)};
  });
}

Status JobStore::UpsertGpu(const GpuRecord& g) {
  TAU_ASSIGN_OR_RETURN(Statement st,
                       db_->Prepare("INSERT INTO gpus (uuid, state, reason, message, since, drained) VALUES (?,?,?,?,?,?) "
                                    "ON CONFLICT(uuid) DO UPDATE SET state=excluded.state, reason=excluded.reason, "
                                    "message=excluded.message, since=excluded.since, drained=excluded.drained"));
  st.Bind(1, g.uuid).Bind(2, g.state).Bind(3, g.reason).Bind(4, g.message).Bind(5, g.since)
      .Bind(6, int64_t{g.drained ? 1 : 0});
  return st.Run();
}

Result<std::vector<GpuRecord>> JobStore::LoadGpus() {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("SELECT uuid, state, reason, message, since, drained FROM gpus"));
  return ReadRows<GpuRecord>(st, [](Statement& row) -> Result<GpuRecord> {
    return GpuRecord{row.Text(0), row.Text(1), row.Text(2), row.Text(3), row.Int(4), row.Int(5) != 0};
  });
}

Result<int64_t> JobStore::AppendGpuEvent(const GpuEventRecord& e) {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("INSERT INTO gpu_events (at, uuid, type, reason, message) "
                                                  "VALUES (?,?,?,?,?)"));
  st.Bind(1, e.at).Bind(2, e.uuid).Bind(3, e.type).Bind(4, e.reason).Bind(5, e.message);
  TAU_RETURN_IF_ERROR(st.Run());
  return db_->LastInsertRowId();
}

Result<std::vector<GpuEventRecord>> JobStore::LoadGpuEvents(const std::string& uuid, int limit) {
  std::string sql = "SELECT id, at, uuid, type, reason, message FROM gpu_events";
  if (!uuid.empty()) sql += " WHERE uuid = ?2";
  sql += " ORDER BY id DESC LIMIT ?1";
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare(sql));
  st.Bind(1, int64_t{limit});
  if (!uuid.empty()) st.Bind(2, uuid);
  TAU_ASSIGN_OR_RETURN(std::vector<GpuEventRecord> out,
                       ReadRows<GpuEventRecord>(st, [](Statement& row) -> Result<GpuEventRecord> {
                         return GpuEventRecord{row.Int(0), row.Int(1), row.Text(2), row.Text(3), row.Text(4),
                                               row.Text(5)};
                       }));
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace tau::store
