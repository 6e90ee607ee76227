#include "store/migrations.h"

namespace tau::store {
namespace {

constexpr std::string_view kMigrations[] = {
    // 1: jobs, attempts, events.
    R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL UNIQUE,
  name TEXT NOT NULL,
  workspace TEXT NOT NULL,
  queue TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  exit_code INTEGER,
  attempt INTEGER NOT NULL DEFAULT 0,
  spec_json TEXT NOT NULL,
  spec_sha256 TEXT NOT NULL,
  snapshot_digest TEXT NOT NULL,
  submit_command TEXT NOT NULL DEFAULT '',
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  admitted_at INTEGER,
  started_at INTEGER,
  finished_at INTEGER
) STRICT;
CREATE INDEX jobs_by_name ON jobs(name, seq);
CREATE TABLE attempts (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  number INTEGER NOT NULL,
  state TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  exit_code INTEGER,
  signal INTEGER,
  shim_pid INTEGER NOT NULL DEFAULT 0,
  shim_start_ticks INTEGER NOT NULL DEFAULT 0,
  gpus TEXT NOT NULL DEFAULT '',
  started_at INTEGER,
  finished_at INTEGER,
  PRIMARY KEY (job_id, number)
) STRICT;
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  at INTEGER NOT NULL,
  type TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX events_by_job ON events(job_id, id);
)sql",
    // 2: the job ids a job waits for (depends_on, resolved at submit).
    R"sql(
ALTER TABLE jobs ADD COLUMN depends_on TEXT NOT NULL DEFAULT '';
)sql",
    // 3: secret environment variables (tau run --env-file), a JSON object.
    R"sql(
ALTER TABLE jobs ADD COLUMN secret_env TEXT NOT NULL DEFAULT '';
)sql",
    // 4: Kueue configuration objects as applied, and held jobs.
    R"sql(
CREATE TABLE kueue_objects (
  kind TEXT NOT NULL,
  namespace TEXT NOT NULL DEFAULT '',
  name TEXT NOT NULL,
  json TEXT NOT NULL,
  PRIMARY KEY (kind, namespace, name)
) STRICT;
CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;
ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;
)sql",
    // 5: a WorkloadPriorityClass set after submit (tau set-priority).
    R"sql(
ALTER TABLE jobs ADD COLUMN priority_class TEXT NOT NULL DEFAULT '';
)sql",
    // 6: who preempted the running attempt, so that an attempt stopping
    // across a daemon restart still goes back to its queue.
    R"sql(
ALTER TABLE jobs ADD COLUMN preempted_by TEXT NOT NULL DEFAULT '';
)sql",
    // 7: the CPUs each rank is pinned to (without cgroups), so that a
    // restart counts the load of the attempts it re-adopts.
    R"sql(
ALTER TABLE attempts ADD COLUMN pinned_cpus TEXT NOT NULL DEFAULT '';
)sql",
    // 8: retries (the budget spent, the backoff's end, why the next attempt
    // runs), the checkpoint a resume starts from, and the checkpoint index.
    R"sql(
ALTER TABLE jobs ADD COLUMN restarts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN interruptions INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN retry_at INTEGER;
ALTER TABLE jobs ADD COLUMN retry_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN resume_from TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN checkpoints TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN retry_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN resumed_from TEXT NOT NULL DEFAULT '';
)sql",
    // 9: the evidence capsule (blob digests of its submit part and of the
    // completed capsule), the job a reproduction copies, and each
    // attempt's peak memory.
    R"sql(
ALTER TABLE jobs ADD COLUMN reproduces TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN evidence_submit TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN evidence TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN peak_rss_kb INTEGER NOT NULL DEFAULT 0;
)sql",
    // 10: GPU health (a fatal state is sticky across restarts), drains, the
    // GPU event log, and the GPU fault that is stopping a job's attempt.
    R"sql(
CREATE TABLE gpus (
  uuid TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT '',
  since INTEGER NOT NULL DEFAULT 0,
  drained INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE TABLE gpu_events (
  id INTEGER PRIMARY KEY,
  at INTEGER NOT NULL,
  uuid TEXT NOT NULL,
  type TEXT NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  message TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE INDEX gpu_events_by_uuid ON gpu_events(uuid, id);
ALTER TABLE jobs ADD COLUMN gpu_fault TEXT NOT NULL DEFAULT '';
)sql",
    // 11: the client-chosen ids of submits, so that a submit sent again
    // (after a lost connection) returns the job the first one created.
    R"sql(
CREATE TABLE submit_requests (
  request_id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL,
  spec_sha256 TEXT NOT NULL,
  created_at INTEGER NOT NULL
) STRICT;
)sql",
    // 12: history read from the database (the daemon keeps only unfinished
    // jobs in memory): the job list newest first by state or workspace, the
    // ended jobs by the time they ended (prune, history.keep), and the
    // counts of ended jobs per state and queue (the taugrid_jobs gauge).
    R"sql(
CREATE INDEX jobs_by_state ON jobs(state, seq);
CREATE INDEX jobs_by_workspace ON jobs(workspace, seq);
CREATE INDEX jobs_ended ON jobs(finished_at, seq) WHERE state IN ('Succeeded','Failed','Cancelled');
CREATE INDEX jobs_by_state_queue ON jobs(state, workspace, queue);
)sql",
    // 13: submit request ids are removed with their job (prune,
    // history.keep) and once they are older than a week.
    R"sql(
CREATE INDEX submit_requests_by_job ON submit_requests(job_id);
CREATE INDEX submit_requests_by_age ON submit_requests(created_at);
)sql",
    // 14: what admitted each attempt (its ClusterQueue and flavors), for
    // the evidence and the API.
    R"sql(
ALTER TABLE attempts ADD COLUMN cluster_queue TEXT NOT NULL DEFAULT '';
ALTER TABLE attempts ADD COLUMN flavors TEXT NOT NULL DEFAULT '';
)sql",
};

}  // namespace

std::span<const std::string_view> Migrations() { return kMigrations; }

}  // namespace tau::store
