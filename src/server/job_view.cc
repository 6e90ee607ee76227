#include "server/job_view.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/quantity.h"
#include "common/strings.h"

#include "server/local_ray.h"
#include "spec/load.h"

namespace tau::server {

Result<spec::JobSpec> DecodeStoredSpec(const std::string& json) {
  spec::Diagnostics diags;
  spec::LoadOptions options;
  options.check_files = false;
  auto loaded = spec::LoadJobSpecText(json, "spec", "/", options, &diags);
  if (!loaded.ok()) {
    return InvalidArgumentError(fmt::format("the spec is not valid:\n{}", diags.Format()));
  }
  return loaded->spec;
}

namespace {

// The viewed fields of canonical spec JSON; nullopt when one is missing or
// of another type.
std::optional<spec::JobSpec> ViewedFields(const nlohmann::json& j) {
  try {
    spec::JobSpec s;
    const auto& run = j.at("run");
    const std::string kind = run.at("workload_kind").get<std::string>();
    if (kind == spec::WorkloadKindName(spec::WorkloadKind::kRayJob)) {
      s.run.workload_kind = spec::WorkloadKind::kRayJob;
    } else if (kind != spec::WorkloadKindName(spec::WorkloadKind::kJob)) {
      return std::nullopt;
    }
    const auto& compute = j.at("compute");
    s.compute.gpus = compute.at("gpus").get<int64_t>();
    s.compute.workers = compute.at("workers").get<int64_t>();
    auto cpus = Quantity::Parse(compute.at("cpus").get<std::string>());
    auto memory = Quantity::Parse(compute.at("memory").get<std::string>());
    if (!cpus.ok() || !memory.ok()) return std::nullopt;
    s.compute.cpus = *cpus;
    s.compute.memory = *memory;
    s.retry.max_restarts = j.at("retry").at("max_restarts").get<int64_t>();
    s.checkpoint.keep = j.at("checkpoint").at("keep").get<int64_t>();
    const auto& experiment = j.at("experiment");
    s.experiment.project = experiment.value("project", "");
    for (const auto& [k, v] : experiment.at("tags").items()) s.experiment.tags.emplace_back(k, v.get<std::string>());
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace

Result<spec::JobSpec> DecodeViewedSpec(const std::string& json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    if (auto s = ViewedFields(j)) return *std::move(s);
  }
  return DecodeStoredSpec(json);
}

sched::Resources RequestOf(const spec::JobSpec& s) {
  const int64_t w = s.compute.workers;
  return {s.compute.cpus.milli() * w, s.compute.memory.milli() / 1000 * w, s.compute.gpus * w};
}

std::shared_ptr<JobView> NewJobView(const store::JobRecord& rec, std::vector<store::AttemptRecord> attempts,
                                    const spec::JobSpec& spec, const TauHome& home, int64_t max_interruptions) {
  auto jv = std::make_shared<JobView>();
  jv->job = rec;
  jv->attempts = std::move(attempts);
  const sched::Resources request = RequestOf(spec);
  jv->workers = spec.compute.workers;
  jv->ranks = AttemptRanks(spec);
  jv->gpus = request.gpus;
  jv->cpus_milli = request.cpus_milli;
  jv->memory_bytes = request.memory_bytes;
  jv->project = spec.experiment.project;
  jv->tags = spec.experiment.tags;
  jv->max_restarts = spec.retry.max_restarts;
  jv->max_interruptions = max_interruptions;
  jv->checkpoint_dir = home.checkpoint_dir(rec.id).string();
  jv->checkpoint_keep = spec.checkpoint.keep;
  if (!rec.secret_env.empty()) {
    nlohmann::json secrets = nlohmann::json::parse(rec.secret_env, nullptr, false);
    if (secrets.is_object()) {
      for (auto it = secrets.begin(); it != secrets.end(); ++it) jv->secret_env_names.push_back(it.key());
    }
  }
  // The view is what readers see: no secret values in it.
  jv->job.secret_env.clear();
  return jv;
}

std::string AttemptSeparatorLine(const store::AttemptRecord& a) {
  std::vector<std::string> why;
  if (!a.retry_reason.empty()) why.push_back(a.retry_reason);
  if (!a.resumed_from.empty()) why.push_back("resumed from " + std::filesystem::path(a.resumed_from).filename().string());
  return fmt::format("--- attempt {}{} ---\n", a.number, why.empty() ? "" : " (" + Join(why, ", ") + ")");
}

}  // namespace tau::server
