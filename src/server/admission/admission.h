#pragma once

// The admission seam of the control plane: which jobs may run, in what
// order, on which flavors, under the Kueue configuration (quotas, queues,
// priorities), without the job code knowing who decides.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "sched/admission_engine.h"

namespace tau::server {

// One job as admission sees it: sched::Workload (its queue, priority,
// requests). Decisions come back as sched::Admission (the flavor of each
// resource), sched::Eviction (who is stopped, by whom, why) and
// sched::PendingInfo (a waiting job's reason and position).
//
// Called on the control loop only. Each pass (Admit) decides from what it
// was told since the last one; the job code acts on its decisions
// (starting, stopping) after committing them.
class Admission {
 public:
  virtual ~Admission() = default;

  // The Kueue configuration it enforces; jobs already known keep their
  // place and are checked against it at the next pass.
  virtual void Configure(const sched::KueueConfig& config) = 0;
  virtual const sched::KueueConfig& Config() const = 0;
  // The time decisions are made at (fair sharing decays usage with it).
  virtual void SetNow(int64_t now_ms) = 0;

  // Whether `workload` could ever be admitted: NotFound when its queue or
  // priority class does not exist, another error when it exceeds what the
  // quota could ever give.
  virtual Status CheckFeasible(const sched::Workload& workload) const = 0;
  // The job waits for admission; errors as CheckFeasible.
  virtual Status Enqueue(const sched::Workload& workload) = 0;
  // After a restart: a job that was admitted before it, holding its quota.
  virtual void Restore(const sched::Workload& workload) = 0;
  // A restored job that was being evicted when the daemon stopped.
  virtual void MarkEvicting(const std::string& id) = 0;
  // The job neither waits nor holds quota any more: it finished, was
  // cancelled or removed, or is sent back to wait anew (Enqueue again).
  virtual void Withdraw(const std::string& id) = 0;
  // Whether the job is waiting or admitted.
  virtual bool Knows(const std::string& id) const = 0;
  // A held job keeps its place but is not admitted.
  virtual void SetHeld(const std::string& id, bool held) = 0;
  // Not admitted before `until_ms` (requeuing backoff after an eviction).
  virtual void SetBackoff(const std::string& id, int64_t until_ms) = 0;
  // When the earliest backoff ends, if any job is backing off.
  virtual std::optional<int64_t> NextBackoffEnd() const = 0;

  // One admission pass: the jobs admitted now, with their flavors.
  virtual std::vector<sched::Admission> Admit() = 0;
  // A choice of the last pass waits on a job that same pass admitted (a
  // pass never evicts what it admitted): run another pass soon rather than
  // at some unrelated later event.
  virtual bool NeedsAnotherPass() const = 0;
  // The admitted jobs to stop (preempted or drained) since the last call.
  virtual std::vector<sched::Eviction> TakeEvictions() = 0;
  // Why a waiting job waits, and its place; nullopt when it is not waiting.
  virtual std::optional<sched::PendingInfo> Why(const std::string& id) const = 0;
  // The admitted jobs holding the quota a waiting job needs.
  virtual std::vector<std::string> QuotaHolders(const std::string& id) const = 0;

  // What a ClusterQueue uses and borrows of one flavor's resource, in
  // milli-units; nullopt for a ClusterQueue it does not know.
  struct Usage {
    int64_t used = 0;
    int64_t borrowed = 0;
  };
  virtual std::optional<Usage> ClusterQueueUsage(const std::string& cluster_queue,
                                                 const sched::FlavorResource& resource) const = 0;
  // The weighted share of a ClusterQueue or Cohort as Kueue reports it
  // (sched::ReportedWeightedShare); nullopt without fair sharing or for one
  // it does not know.
  virtual std::optional<int64_t> ClusterQueueShare(const std::string& name) const = 0;
  virtual std::optional<int64_t> CohortShare(const std::string& name) const = 0;

  // Admission fair sharing's usage per LocalQueue, kept across restarts.
  virtual sched::AdmissionEngine::LocalQueueHistory FairSharingHistory() const = 0;
  virtual void RestoreFairSharingHistory(const sched::AdmissionEngine::LocalQueueHistory& history) = 0;
};

}  // namespace tau::server
