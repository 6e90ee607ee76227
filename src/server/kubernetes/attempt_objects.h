#pragma once

// The Kubernetes objects of one attempt of a job: what `tau render` prints
// for its spec, named for the attempt, carrying the attempt's environment,
// its code snapshot and its checkpoint volume. Pure: no I/O.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "kube/client.h"
#include "server/execution/executor.h"

namespace tau::server::kubernetes {

// Labels every object of an attempt carries (pods included).
inline constexpr char kManagedByLabel[] = "app.kubernetes.io/managed-by";
inline constexpr char kManagedByValue[] = "taugrid";
inline constexpr char kJobIdLabel[] = "taugrid.io/job-id";
inline constexpr char kAttemptLabel[] = "taugrid.io/attempt";

// A ConfigMap holds at most 1 MiB (1048576 bytes) of keys and values
// together, binary values counted unencoded; the snapshot is one value
// under key "code.tar" (8 bytes).
inline constexpr int64_t kMaxSnapshotBytes = 1048576 - 8;

// Where things are in an attempt's containers.
inline constexpr char kCodeMount[] = "/tau/code";        // the ConfigMap (read-only)
inline constexpr char kWorkDir[] = "/tau/work";          // the unpacked code (emptyDir); the cwd
inline constexpr char kCheckpointMount[] = "/tau/checkpoints";
inline constexpr char kOutputDir[] = "/tau/outputs";

struct BackendSettings {
  // The PersistentVolumeClaim (in each workspace's namespace) that holds
  // checkpoints, mounted at kCheckpointMount; a job's folder is
  // kCheckpointMount/<job id>. "": an emptyDir (checkpoints die with the pod).
  std::string checkpoint_pvc;
  // Annotations every pod of every attempt carries (cluster policy, a
  // simulator's stage timings), as taugridd --pod-annotation KEY=VALUE.
  std::vector<std::pair<std::string, std::string>> pod_annotations;
  // A claim of its own for some workspaces (taugridd --checkpoint-pvc
  // WORKSPACE=NAME), in place of checkpoint_pvc.
  std::map<std::string, std::string> checkpoint_pvc_by_workspace;
  // The claim of `workspace`'s jobs; "" for an emptyDir.
  const std::string& CheckpointClaimOf(const std::string& workspace) const {
    auto it = checkpoint_pvc_by_workspace.find(workspace);
    return it != checkpoint_pvc_by_workspace.end() ? it->second : checkpoint_pvc;
  }
};

// `<job-name>-<id without "j_">-<attempt>`, the job name cut so that the
// whole is at most 52 characters (a gang's pod host names add
// `-<index>` within 63), a DNS-1123 label.
std::string AttemptObjectName(const std::string& job_name, const std::string& job_id, int64_t attempt);

// The job id and attempt an AttemptObjectName names; nullopt for a name
// that is not one.
struct AttemptOfName {
  std::string job_id;
  int64_t attempt = 0;
};
std::optional<AttemptOfName> ParseAttemptObjectName(const std::string& name);

// The attempt's objects. `main` is the suspended object Kueue queues (a
// batch/v1 Job or a ray.io/v1 RayJob); `dependents` (a gang's headless
// Service, the code ConfigMap, the secret environment's Secret) are made
// after it and owned by it (the caller sets their ownerReferences from
// main's uid), so deleting it deletes them.
struct AttemptObjects {
  std::string name;
  nlohmann::json main;
  std::vector<nlohmann::json> dependents;
};

// InvalidArgument when the snapshot is over kMaxSnapshotBytes.
Result<AttemptObjects> BuildAttemptObjects(const AttemptPlan& plan, const std::string& snapshot,
                                           const BackendSettings& settings);

// The resource of an object this backend makes, from its apiVersion and kind.
Result<kube::ResourceRef> RefOf(const nlohmann::json& object);

// Checks the snapshot's size against kMaxSnapshotBytes: InvalidArgument
// naming both.
Status CheckSnapshotSize(int64_t bytes);

}  // namespace tau::server::kubernetes
