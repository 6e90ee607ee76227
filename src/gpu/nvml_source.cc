// GpuSource over NVML (nvml_library.h).

#include <fmt/format.h>

#include <cctype>
#include <mutex>

#include "gpu/gpu_source.h"
#include "gpu/nvml_library.h"

namespace tau::gpu {
namespace {

class NvmlSource final : public GpuSource {
 public:
  explicit NvmlSource(std::unique_ptr<NvmlLibrary> lib) : lib_(std::move(lib)) {}
  ~NvmlSource() override { FreeEvents(); }

  Status Init() {
    inventory_.source = "nvml:" + lib_->path;
    char buf[nvml::kDriverBuffer] = {};
    if (lib_->SystemGetDriverVersion && lib_->SystemGetDriverVersion(buf, sizeof buf) == nvml::kSuccess) {
      inventory_.driver_version = buf;
    }
    int cuda = 0;
    if (lib_->SystemGetCudaDriverVersion_v2 && lib_->SystemGetCudaDriverVersion_v2(&cuda) == nvml::kSuccess) {
      inventory_.cuda_version = fmt::format("{}.{}", cuda / 1000, (cuda % 1000) / 10);
    }
    unsigned count = 0;
    nvml::Return r = lib_->DeviceGetCount_v2(&count);
    if (r != nvml::kSuccess) return UnavailableError(fmt::format("nvmlDeviceGetCount_v2: {}", lib_->ErrorText(r)));
    for (unsigned i = 0; i < count; ++i) {
      nvml::Device dev = nullptr;
      r = lib_->DeviceGetHandleByIndex_v2(i, &dev);
      if (r != nvml::kSuccess) {
        return UnavailableError(fmt::format("nvmlDeviceGetHandleByIndex_v2({}): {}", i, lib_->ErrorText(r)));
      }
      GpuInfo g;
      g.index = static_cast<int>(i);
      char text[nvml::kUuidBuffer] = {};
      if ((r = lib_->DeviceGetUUID(dev, text, sizeof text)) != nvml::kSuccess) {
        return UnavailableError(fmt::format("nvmlDeviceGetUUID({}): {}", i, lib_->ErrorText(r)));
      }
      g.uuid = text;
      char name[nvml::kNameBuffer] = {};
      if (lib_->DeviceGetName(dev, name, sizeof name) == nvml::kSuccess) g.model = name;
      nvml::PciInfo pci{};
      if (lib_->DeviceGetPciInfo_v3 && lib_->DeviceGetPciInfo_v3(dev, &pci) == nvml::kSuccess) g.pci_bus_id = pci.busId;
      nvml::Memory mem{};
      if (lib_->DeviceGetMemoryInfo && lib_->DeviceGetMemoryInfo(dev, &mem) == nvml::kSuccess) {
        g.memory_mib = static_cast<int64_t>(mem.total >> 20);
      }
      g.gpu_class = GpuClassOf(g.model, g.memory_mib);
      devices_.push_back(dev);
      inventory_.gpus.push_back(std::move(g));
    }
    // Each model's own thermal limits, where it reports them.
    for (size_t i = 0; i < devices_.size() && lib_->DeviceGetTemperatureThreshold; ++i) {
      unsigned t = 0;
      if (lib_->DeviceGetTemperatureThreshold(devices_[i], nvml::kTemperatureThresholdSlowdown, &t) == nvml::kSuccess &&
          t > 0) {
        inventory_.gpus[i].temperature_slowdown_c = t;
      }
      if (lib_->DeviceGetTemperatureThreshold(devices_[i], nvml::kTemperatureThresholdShutdown, &t) == nvml::kSuccess &&
          t > 0) {
        inventory_.gpus[i].temperature_shutdown_c = t;
      }
    }
    return Status::Ok();
  }

  const Inventory& inventory() const override { return inventory_; }

