#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sched/taints.h"

namespace tau::sched {

// What the admission engine knows of a job (Kueue's Workload with one
// podset): where it was submitted, its priority and what it asks for.
struct Workload {
  std::string id;
  std::string namespace_;    // the workspace
  std::string local_queue;
  int64_t priority = 0;
  int64_t seq = 0;           // submission order: older first among equals
  // Requests per pod (worker), by resource name, in milli-units; `count`
  // pods (workers).
  std::map<std::string, int64_t> per_pod;
  int64_t count = 1;
  // The node labels the pods select (taugrid.io/gpu-class for a gpu_class
  // other than "any"); a flavor that sets one of these keys must match.
  std::map<std::string, std::string> node_selector;
  // The pods' tolerations (a GPU job's pods tolerate nvidia.com/gpu
  // NoSchedule taints, as rendered for Kubernetes).
  std::vector<Toleration> tolerations;
};

}  // namespace tau::sched
