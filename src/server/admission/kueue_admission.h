#pragma once

// Admission by a real Kueue (docs/kubernetes.md): Kueue decides; this
// reads its decisions from the Workloads it keeps for the jobs' objects
// and tells them to the job code through the Admission seam. Fed on the
// control loop by the cluster cache (OnWorkload, OnLocalQueue).

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "kube/reflector.h"
#include "server/admission/admission.h"

namespace tau::server {

class KueueAdmission final : public Admission {
 public:
  // `attempt_of(job_id)`: the attempt whose objects the job's Workload must
  // own to count (the one the executor prepared; 0: none).
  explicit KueueAdmission(std::function<int64_t(const std::string&)> attempt_of)
      : attempt_of_(std::move(attempt_of)) {}

  // The stored configuration, shown by tau queues, with the cluster's
  // WorkloadPriorityClasses in place of stored ones of the same name (a
  // job's priority is the cluster's); Kueue enforces the cluster's objects.
  void Configure(const sched::KueueConfig& config) override;
  const sched::KueueConfig& Config() const override { return merged_; }
  void SetNow(int64_t now_ms) override { now_ms_ = now_ms; }
  // NotFound when the job's LocalQueue does not exist in its workspace's
  // namespace (once the LocalQueues are known).
  Status CheckFeasible(const sched::Workload& workload) const override;
  Status Enqueue(const sched::Workload& workload) override;
  void Restore(const sched::Workload& workload) override { admitted_.insert(workload.id); }
  void MarkEvicting(const std::string& id) override { evicting_.insert(id); }
  void Withdraw(const std::string& id) override;
  bool Knows(const std::string& id) const override { return waiting_.count(id) > 0 || admitted_.count(id) > 0; }
  void SetHeld(const std::string& id, bool held) override;
  void SetBackoff(const std::string& id, int64_t until_ms) override { backoff_[id] = until_ms; }
  std::optional<int64_t> NextBackoffEnd() const override;
  // The waiting jobs whose current Workload Kueue admitted (QuotaReserved
  // and Admitted True, status.admission set), with its ClusterQueue and
  // the flavors of its first pod set.
  std::vector<sched::Admission> Admit() override;
  bool NeedsAnotherPass() const override { return false; }
  // Admitted jobs whose Workload Kueue evicted (condition Evicted True) or
  // whose quota reservation it took back: reason the condition's reason,
  // by Kueue's message.
  std::vector<sched::Eviction> TakeEvictions() override;
  // Kueue's words: the QuotaReserved=False condition's reason and message,
  // and the place of the job's Workload among the pending Workloads of its
  // ClusterQueue (every Workload, TauGrid's or not) in Kueue's order:
  // higher priority first, then earlier queue time (creation, or the
  // eviction of one evicted for PodsReadyTimeout), then name.
  std::optional<sched::PendingInfo> Why(const std::string& id) const override;
  std::vector<std::string> QuotaHolders(const std::string&) const override { return {}; }
  std::optional<Usage> ClusterQueueUsage(const std::string& cluster_queue,
                                         const sched::FlavorResource& resource) const override;
  std::optional<int64_t> ClusterQueueShare(const std::string&) const override { return std::nullopt; }
  std::optional<int64_t> CohortShare(const std::string&) const override { return std::nullopt; }
  sched::AdmissionEngine::LocalQueueHistory FairSharingHistory() const override { return {}; }
  void RestoreFairSharingHistory(const sched::AdmissionEngine::LocalQueueHistory&) override {}

  // Changes the cluster cache saw.
  void OnWorkload(kube::ReflectorEventType type, const nlohmann::json& workload);
  void OnLocalQueue(kube::ReflectorEventType type, const nlohmann::json& local_queue);
  void OnClusterQueue(kube::ReflectorEventType type, const nlohmann::json& cluster_queue);
  void OnPriorityClass(kube::ReflectorEventType type, const nlohmann::json& priority_class);

 private:
  // The Workload of the job's current attempt; nullptr when none is known.
  const nlohmann::json* WorkloadOf(const std::string& id) const;

  std::function<int64_t(const std::string&)> attempt_of_;
  void Merge();
  sched::KueueConfig config_;  // as stored
  sched::KueueConfig merged_;  // with the cluster's priority classes
  std::map<std::string, sched::WorkloadPriorityClass> cluster_priorities_;
  int64_t now_ms_ = 0;
  std::map<std::string, sched::Workload> waiting_;
  std::set<std::string> admitted_;
  std::set<std::string> evicting_;
  std::set<std::string> held_;
  std::map<std::string, int64_t> backoff_;
  // Workloads by "namespace/name", and by job id -> attempt -> key.
  std::map<std::string, nlohmann::json> workloads_;
  std::map<std::string, std::map<int64_t, std::string>> by_job_;
  // What ordering needs of every Workload of the cluster, by "namespace/name".
  struct QueueEntry {
    std::string local_queue;  // "namespace/name"
    int64_t priority = 0;
    std::string queued_at;    // RFC 3339 (UTC, so it orders as text)
    bool pending = false;     // no quota reserved, not finished, active
  };
  std::map<std::string, QueueEntry> queue_entries_;
  // The 1-based place of the Workload `key` among its ClusterQueue's
  // pending ones; 0 when it is not pending or its ClusterQueue is unknown.
  int PositionOf(const std::string& key) const;
  mutable std::map<std::string, int> positions_;
  mutable bool positions_dirty_ = true;
  std::map<std::string, std::string> local_queues_;  // "namespace/name" -> its ClusterQueue
  bool local_queues_synced_ = false;
  std::map<std::string, nlohmann::json> cluster_queues_;  // by name
};

}  // namespace tau::server
