#include "agent/node_gpu_health.h"

#include <fmt/format.h>

#include "common/strings.h"

namespace tau::agent {
using gpu::HealthState;

namespace {
bool Changed(const std::optional<gpu::HealthChange>& change) { return change.has_value(); }
}  // namespace

NodeGpuHealth::NodeGpuHealth(std::vector<gpu::GpuInfo> gpus, gpu::HealthThresholds base, gpu::XidCatalog catalog)
    : catalog_(std::move(catalog)) {
  for (gpu::GpuInfo& info : gpus) {
    gpu::HealthThresholds t = gpu::WithModelTemperatures(base, info);
    gpus_.push_back({std::move(info), gpu::GpuHealth(t), 0});
  }
}

bool NodeGpuHealth::OnSample(int index, const gpu::GpuSample& sample) {
  if (index < 0 || static_cast<size_t>(index) >= gpus_.size()) return false;
  const size_t g = static_cast<size_t>(index);
  bool changed = Changed(gpus_[g].health.OnSample(sample));
  if (sample.recovery_action == 2) {
    // The driver asks for a reboot of the machine: every GPU is out.
    for (size_t all = 0; all < gpus_.size(); ++all) {
      changed |= Changed(gpus_[all].health.OnFatal(
                                "RecoveryAction", fmt::format("GPU {}'s driver asks for a reboot of the machine", g)));
    }
  }
  return changed;
}

bool NodeGpuHealth::OnXid(const gpu::XidEvent& event) {
  const gpu::XidClass cls = catalog_.ClassOf(event.xid);
  const std::string what = catalog_.Describe(event.xid);
  if (event.gpu_index < 0 || static_cast<size_t>(event.gpu_index) >= gpus_.size()) {
    last_event_ = fmt::format("{} on a GPU this node does not list", what);
    return false;
  }
  const size_t g = static_cast<size_t>(event.gpu_index);
  gpus_[g].last_xid = event.xid;
  last_event_ = fmt::format("{} on GPU {} ({}): {} class", what, g, gpus_[g].info.uuid, gpu::XidClassName(cls));
  switch (cls) {
    case gpu::XidClass::kWatch:
    case gpu::XidClass::kApp:
      // Recorded; an application's fault is its job's, and the control
      // plane sees it end. The GPU stays in service.
      return false;
    case gpu::XidClass::kReset:
    case gpu::XidClass::kRma:
      return Changed(gpus_[g].health.OnFatal("XidFatal", fmt::format("{} ({} class)", what, gpu::XidClassName(cls))));
    case gpu::XidClass::kReboot: {
      bool changed = false;
      for (size_t all = 0; all < gpus_.size(); ++all) {
        changed |= Changed(gpus_[all].health.OnFatal(
                                  "XidFatal", fmt::format("{} on GPU {}: the machine needs a reboot", what, g)));
      }
      return changed;
    }
  }
  return false;
}

bool NodeGpuHealth::OnXidUnreadable(int index, std::optional<std::string> why) {
  if (index < 0 || static_cast<size_t>(index) >= gpus_.size()) return false;
  return Changed(gpus_[static_cast<size_t>(index)].health.OnXidUnreadable(std::move(why)));
}

bool NodeGpuHealth::RestoreUnhealthy(const std::string& uuid, std::string reason, std::string message) {
  for (Gpu& g : gpus_) {
    if (g.info.uuid != uuid) continue;
    g.health.Restore(HealthState::kUnhealthy, std::move(reason), std::move(message));
    return true;
  }
  return false;
}

Result<bool> NodeGpuHealth::Clear(const std::string& name) {
  bool matched = false, changed = false;
  for (size_t g = 0; g < gpus_.size(); ++g) {
    if (name != "all" && name != std::to_string(g) && name != gpus_[g].info.uuid) continue;
    matched = true;
    changed |= Changed(gpus_[g].health.Clear());
  }
  if (!matched) {
    return NotFoundError(fmt::format("this node has no GPU \"{}\" (name one by its index or UUID, or \"all\")",
                                     ShortenUtf8(name, 80)));
  }
  return changed;
}

bool NodeGpuHealth::Healthy() const {
  for (const Gpu& g : gpus_) {
    if (g.health.state() == HealthState::kUnhealthy) return false;
  }
  return true;
}

std::string NodeGpuHealth::Reason() const {
  for (const Gpu& g : gpus_) {
    if (g.health.state() == HealthState::kUnhealthy) return g.health.reason().empty() ? "GpuUnhealthy" : g.health.reason();
  }
  return "GpusHealthy";
}

std::string NodeGpuHealth::Message() const {
  std::vector<std::string> bad;
  size_t suspect = 0, unknown = 0;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const Gpu& g = gpus_[i];
    if (g.health.state() == HealthState::kUnhealthy) {
      bad.push_back(fmt::format("GPU {} {} Unhealthy: {}", i, g.info.uuid,
                                g.health.message().empty() ? g.health.reason() : g.health.message()));
    }
    suspect += g.health.state() == HealthState::kSuspect ? 1 : 0;
    unknown += g.health.state() == HealthState::kUnknown ? 1 : 0;
  }
  if (!bad.empty()) return Join(bad, "; ");
  std::string out = fmt::format("{} GPU{} in service", gpus_.size(), gpus_.size() == 1 ? "" : "s");
  if (suspect > 0) out += fmt::format(" ({} Suspect)", suspect);
  if (unknown > 0) out += fmt::format("; {} not read yet", unknown);
  return out;
}

}  // namespace tau::agent
