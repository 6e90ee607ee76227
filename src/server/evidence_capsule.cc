#include "server/evidence_capsule.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "common/beneath.h"
#include "common/clock.h"
#include "common/strings.h"
#include "evidence/redact.h"
#include "resume/checkpoint_index.h"
#include "server/job_json.h"

namespace tau::server {
using nlohmann::json;

namespace {

json ParseOr(const std::string& text, json fallback) {
  if (text.empty()) return fallback;
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? fallback : j;
}

// Every string in `j` with URL passwords redacted.
void RedactUrls(json& j) {
  if (j.is_string()) {
    j = evidence::RedactUrlCredentials(j.get<std::string>());
  } else if (j.is_structured()) {
    for (auto& item : j) RedactUrls(item);
  }
}

// The spec as the record shows it: runtime.env values as the environment
// shows them (evidence::RedactEnvValue), URL passwords anywhere redacted.
json RedactedSpec(json spec) {
  RedactUrls(spec);
  if (spec.contains("run") && spec["run"].is_object() && spec["run"].contains("args") && spec["run"]["args"].is_array()) {
    std::vector<std::string> args;
    for (const auto& a : spec["run"]["args"]) args.push_back(a.is_string() ? a.get<std::string>() : a.dump());
    spec["run"]["args"] = evidence::RedactArgs(args);
  }
  if (spec.contains("runtime") && spec["runtime"].contains("env") && spec["runtime"]["env"].is_object()) {
    for (auto it = spec["runtime"]["env"].begin(); it != spec["runtime"]["env"].end(); ++it) {
      if (evidence::IsSecretEnvName(it.key())) it.value() = std::string(evidence::kRedacted);
    }
  }
  return spec;
}

}  // namespace

std::string RedactCapsule(const std::string& text) {
  json capsule = json::parse(text, nullptr, false);
  if (!capsule.is_object()) return text;
  if (capsule.contains("submit_command") && capsule["submit_command"].is_string()) {
    capsule["submit_command"] = evidence::RedactCommandLine(capsule["submit_command"].get<std::string>());
  }
  if (capsule.contains("environment") && capsule["environment"].is_object()) {
    for (auto it = capsule["environment"].begin(); it != capsule["environment"].end(); ++it) {
      if (it.value().is_string()) it.value() = evidence::RedactEnvValue(it.key(), it.value().get<std::string>());
    }
  }
  if (capsule.contains("spec") && capsule["spec"].is_object()) capsule["spec"] = RedactedSpec(capsule["spec"]);
  return capsule.dump();
}

std::string AssembleSubmitEvidence(const SubmitEvidence& in) {
  json files = json::array();
  int64_t total = 0;
  for (const auto& f : in.code_files) {
    files.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
    total += f.size;
  }
  json env = json::object();
  for (const std::string& kv : in.environment) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string name = kv.substr(0, eq);
    env[name] = evidence::RedactEnvValue(name, std::string_view(kv).substr(eq + 1));
  }
  json tags = json::object();
  for (const auto& [k, v] : in.tags) tags[k] = v;
  json client = ParseOr(in.client_json, json::object());
  const store::JobRecord& j = in.job;
  json out = {
      {"capsule_version", 1},
      {"job",
       {{"id", j.id},
        {"name", j.name},
        {"workspace", j.workspace},
        {"queue", j.queue},
        {"project", in.project},
        {"tags", tags},
        {"created_at", TimeToJson(j.created_at)},
        {"reproduces", j.reproduces.empty() ? json(nullptr) : json(j.reproduces)}}},
      {"spec", RedactedSpec(ParseOr(in.spec_json, json::object()))},
      {"spec_sha256", j.spec_sha256},
      {"code", {{"snapshot", j.snapshot_digest}, {"total_bytes", total}, {"files", files}}},
      {"git", client.contains("git") ? client["git"] : json(nullptr)},
      {"submit_command", evidence::RedactCommandLine(j.submit_command)},
      {"environment", env},
      {"secret_env", in.secret_env_names},
      {"host", ParseOr(in.host_json, json(nullptr))},
  };
  return out.dump();
}

