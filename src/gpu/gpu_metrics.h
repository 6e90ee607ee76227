#pragma once

#include <cstdint>
#include <string>

#include "gpu/gpu_health.h"
#include "gpu/gpu_source.h"
#include "metrics/registry.h"

namespace tau::gpu {

// The GPU metric families both taugridd and the node agent expose
// (docs/observability.md): dcgm-exporter's names, labels and types, so
// existing GPU dashboards work, and taugrid_gpu_health_state.
void DefineGpuMetrics(metrics::Registry& registry);
// Resets every GPU family (before SetGpuMetrics for each GPU).
void ResetGpuMetrics(metrics::Registry& registry);

// One GPU's series from its last sample. `info` may be null (a GPU whose
// inventory is unknown); `last_xid` is 0 when none was seen.
void SetGpuMetrics(metrics::Registry& registry, int index, const GpuInfo* info, const std::string& hostname,
                   HealthState state, const GpuSample& sample, int64_t last_xid);

}  // namespace tau::gpu
