#pragma once

#include "server/admission/admission.h"

namespace tau::server {

// Admission by the embedded engine (src/sched): Kueue's semantics in
// process, over the Kueue objects the daemon stores.
class EmbeddedAdmission final : public Admission {
 public:
  void Configure(const sched::KueueConfig& config) override { engine_.Configure(config); }
  const sched::KueueConfig& Config() const override { return engine_.config(); }
  void SetNow(int64_t now_ms) override { engine_.SetNow(now_ms); }
  Status CheckFeasible(const sched::Workload& workload) const override { return engine_.CheckFeasible(workload); }
  Status Enqueue(const sched::Workload& workload) override { return engine_.Submit(workload); }
  void Restore(const sched::Workload& workload) override { engine_.Restore(workload); }
  void MarkEvicting(const std::string& id) override { engine_.MarkEvicting(id); }
  void Withdraw(const std::string& id) override { engine_.Remove(id); }
  bool Knows(const std::string& id) const override { return engine_.IsKnown(id); }
  void SetHeld(const std::string& id, bool held) override { engine_.SetHeld(id, held); }
  void SetBackoff(const std::string& id, int64_t until_ms) override { engine_.SetBackoff(id, until_ms); }
  std::optional<int64_t> NextBackoffEnd() const override { return engine_.NextBackoffEnd(); }
  std::vector<sched::Admission> Admit() override { return engine_.Schedule(); }
  bool NeedsAnotherPass() const override { return engine_.NeedsAnotherPass(); }
  std::vector<sched::Eviction> TakeEvictions() override { return engine_.TakeEvictions(); }
  std::optional<sched::PendingInfo> Why(const std::string& id) const override { return engine_.Why(id); }
  std::vector<std::string> QuotaHolders(const std::string& id) const override { return engine_.QuotaHolders(id); }
  std::optional<Usage> ClusterQueueUsage(const std::string& cluster_queue,
                                         const sched::FlavorResource& resource) const override;
  std::optional<int64_t> ClusterQueueShare(const std::string& name) const override;
  std::optional<int64_t> CohortShare(const std::string& name) const override;
  sched::AdmissionEngine::LocalQueueHistory FairSharingHistory() const override {
    return engine_.ExportLocalQueueHistory();
  }
  void RestoreFairSharingHistory(const sched::AdmissionEngine::LocalQueueHistory& history) override {
    engine_.RestoreLocalQueueHistory(history);
  }

 private:
  sched::AdmissionEngine engine_;
};

}  // namespace tau::server
