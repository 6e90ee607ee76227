#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "gpu/gpu_source.h"

namespace tau::gpu {

// Health of one GPU (docs/gpu-health.md):
//   Unknown   — no successful poll yet, or its telemetry cannot be read;
//               never given new work;
//   Healthy   — given work;
//   Suspect   — a warning (a threshold crossed for a while); still given
//               work, shown everywhere;
//   Unhealthy — a fatal fault; out of schedulable capacity at once, and
//               sticky until an operator clears it.
enum class HealthState { kUnknown, kHealthy, kSuspect, kUnhealthy };
std::string_view HealthStateName(HealthState s);
std::optional<HealthState> ParseHealthState(std::string_view name);

// What an XID means for the GPU (the catalogue's classes).
enum class XidClass {
  kApp,     // the job's own fault: that job fails, the GPU stays in service
  kWatch,   // recorded only
  kReset,   // the GPU is Unhealthy (needs a reset)
  kReboot,  // the machine needs a reboot: every GPU is Unhealthy
  kRma,     // the GPU is Unhealthy (hardware replacement)
};
std::string_view XidClassName(XidClass c);

struct XidCatalog {
  std::map<int64_t, XidClass> classes;
  std::map<int64_t, std::string> meanings;
  XidClass unknown = XidClass::kWatch;  // XIDs not listed

  XidClass ClassOf(int64_t xid) const;
  std::string Describe(int64_t xid) const;  // "XID 95 (uncontained ECC error)"
  // The defaults (docs/gpu-health.md), and the same format read from YAML:
  //   unknown: watch
  //   xids:
  //     95: {class: reset, meaning: uncontained ECC error}
  // Entries of a file replace the defaults' entries of the same XID.
  static XidCatalog Defaults();
  static std::string DefaultsYaml();
  Status MergeYaml(std::string_view text, std::string_view file_name);
};

struct HealthThresholds {
  // Used where the GPU does not report its own thresholds
  // (WithModelTemperatures); taugridd --gpu-temp-warn / --gpu-temp-fatal.
  int64_t temperature_warn_c = 85;
  int64_t temperature_fatal_c = 95;
  int bad_samples_to_warn = 2;    // consecutive samples over the warning line
  int bad_samples_to_fatal = 4;   // consecutive samples over the fatal line
  int good_samples_to_clear = 3;  // consecutive good samples to leave Suspect
  // Windows are counted in polls; the daemon sizes them from its poll
  // interval (the defaults suit 15 s polls).
  int clock_bad_samples = 20;        // bad clock event reasons this long (5 min) → warning
  int ecc_corrected_window = 40;     // 10 min
  int64_t ecc_corrected_max = 10;    // more correctable errors than this in the window → warning
  int pcie_window = 20;              // 5 min
  int64_t pcie_replays_max = 5;      // more replays than this in the window → warning
};

// Thresholds with the windows sized for polls every `poll_interval_ms`.
HealthThresholds ThresholdsForPollInterval(int64_t poll_interval_ms);

// `base` with the temperature lines of one GPU: the warning at the model's
// slowdown threshold and the fatal line at its shutdown threshold where
// NVML reports them; `base`'s lines otherwise.
HealthThresholds WithModelTemperatures(HealthThresholds base, const GpuInfo& gpu);

struct HealthChange {
  HealthState from = HealthState::kUnknown;
  HealthState to = HealthState::kUnknown;
  std::string reason;   // XidFatal, GpuLost, EccUncorrectable, Temperature, RowRemapFailed, ...
  std::string message;  // for people
};

// The state machine of one GPU. Pure: time is counted in samples.
class GpuHealth {
 public:
  explicit GpuHealth(HealthThresholds thresholds = {}) : t_(thresholds) {}

  // Restores a state stored before a restart. Only Unhealthy is kept
  // (sticky); anything else starts over as Unknown.
  void Restore(HealthState state, std::string reason, std::string message);
  // The uncorrectable ECC count last seen (stored across restarts): the
  // first poll compares against it, so errors that arrived while nobody
  // watched are a fault too. Without it, the first poll sets the baseline.
  void RestoreEccBaseline(int64_t count) { ecc_baseline_ = count; }
  std::optional<int64_t> ecc_baseline() const { return ecc_baseline_; }

  std::optional<HealthChange> OnSample(const GpuSample& sample);
  // A fatal event (an XID of class reset, reboot or RMA).
  std::optional<HealthChange> OnFatal(std::string reason, std::string message);
  // A warning event (a watch XID is only recorded; this is for others).
  std::optional<HealthChange> OnWarning(std::string reason, std::string message);
  // The GPU's XID events cannot be read (`why`), or can again (nullopt).
  // While they cannot, a GPU in service is Suspect (XidEventsUnreadable):
  // a fault would be seen only at a poll. Readable again, it is Healthy
  // at once unless another warning holds.
  std::optional<HealthChange> OnXidUnreadable(std::optional<std::string> why);
  // tau admin gpu clear: back to Unknown, until the next good poll.
  std::optional<HealthChange> Clear();

  HealthState state() const { return state_; }
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }
  const GpuSample& last_sample() const { return last_; }

 private:
  std::optional<HealthChange> MoveTo(HealthState to, std::string reason, std::string message);

  HealthThresholds t_;
  HealthState state_ = HealthState::kUnknown;
  std::string reason_, message_;
  GpuSample last_;
  std::optional<int64_t> ecc_baseline_;  // uncorrected count last accounted for
  std::optional<std::string> xid_unreadable_;  // why XID events cannot be read
  // Growth of a counter over the last `window` polls.
  static int64_t Growth(std::vector<int64_t>& history, std::optional<int64_t> value, int window);
  std::vector<int64_t> ecc_corrected_history_, pcie_history_;
  int clock_samples_ = 0;
  int hot_samples_ = 0;
  int very_hot_samples_ = 0;
  int good_samples_ = 0;
};

}  // namespace tau::gpu
