#include "server/job_json.h"

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/quantity.h"
#include "common/strings.h"
#include "evidence/redact.h"
#include "resume/checkpoint_index.h"

namespace tau::server {
using nlohmann::json;

json TimeToJson(const std::optional<int64_t>& ms) {
  if (!ms) return nullptr;
  return FormatRfc3339(Clock::WallTime(std::chrono::milliseconds(*ms)));
}

json OptionalToJson(const std::optional<int64_t>& v) {
  if (!v) return nullptr;
  return *v;
}

json FlavorsToJson(const std::string& flavors) {
  json out = json::object();
  for (const auto& pair : Split(flavors, ',')) {
    const size_t eq = pair.find('=');
    if (eq != std::string::npos) out[std::string(pair.substr(0, eq))] = std::string(pair.substr(eq + 1));
  }
  return out;
}

json JobToJson(const JobView& v) {
  const store::JobRecord& j = v.job;
  json attempts = json::array();
  for (const auto& a : v.attempts) {
    json gpus = json::array();
    for (const auto& g : Split(a.gpus, ',')) {
      if (!g.empty()) gpus.push_back(g);
    }
    attempts.push_back({{"number", a.number},
                        {"state", store::AttemptStateName(a.state)},
                        {"reason", a.reason},
                        {"exit_code", OptionalToJson(a.exit_code)},
                        {"signal", OptionalToJson(a.signal)},
                        {"gpus", gpus},
                        {"retry_reason", a.retry_reason},
                        {"resumed_from", a.resumed_from},
                        {"cluster_queue", a.cluster_queue},
                        {"flavors", FlavorsToJson(a.flavors)},
                        {"started_at", TimeToJson(a.started_at)},
                        {"finished_at", TimeToJson(a.finished_at)}});
  }
  json checkpoints = json::array();
  for (const auto& cp : resume::CheckpointsFromJson(j.checkpoints)) {
    checkpoints.push_back({{"name", cp.name},
                           {"path", v.checkpoint_dir + "/" + cp.name},
                           {"folder", cp.folder},
                           {"size_bytes", cp.size_bytes},
                           {"completed_at", TimeToJson(cp.completed_at_ms)},
                           {"digest", cp.digest}});
  }
  json progress = nullptr;
  if (v.progress) {
    const progress::Snapshot& p = *v.progress;
    auto opt = [](const std::optional<double>& d) { return d ? json(*d) : json(nullptr); };
    progress = {{"step", opt(p.step)},
                {"total_steps", opt(p.total_steps)},
                {"percent", opt(p.percent)},
                {"steps_per_second", opt(p.steps_per_second)},
                {"eta_seconds", opt(p.eta_seconds)},
                {"metrics", p.latest},
                {"lines", p.lines},
                {"bad_lines", p.bad_lines},
                {"last_line_at", TimeToJson(p.last_line_ms)},
                {"stalled", v.progress_stalled}};
  }
  json tags = json::object();
  for (const auto& [k, val] : v.tags) tags[k] = val;
  return {{"id", j.id},
          {"name", j.name},
          {"workspace", j.workspace},
          {"queue", j.queue},
          {"state", store::JobStateName(j.state)},
          {"reason", j.reason},
          {"message", j.message},
          {"exit_code", OptionalToJson(j.exit_code)},
          {"attempt", j.attempt},
          {"attempts", attempts},
          {"retries",
           {{"restarts", j.restarts},
            {"max_restarts", v.max_restarts},
            {"interruptions", j.interruptions},
            {"max_interruptions", v.max_interruptions},
            {"retry_at", TimeToJson(j.retry_at)},
            {"next_reason", j.retry_reason}}},
          {"progress", progress},
          {"checkpoint_dir", v.checkpoint_dir},
          {"checkpoint_keep", v.checkpoint_keep},
          {"checkpoints", checkpoints},
          {"cancel_requested", j.cancel_requested},
          {"held", j.held},
          {"priority_class", j.priority_class},
          {"log_ranks", v.ranks},
          {"resources",
           {{"workers", v.workers},
            {"gpus", v.gpus},
            {"cpus", Quantity::FromMilli(v.cpus_milli).ToString()},
            {"memory", Quantity::FromUnits(v.memory_bytes, Quantity::Format::kBinary).ToString()}}},
          {"project", v.project},
          {"tags", tags},
          {"reproduces", j.reproduces.empty() ? json(nullptr) : json(j.reproduces)},
          {"evidence", j.evidence.empty() ? json(nullptr) : json(j.evidence)},
          {"evidence_error", v.evidence_error.empty() ? json(nullptr) : json(v.evidence_error)},
          {"secret_env", v.secret_env_names},
          {"spec_sha256", j.spec_sha256},
          {"snapshot", j.snapshot_digest},
          {"submit_command", evidence::RedactCommandLine(j.submit_command)},  // idempotent; a stored row may be unredacted
          {"created_at", TimeToJson(j.created_at)},
          {"admitted_at", TimeToJson(j.admitted_at)},
          {"started_at", TimeToJson(j.started_at)},
          {"finished_at", TimeToJson(j.finished_at)}};
}

json EventToJson(const store::EventRecord& e) {
  return {{"id", e.id},
          {"job_id", e.job_id},
          {"at", TimeToJson(e.at)},
          {"type", e.type},
          {"reason", e.reason},
          {"message", e.message}};
}

}  // namespace tau::server
