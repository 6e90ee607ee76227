#include "server/admission/kueue_admission.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "common/quantity.h"
#include "server/kubernetes/attempt_objects.h"

namespace tau::server {

using nlohmann::json;

namespace {

// The condition of `type` in a Workload's status, or nullptr.
const json* ConditionOf(const json& workload, const std::string& type) {
  // Into `workload` itself (value() would copy).
  auto status = workload.find("status");
  if (status == workload.end() || !status->is_object()) return nullptr;
  auto conditions = status->find("conditions");
  if (conditions == status->end() || !conditions->is_array()) return nullptr;
  for (const json& c : *conditions) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

bool IsTrue(const json* condition) { return condition && condition->value("status", "") == "True"; }

// The job and attempt whose object owns the Workload.
std::optional<kubernetes::AttemptOfName> OwnerOf(const json& workload) {
  for (const json& owner : workload["metadata"].value("ownerReferences", json::array())) {
    const std::string kind = owner.value("kind", "");
    if (kind != "Job" && kind != "RayJob") continue;
    if (auto parsed = kubernetes::ParseAttemptObjectName(owner.value("name", ""))) return parsed;
  }
  return std::nullopt;
}

// The time Kueue orders a pending Workload by: its creation, unless it was
// evicted for PodsReadyTimeout (then requeued at its eviction, Kueue's
// default requeuingTimestamp: Eviction).
std::string QueuedAt(const json& workload) {
  const json* evicted = ConditionOf(workload, "Evicted");
  if (evicted && IsTrue(evicted) && evicted->value("reason", "") == "PodsReadyTimeout") {
    return evicted->value("lastTransitionTime", "");
  }
  return workload["metadata"].value("creationTimestamp", "");
}

bool Admitted(const json& workload) {
  const json& status = workload.value("status", json::object());
  return status.contains("admission") && IsTrue(ConditionOf(workload, "QuotaReserved")) &&
         IsTrue(ConditionOf(workload, "Admitted"));
}

}  // namespace

void KueueAdmission::Configure(const sched::KueueConfig& config) {
  config_ = config;
  Merge();
}

void KueueAdmission::Merge() {
  merged_ = config_;
  auto& classes = merged_.priority_classes;
  for (const auto& [name, pc] : cluster_priorities_) {
    classes.erase(std::remove_if(classes.begin(), classes.end(),
                                 [&name](const sched::WorkloadPriorityClass& c) { return c.name == name; }),
                  classes.end());
    classes.push_back(pc);
  }
}

void KueueAdmission::OnPriorityClass(kube::ReflectorEventType type, const json& priority_class) {
  if (type == kube::ReflectorEventType::kSynced) return;
  const std::string name = priority_class["metadata"].value("name", "");
  if (type == kube::ReflectorEventType::kDeleted) {
    cluster_priorities_.erase(name);
  } else {
    cluster_priorities_[name] = {name, priority_class.value("value", int64_t{0}),
                                 priority_class.value("description", "")};
  }
  Merge();
}

Status KueueAdmission::CheckFeasible(const sched::Workload& workload) const {
  if (!local_queues_synced_ || local_queues_.count(workload.namespace_ + "/" + workload.local_queue)) {
    return Status::Ok();
  }
  return NotFoundError(fmt::format("LocalQueue {} does not exist in namespace {} (the job's workspace) of the cluster",
                                   workload.local_queue, workload.namespace_));
}

Status KueueAdmission::Enqueue(const sched::Workload& workload) {
  TAU_RETURN_IF_ERROR(CheckFeasible(workload));
  waiting_[workload.id] = workload;
  return Status::Ok();
}

void KueueAdmission::Withdraw(const std::string& id) {
  waiting_.erase(id);
  admitted_.erase(id);
  evicting_.erase(id);
  backoff_.erase(id);
}

void KueueAdmission::SetHeld(const std::string& id, bool held) {
  if (held) {
    held_.insert(id);
  } else {
    held_.erase(id);
  }
}

std::optional<int64_t> KueueAdmission::NextBackoffEnd() const {
  std::optional<int64_t> next;
  for (const auto& [id, until] : backoff_) {
    if (until > now_ms_ && waiting_.count(id) && (!next || until < *next)) next = until;
  }
  return next;
}

const json* KueueAdmission::WorkloadOf(const std::string& id) const {
  auto job = by_job_.find(id);
  if (job == by_job_.end()) return nullptr;
  auto key = job->second.find(attempt_of_(id));
  if (key == job->second.end()) return nullptr;
  auto it = workloads_.find(key->second);
  return it == workloads_.end() ? nullptr : &it->second;
}

std::vector<sched::Admission> KueueAdmission::Admit() {
  std::vector<sched::Admission> out;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    const std::string& id = it->first;
    const json* workload = WorkloadOf(id);
    auto backoff = backoff_.find(id);
    const bool backing_off = backoff != backoff_.end() && backoff->second > now_ms_;
    if (!workload || !Admitted(*workload) || held_.count(id) || backing_off) {
      ++it;
      continue;
    }
    const json& admission = (*workload)["status"]["admission"];
    sched::Admission a;
    a.workload_id = id;
    a.cluster_queue = admission.value("clusterQueue", "");
    const json& assignments = admission.value("podSetAssignments", json::array());
    if (!assignments.empty()) {
      const json flavors = assignments[0].value("flavors", json::object());
      for (const auto& [resource, flavor] : flavors.items()) {
        if (flavor.is_string()) a.flavors[resource] = flavor.get<std::string>();
      }
    }
    out.push_back(std::move(a));
    admitted_.insert(id);
    backoff_.erase(id);
    it = waiting_.erase(it);
  }
  return out;
}

std::vector<sched::Eviction> KueueAdmission::TakeEvictions() {
  std::vector<sched::Eviction> out;
  for (const std::string& id : admitted_) {
    if (evicting_.count(id)) continue;
    const json* workload = WorkloadOf(id);
    if (!workload) continue;  // not seen yet (after a restart), or deleted with the job's object
    const json* evicted = ConditionOf(*workload, "Evicted");
    const json* reserved = ConditionOf(*workload, "QuotaReserved");
    sched::Eviction e;
    e.victim_id = id;
    if (IsTrue(evicted)) {
      e.reason = evicted->value("reason", "Evicted");
      e.preemptor_id = "Kueue: " + evicted->value("message", "");
    } else if (reserved && !IsTrue(reserved)) {
      e.reason = reserved->value("reason", "QuotaReservationLost");
      e.preemptor_id = "Kueue: " + reserved->value("message", "its quota reservation was taken back");
    } else {
      continue;
    }
    evicting_.insert(id);
    out.push_back(std::move(e));
  }
  return out;
}

std::optional<sched::PendingInfo> KueueAdmission::Why(const std::string& id) const {
  if (!waiting_.count(id)) return std::nullopt;
  if (held_.count(id)) return sched::PendingInfo{"Held", "held: not started until it is released", 0};
  const json* workload = WorkloadOf(id);
  if (!workload) {
    return sched::PendingInfo{"WaitingForWorkload", "Kueue has not made a Workload for the job's object yet", 0};
  }
  const json* reserved = ConditionOf(*workload, "QuotaReserved");
  if (reserved && !IsTrue(reserved)) {
    return sched::PendingInfo{reserved->value("reason", "Pending"), reserved->value("message", ""),
                              PositionOf(kube::ObjectKey(*workload))};
  }
  if (Admitted(*workload)) return sched::PendingInfo{"Admitted", "Kueue admitted it; starting", 0};
  return sched::PendingInfo{"Pending", "Kueue has not decided on it yet", 0};
}

std::optional<Admission::Usage> KueueAdmission::ClusterQueueUsage(const std::string& cluster_queue,
                                                                  const sched::FlavorResource& resource) const {
  auto cq = cluster_queues_.find(cluster_queue);
  if (cq == cluster_queues_.end()) return std::nullopt;
  Usage usage;
  const json& status = cq->second.value("status", json::object());
  for (const json& flavor : status.value("flavorsUsage", json::array())) {
    if (flavor.value("name", "") != resource.flavor) continue;
    for (const json& r : flavor.value("resources", json::array())) {
      if (r.value("name", "") != resource.resource) continue;
      if (auto total = Quantity::Parse(r.value("total", "0")); total.ok()) usage.used = total->milli();
      if (auto borrowed = Quantity::Parse(r.value("borrowed", "0")); borrowed.ok()) usage.borrowed = borrowed->milli();
    }
  }
  return usage;
}

int KueueAdmission::PositionOf(const std::string& key) const {
  if (positions_dirty_) {
    // Rebuilt once per batch of changes, not per question.
    positions_.clear();
    std::map<std::string, std::vector<std::pair<const std::string*, const QueueEntry*>>> by_cluster_queue;
    for (const auto& [k, entry] : queue_entries_) {
      if (!entry.pending) continue;
      auto lq = local_queues_.find(entry.local_queue);
      if (lq != local_queues_.end()) by_cluster_queue[lq->second].emplace_back(&k, &entry);
    }
    for (auto& [cq, entries] : by_cluster_queue) {
      std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        if (a.second->priority != b.second->priority) return a.second->priority > b.second->priority;
        if (a.second->queued_at != b.second->queued_at) return a.second->queued_at < b.second->queued_at;
        return *a.first < *b.first;
      });
      for (size_t i = 0; i < entries.size(); ++i) positions_[*entries[i].first] = static_cast<int>(i + 1);
    }
    positions_dirty_ = false;
  }
  auto it = positions_.find(key);
  return it == positions_.end() ? 0 : it->second;
}