  GpuSample Sample(int index) override {
    GpuSample s;
    if (index < 0 || static_cast<size_t>(index) >= devices_.size()) {
      s.error = "no such GPU";
      return s;
    }
    nvml::Device dev = devices_[static_cast<size_t>(index)];
    // Each query: answered (readable), not supported (fine), lost, or failed.
    auto check = [&](nvml::Return r, const char* what) {
      if (r == nvml::kSuccess) {
        s.readable = true;
        return true;
      }
      if (r == nvml::kGpuIsLost || r == nvml::kResetRequired) {
        s.lost = true;
        s.error = fmt::format("{}: {}", what, lib_->ErrorText(r));
      } else if (r != nvml::kNotSupported && s.error.empty()) {
        s.error = fmt::format("{}: {}", what, lib_->ErrorText(r));
      }
      if (r == nvml::kNotSupported) s.readable = true;  // it answered
      return false;
    };
    if (lib_->DeviceGetTemperature) {
      unsigned t = 0;
      if (check(lib_->DeviceGetTemperature(dev, nvml::kTemperatureGpu, &t), "temperature")) s.temperature_c = t;
    }
    if (lib_->DeviceGetPowerUsage) {
      unsigned mw = 0;
      nvml::Return r = lib_->DeviceGetPowerUsage(dev, &mw);
      if (check(r, "power")) s.power_mw = mw;
      else if (r != nvml::kNotSupported) s.power_unreadable = true;
    }
    if (lib_->DeviceGetUtilizationRates) {
      nvml::Utilization u{};
      if (check(lib_->DeviceGetUtilizationRates(dev, &u), "utilization")) s.utilization_pct = u.gpu;
    }
    if (lib_->DeviceGetMemoryInfo) {
      nvml::Memory m{};
      if (check(lib_->DeviceGetMemoryInfo(dev, &m), "memory")) s.memory_used_mib = static_cast<int64_t>(m.used >> 20);
    }
    if (lib_->DeviceGetTotalEccErrors) {
      unsigned long long n = 0;
      if (check(lib_->DeviceGetTotalEccErrors(dev, nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, &n), "ECC")) {
        s.ecc_uncorrected = static_cast<int64_t>(n);
      }
      if (check(lib_->DeviceGetTotalEccErrors(dev, nvml::kMemoryErrorCorrected, nvml::kVolatileEcc, &n), "ECC")) {
        s.ecc_corrected = static_cast<int64_t>(n);
      }
    }
    if (lib_->DeviceGetRemappedRows) {
      unsigned corr = 0, unc = 0, pending = 0, failed = 0;
      if (check(lib_->DeviceGetRemappedRows(dev, &corr, &unc, &pending, &failed), "remapped rows")) {
        s.remapped_pending = pending;
        s.remapped_failed = failed;
      }
    }
    {
      auto clocks = lib_->DeviceGetCurrentClocksEventReasons ? lib_->DeviceGetCurrentClocksEventReasons
                                                             : lib_->DeviceGetCurrentClocksThrottleReasons;
      unsigned long long reasons = 0;
      if (clocks && check(clocks(dev, &reasons), "clock event reasons")) s.clock_event_reasons = reasons;
    }
    if (lib_->DeviceGetNvLinkState) {
      // Links are counted until the GPU says there are no more; none at
      // all (NOT_SUPPORTED on link 0) means a GPU without NVLink.
      int64_t links = 0, down = 0;
      for (unsigned link = 0; link < 64; ++link) {
        int state = 0;
        nvml::Return r = lib_->DeviceGetNvLinkState(dev, link, &state);
        if (r != nvml::kSuccess) {
          if (r == nvml::kGpuIsLost || r == nvml::kResetRequired) check(r, "NVLink state");
          break;
        }
        ++links;
        if (state != nvml::kFeatureEnabled) ++down;
      }
      if (links > 0) {
        s.readable = true;
        s.nvlinks = links;
        s.nvlinks_down = down;
      }
    }
    if (lib_->DeviceGetPcieReplayCounter) {
      unsigned n = 0;
      if (check(lib_->DeviceGetPcieReplayCounter(dev, &n), "PCIe replays")) s.pcie_replays = n;
    }
    if (lib_->DeviceGetFieldValues) {
      nvml::FieldValue v{};
      v.fieldId = nvml::kFieldRecoveryAction;
      if (check(lib_->DeviceGetFieldValues(dev, 1, &v), "recovery action") && v.nvmlReturn == nvml::kSuccess) {
        s.recovery_action = static_cast<int64_t>(v.value.uiVal);
      }
    }
    if (lib_->DeviceGetComputeRunningProcesses_v3) {
      nvml::ProcessInfo procs[64];
      unsigned n = 64;
      if (check(lib_->DeviceGetComputeRunningProcesses_v3(dev, &n, procs), "processes")) {
        for (unsigned i = 0; i < n && i < 64; ++i) s.process_pids.push_back(procs[i].pid);
      }
    }
    return s;
  }

