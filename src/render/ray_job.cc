// rayjob -> ray.io/v1 RayJob with a CPU-only head and one worker group.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "render/pod_parts.h"
#include "render/yaml_emitter.h"
#include "spec/command.h"

namespace tau::render::internal {

namespace {

// The head only coordinates: it advertises no CPUs or GPUs to Ray, so every
// task lands on the workers.
constexpr int64_t kHeadCpus = 1;
constexpr int64_t kHeadMemoryGi = 4;

json EnvVarsMap(const json& env_list) {
  json out = json::object();
  for (const json& e : env_list) {
    if (!e.contains("valueFrom")) out[e["name"].get<std::string>()] = e.value("value", "");
  }
  return out;
}

}  // namespace

json RenderRayJob(const spec::JobSpec& spec, const RenderOptions& options, const std::string& name) {
  const std::string image = ImageOr(spec, kDefaultRayImage);
  json env = BaseEnv(spec, options);

  json runtime_env = {{"env_vars", EnvVarsMap(env)}};
  if (!spec.runtime.pip.empty()) runtime_env["pip"] = spec.runtime.pip;

  json head_container = {
      {"name", "ray-head"},
      {"image", image},
      {"env", env},
      {"ports", json::array({{{"name", "gcs-server"}, {"containerPort", 6379}},
                             {{"name", "dashboard"}, {"containerPort", 8265}},
                             {{"name", "client"}, {"containerPort", 10001}}})},
      {"resources", Resources(Quantity::FromUnits(kHeadCpus),
                              Quantity::FromUnits(kHeadMemoryGi << 30, Quantity::Format::kBinary), 0)},
  };
  json worker_container = {
      {"name", "ray-worker"},
      {"image", image},
      {"env", env},
      {"resources", Resources(spec.compute.cpus, spec.compute.memory, spec.compute.gpus)},
  };
  json worker_pod = {
      {"terminationGracePeriodSeconds", CeilSeconds(spec.checkpoint.grace_period)},
      {"containers", json::array({worker_container})},
  };
  AddGpuScheduling(spec, &worker_pod);

  json ray_spec = {
      {"suspend", true},
      {"shutdownAfterJobFinishes", true},
      {"ttlSecondsAfterFinished", kRayJobTtlSeconds},
      {"entrypoint", spec::BuildRayEntrypoint(spec)},
      {"runtimeEnvYAML", EmitYaml(runtime_env)},
      {"rayClusterSpec",
       {{"headGroupSpec",
         {{"rayStartParams", {{"dashboard-host", "0.0.0.0"}, {"num-cpus", "0"}, {"num-gpus", "0"}}},
          {"template",
           {{"metadata", {{"labels", PodLabels(spec)}}},
            {"spec", {{"containers", json::array({head_container})}}}}}}},
        {"workerGroupSpecs",
         json::array({{{"groupName", "workers"},
                       {"replicas", spec.compute.workers},
                       {"minReplicas", spec.compute.workers},
                       {"maxReplicas", spec.compute.workers},
                       {"rayStartParams", json::object()},
                       {"template",
                        {{"metadata", {{"labels", PodLabels(spec)}}}, {"spec", worker_pod}}}}})}}},
  };
  if (spec.limits.max_runtime) ray_spec["activeDeadlineSeconds"] = CeilSeconds(*spec.limits.max_runtime);

  return {{"apiVersion", "ray.io/v1"},
          {"kind", "RayJob"},
          {"metadata", ObjectMetadata(spec, options, name)},
          {"spec", ray_spec}};
}

}  // namespace tau::render::internal
