#include "server/job_view.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

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

}  // namespace tau::server
