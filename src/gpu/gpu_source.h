#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace tau::gpu {

struct GpuInfo {
  int index = 0;
  std::string uuid;  // opaque: never parsed or validated
  std::string model;  // "NVIDIA H200"
  std::string pci_bus_id;
  int64_t memory_mib = 0;
  std::string gpu_class;  // "h200-141gb" (GpuClassOf)
  // The model's own temperature thresholds, where NVML reports them
  // (nvmlDeviceGetTemperatureThreshold): the GPU slows its clocks down at
  // `slowdown` and shuts down at `shutdown`.
  std::optional<int64_t> temperature_slowdown_c;
  std::optional<int64_t> temperature_shutdown_c;
};

struct Inventory {
  std::string source;          // "nvml:/path/libnvidia-ml.so.1"
  std::string driver_version;  // "580.159.03"; "" when unknown
  std::string cuda_version;    // "13.0"; "" when unknown
  std::vector<GpuInfo> gpus;
};

// One poll of one GPU. A metric the GPU does not support (NOT_SUPPORTED)
// is absent without making the sample unreadable.
struct GpuSample {
  bool readable = false;  // at least one query answered
  bool lost = false;      // a query said GPU_IS_LOST or RESET_REQUIRED
  std::string error;      // why it is unreadable or lost
  std::optional<int64_t> temperature_c;
  std::optional<int64_t> power_mw;
  std::optional<int64_t> utilization_pct;
  std::optional<int64_t> memory_used_mib;
  std::optional<int64_t> ecc_uncorrected;  // volatile total
  std::optional<int64_t> ecc_corrected;
  std::optional<int64_t> remapped_pending;  // rows waiting for a reset (0/1)
  std::optional<int64_t> remapped_failed;   // a remap failed (0/1)
  std::vector<int64_t> process_pids;        // compute processes on it
  std::optional<uint64_t> clock_event_reasons;  // bit mask (nvml_types.h)
  std::optional<int64_t> nvlinks_down;     // links not enabled, of those it has
  std::optional<int64_t> nvlinks;          // links it has (0: none)
  std::optional<int64_t> pcie_replays;     // replay counter
  std::optional<int64_t> recovery_action;  // 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset
  bool power_unreadable = false;           // the power query failed (not NOT_SUPPORTED)
};

struct XidEvent {
  int gpu_index = 0;  // -1: the event names no GPU we know
  int64_t xid = 0;
};

// The outcome of registering the GPUs for XID events: the GPUs watched,
// and the GPUs that support events but could not be registered, with why.
// A GPU that does not support events is in neither.
struct XidRegistration {
  std::vector<int> watched;
  std::map<int, std::string> failed;
};

// Where inventory, telemetry and XID events come from. The NVML one is the
// real implementation; tests load a fake libnvidia-ml.so.1 into it.
class GpuSource {
 public:
  virtual ~GpuSource() = default;
  virtual const Inventory& inventory() const = 0;
  virtual GpuSample Sample(int index) = 0;
  // Waits up to `timeout` for the next XID event of the GPUs registered
  // by RegisterXidEvents; nullopt on timeout. FailedPrecondition when no
  // GPU is registered; any other error means the event set is broken
  // (RegisterXidEvents makes a new one).
  virtual Result<std::optional<XidEvent>> WaitXid(std::chrono::milliseconds timeout) = 0;
  // Drops the event set, if any, and registers every GPU that supports XID
  // events in a new one. FailedPrecondition when the source has no events
  // at all (an NVML without the event functions: trying again is useless);
  // another error when no event set can be made (worth trying again).
  virtual Result<XidRegistration> RegisterXidEvents() = 0;
};

// Loads NVML from `library_path` ("" for the system's libnvidia-ml.so.1)
// and reads the inventory.
Result<std::unique_ptr<GpuSource>> OpenNvml(const std::string& library_path);

// The GPU class of a model and its memory: the model's first word after
// "NVIDIA", lower-cased, and the memory in GiB rounded up: "NVIDIA H200"
// with 143771 MiB is "h200-141gb", "NVIDIA H100 80GB HBM3" with 81559 MiB
// is "h100-80gb".
std::string GpuClassOf(const std::string& model, int64_t memory_mib);

}  // namespace tau::gpu