std::string AssembleCapsule(const CapsuleInputs& in, bool complete) {
  json capsule = ParseOr(in.submit_json, json::object());
  // Checkpoint events go to the newest attempt that had started by then.
  std::map<int64_t, json> written;
  for (const auto& e : in.events) {
    if (e.type != "Checkpoint") continue;
    int64_t owner = 0;
    for (const auto& a : in.attempts) {
      if (a.started_at && *a.started_at <= e.at) owner = a.number;
    }
    auto space = e.message.find(' ');
    if (owner > 0) written[owner].push_back(e.message.substr(0, space));
  }
  json attempts = json::array();
  for (const auto& a : in.attempts) {
    json gpus = json::array();
    for (const auto& g : Split(a.gpus, ',')) {
      if (g.empty()) continue;
      size_t index = static_cast<size_t>(std::atoi(g.c_str()));
      gpus.push_back(index < in.gpu_uuids.size() ? in.gpu_uuids[index] : g);
    }
    json logs = json::array();
    auto it = in.log_files.find(a.number);
    if (it != in.log_files.end()) {
      for (size_t r = 0; r < it->second.size(); ++r) {
        auto fd = OpenPathBeneath(in.logs_root, it->second[r]);
        struct stat st;
        const bool readable = fd.ok() && ::fstat(fd->get(), &st) == 0;
        json log = {{"rank", r}, {"bytes", readable ? static_cast<int64_t>(st.st_size) : 0}};
        if (in.digest_logs && readable) {
          auto digest = evidence::FdSha256Hex(fd->get());
          if (digest.ok()) log["sha256"] = *digest;
        }
        logs.push_back(log);
      }
    }
    attempts.push_back({{"number", a.number},
                        {"state", store::AttemptStateName(a.state)},
                        {"reason", a.reason},
                        {"exit_code", OptionalToJson(a.exit_code)},
                        {"signal", OptionalToJson(a.signal)},
                        {"started_at", TimeToJson(a.started_at)},
                        {"finished_at", TimeToJson(a.finished_at)},
                        {"retry_reason", a.retry_reason},
                        {"resumed_from", a.resumed_from},
                        {"admission", {{"cluster_queue", a.cluster_queue}, {"flavors", FlavorsToJson(a.flavors)}}},
                        {"resources",
                         {{"workers", in.workers},
                          {"cpus_per_worker", in.cpus_per_worker},
                          {"memory_per_worker", in.memory_per_worker},
                          {"gpus", gpus},
                          {"pinned_cpus", a.pinned_cpus}}},
                        {"peak_memory_bytes", a.peak_rss_kb > 0 ? json(a.peak_rss_kb * 1024) : json(nullptr)},
                        {"logs", logs},
                        {"checkpoints_written", written.count(a.number) ? written[a.number] : json::array()}});
  }
  json checkpoints = json::array();
  for (const auto& cp : resume::CheckpointsFromJson(in.job.checkpoints)) {
    checkpoints.push_back({{"name", cp.name},
                           {"size_bytes", cp.size_bytes},
                           {"completed_at", TimeToJson(cp.completed_at_ms)},
                           {"digest", cp.digest}});
  }
  json events = json::array();
  for (const auto& e : in.events) events.push_back(EventToJson(e));
  capsule["complete"] = complete;
  capsule["attempts"] = attempts;
  capsule["checkpoints"] = checkpoints;
  capsule["pip_freeze"] = in.pip_freeze.empty() ? json(nullptr) : json(in.pip_freeze);
  json ray = json::parse(in.ray_json, nullptr, false);
  capsule["ray"] = ray.is_object() ? ray : json(nullptr);
  capsule["outcome"] = {{"state", store::JobStateName(in.job.state)},
                        {"reason", in.job.reason},
                        {"message", in.job.message},
                        {"exit_code", OptionalToJson(in.job.exit_code)},
                        {"finished_at", TimeToJson(in.job.finished_at)}};
  capsule["events"] = events;
  return capsule.dump();
}

}  // namespace tau::server
