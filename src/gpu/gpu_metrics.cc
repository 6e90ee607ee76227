#include "gpu/gpu_metrics.h"

#include <fmt/format.h>

namespace tau::gpu {
using metrics::Registry;

namespace {

struct Family {
  const char* name;
  const char* help;
  Registry::Type type = Registry::Type::kGauge;  // a counter mirrors one the GPU keeps
};
constexpr Family kFamilies[] = {
    {"taugrid_gpu_health_state", "1 for the GPU's current health state, 0 for the others."},
    {"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."},
    {"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."},
    {"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."},
    {"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."},
    {"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."},
    // Typed as dcgm-exporter types them (its default-counters.csv).
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors.", Registry::Type::kCounter},
    {"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered."},
};

}  // namespace

void DefineGpuMetrics(Registry& registry) {
  for (const Family& f : kFamilies) registry.Define(f.name, f.type, f.help);
}

void ResetGpuMetrics(Registry& registry) {
  for (const Family& f : kFamilies) registry.Reset(f.name);
}

void SetGpuMetrics(Registry& r, int index, const GpuInfo* info, const std::string& hostname, HealthState state,
                   const GpuSample& s, int64_t last_xid) {
  const std::string gpu = std::to_string(index);
  const std::string uuid = info ? info->uuid : gpu;
  metrics::Labels dcgm = {{"gpu", gpu},
                          {"UUID", uuid},
                          {"pci_bus_id", info ? info->pci_bus_id : ""},
                          {"device", fmt::format("nvidia{}", index)},
                          {"modelName", info ? info->model : ""},
                          {"Hostname", hostname}};
  for (HealthState each : {HealthState::kUnknown, HealthState::kHealthy, HealthState::kSuspect, HealthState::kUnhealthy}) {
    r.Set("taugrid_gpu_health_state", {{"gpu", gpu}, {"UUID", uuid}, {"state", std::string(HealthStateName(each))}},
          state == each ? 1 : 0);
  }
  if (s.temperature_c) r.Set("DCGM_FI_DEV_GPU_TEMP", dcgm, static_cast<double>(*s.temperature_c));
  if (s.power_mw) r.Set("DCGM_FI_DEV_POWER_USAGE", dcgm, static_cast<double>(*s.power_mw) / 1000.0);
  if (s.utilization_pct) r.Set("DCGM_FI_DEV_GPU_UTIL", dcgm, static_cast<double>(*s.utilization_pct));
  if (s.memory_used_mib) {
    r.Set("DCGM_FI_DEV_FB_USED", dcgm, static_cast<double>(*s.memory_used_mib));
    if (info) r.Set("DCGM_FI_DEV_FB_FREE", dcgm, static_cast<double>(info->memory_mib - *s.memory_used_mib));
  }
  if (s.ecc_uncorrected) r.SetCounter("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", dcgm, static_cast<double>(*s.ecc_uncorrected));
  r.Set("DCGM_FI_DEV_XID_ERRORS", dcgm, static_cast<double>(last_xid));
}

}  // namespace tau::gpu
