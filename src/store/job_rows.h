#pragma once

// Row mapping of the jobs and attempts tables, shared by the files that
// implement JobStore. Internal to src/store.

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
    "finished_at, pinned_cpus, retry_reason, resumed_from, peak_rss_kb";

// The states a job ends in, as an SQL list: "('Succeeded','Failed','Cancelled')".
inline constexpr char kTerminalStatesSql[] = "('Succeeded','Failed','Cancelled')";

void BindJob(Statement& st, const JobRecord& j);
// Every row the statement (selecting kJobColumns / kAttemptColumns) yields.
Result<std::vector<JobRecord>> ReadJobRows(Statement& st);
Result<std::vector<AttemptRecord>> ReadAttemptRows(Statement& st);

}  // namespace tau::store
