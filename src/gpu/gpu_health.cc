#include "gpu/gpu_health.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "spec/yaml_tree.h"

namespace tau::gpu {

std::string_view HealthStateName(HealthState s) {
  switch (s) {
    case HealthState::kUnknown: return "Unknown";
    case HealthState::kHealthy: return "Healthy";
    case HealthState::kSuspect: return "Suspect";
    case HealthState::kUnhealthy: return "Unhealthy";
  }
  return "Unknown";
}

std::optional<HealthState> ParseHealthState(std::string_view name) {
  for (HealthState s : {HealthState::kUnknown, HealthState::kHealthy, HealthState::kSuspect, HealthState::kUnhealthy}) {
    if (HealthStateName(s) == name) return s;
  }
  return std::nullopt;
}

std::string_view XidClassName(XidClass c) {
  switch (c) {
    case XidClass::kApp: return "app";
    case XidClass::kWatch: return "watch";
    case XidClass::kReset: return "reset";
    case XidClass::kReboot: return "reboot";
    case XidClass::kRma: return "rma";
  }
  return "watch";
}

namespace {

std::optional<XidClass> ParseXidClass(std::string_view s) {
  for (XidClass c : {XidClass::kApp, XidClass::kWatch, XidClass::kReset, XidClass::kReboot, XidClass::kRma}) {
    if (XidClassName(c) == s) return c;
  }
  return std::nullopt;
}

// The documented defaults (docs/gpu-health.md#xid-classes).
constexpr char kDefaults[] = R"(# XID classes: app | watch | reset | reboot | rma
unknown: watch
xids:
  8: {class: app, meaning: channel idle timeout}
  13: {class: app, meaning: graphics engine exception}
  31: {class: app, meaning: GPU memory page fault}
  32: {class: app, meaning: corrupted push buffer}
  43: {class: app, meaning: GPU stopped processing after an application fault}
  45: {class: watch, meaning: preemptive cleanup after an earlier error}
  46: {class: reset, meaning: GPU stopped processing}
  48: {class: reset, meaning: double-bit (uncorrectable) ECC error}
  54: {class: rma, meaning: auxiliary power not connected}
  56: {class: reset, meaning: display engine error}
  57: {class: reset, meaning: framebuffer error}
  58: {class: reset, meaning: framebuffer error}
  61: {class: reset, meaning: internal micro-controller breakpoint}
  62: {class: reset, meaning: internal micro-controller halt}
  63: {class: watch, meaning: row remap or page retirement recorded}
  64: {class: rma, meaning: row remap or page retirement failed}
  68: {class: app, meaning: NVDEC exception}
  69: {class: app, meaning: graphics class error}
  74: {class: reset, meaning: NVLink error}
  79: {class: reboot, meaning: GPU has fallen off the bus}
  80: {class: app, meaning: corrupted data sent to the GPU}
  92: {class: watch, meaning: high single-bit ECC error rate}
  93: {class: watch, meaning: InfoROM wear limit}
  94: {class: app, meaning: contained ECC error}
  95: {class: reset, meaning: uncontained ECC error}
  109: {class: reset, meaning: context-switch timeout}
  110: {class: reset, meaning: security fault}
  119: {class: reset, meaning: GSP RPC timeout}
  120: {class: reset, meaning: GSP error}
  121: {class: watch, meaning: C2C error}
  136: {class: reset, meaning: link training failed}
  137: {class: watch, meaning: NVLink privilege error}
  140: {class: reset, meaning: unrecovered ECC error}
  143: {class: reset, meaning: GPU initialisation error}
  151: {class: reboot, meaning: key rotation error}
  155: {class: reset, meaning: NVLink software error}
  156: {class: reset, meaning: resource retirement event}
  158: {class: reset, meaning: fatal timeout}
)";

}  // namespace

XidClass XidCatalog::ClassOf(int64_t xid) const {
  auto it = classes.find(xid);
  return it == classes.end() ? unknown : it->second;
}

