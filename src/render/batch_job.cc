// job -> batch/v1 Job (and a headless Service for a gang of workers).

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/strings.h"
#include "render/pod_parts.h"
#include "spec/command.h"

namespace tau::render::internal {

namespace {

// Wraps the worker's argv so the pip requirements are installed first.
std::vector<std::string> WithPipInstall(const spec::JobSpec& spec, std::vector<std::string> argv) {
  if (spec.runtime.pip.empty()) return argv;
  std::string script = "python3 -m pip install --no-cache-dir --quiet";
  for (const std::string& req : spec.runtime.pip) script += " " + ShellQuote(req);
  script += " && exec \"$@\"";
  std::vector<std::string> wrapped = {"/bin/sh", "-c", script, "tau"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

}  // namespace

json RenderHeadlessService(const spec::JobSpec& spec, const RenderOptions& options,
                           const std::string& name) {
  json metadata = ObjectMetadata(spec, options, name);
  // Kueue only manages the Job; the Service must not be queued.
  metadata["labels"].erase("kueue.x-k8s.io/queue-name");
  metadata["labels"].erase("kueue.x-k8s.io/priority-class");
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", metadata},
          {"spec",
           {{"clusterIP", "None"},
            {"publishNotReadyAddresses", true},
            {"selector", {{"batch.kubernetes.io/job-name", name}}},
            {"ports",
             json::array({{{"name", "rendezvous"},
                           {"port", kRendezvousPort},
                           {"targetPort", kRendezvousPort},
                           {"protocol", "TCP"}}})}}}};
}

json RenderBatchJob(const spec::JobSpec& spec, const RenderOptions& options, const std::string& name) {
  const int64_t workers = spec.compute.workers;
  const bool gang = workers > 1;
  const bool torchrun = spec.run.launcher == spec::Launcher::kTorchrun;

  json env = BaseEnv(spec, options);
  spec::Rendezvous rendezvous;
  if (gang || torchrun) {
    std::string master = gang ? fmt::format("{}-0.{}", name, name) : "127.0.0.1";
    int64_t world = torchrun ? workers * spec.compute.processes_per_worker : workers;
    env.push_back(EnvValue("MASTER_ADDR", master));
    env.push_back(EnvValue("MASTER_PORT", fmt::format("{}", kRendezvousPort)));
    env.push_back(EnvValue("WORLD_SIZE", fmt::format("{}", world)));
    if (gang) {
      env.push_back(EnvFromCompletionIndex("NODE_RANK"));
      env.push_back(EnvFromCompletionIndex("TAU_WORKER_INDEX"));
    } else {
      env.push_back(EnvValue("NODE_RANK", "0"));
      env.push_back(EnvValue("TAU_WORKER_INDEX", "0"));
    }
    if (!torchrun) {
      // One process per worker: its rank is the worker index.
      env.push_back(EnvFromCompletionIndex("RANK"));
      env.push_back(EnvValue("LOCAL_RANK", "0"));
      env.push_back(EnvValue("LOCAL_WORLD_SIZE", "1"));
    }
    rendezvous = {fmt::format("{}", workers), "$(NODE_RANK)", "$(MASTER_ADDR)", "$(MASTER_PORT)"};
  }

  json container = {
      {"name", "main"},
      {"image", ImageOr(spec, kDefaultJobImage)},
      {"command", WithPipInstall(spec, spec::BuildWorkerCommand(spec, rendezvous))},
      {"env", env},
      {"resources", Resources(spec.compute.cpus, spec.compute.memory, spec.compute.gpus)},
  };
  if (gang) container["ports"] = json::array({{{"name", "rendezvous"}, {"containerPort", kRendezvousPort}}});

  json pod_spec = {
      {"restartPolicy", "Never"},
      {"terminationGracePeriodSeconds", CeilSeconds(spec.checkpoint.grace_period)},
      {"containers", json::array({container})},
  };
  if (gang) pod_spec["subdomain"] = name;
  AddGpuScheduling(spec, &pod_spec);

  json job_spec = {
      {"suspend", true},
      {"backoffLimit", 0},
      {"ttlSecondsAfterFinished", kJobTtlSeconds},
      {"template", {{"metadata", {{"labels", PodLabels(spec)}}}, {"spec", pod_spec}}},
  };
  if (gang) {
    job_spec["completionMode"] = "Indexed";
    job_spec["completions"] = workers;
    job_spec["parallelism"] = workers;
  }
  if (spec.limits.max_runtime) job_spec["activeDeadlineSeconds"] = CeilSeconds(*spec.limits.max_runtime);

  return {{"apiVersion", "batch/v1"},
          {"kind", "Job"},
          {"metadata", ObjectMetadata(spec, options, name)},
          {"spec", job_spec}};
}

}  // namespace tau::render::internal