void KueueAdmission::OnWorkload(kube::ReflectorEventType type, const json& workload) {
  if (type == kube::ReflectorEventType::kSynced) return;
  const std::string key = kube::ObjectKey(workload);
  auto owner = OwnerOf(workload);
  positions_dirty_ = true;
  if (type == kube::ReflectorEventType::kDeleted) {
    queue_entries_.erase(key);
    workloads_.erase(key);
    if (owner) {
      auto job = by_job_.find(owner->job_id);
      if (job != by_job_.end()) {
        job->second.erase(owner->attempt);
        if (job->second.empty()) by_job_.erase(job);
      }
    }
    return;
  }
  // Every Workload counts for the places of TauGrid's.
  QueueEntry& entry = queue_entries_[key];
  const json& spec = workload.value("spec", json::object());
  entry.local_queue = workload["metadata"].value("namespace", "") + "/" + spec.value("queueName", "");
  entry.priority = spec.contains("priority") && spec["priority"].is_number_integer() ? spec["priority"].get<int64_t>() : 0;
  entry.queued_at = QueuedAt(workload);
  entry.pending = !IsTrue(ConditionOf(workload, "QuotaReserved")) && !IsTrue(ConditionOf(workload, "Finished")) &&
                  spec.value("active", true);
  if (!owner) return;  // not a TauGrid job's: only its place is kept
  workloads_[key] = workload;
  by_job_[owner->job_id][owner->attempt] = key;
}

void KueueAdmission::OnLocalQueue(kube::ReflectorEventType type, const json& local_queue) {
  if (type == kube::ReflectorEventType::kSynced) {
    local_queues_synced_ = true;
    return;
  }
  const std::string key = kube::ObjectKey(local_queue);
  positions_dirty_ = true;
  if (type == kube::ReflectorEventType::kDeleted) {
    local_queues_.erase(key);
  } else {
    local_queues_[key] = local_queue.value("spec", json::object()).value("clusterQueue", "");
  }
}

void KueueAdmission::OnClusterQueue(kube::ReflectorEventType type, const json& cluster_queue) {
  if (type == kube::ReflectorEventType::kSynced) return;
  const std::string name = cluster_queue["metadata"].value("name", "");
  if (type == kube::ReflectorEventType::kDeleted) {
    cluster_queues_.erase(name);
  } else {
    cluster_queues_[name] = cluster_queue;
  }
}

}  // namespace tau::server
