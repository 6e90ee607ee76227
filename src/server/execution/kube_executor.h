#pragma once

// Runs attempts as Kubernetes objects (docs/kubernetes.md): Prepare makes
// the attempt's suspended Job or RayJob (and the objects it owns) for Kueue
// to queue; once Kueue admits it and unsuspends it, its pods are the
// attempt's ranks (the completion index is the rank; a RayJob is one
// rank). What the cluster holds reaches it through OnObject, fed by the
// cluster cache's reflectors on the control loop.

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "kube/reflector.h"
#include "server/execution/executor.h"
#include "server/kubernetes/attempt_objects.h"
#include "server/kubernetes/cluster_api.h"

namespace tau::server {

class KubeExecutor final : public Executor {
 public:
  // The kinds of objects OnObject is told about.
  enum class Kind { kJob, kRayJob, kPod };

  // `api` must outlive this; `on_end` gets the token of each watched rank
  // that ended (on the control loop, from OnObject).
  KubeExecutor(kubernetes::ClusterApi* api, kubernetes::BackendSettings settings,
               std::function<void(uint64_t)> on_end)
      : api_(api), settings_(std::move(settings)), on_end_(std::move(on_end)) {}

  bool PreparesAttempts() const override { return true; }
  // Creates the attempt's objects; an object of that name that exists
  // already (a repeated call, a restart) is adopted when its job-id label
  // is the job's, and refused (FailedPrecondition) otherwise.
  Status Prepare(const AttemptPlan& plan) override;
  // Deletes every object labelled with the job's id (propagation
  // Background) and forgets the job.
  void Discard(const std::string& job_id) override;
  // A handle at once: Kueue unsuspends the object it admitted.
  Result<RankHandle> Start(const AttemptStart& start) override;
  // Deletes the attempt's object; its pods get their grace period.
  Status Stop(const RankHandle& rank) override;
  // Deletes the attempt's pods with grace 0, and its object.
  Status Kill(const RankHandle& rank) override;
  Status Watch(uint64_t token, const RankHandle& rank) override;
  // The attempt's object when it exists and has not finished.
  std::optional<RankHandle> Adopt(const RankRef& ref) override;
  // From the rank's pod (its container's exit code or signal), or its Job
  // (Complete: 0) or RayJob (SUCCEEDED: 0, else exit code 1); a rank that
  // was stopped and whose pod went without a status ended by SIGTERM;
  // NotFound when nothing tells.
  Result<exec::ExitStatus> ReadEnd(const RankRef& ref) override;
  bool EndVouchedFor(const RankRef&) override { return true; }
  // Deletes the attempt's pods that are left (grace 0); contained once the
  // API server lists none.
  RankRemains Sweep(const RankRef& ref) override;
  int64_t CountRemains(const RankRef& ref) override;

  // A change the cluster cache saw (on the control loop).
  void OnObject(Kind kind, kube::ReflectorEventType type, const nlohmann::json& object);
  // After a restart, once the cache is synced: deletes the objects whose
  // job `live` says is not waiting or running, so none outlives its job.
  // Returns how many it deleted.
  int DeleteOrphans(const std::function<bool(const std::string& job_id)>& live);

  // The attempts (job id, attempt number) with a pod placed on `node` that
  // has not ended and is not being deleted (GPU health: a node whose agent
  // reports a fatal GPU fault). An earlier attempt's pod still going away
  // there names that attempt, not the job's current one.
  std::vector<std::pair<std::string, int64_t>> AttemptsOnNode(const std::string& node) const;

  // The attempt Prepare last made for the job (0: none).
  int64_t PreparedAttempt(const std::string& job_id) const;

 private:
  struct Attempt {
    std::string ns;
    std::string name;
    bool ray = false;
    int ranks = 1;
    int64_t grace_seconds = 30;
    bool stopping = false;      // Stop or Kill asked it to go
    bool seen_running = false;  // seen unsuspended since it started
  };
  struct Rank {
    uint64_t token = 0;
    bool reported = false;
  };
  using Key = std::tuple<std::string, int64_t, int>;  // job id, attempt, rank
  static std::string AttemptKey(const std::string& job_id, int64_t attempt) {
    return job_id + "/" + std::to_string(attempt);
  }
  // The attempt's main object as the cache holds it; nullptr when gone.
  const nlohmann::json* MainObject(const std::string& job_id, int64_t attempt) const;
  // How the rank ended as the cluster shows it; nullopt while it runs or
  // when nothing tells.
  std::optional<exec::ExitStatus> EndOf(const RankRef& ref) const;
  // Whether the rank is over (ended, or its object is gone or was
  // suspended again after it ran).
  bool Over(const RankRef& ref) const;
  void Evaluate(const std::string& job_id, int64_t attempt);
  Attempt* Find(const std::string& job_id, int64_t attempt);

  kubernetes::ClusterApi* api_;
  kubernetes::BackendSettings settings_;
  std::function<void(uint64_t)> on_end_;
  std::map<std::string, Attempt> attempts_;        // by AttemptKey
  std::map<std::string, int64_t> prepared_;        // job id -> attempt
  std::map<Key, Rank> ranks_;
  std::map<int64_t, RankRef> handles_;
  int64_t next_handle_ = 1;
  // The cluster's objects of TauGrid, by "namespace/name".
  std::map<std::string, nlohmann::json> jobs_, rayjobs_, pods_;
};

}  // namespace tau::server