std::string XidCatalog::Describe(int64_t xid) const {
  auto it = meanings.find(xid);
  return it == meanings.end() ? fmt::format("XID {}", xid) : fmt::format("XID {} ({})", xid, it->second);
}

std::string XidCatalog::DefaultsYaml() { return kDefaults; }

XidCatalog XidCatalog::Defaults() {
  XidCatalog c;
  Status st = c.MergeYaml(kDefaults, "built-in XID classes");
  (void)st;  // the built-in text is tested to parse
  return c;
}

Status XidCatalog::MergeYaml(std::string_view text, std::string_view file_name) {
  spec::Node root;
  spec::Diagnostics diags;
  if (!spec::ReadYaml(text, file_name, spec::ReadLimits{}, &root, &diags)) {
    return InvalidArgumentError(diags.Format());
  }
  auto where = [](const spec::Node& n) {
    return fmt::format("{}:{}:{}", n.location.file, n.location.line, n.location.column);
  };
  if (!root.IsMapping()) return InvalidArgumentError(fmt::format("{}: expected a mapping with \"xids\"", file_name));
  for (const spec::MapEntry& entry : root.entries) {
    const std::string& key = entry.key.scalar;
    if (key == "unknown") {
      auto cls = ParseXidClass(entry.value.scalar);
      if (!entry.value.IsScalar() || !cls) {
        return InvalidArgumentError(fmt::format("{}: unknown: expected app, watch, reset, reboot or rma", where(entry.value)));
      }
      unknown = *cls;
    } else if (key == "xids") {
      if (!entry.value.IsMapping()) {
        return InvalidArgumentError(fmt::format("{}: xids: expected a mapping of XID numbers", where(entry.value)));
      }
      for (const spec::MapEntry& x : entry.value.entries) {
        char* end = nullptr;
        long long xid = std::strtoll(x.key.scalar.c_str(), &end, 10);
        if (x.key.scalar.empty() || *end != '\0' || xid < 0) {
          return InvalidArgumentError(fmt::format("{}: \"{}\" is not an XID number", where(x.key), x.key.scalar));
        }
        const spec::Node* cls_node = x.value.IsMapping() ? x.value.Find("class") : &x.value;
        std::string cls_text = cls_node && cls_node->IsScalar() ? cls_node->scalar : "";
        auto cls = ParseXidClass(cls_text);
        if (!cls) {
          return InvalidArgumentError(fmt::format("{}: XID {}: class \"{}\" is not app, watch, reset, reboot or rma",
                                                  where(cls_node ? *cls_node : x.value), xid, cls_text));
        }
        classes[xid] = *cls;
        if (x.value.IsMapping()) {
          if (const spec::Node* meaning = x.value.Find("meaning"); meaning && meaning->IsScalar()) {
            meanings[xid] = meaning->scalar;
          }
        }
      }
    } else {
      return InvalidArgumentError(fmt::format("{}: unknown key \"{}\" (expected unknown, xids)", where(entry.key), key));
    }
  }
  return Status::Ok();
}

