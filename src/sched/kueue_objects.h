#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/quantity.h"
#include "sched/label_selector.h"
#include "sched/requeue_backoff.h"
#include "sched/taints.h"

namespace tau::sched {

// Kueue's configuration objects (kueue.x-k8s.io/v1beta2), as the embedded
// admission engine reads them. Field names follow Kueue's; enumerations
// keep Kueue's spelling. The whole object as written is kept elsewhere so
// `tau admin get` prints every field back.

struct ResourceFlavor {
  std::string name;
  std::map<std::string, std::string> node_labels;
  // Pods may use the flavor only if they, or the flavor's own tolerations
  // (which Kueue adds to the pods it admits), tolerate every NoSchedule and
  // NoExecute taint (sched/taints.h).
  std::vector<Taint> node_taints;
  std::vector<Toleration> tolerations;
};

struct ResourceQuota {
  std::string name;  // "cpu", "memory", "nvidia.com/gpu", ...
  Quantity nominal_quota;
  std::optional<Quantity> borrowing_limit;
  std::optional<Quantity> lending_limit;
};

struct FlavorQuotas {
  std::string name;  // a ResourceFlavor
  std::vector<ResourceQuota> resources;
};

struct ResourceGroup {
  std::vector<std::string> covered_resources;
  std::vector<FlavorQuotas> flavors;  // in preference order
};

struct Preemption {
  std::string within_cluster_queue = "Never";   // Never | LowerPriority | LowerOrNewerEqualPriority
  std::string reclaim_within_cohort = "Never";  // Never | LowerPriority | Any
  std::string borrow_within_cohort = "Never";   // Never | LowerPriority
  std::optional<int64_t> max_priority_threshold;
};

struct FlavorFungibility {
  std::string when_can_borrow = "MayStopSearch";   // MayStopSearch | TryNextFlavor
  std::string when_can_preempt = "TryNextFlavor";  // MayStopSearch | TryNextFlavor
};

struct ClusterQueue {
  std::string name;
  std::string cohort_name;
  std::string queueing_strategy = "BestEffortFIFO";  // or StrictFIFO
  // Which workspaces' LocalQueues may use it. As in Kueue: absent selects
  // none, {} selects all; a workspace's labels are WorkspaceLabels().
  std::optional<LabelSelector> namespace_selector;
  std::vector<ResourceGroup> resource_groups;
  Preemption preemption;
  FlavorFungibility flavor_fungibility;
  std::string stop_policy = "None";  // None | Hold | HoldAndDrain
  std::optional<Quantity> fair_sharing_weight;
  // admissionScope.admissionMode: "UsageBasedAdmissionFairSharing" orders
  // its workloads by their LocalQueues' decayed usage; "" (or NoAdmissionFairSharing): not.
  std::string admission_mode;
  // AdmissionChecks it requires. The embedded engine has none, so a queue
  // that names any is inactive, as Kueue makes it when a check is missing.
  std::vector<std::string> admission_checks;
};

struct Cohort {
  std::string name;
  std::string parent_name;
  std::vector<ResourceGroup> resource_groups;
  std::optional<Quantity> fair_sharing_weight;
};

struct LocalQueue {
  std::string namespace_;  // the workspace
  std::string name;
  std::string cluster_queue;
  std::string stop_policy = "None";
  std::optional<Quantity> fair_sharing_weight;  // admission fair sharing (default 1)
};

struct WorkloadPriorityClass {
  std::string name;
  int64_t value = 0;
  std::string description;
};

// Kueue's controller Configuration, of which the embedded engine acts on
// `fairSharing` (docs/queueing.md#fair-sharing).
struct FairSharing {
  bool enable = false;
  // LessThanOrEqualToFinalShare and/or LessThanInitialShare, in order.
  std::vector<std::string> preemption_strategies = {"LessThanOrEqualToFinalShare", "LessThanInitialShare"};
};

// The Configuration's admissionFairSharing block (kueue-semantics §1.8).
struct AdmissionFairSharing {
  bool present = false;
  int64_t usage_half_life_ms = int64_t{168} * 3600 * 1000;  // usageHalfLifeTime, default 168h
  int64_t usage_sampling_interval_ms = 5 * 60 * 1000;       // usageSamplingInterval, default 5m
  std::map<std::string, double> resource_weights;           // default 1 per resource
};

struct KueueConfig {
  FairSharing fair_sharing;
  AdmissionFairSharing admission_fair_sharing;
  // The Configuration's waitForPodsReady.requeuingStrategy while its
  // waitForPodsReady block is on: the backoff of jobs the engine evicts
  // (preempted or drained) before they may be admitted again
  // (docs/queueing.md#requeue-backoff). Unset: they are requeued at once.
  std::optional<RequeuingStrategy> requeuing_strategy;
  std::vector<ResourceFlavor> resource_flavors;
  std::vector<ClusterQueue> cluster_queues;
  std::vector<Cohort> cohorts;
  std::vector<LocalQueue> local_queues;
  std::vector<WorkloadPriorityClass> priority_classes;
};

}  // namespace tau::sched