  Result<XidRegistration> RegisterXidEvents() override {
    if (!lib_->EventSetCreate || !lib_->DeviceRegisterEvents || !lib_->EventSetWait_v2) {
      return FailedPreconditionError(fmt::format("{} has no event functions (nvmlEventSetCreate, "
                                                 "nvmlDeviceRegisterEvents, nvmlEventSetWait_v2)", lib_->path));
    }
    FreeEvents();
    nvml::Return r = lib_->EventSetCreate(&events_);
    if (r != nvml::kSuccess) {
      events_ = nullptr;
      return UnavailableError(fmt::format("nvmlEventSetCreate: {}", lib_->ErrorText(r)));
    }
    XidRegistration out;
    constexpr unsigned long long kWanted = nvml::kEventXid | nvml::kEventDoubleBitEcc;
    for (size_t i = 0; i < devices_.size(); ++i) {
      unsigned long long supported = kWanted;
      if (lib_->DeviceGetSupportedEventTypes) {
        r = lib_->DeviceGetSupportedEventTypes(devices_[i], &supported);
        if (r == nvml::kNotSupported) continue;
        if (r != nvml::kSuccess) {
          out.failed[static_cast<int>(i)] = fmt::format("nvmlDeviceGetSupportedEventTypes: {}", lib_->ErrorText(r));
          continue;
        }
      }
      const unsigned long long mask = supported & kWanted;
      if (!mask) continue;
      r = lib_->DeviceRegisterEvents(devices_[i], mask, events_);
      if (r == nvml::kSuccess) {
        out.watched.push_back(static_cast<int>(i));
      } else if (r != nvml::kNotSupported) {
        out.failed[static_cast<int>(i)] = fmt::format("nvmlDeviceRegisterEvents: {}", lib_->ErrorText(r));
      }
    }
    registered_ = !out.watched.empty();
    return out;
  }

  Result<std::optional<XidEvent>> WaitXid(std::chrono::milliseconds timeout) override {
    if (!events_ || !registered_) return FailedPreconditionError("no GPU is registered for XID events");
    nvml::EventData data{};
    nvml::Return r = lib_->EventSetWait_v2(events_, &data, static_cast<unsigned>(timeout.count()));
    if (r == nvml::kTimeout) return std::optional<XidEvent>();
    if (r != nvml::kSuccess) return UnavailableError(fmt::format("nvmlEventSetWait_v2: {}", lib_->ErrorText(r)));
    XidEvent e;
    e.gpu_index = -1;
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i] == data.device) e.gpu_index = static_cast<int>(i);
    }
    // A double-bit ECC event counts as XID 48, its XID.
    e.xid = data.eventType == nvml::kEventDoubleBitEcc ? 48 : static_cast<int64_t>(data.eventData);
    return std::optional<XidEvent>(e);
  }

 private:
  void FreeEvents() {
    if (events_ && lib_->EventSetFree) lib_->EventSetFree(events_);
    events_ = nullptr;
    registered_ = false;
  }

  std::unique_ptr<NvmlLibrary> lib_;
  Inventory inventory_;
  std::vector<nvml::Device> devices_;
  nvml::EventSet events_ = nullptr;
  bool registered_ = false;
};

}  // namespace

Result<std::unique_ptr<GpuSource>> OpenNvml(const std::string& library_path) {
  TAU_ASSIGN_OR_RETURN(std::unique_ptr<NvmlLibrary> lib, NvmlLibrary::Load(library_path));
  auto source = std::make_unique<NvmlSource>(std::move(lib));
  TAU_RETURN_IF_ERROR(source->Init());
  return std::unique_ptr<GpuSource>(std::move(source));
}

std::string GpuClassOf(const std::string& model, int64_t memory_mib) {
  std::string rest = model;
  if (rest.rfind("NVIDIA ", 0) == 0) rest = rest.substr(7);
  std::string word;
  for (char c : rest) {
    if (c == ' ') break;
    word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (word.empty()) word = "gpu";
  const int64_t gib = (memory_mib + 1023) / 1024;
  return memory_mib > 0 ? fmt::format("{}-{}gb", word, gib) : word;
}

}  // namespace tau::gpu
