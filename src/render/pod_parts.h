#pragma once

// Pieces shared by the Job and RayJob renderers. Internal to src/render.

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "render/render.h"
#include "spec/job_spec.h"

namespace tau::render::internal {

using nlohmann::json;

// metadata for a top-level object: name, namespace, Kueue and TauGrid labels,
// annotations with the full spec digest and experiment data.
json ObjectMetadata(const spec::JobSpec& spec, const RenderOptions& options,
                    const std::string& name);

// Labels for pod templates (taugrid.io/job-name and workspace).
json PodLabels(const spec::JobSpec& spec);

// requests = limits: cpu, memory and, when gpus > 0, nvidia.com/gpu.
json Resources(const Quantity& cpus, const Quantity& memory, int64_t gpus);

// The TAU_* variables known before the job runs, then runtime.env, as a
// Kubernetes env list.
json BaseEnv(const spec::JobSpec& spec, const RenderOptions& options);
json EnvValue(const std::string& name, const std::string& value);
// An env var read from the Indexed Job's completion index.
json EnvFromCompletionIndex(const std::string& name);

// Adds GPU tolerations and the gpu_class node selector to a pod spec.
void AddGpuScheduling(const spec::JobSpec& spec, json* pod_spec);

// The renderers, one per object kind; `name` is the objects' metadata.name.
json RenderHeadlessService(const spec::JobSpec& spec, const RenderOptions& options,
                           const std::string& name);
json RenderBatchJob(const spec::JobSpec& spec, const RenderOptions& options,
                    const std::string& name);
json RenderRayJob(const spec::JobSpec& spec, const RenderOptions& options, const std::string& name);

// Whole seconds, rounded up (Kubernetes counts grace periods and deadlines
// in seconds).
inline int64_t CeilSeconds(Duration d) { return (d.count() + 999) / 1000; }

std::string ImageOr(const spec::JobSpec& spec, const char* fallback);

}  // namespace tau::render::internal
