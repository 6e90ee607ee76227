#include "gpu/placement.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace tau::gpu {

std::vector<int> PickGpus(std::vector<GpuCandidate> candidates, int64_t count) {
  auto known = [](const std::optional<int64_t>& v) { return v.value_or(std::numeric_limits<int64_t>::max()); };
  auto key = [&](const GpuCandidate& c) {
    return std::make_tuple(c.health == HealthState::kHealthy ? 0 : 1, known(c.temperature_c), known(c.utilization_pct),
                           known(c.memory_used_mib), c.index);
  };
  std::sort(candidates.begin(), candidates.end(),
            [&](const GpuCandidate& a, const GpuCandidate& b) { return key(a) < key(b); });
  std::vector<int> out;
  for (const GpuCandidate& c : candidates) {
    if (static_cast<int64_t>(out.size()) >= count) break;
    out.push_back(c.index);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tau::gpu
