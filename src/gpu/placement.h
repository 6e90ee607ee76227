#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gpu/gpu_health.h"

namespace tau::gpu {

// A GPU that could take a job now, as placement sees it.
struct GpuCandidate {
  int index = 0;
  HealthState health = HealthState::kHealthy;  // Healthy or Suspect
  std::optional<int64_t> temperature_c;        // from the last poll
  std::optional<int64_t> utilization_pct;
  std::optional<int64_t> memory_used_mib;
};

// The `count` GPUs a job gets from `candidates` (fewer when there are not
// enough): Healthy ones before Suspect ones, so a Suspect GPU gets work
// only when nothing else fits; among equals the coolest, then the least
// used (utilisation, then memory in use), then the lowest index. A reading
// a GPU does not report ranks after every reported one. The result is in
// index order.
std::vector<int> PickGpus(std::vector<GpuCandidate> candidates, int64_t count);

}  // namespace tau::gpu
