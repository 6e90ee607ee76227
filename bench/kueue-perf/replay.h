#pragma once

// Replays a Kueue scheduler performance generator config through the
// embedded admission engine in virtual time, mimicking Kueue's runner: each
// workload is created on its set's schedule, runs for its runtimeMs from its
// admission and then finishes; a preempted workload goes back to its queue
// and runs its full runtime again once re-admitted. Admission, eviction and
// re-queueing take no virtual time, so the times measure the queueing the
// config causes under Kueue's rules, not the speed of a control plane.
// Only an eviction takes time (ReplayOptions): in Kueue the victim holds its
// quota until the runner has acknowledged the eviction through the API
// server, and its preemptor waits meanwhile. With no delay, preemptions
// that undo each other (a reclaimed borrower reclaiming in turn) would
// repeat at one instant; the replay fails when a moment's decisions do not
// settle.

#include <cstdint>
#include <map>
#include <string>

#include "common/result.h"
#include "generator_config.h"
#include "sched/kueue_objects.h"

namespace tau::bench {

// Per workload class, the figures of Kueue's runner summary (workloadClasses).
struct WorkloadClassStats {
  int64_t count = 0;
  int64_t total_time_to_admission_ms = 0;  // creation to its last admission
  int64_t total_time_to_finish_ms = 0;     // creation to finish
  int64_t evictions = 0;
  int64_t AverageTimeToAdmissionMs() const { return count ? total_time_to_admission_ms / count : 0; }
  int64_t AverageTimeToFinishMs() const { return count ? total_time_to_finish_ms / count : 0; }
};

// Per ClusterQueue class: CPU held by admitted workloads over virtual time.
struct ClusterQueueClassStats {
  int64_t nominal_quota_milli = 0;  // summed over the class's queues
  double cpu_used_milli_ms = 0;     // integral of admitted CPU over time
  int64_t first_event_ms = 0;
  int64_t last_event_ms = 0;
  // Mean usage as a percentage of the nominal quota, as Kueue's checker reads it.
  double AverageUsagePercent() const;
};

struct ReplayResult {
  std::map<std::string, WorkloadClassStats> workload_classes;
  std::map<std::string, ClusterQueueClassStats> cluster_queue_classes;
  int64_t workloads = 0;
  int64_t finished = 0;
  int64_t admissions = 0;   // including re-admissions after preemption
  int64_t evictions = 0;
  int64_t schedule_calls = 0;
  int64_t makespan_ms = 0;  // virtual time of the last finish
  double engine_cpu_seconds = 0;  // CPU time spent inside the engine's calls
};

// The Kueue objects Kueue's generator creates for `config`: one
// ResourceFlavor "rf"; per cohort set, cohorts "<class>-<i>"; per queue,
// ClusterQueue "<class>-<set>-<i>-<cohort>" with its CPU quota and
// preemption policies, and a LocalQueue of that name in a namespace of that name.
sched::KueueConfig BuildKueueConfig(const GeneratorConfig& config);

struct ReplayOptions {
  // From an eviction to the victim releasing its quota and queueing again.
  int64_t eviction_delay_ms = 10;
};

// Replays `config`. Fails when an option is out of range, when the engine refuses a workload (for instance a
// request above every quota) or when a moment's decisions do not settle.
Result<ReplayResult> Replay(const GeneratorConfig& config, const ReplayOptions& options = {});

}  // namespace tau::bench
