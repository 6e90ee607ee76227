#pragma once

// Row mapping of the jobs and attempts tables, shared by the files that
// implement JobStore. Internal to src/store.

#include <utility>
#include <vector>

#include "common/result.h"
#include "store/records.h"
#include "store/sqlite.h"

namespace tau::store {

// The columns of a job row, in the order BindJob binds and ReadJobRow reads.
inline constexpr char kJobColumns[] =
    "id, seq, name, workspace, queue, state, reason, message, exit_code, attempt, spec_json, "
    "spec_sha256, snapshot_digest, submit_command, cancel_requested, created_at, admitted_at, "
    "started_at, finished_at, depends_on, secret_env, held, priority_class, preempted_by, restarts, interruptions, retry_at, retry_reason, resume_from, "
    "checkpoints, reproduces, evidence_submit, evidence, gpu_fault";

inline constexpr char kAttemptColumns[] =
    "job_id, number, state, reason, exit_code, signal, shim_pid, shim_start_ticks, gpus, started_at, "
    "finished_at, pinned_cpus, retry_reason, resumed_from, peak_rss_kb, cluster_queue, flavors";

// The states a job ends in, as an SQL list: "('Succeeded','Failed','Cancelled')".
inline constexpr char kTerminalStatesSql[] = "('Succeeded','Failed','Cancelled')";

void BindJob(Statement& st, const JobRecord& j);

// Every row the statement yields, each mapped by `read_row`, a callable
// taking the Statement (positioned on the row) and returning a Result<T>.
template <typename T, typename ReadRow>
Result<std::vector<T>> ReadRows(Statement& st, ReadRow read_row) {
  std::vector<T> out;
  while (true) {
    TAU_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    TAU_ASSIGN_OR_RETURN(T value, read_row(st));
    out.push_back(std::move(value));
  }
  return out;
}

// One row of a statement selecting kJobColumns / kAttemptColumns.
Result<JobRecord> ReadJobRow(Statement& st);
Result<AttemptRecord> ReadAttemptRow(Statement& st);
// Every row of such a statement.
inline Result<std::vector<JobRecord>> ReadJobRows(Statement& st) { return ReadRows<JobRecord>(st, ReadJobRow); }
inline Result<std::vector<AttemptRecord>> ReadAttemptRows(Statement& st) {
  return ReadRows<AttemptRecord>(st, ReadAttemptRow);
}

}  // namespace tau::store
