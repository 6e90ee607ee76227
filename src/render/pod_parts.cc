#include "render/pod_parts.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/names.h"
#include "spec/json_codec.h"

namespace tau::render::internal {

json ObjectMetadata(const spec::JobSpec& spec, const RenderOptions& options,
                    const std::string& name) {
  std::string sha = spec::JobSpecSha256(spec);
  json labels = {
      {"app.kubernetes.io/managed-by", "taugrid"},
      {"kueue.x-k8s.io/queue-name", spec.queue},
      {"taugrid.io/job-name", spec.name},
      {"taugrid.io/workspace", spec.workspace},
      // A label value is at most 63 characters: the full digest is an annotation.
      {"taugrid.io/spec-sha256", sha.substr(0, 16)},
  };
  if (!spec.priority.empty()) labels["kueue.x-k8s.io/priority-class"] = spec.priority;
  if (!options.job_id.empty()) labels["taugrid.io/job-id"] = options.job_id;
  json annotations = {{"taugrid.io/spec-sha256", sha}};
  if (!spec.experiment.project.empty()) {
    annotations["taugrid.io/experiment-project"] = spec.experiment.project;
    if (CheckLabelValue(spec.experiment.project).ok()) {
      labels["taugrid.io/experiment-project"] = spec.experiment.project;
    }
  }
  if (!spec.experiment.tags.empty()) {
    json tags = json::object();
    for (const auto& [k, v] : spec.experiment.tags) tags[k] = v;
    annotations["taugrid.io/experiment-tags"] = tags.dump();
  }
  return {{"name", name},
          {"namespace", spec.workspace},
          {"labels", labels},
          {"annotations", annotations}};
}

json PodLabels(const spec::JobSpec& spec) {
  return {{"taugrid.io/job-name", spec.name}, {"taugrid.io/workspace", spec.workspace}};
}

json Resources(const Quantity& cpus, const Quantity& memory, int64_t gpus) {
  json amounts = {{"cpu", cpus.ToString()}, {"memory", memory.ToString()}};
  if (gpus > 0) amounts["nvidia.com/gpu"] = fmt::format("{}", gpus);
  return {{"requests", amounts}, {"limits", amounts}};
}

json EnvValue(const std::string& name, const std::string& value) {
  // Kubernetes omits an empty value; an entry with only a name sets "".
  if (value.empty()) return {{"name", name}};
  return {{"name", name}, {"value", value}};
}

json EnvFromCompletionIndex(const std::string& name) {
  return {{"name", name},
          {"valueFrom",
           {{"fieldRef",
             {{"fieldPath", "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}}}};
}

json BaseEnv(const spec::JobSpec& spec, const RenderOptions& options) {
  json env = json::array();
  if (!options.job_id.empty()) env.push_back(EnvValue("TAU_JOB_ID", options.job_id));
  env.push_back(EnvValue("TAU_JOB_NAME", spec.name));
  env.push_back(EnvValue("TAU_WORKSPACE", spec.workspace));
  env.push_back(EnvValue("TAU_ATTEMPT", fmt::format("{}", options.attempt)));
  for (const auto& [k, v] : options.env) env.push_back(EnvValue(k, v));
  for (const auto& [k, v] : spec.runtime.env) env.push_back(EnvValue(k, v));
  return env;
}

void AddGpuScheduling(const spec::JobSpec& spec, json* pod_spec) {
  if (spec.compute.gpus > 0) {
    (*pod_spec)["tolerations"] = json::array(
        {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  }
  if (spec.compute.gpu_class != "any") {
    (*pod_spec)["nodeSelector"] = {{"taugrid.io/gpu-class", spec.compute.gpu_class}};
  }
}

std::string ImageOr(const spec::JobSpec& spec, const char* fallback) {
  return spec.runtime.image.empty() ? std::string(fallback) : spec.runtime.image;
}

}  // namespace tau::render::internal
