#pragma once

// An Admission for tests: it decides nothing by itself. A test says which
// waiting jobs the next pass admits, which admitted ones are evicted and
// why each waiting one waits; the fake records what it was told.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "server/admission/admission.h"

namespace tau::server {

class FakeAdmission final : public Admission {
 public:
  void Configure(const sched::KueueConfig& c) override { config = c; }
  const sched::KueueConfig& Config() const override { return config; }
  void SetNow(int64_t now) override { now_ms = now; }
  Status CheckFeasible(const sched::Workload&) const override { return Status::Ok(); }
  Status Enqueue(const sched::Workload& workload) override {
    waiting[workload.id] = workload;
    return Status::Ok();
  }
  void Restore(const sched::Workload& workload) override { admitted.insert(workload.id); }
  void MarkEvicting(const std::string&) override {}
  void Withdraw(const std::string& id) override {
    waiting.erase(id);
    admitted.erase(id);
    withdrawn.push_back(id);
  }
  bool Knows(const std::string& id) const override { return waiting.count(id) > 0 || admitted.count(id) > 0; }
  void SetHeld(const std::string& id, bool h) override {
    if (h) {
      held.insert(id);
    } else {
      held.erase(id);
    }
  }
  void SetBackoff(const std::string&, int64_t) override {}
  std::optional<int64_t> NextBackoffEnd() const override { return std::nullopt; }
  // Admits the waiting jobs in `to_admit` that are not held.
  std::vector<sched::Admission> Admit() override {
    std::vector<sched::Admission> out;
    for (const std::string& id : to_admit) {
      if (waiting.count(id) == 0 || held.count(id) > 0) continue;
      waiting.erase(id);
      admitted.insert(id);
      sched::Admission a;
      a.workload_id = id;
      a.cluster_queue = "default";
      out.push_back(a);
    }
    to_admit.clear();
    return out;
  }
  bool NeedsAnotherPass() const override { return false; }
  std::vector<sched::Eviction> TakeEvictions() override {
    std::vector<sched::Eviction> out;
    out.swap(evictions);
    return out;
  }
  std::optional<sched::PendingInfo> Why(const std::string& id) const override {
    if (waiting.count(id) == 0) return std::nullopt;
    auto it = why.find(id);
    if (it == why.end()) return sched::PendingInfo{"WaitingForQuota", "not admitted yet", 0};
    return it->second;
  }
  std::vector<std::string> QuotaHolders(const std::string&) const override { return {}; }
  std::optional<Usage> ClusterQueueUsage(const std::string&, const sched::FlavorResource&) const override {
    return std::nullopt;
  }
  std::optional<int64_t> ClusterQueueShare(const std::string&) const override { return std::nullopt; }
  std::optional<int64_t> CohortShare(const std::string&) const override { return std::nullopt; }
  sched::AdmissionEngine::LocalQueueHistory FairSharingHistory() const override { return {}; }
  void RestoreFairSharingHistory(const sched::AdmissionEngine::LocalQueueHistory&) override {}

  sched::KueueConfig config;
  int64_t now_ms = 0;
  std::map<std::string, sched::Workload> waiting;  // by job id
  std::set<std::string> admitted;
  std::set<std::string> held;
  std::vector<std::string> withdrawn;  // in order
  std::set<std::string> to_admit;      // admitted by the next pass, when waiting
  std::vector<sched::Eviction> evictions;  // reported by the next pass
  std::map<std::string, sched::PendingInfo> why;  // default: WaitingForQuota
};

}  // namespace tau::server