HealthThresholds ThresholdsForPollInterval(int64_t poll_interval_ms) {
  HealthThresholds t;
  auto polls = [&](int64_t window_ms) { return static_cast<int>(std::max<int64_t>(1, (window_ms + poll_interval_ms - 1) / poll_interval_ms)); };
  if (poll_interval_ms <= 0) return t;
  t.clock_bad_samples = polls(5 * 60'000);
  t.ecc_corrected_window = polls(10 * 60'000);
  t.pcie_window = polls(5 * 60'000);
  return t;
}

HealthThresholds WithModelTemperatures(HealthThresholds base, const GpuInfo& gpu) {
  if (gpu.temperature_slowdown_c) base.temperature_warn_c = *gpu.temperature_slowdown_c;
  if (gpu.temperature_shutdown_c) base.temperature_fatal_c = *gpu.temperature_shutdown_c;
  // A shutdown line at or under the warning line would make every warning fatal.
  if (base.temperature_fatal_c <= base.temperature_warn_c) base.temperature_fatal_c = base.temperature_warn_c + 1;
  return base;
}

int64_t GpuHealth::Growth(std::vector<int64_t>& history, std::optional<int64_t> value, int window) {
  if (!value) {
    history.clear();
    return 0;
  }
  history.push_back(*value);
  if (history.size() > static_cast<size_t>(window) + 1) history.erase(history.begin());
  return history.back() - history.front();
}

void GpuHealth::Restore(HealthState state, std::string reason, std::string message) {
  if (state != HealthState::kUnhealthy) return;
  state_ = state;
  reason_ = std::move(reason);
  message_ = std::move(message);
}

std::optional<HealthChange> GpuHealth::MoveTo(HealthState to, std::string reason, std::string message) {
  if (to == state_ && reason == reason_) return std::nullopt;
  HealthChange change{state_, to, reason, message};
  state_ = to;
  reason_ = std::move(reason);
  message_ = std::move(message);
  return change;
}

std::optional<HealthChange> GpuHealth::OnFatal(std::string reason, std::string message) {
  if (state_ == HealthState::kUnhealthy) return std::nullopt;  // the first fault stays the reason
  return MoveTo(HealthState::kUnhealthy, std::move(reason), std::move(message));
}

std::optional<HealthChange> GpuHealth::OnWarning(std::string reason, std::string message) {
  if (state_ == HealthState::kUnhealthy || state_ == HealthState::kUnknown) return std::nullopt;
  good_samples_ = 0;
  return MoveTo(HealthState::kSuspect, std::move(reason), std::move(message));
}

std::optional<HealthChange> GpuHealth::OnXidUnreadable(std::optional<std::string> why) {
  xid_unreadable_ = std::move(why);
  if (xid_unreadable_) {
    if (state_ != HealthState::kHealthy) return std::nullopt;  // the next poll shows it where it applies
    good_samples_ = 0;
    return MoveTo(HealthState::kSuspect, "XidEventsUnreadable",
                  fmt::format("its XID events cannot be read ({}); faults are seen at the polls only", *xid_unreadable_));
  }
  if (state_ != HealthState::kSuspect || reason_ != "XidEventsUnreadable") return std::nullopt;
  return MoveTo(HealthState::kHealthy, "Recovered", "its XID events are read again");
}

std::optional<HealthChange> GpuHealth::Clear() {
  hot_samples_ = very_hot_samples_ = good_samples_ = 0;
  ecc_baseline_ = last_.ecc_uncorrected;
  return MoveTo(HealthState::kUnknown, "Cleared", "cleared by an operator; in service again after its next good poll");
}

std::optional<HealthChange> GpuHealth::OnSample(const GpuSample& s) {
  last_ = s;
  // Fatal, without hysteresis.
  if (s.lost) return OnFatal("GpuLost", s.error.empty() ? "the GPU is lost or needs a reset" : s.error);
  if (s.ecc_uncorrected) {
    // Volatile counts start over when the driver reloads: a lower count
    // is the new baseline.
    if (!ecc_baseline_ || *s.ecc_uncorrected < *ecc_baseline_) ecc_baseline_ = s.ecc_uncorrected;
    if (*s.ecc_uncorrected > *ecc_baseline_) {
      auto change = OnFatal("EccUncorrectable", fmt::format("uncorrectable ECC errors rose from {} to {}",
                                                             *ecc_baseline_, *s.ecc_uncorrected));
      ecc_baseline_ = s.ecc_uncorrected;
      return change;
    }
  }
  if (s.remapped_failed && *s.remapped_failed > 0) {
    return OnFatal("RowRemapFailed", "a memory row remap failed");
  }
  if (s.recovery_action && *s.recovery_action > 0) {
    static const char* kActions[] = {"none", "a GPU reset", "a node reboot", "draining peer-to-peer traffic",
                                     "a drain and a GPU reset"};
    const int64_t a = *s.recovery_action;
    return OnFatal("RecoveryAction", fmt::format("the driver asks for {} (recovery action {})",
                                                 a >= 1 && a <= 4 ? kActions[a] : "an unknown action", a));
  }
  if (s.nvlinks_down && *s.nvlinks_down > 0) {
    return OnFatal("NvLinkDown", fmt::format("{} of its {} NVLinks are down", *s.nvlinks_down, s.nvlinks.value_or(0)));
  }
  if (state_ == HealthState::kUnhealthy) return std::nullopt;  // sticky
  if (!s.readable) {
    hot_samples_ = very_hot_samples_ = good_samples_ = 0;
    return MoveTo(HealthState::kUnknown, "TelemetryUnavailable",
                  s.error.empty() ? "its telemetry cannot be read" : s.error);
  }
  // Thresholds, with hysteresis: several bad samples to set, more good
  // ones to clear.
  const int64_t temp = s.temperature_c.value_or(0);
  very_hot_samples_ = temp >= t_.temperature_fatal_c ? very_hot_samples_ + 1 : 0;
  hot_samples_ = temp >= t_.temperature_warn_c ? hot_samples_ + 1 : 0;
  if (very_hot_samples_ >= t_.bad_samples_to_fatal) {
    return OnFatal("Temperature", fmt::format("{} °C for {} polls (fatal at {} °C)", temp, very_hot_samples_,
                                              t_.temperature_fatal_c));
  }
  constexpr uint64_t kBadClocks = 0x8 | 0x20 | 0x40 | 0x80;  // HW slowdown, SW/HW thermal, power brake
  clock_samples_ = s.clock_event_reasons && (*s.clock_event_reasons & kBadClocks) ? clock_samples_ + 1 : 0;
  const int64_t ecc_growth = Growth(ecc_corrected_history_, s.ecc_corrected, t_.ecc_corrected_window);
  const int64_t pcie_growth = Growth(pcie_history_, s.pcie_replays, t_.pcie_window);
  std::optional<std::string> warning;
  std::string warning_reason;
  if (hot_samples_ >= t_.bad_samples_to_warn) {
    warning_reason = "Temperature";
    warning = fmt::format("{} °C for {} polls (warning at {} °C)", temp, hot_samples_, t_.temperature_warn_c);
  } else if (s.remapped_pending && *s.remapped_pending > 0) {
    warning_reason = "RowRemapPending";
    warning = "a memory row remap waits for a GPU reset";
  } else if (clock_samples_ >= t_.clock_bad_samples) {
    warning_reason = "ClockThrottle";
    warning = fmt::format("clocks held down (reasons 0x{:x}) for {} polls", *s.clock_event_reasons & kBadClocks,
                          clock_samples_);
  } else if (ecc_growth > t_.ecc_corrected_max) {
    warning_reason = "EccCorrectableRate";
    warning = fmt::format("{} correctable ECC errors in the last {} polls", ecc_growth, t_.ecc_corrected_window);
  } else if (pcie_growth > t_.pcie_replays_max) {
    warning_reason = "PcieReplays";
    warning = fmt::format("{} PCIe replays in the last {} polls", pcie_growth, t_.pcie_window);
  } else if (s.power_unreadable) {
    warning_reason = "PowerUnreadable";
    warning = "its power draw cannot be read";
  } else if (xid_unreadable_) {
    warning_reason = "XidEventsUnreadable";
    warning = fmt::format("its XID events cannot be read ({}); faults are seen at the polls only", *xid_unreadable_);
  }
  if (warning) {
    good_samples_ = 0;
    if (state_ == HealthState::kUnknown) MoveTo(HealthState::kHealthy, "", "");
    return MoveTo(HealthState::kSuspect, warning_reason, *warning);
  }
  if (state_ == HealthState::kSuspect) {
    if (++good_samples_ < t_.good_samples_to_clear) return std::nullopt;
    return MoveTo(HealthState::kHealthy, "Recovered", fmt::format("{} good polls in a row", good_samples_));
  }
  if (state_ == HealthState::kUnknown) return MoveTo(HealthState::kHealthy, "", "first poll succeeded");
  return std::nullopt;
}

}  // namespace tau::gpu
