#pragma once

// Kueue's scheduler performance generator configuration
// (sigs.k8s.io/kueue test/performance/scheduler/runner/generator, v0.17):
// cohorts of ClusterQueues, each fed by sets of workloads created at a fixed
// interval. Only the non-TAS subset is read; a TAS field is an error.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/quantity.h"
#include "common/result.h"

namespace tau::bench {

struct WorkloadTemplate {
  std::string class_name;
  int64_t runtime_ms = 0;
  int64_t priority = 0;
  Quantity request;  // CPU, one pod
};

// `count` rounds; in each, every template is created once, each creation
// `creation_interval_ms` after the previous one of this set.
struct WorkloadsSet {
  int64_t count = 0;
  int64_t creation_interval_ms = 0;
  std::vector<WorkloadTemplate> workloads;
};

struct QueuesSet {
  std::string class_name;
  int64_t count = 0;
  Quantity nominal_quota;                   // CPU
  std::optional<Quantity> borrowing_limit;  // absent: unlimited
  std::string reclaim_within_cohort = "Never";
  std::string within_cluster_queue = "Never";
  std::vector<WorkloadsSet> workloads_sets;
};

struct CohortSet {
  std::string class_name;
  int64_t count = 0;
  std::vector<QueuesSet> queues_sets;
};

struct GeneratorConfig {
  std::vector<CohortSet> cohorts;
};

// Parses the YAML text of a generator config. `source` names it in errors,
// which say where the problem is: "FILE:LINE: cohorts[0].queuesSets[1].count: ...".
Result<GeneratorConfig> ParseGeneratorConfig(std::string_view text, std::string_view source);
Result<GeneratorConfig> LoadGeneratorConfig(const std::string& path);

}  // namespace tau::bench
