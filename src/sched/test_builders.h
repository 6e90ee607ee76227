#pragma once

// Builders shared by the admission engine's tests.

#include <cstdint>
#include <string>

#include "sched/kueue_objects.h"
#include "sched/workload.h"

namespace tau::sched::testing {

// A one-pod workload of `cpus` CPUs in LocalQueue `queue` of workspace
// "default"; each one is newer than the one before.
inline Workload MakeWorkload(const std::string& id, const std::string& queue, int64_t cpus, int64_t priority) {
  static int64_t seq = 0;
  Workload w;
  w.id = id;
  w.namespace_ = "default";
  w.local_queue = queue;
  w.priority = priority;
  w.seq = ++seq;
  w.per_pod = {{"cpu", cpus * 1000}};
  return w;
}

// A ClusterQueue selecting every workspace with one CPU quota on flavor
// "default".
inline ClusterQueue MakeCpuQueue(const std::string& name, ResourceQuota cpu, const std::string& cohort) {
  ClusterQueue cq;
  cq.name = name;
  cq.cohort_name = cohort;
  cq.namespace_selector = LabelSelector{};
  cq.resource_groups = {{{"cpu"}, {{"default", {std::move(cpu)}}}}};
  return cq;
}

}  // namespace tau::sched::testing
