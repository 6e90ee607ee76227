#pragma once

#include <nlohmann/json_fwd.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "spec/job_spec.h"

namespace tau::render {

// Images used when runtime.image is not given.
inline constexpr char kDefaultJobImage[] = "python:3.12-slim";
inline constexpr char kDefaultRayImage[] = "rayproject/ray:2.40.0-py312";
// Finished Jobs are kept a day for `kubectl` inspection; a finished RayJob's
// cluster is deleted after a minute (it holds GPUs until then).
inline constexpr int kJobTtlSeconds = 86400;
inline constexpr int kRayJobTtlSeconds = 60;
inline constexpr int kRendezvousPort = 29500;

struct RenderOptions {
  // metadata.name of the objects; empty means the spec's name.
  std::string object_name;
  // The TauGrid job id, when known: adds label taugrid.io/job-id and TAU_JOB_ID.
  std::string job_id;
  // TAU_ATTEMPT of the objects (the Kubernetes backend renders each attempt).
  int64_t attempt = 1;
  // More variables for the job's containers, after TAU_ATTEMPT and before
  // runtime.env (TAU_RETRY_REASON, TAU_RESUME_FROM, TAU_CHECKPOINT_DIR, ...).
  std::vector<std::pair<std::string, std::string>> env;
};

// The Kubernetes objects the Kubernetes backend creates for a job, in
// creation order:
//   job, 1 worker:   batch/v1 Job
//   job, N workers:  v1 Service (headless), batch/v1 Job (Indexed)
//   rayjob:          ray.io/v1 RayJob
// Every object is suspended for Kueue and carries its queue labels.
// REQUIRES: `spec` passed validation.
std::vector<nlohmann::json> RenderObjects(const spec::JobSpec& spec, const RenderOptions& options);

// The same objects as multi-document YAML ("---" between documents).
std::string RenderYaml(const spec::JobSpec& spec, const RenderOptions& options);

}  // namespace tau::render
