#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/gpu_health.h"
#include "gpu/gpu_source.h"

namespace tau::agent {

// The health of one node's GPUs, as the embedded daemon keeps it
// (docs/gpu-health.md): one gpu::GpuHealth state machine per GPU, with the
// same thresholds, hysteresis and XID classes. Polls and XID events move
// it; an operator's clear resets a GPU. Pure: no I/O, no clock (time is
// counted in polls), no locks (the agent calls it from one thread).
class NodeGpuHealth {
 public:
  NodeGpuHealth(std::vector<gpu::GpuInfo> gpus, gpu::HealthThresholds base, gpu::XidCatalog catalog);

  // Each returns true when some GPU's state, reason or message changed.
  bool OnSample(int index, const gpu::GpuSample& sample);
  bool OnXid(const gpu::XidEvent& event);
  bool OnXidUnreadable(int index, std::optional<std::string> why);
  // Back to Unknown until its next good poll (sticky Unhealthy ends).
  // `name`: an index, a UUID, or "all". NotFound when no GPU matches.
  Result<bool> Clear(const std::string& name);

  // Restores a GPU found Unhealthy before the agent restarted (the Node's
  // health annotation keeps it): a fatal fault stays until an operator
  // clears it, across agent restarts and upgrades, as the embedded daemon
  // keeps it across its own. Matched by UUID; false when none matches.
  bool RestoreUnhealthy(const std::string& uuid, std::string reason, std::string message);

  struct Gpu {
    gpu::GpuInfo info;
    gpu::GpuHealth health;
    int64_t last_xid = 0;
  };
  const std::vector<Gpu>& gpus() const { return gpus_; }

  // The node as a whole: healthy while no GPU is Unhealthy. The reason is
  // the first Unhealthy GPU's; the message names every Unhealthy GPU.
  bool Healthy() const;
  std::string Reason() const;
  std::string Message() const;

  // What an XID did, for the agent's log: "XID 95 (uncontained ECC
  // error) on GPU 1 (GPU-...): reset class".
  const std::string& last_event() const { return last_event_; }

 private:
  std::vector<Gpu> gpus_;
  gpu::XidCatalog catalog_;
  std::string last_event_;
};

}  // namespace tau::agent
