#pragma once

// Random Kueue configurations for the admission engine's randomized tests:
// a root cohort (sometimes with two sub-cohorts), two flavors of CPU quota
// with random borrowing and lending limits, 2-5 ClusterQueues with random
// strategies, preemption and fungibility, half with fair sharing.

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sched/kueue_objects.h"

namespace tau::sched::testing {

struct Generated {
  KueueConfig config;
  std::vector<std::string> local_queues;
};

inline Generated RandomConfig(std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Generated g;
  KueueConfig& c = g.config;
  c.resource_flavors = {{"f1", {}, {}, {}}, {"f2", {}, {}, {}}};
  auto quotas = [&](bool in_cohort) {
    std::vector<FlavorQuotas> flavors;
    for (const char* f : {"f1", "f2"}) {
      ResourceQuota q{"cpu", Quantity::FromUnits(pick(0, 4)), std::nullopt, std::nullopt};
      if (in_cohort && pick(0, 2) == 0) q.borrowing_limit = Quantity::FromUnits(pick(0, 3));
      if (in_cohort && pick(0, 2) == 0) q.lending_limit = Quantity::FromUnits(pick(0, static_cast<int>(q.nominal_quota.milli() / 1000)));
      flavors.push_back({f, {q}});
    }
    if (pick(0, 1) == 0) std::swap(flavors[0], flavors[1]);
    return std::vector<ResourceGroup>{{{"cpu"}, flavors}};
  };
  // A root cohort, and sometimes two sub-cohorts with quota of their own.
  c.cohorts.push_back({"root", "", pick(0, 1) ? quotas(false) : std::vector<ResourceGroup>{}, std::nullopt});
  std::vector<std::string> cohorts = {"root", ""};
  if (pick(0, 1)) {
    for (const char* sub : {"c1", "c2"}) {
      c.cohorts.push_back({sub, "root", pick(0, 1) ? quotas(true) : std::vector<ResourceGroup>{}, std::nullopt});
      cohorts.push_back(sub);
    }
  }
  // Half the configurations share by fair sharing, with random weights
  // (0 included).
  c.fair_sharing.enable = pick(0, 1) == 1;
  const int queues = pick(2, 5);
  for (int i = 0; i < queues; ++i) {
    ClusterQueue cq;
    if (c.fair_sharing.enable) cq.fair_sharing_weight = Quantity::FromUnits(pick(0, 3));
    if (pick(0, 3) == 0) cq.admission_mode = "UsageBasedAdmissionFairSharing";
    cq.name = "cq" + std::to_string(i);
    cq.cohort_name = cohorts[static_cast<size_t>(pick(0, static_cast<int>(cohorts.size()) - 1))];
    cq.queueing_strategy = pick(0, 1) ? "StrictFIFO" : "BestEffortFIFO";
    cq.namespace_selector = LabelSelector{};
    cq.resource_groups = quotas(!cq.cohort_name.empty());
    const char* within[] = {"Never", "LowerPriority", "LowerOrNewerEqualPriority"};
    const char* reclaim[] = {"Never", "LowerPriority", "Any"};
    cq.preemption.within_cluster_queue = within[pick(0, 2)];
    cq.preemption.reclaim_within_cohort = reclaim[pick(0, 2)];
    if (cq.preemption.reclaim_within_cohort != "Never" && pick(0, 1)) {
      cq.preemption.borrow_within_cohort = "LowerPriority";
      if (pick(0, 1)) cq.preemption.max_priority_threshold = pick(0, 2);
    }
    if (pick(0, 1)) cq.flavor_fungibility.when_can_borrow = "TryNextFlavor";
    if (pick(0, 1)) cq.flavor_fungibility.when_can_preempt = "MayStopSearch";
    c.local_queues.push_back({"default", "q" + std::to_string(i), cq.name, "None"});
    c.local_queues.push_back({"default", "q" + std::to_string(i) + "-b", cq.name, "None"});
    g.local_queues.push_back("q" + std::to_string(i));
    c.cluster_queues.push_back(std::move(cq));
  }
  return g;
}

}  // namespace tau::sched::testing
