// The job store's reads of history: one job, a page of the job list, what
// to prune and counts, each served by an index (docs/database.md).

#include <fmt/format.h>

#include <limits>
#include <utility>

#include "store/job_rows.h"
#include "store/job_store.h"

namespace tau::store {

Result<std::vector<JobRecord>> JobStore::LoadUnfinishedJobs() {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare(fmt::format(
                                         "SELECT {} FROM jobs WHERE state NOT IN {} OR (evidence = '' AND evidence_submit != '') "
                                         "ORDER BY seq",
                                         kJobColumns, kTerminalStatesSql)));
  return ReadJobRows(st);
}

Result<std::optional<JobRecord>> JobStore::LoadJob(const std::string& id) {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare(fmt::format("SELECT {} FROM jobs WHERE id = ?", kJobColumns)));
  st.Bind(1, id);
  TAU_ASSIGN_OR_RETURN(std::vector<JobRecord> rows, ReadJobRows(st));
  if (rows.empty()) return std::optional<JobRecord>();
  return std::optional<JobRecord>(std::move(rows.front()));
}

Result<bool> JobStore::JobExists(const std::string& id) {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("SELECT 1 FROM jobs WHERE id = ?"));
  st.Bind(1, id);
  return st.Step();
}

Result<std::string> JobStore::ResolveJobId(const std::string& id_or_name) {
  {
    TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("SELECT id FROM jobs WHERE id = ?"));
    st.Bind(1, id_or_name);
    TAU_ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) return st.Text(0);
  }
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare("SELECT id FROM jobs WHERE name = ? ORDER BY seq DESC LIMIT 1"));
  st.Bind(1, id_or_name);
  TAU_ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.Text(0) : std::string();
}

Result<std::vector<AttemptRecord>> JobStore::LoadAttemptsOf(const std::vector<std::string>& job_ids) {
  std::vector<AttemptRecord> out;
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare(fmt::format(
                                         "SELECT {} FROM attempts WHERE job_id = ? ORDER BY number", kAttemptColumns)));
  for (const std::string& id : job_ids) {
    st.Reset();
    st.Bind(1, id);
    TAU_ASSIGN_OR_RETURN(std::vector<AttemptRecord> rows, ReadAttemptRows(st));
    for (auto& a : rows) out.push_back(std::move(a));
  }
  return out;
}

Result<std::vector<JobRecord>> JobStore::ListJobs(const JobFilter& filter, int64_t before_seq, int limit) {
  // Parameters: ?1 before_seq, ?2 limit, then the filters in order.
  std::string where;
  int next = 3;
  auto add = [&](const std::string& clause) { where += (where.empty() ? " WHERE " : " AND ") + clause; };
  if (before_seq > 0) add("seq < ?1");
  if (filter.state) add(fmt::format("state = ?{}", next++));
  if (!filter.workspace.empty()) add(fmt::format("workspace = ?{}", next++));
  if (!filter.name.empty()) add(fmt::format("name = ?{}", next++));
  if (!filter.project.empty()) add(fmt::format("json_extract(spec_json, '$.experiment.project') = ?{}", next++));
  for (size_t i = 0; i < filter.tags.size(); ++i) {
    add(fmt::format("EXISTS (SELECT 1 FROM json_each(spec_json, '$.experiment.tags') WHERE key = ?{} AND value = ?{})",
                    next, next + 1));
    next += 2;
  }
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare(fmt::format("SELECT {} FROM jobs{} ORDER BY seq DESC LIMIT ?2",
                                                              kJobColumns, where)));
  st.Bind(1, before_seq).Bind(2, int64_t{limit});
  int p = 3;
  if (filter.state) st.Bind(p++, JobStateName(*filter.state));
  if (!filter.workspace.empty()) st.Bind(p++, filter.workspace);
  if (!filter.name.empty()) st.Bind(p++, filter.name);
  if (!filter.project.empty()) st.Bind(p++, filter.project);
  for (const auto& [k, v] : filter.tags) {
    st.Bind(p++, k);
    st.Bind(p++, v);
  }
  return ReadJobRows(st);
}

Result<std::vector<std::string>> JobStore::EndedJobsToPrune(std::optional<int64_t> ended_before_ms,
                                                            std::optional<int64_t> keep, int limit) {
  // Both rules prune a prefix of the ended jobs ordered by (finished_at,
  // seq), read through the partial index jobs_ended: the union is the
  // longer prefix, up to and including the bound (finished_at, seq). The
  // range on finished_at lets the scan stop at the bound.
  std::optional<std::pair<int64_t, int64_t>> bound;
  if (ended_before_ms) bound = std::make_pair(*ended_before_ms - 1, std::numeric_limits<int64_t>::max());
  if (keep) {
    // The newest ended job beyond the `keep` most recent: only index
    // entries are walked.
    TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare(fmt::format(
                                           "SELECT finished_at, seq FROM jobs INDEXED BY jobs_ended WHERE state IN {} "
                                           "ORDER BY finished_at DESC, seq DESC LIMIT 1 OFFSET ?1",
                                           kTerminalStatesSql)));
    st.Bind(1, *keep);
    TAU_ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) {
      auto keep_bound = std::make_pair(st.OptionalInt(0).value_or(std::numeric_limits<int64_t>::min()), st.Int(1));
      if (!bound || keep_bound > *bound) bound = keep_bound;
    }
  }
  if (!bound) return std::vector<std::string>();
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare(fmt::format(
                                         "SELECT id FROM jobs INDEXED BY jobs_ended WHERE state IN {} AND "
                                         "finished_at <= ?1 AND (finished_at < ?1 OR seq <= ?2) "
                                         "ORDER BY finished_at, seq LIMIT ?3",
                                         kTerminalStatesSql)));
  st.Bind(1, bound->first).Bind(2, bound->second).Bind(3, int64_t{limit});
  std::vector<std::string> out;
  while (true) {
    TAU_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(st.Text(0));
  }
  return out;
}

Result<std::vector<JobCount>> JobStore::CountEndedJobs() {
  TAU_ASSIGN_OR_RETURN(Statement st, db_->Prepare(fmt::format(
                                         "SELECT state, workspace, queue, COUNT(*) FROM jobs WHERE state IN {} "
                                         "GROUP BY state, workspace, queue",
                                         kTerminalStatesSql)));
  std::vector<JobCount> out;
  while (true) {
    TAU_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    auto state = ParseJobState(st.Text(0));
    if (!state) return InternalError(fmt::format("a job has unknown state {}", st.Text(0)));
    out.push_back({*state, st.Text(1), st.Text(2), st.Int(3)});
  }
  return out;
}

}  // namespace tau::store
