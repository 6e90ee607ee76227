#include "store/job_rows.h"

#include <fmt/format.h>

namespace tau::store {

void BindJob(Statement& st, const JobRecord& j) {
  st.Bind(1, j.id).Bind(2, j.seq).Bind(3, j.name).Bind(4, j.workspace).Bind(5, j.queue)
      .Bind(6, JobStateName(j.state)).Bind(7, j.reason).Bind(8, j.message).Bind(9, j.exit_code)
      .Bind(10, j.attempt).Bind(11, j.spec_json).Bind(12, j.spec_sha256)
      .Bind(13, j.snapshot_digest).Bind(14, j.submit_command)
      .Bind(15, int64_t{j.cancel_requested ? 1 : 0}).Bind(16, j.created_at)
      .Bind(17, j.admitted_at).Bind(18, j.started_at).Bind(19, j.finished_at).Bind(20, j.depends_on)
      .Bind(21, j.secret_env).Bind(22, int64_t{j.held ? 1 : 0}).Bind(23, j.priority_class)
      .Bind(24, j.preempted_by).Bind(25, j.restarts).Bind(26, j.interruptions).Bind(27, j.retry_at)
      .Bind(28, j.retry_reason).Bind(29, j.resume_from).Bind(30, j.checkpoints).Bind(31, j.reproduces)
      .Bind(32, j.evidence_submit).Bind(33, j.evidence).Bind(34, j.gpu_fault);
}

Result<JobRecord> ReadJobRow(Statement& st) {
  JobRecord j;
  j.id = st.Text(0);
  j.seq = st.Int(1);
  j.name = st.Text(2);
  j.workspace = st.Text(3);
  j.queue = st.Text(4);
  auto state = ParseJobState(st.Text(5));
  if (!state) return InternalError(fmt::format("job {} has unknown state {}", j.id, st.Text(5)));
  j.state = *state;
  j.reason = st.Text(6);
  j.message = st.Text(7);
  j.exit_code = st.OptionalInt(8);
  j.attempt = st.Int(9);
  j.spec_json = st.Text(10);
  j.spec_sha256 = st.Text(11);
  j.snapshot_digest = st.Text(12);
  j.submit_command = st.Text(13);
  j.cancel_requested = st.Int(14) != 0;
  j.created_at = st.Int(15);
  j.admitted_at = st.OptionalInt(16);
  j.started_at = st.OptionalInt(17);
  j.finished_at = st.OptionalInt(18);
  j.depends_on = st.Text(19);
  j.secret_env = st.Text(20);
  j.held = st.Int(21) != 0;
  j.priority_class = st.Text(22);
  j.preempted_by = st.Text(23);
  j.restarts = st.Int(24);
  j.interruptions = st.Int(25);
  j.retry_at = st.OptionalInt(26);
  j.retry_reason = st.Text(27);
  j.resume_from = st.Text(28);
  j.checkpoints = st.Text(29);
  j.reproduces = st.Text(30);
  j.evidence_submit = st.Text(31);
  j.evidence = st.Text(32);
  j.gpu_fault = st.Text(33);
  return j;
}

Result<AttemptRecord> ReadAttemptRow(Statement& st) {
  AttemptRecord a;
  a.job_id = st.Text(0);
  a.number = st.Int(1);
  auto state = ParseAttemptState(st.Text(2));
  if (!state) return InternalError(fmt::format("attempt {}/{} has unknown state", a.job_id, a.number));
  a.state = *state;
  a.reason = st.Text(3);
  a.exit_code = st.OptionalInt(4);
  a.signal = st.OptionalInt(5);
  a.shim_pid = st.Int(6);
  a.shim_start_ticks = st.Int(7);
  a.gpus = st.Text(8);
  a.started_at = st.OptionalInt(9);
  a.finished_at = st.OptionalInt(10);
  a.pinned_cpus = st.Text(11);
  a.retry_reason = st.Text(12);
  a.resumed_from = st.Text(13);
  a.peak_rss_kb = st.Int(14);
  a.cluster_queue = st.Text(15);
  a.flavors = st.Text(16);
  return a;
}

}  // namespace tau::store
