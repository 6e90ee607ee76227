// A fake libnvidia-ml.so.1 for tests and for trying GPU features without a
// GPU. It exports the NVML symbols TauGrid uses and answers from a JSON
// scenario named by TAU_FAKE_NVML (format: docs/gpu-health.md). The file is
// read again whenever it changes, so a test can change a GPU mid-run;
// scripted "events" and "changes" happen at `at_s` seconds after
// nvmlInit_v2 (the first one, or the first after NVML was shut down).

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu/nvml_types.h"

namespace nvml = tau::gpu::nvml;
using nlohmann::json;

namespace {

std::mutex mu;
json scenario;
std::string loaded_path;
int64_t loaded_mtime_ns = -1;
int init_count = 0;
std::chrono::steady_clock::time_point started;
bool started_set = false;
size_t next_event = 0;

// Reloads the scenario when the file changed. Called with mu held.
void Load() {
  const char* path = std::getenv("TAU_FAKE_NVML");
  if (!path) {
    scenario = json::object();
    return;
  }
  struct stat st {};
  if (::stat(path, &st) != 0) {
    if (!scenario.is_object()) scenario = json::object();  // no file (yet): no devices
    return;
  }
  int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (path == loaded_path && mtime == loaded_mtime_ns) return;
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  json parsed = json::parse(buf.str(), nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    // Being rewritten: keep the last good one (none yet: no devices).
    if (!scenario.is_object()) scenario = json::object();
    return;
  }
  scenario = parsed;
  loaded_path = path;
  loaded_mtime_ns = mtime;
}

double Elapsed() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

size_t DeviceCount() { return scenario.contains("devices") ? scenario["devices"].size() : 0; }

// The device's fields now: its own, then every change due by now.
json DeviceNow(size_t i) {
  json d = scenario["devices"][i];
  if (scenario.contains("changes")) {
    for (const json& c : scenario["changes"]) {
      if (c.value("gpu", -1) == static_cast<int>(i) && c.value("at_s", 0.0) <= Elapsed() && c.contains("set")) {
        for (auto it = c["set"].begin(); it != c["set"].end(); ++it) d[it.key()] = it.value();
      }
    }
  }
  return d;
}

nvml::Device Handle(size_t i) { return reinterpret_cast<nvml::Device>(i + 1); }

// Resolves a handle to its device's fields; an error when unknown, not
// initialised, or lost.
nvml::Return Lookup(nvml::Device dev, json* out) {
  if (init_count == 0) return nvml::kUninitialized;
  size_t i = reinterpret_cast<size_t>(dev);
  if (i == 0 || i > DeviceCount()) return nvml::kInvalidArgument;
  *out = DeviceNow(i - 1);
  if (out->value("lost", false)) return nvml::kGpuIsLost;
  return nvml::kSuccess;
}

// A numeric field, or NOT_SUPPORTED when the scenario leaves it out.
template <typename T>
nvml::Return Field(nvml::Device dev, const char* name, T* out) {
  std::lock_guard lock(mu);
  Load();
  json d;
  if (nvml::Return r = Lookup(dev, &d); r != nvml::kSuccess) return r;
  if (!d.contains(name) || d[name].is_null()) return nvml::kNotSupported;
  *out = d[name].get<T>();
  return nvml::kSuccess;
}

nvml::Return CopyString(const std::string& s, char* buf, unsigned size) {
  if (s.size() + 1 > size) return nvml::kInsufficientSize;
  std::memcpy(buf, s.c_str(), s.size() + 1);
  return nvml::kSuccess;
}

}  // namespace

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_EXPORT nvml::Return nvmlInit_v2() {
  std::lock_guard lock(mu);
  Load();
  if (scenario.contains("init_error")) return scenario["init_error"].get<int>();
  if (!started_set || init_count == 0) {
    // Scripted time starts at the first initialisation, and again after a
    // full shutdown (a test opening NVML afresh sees its events anew).
    started = std::chrono::steady_clock::now();
    started_set = true;
    next_event = 0;
  }
  ++init_count;
  return nvml::kSuccess;
}

FAKE_EXPORT nvml::Return nvmlShutdown() {
  std::lock_guard lock(mu);
  if (init_count == 0) return nvml::kUninitialized;
  --init_count;
  return nvml::kSuccess;
}

FAKE_EXPORT const char* nvmlErrorString(nvml::Return r) {
  switch (r) {
    case nvml::kSuccess: return "Success";
    case nvml::kGpuIsLost: return "GPU is lost";
    case nvml::kNotSupported: return "Not Supported";
    case nvml::kTimeout: return "Timeout";
    case nvml::kDriverNotLoaded: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

FAKE_EXPORT nvml::Return nvmlSystemGetDriverVersion(char* buf, unsigned size) {
  std::lock_guard lock(mu);
  if (init_count == 0) return nvml::kUninitialized;
  return CopyString(scenario.value("driver_version", "580.159.03"), buf, size);
}

FAKE_EXPORT nvml::Return nvmlSystemGetCudaDriverVersion_v2(int* v) {
  std::lock_guard lock(mu);
  if (init_count == 0) return nvml::kUninitialized;
  *v = scenario.value("cuda_version", 13000);
  return nvml::kSuccess;
}

FAKE_EXPORT nvml::Return nvmlDeviceGetCount_v2(unsigned* n) {
  std::lock_guard lock(mu);
  Load();
  if (init_count == 0) return nvml::kUninitialized;
  *n = static_cast<unsigned>(DeviceCount());
  return nvml::kSuccess;
}

FAKE_EXPORT nvml::Return nvmlDeviceGetHandleByIndex_v2(unsigned i, nvml::Device* dev) {
  std::lock_guard lock(mu);
  if (init_count == 0) return nvml::kUninitialized;
  if (i >= DeviceCount()) return nvml::kInvalidArgument;
  *dev = Handle(i);
  return nvml::kSuccess;
}

// A device's string field as the scenario lists it (answered even for a
// lost GPU: NVML keeps identity queries working).
nvml::Return DeviceString(nvml::Device dev, const char* key, const char* fallback, char* buf, unsigned size) {
  std::lock_guard lock(mu);
  size_t i = reinterpret_cast<size_t>(dev);
  if (init_count == 0) return nvml::kUninitialized;
  if (i == 0 || i > DeviceCount()) return nvml::kInvalidArgument;
  return CopyString(scenario["devices"][i - 1].value(key, fallback), buf, size);
}

FAKE_EXPORT nvml::Return nvmlDeviceGetUUID(nvml::Device dev, char* buf, unsigned size) {
  return DeviceString(dev, "uuid", "", buf, size);
}

FAKE_EXPORT nvml::Return nvmlDeviceGetName(nvml::Device dev, char* buf, unsigned size) {
  return DeviceString(dev, "name", "NVIDIA H200", buf, size);
}

FAKE_EXPORT nvml::Return nvmlDeviceGetPciInfo_v3(nvml::Device dev, nvml::PciInfo* pci) {
  std::lock_guard lock(mu);
  json d;
  if (nvml::Return r = Lookup(dev, &d); r != nvml::kSuccess) return r;
  std::memset(pci, 0, sizeof *pci);
  size_t i = reinterpret_cast<size_t>(dev) - 1;
  std::string bus = d.value("pci_bus_id", "");
  if (bus.empty()) {
    char text[32];
    std::snprintf(text, sizeof text, "00000000:%02X:00.0", static_cast<unsigned>(0x18 + i));
    bus = text;
  }
  std::strncpy(pci->busId, bus.c_str(), sizeof pci->busId - 1);
  return nvml::kSuccess;
}

FAKE_EXPORT nvml::Return nvmlDeviceGetMemoryInfo(nvml::Device dev, nvml::Memory* m) {
  std::lock_guard lock(mu);
  Load();
  json d;
  if (nvml::Return r = Lookup(dev, &d); r != nvml::kSuccess) return r;
  m->total = static_cast<unsigned long long>(d.value("memory_total_mib", 143771)) << 20;
  m->used = static_cast<unsigned long long>(d.value("memory_used_mib", 0)) << 20;
  m->free = m->total - m->used;
  return nvml::kSuccess;
}

FAKE_EXPORT nvml::Return nvmlDeviceGetTemperature(nvml::Device dev, unsigned sensor, unsigned* t) {
  if (sensor != nvml::kTemperatureGpu) return nvml::kInvalidArgument;
  return Field(dev, "temperature_c", t);
}

FAKE_EXPORT nvml::Return nvmlDeviceGetPowerUsage(nvml::Device dev, unsigned* mw) {
  int error = 0;
  if (Field(dev, "power_error", &error) == nvml::kSuccess && error != 0) return error;
  return Field(dev, "power_mw", mw);
}

FAKE_EXPORT nvml::Return nvmlDeviceGetCurrentClocksEventReasons(nvml::Device dev, unsigned long long* reasons) {
  return Field(dev, "clock_event_reasons", reasons);
}

FAKE_EXPORT nvml::Return nvmlDeviceGetPcieReplayCounter(nvml::Device dev, unsigned* n) {
  return Field(dev, "pcie_replays", n);
}

// "nvlinks": [1, 1, 0] lists each link's state (1 enabled); absent: no NVLink.
FAKE_EXPORT nvml::Return nvmlDeviceGetNvLinkState(nvml::Device dev, unsigned link, int* state) {
  std::lock_guard lock(mu);
  Load();
  json d;
  if (nvml::Return r = Lookup(dev, &d); r != nvml::kSuccess) return r;
  if (!d.contains("nvlinks")) return nvml::kNotSupported;
  if (link >= d["nvlinks"].size()) return nvml::kInvalidArgument;
  *state = d["nvlinks"][link].get<int>();
  return nvml::kSuccess;
}

// Only the recovery-action field (230), from "recovery_action".
FAKE_EXPORT nvml::Return nvmlDeviceGetFieldValues(nvml::Device dev, int count, nvml::FieldValue* values) {
  for (int i = 0; i < count; ++i) {
    unsigned action = 0;
    values[i].nvmlReturn = values[i].fieldId == nvml::kFieldRecoveryAction
                               ? Field(dev, "recovery_action", &action)
                               : nvml::kNotSupported;
    if (values[i].nvmlReturn == nvml::kGpuIsLost) return nvml::kGpuIsLost;
    values[i].valueType = 1;
    values[i].value.uiVal = action;
  }
  return nvml::kSuccess;
}

FAKE_EXPORT nvml::Return nvmlDeviceGetUtilizationRates(nvml::Device dev, nvml::Utilization* u) {
  unsigned gpu = 0;
  nvml::Return r = Field(dev, "utilization_gpu", &gpu);
  if (r == nvml::kSuccess) *u = {gpu, 0};
  return r;
}

FAKE_EXPORT nvml::Return nvmlDeviceGetTotalEccErrors(nvml::Device dev, int type, int counter, unsigned long long* n) {
  if (counter != nvml::kVolatileEcc) return nvml::kNotSupported;
  return Field(dev, type == nvml::kMemoryErrorUncorrected ? "ecc_uncorrected" : "ecc_corrected", n);
}

FAKE_EXPORT nvml::Return nvmlDeviceGetRemappedRows(nvml::Device dev, unsigned* corr, unsigned* unc, unsigned* pending,
                                                   unsigned* failed) {
  std::lock_guard lock(mu);
  Load();
  json d;
  if (nvml::Return r = Lookup(dev, &d); r != nvml::kSuccess) return r;
  if (!d.contains("remapped_pending") && !d.contains("remapped_failed")) return nvml::kNotSupported;
  *corr = 0;
  *unc = 0;
  *pending = d.value("remapped_pending", 0u);
  *failed = d.value("remapped_failed", 0u);
  return nvml::kSuccess;
}

FAKE_EXPORT nvml::Return nvmlDeviceGetComputeRunningProcesses_v3(nvml::Device dev, unsigned* count,
                                                                 nvml::ProcessInfo* infos) {
  std::lock_guard lock(mu);
  Load();
  json d;
  if (nvml::Return r = Lookup(dev, &d); r != nvml::kSuccess) return r;
  std::vector<unsigned> pids = d.value("processes", std::vector<unsigned>{});
  if (pids.size() > *count) {
    *count = static_cast<unsigned>(pids.size());
    return nvml::kInsufficientSize;
  }
  for (size_t i = 0; i < pids.size(); ++i) infos[i] = {pids[i], 0, 0xFFFFFFFF, 0xFFFFFFFF};
  *count = static_cast<unsigned>(pids.size());
  return nvml::kSuccess;
}

FAKE_EXPORT nvml::Return nvmlDeviceGetTemperatureThreshold(nvml::Device dev, unsigned type, unsigned* t) {
  if (type == nvml::kTemperatureThresholdSlowdown) return Field(dev, "temperature_slowdown_c", t);
  if (type == nvml::kTemperatureThresholdShutdown) return Field(dev, "temperature_shutdown_c", t);
  return nvml::kNotSupported;
}

// "event_set_create_error": nvmlEventSetCreate answers this code while set.
FAKE_EXPORT nvml::Return nvmlEventSetCreate(nvml::EventSet* set) {
  std::lock_guard lock(mu);
  Load();
  if (init_count == 0) return nvml::kUninitialized;
  if (int error = scenario.value("event_set_create_error", 0); error != 0) return error;
  *set = reinterpret_cast<nvml::EventSet>(0x1);
  return nvml::kSuccess;
}

FAKE_EXPORT nvml::Return nvmlDeviceGetSupportedEventTypes(nvml::Device dev, unsigned long long* types) {
  std::lock_guard lock(mu);
  json d;
  if (nvml::Return r = Lookup(dev, &d); r != nvml::kSuccess) return r;
  *types = d.value("supports_events", true) ? (nvml::kEventXid | nvml::kEventDoubleBitEcc) : 0;
  return nvml::kSuccess;
}

// A device's "register_events_error": nvmlDeviceRegisterEvents answers
// this code for it while set.
FAKE_EXPORT nvml::Return nvmlDeviceRegisterEvents(nvml::Device dev, unsigned long long, nvml::EventSet) {
  std::lock_guard lock(mu);
  Load();
  json d;
  if (nvml::Return r = Lookup(dev, &d); r != nvml::kSuccess) return r;
  return d.value("register_events_error", 0);
}

FAKE_EXPORT nvml::Return nvmlEventSetWait_v2(nvml::EventSet, nvml::EventData* data, unsigned timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    {
      std::lock_guard lock(mu);
      Load();
      if (init_count == 0) return nvml::kUninitialized;
      // "event_wait_error": every wait answers this code while set.
      if (int error = scenario.value("event_wait_error", 0); error != 0) return error;
      const json events = scenario.value("events", json::array());
      if (next_event < events.size() && events[next_event].value("at_s", 0.0) <= Elapsed()) {
        const json& e = events[next_event++];
        std::memset(data, 0, sizeof *data);
        data->device = Handle(static_cast<size_t>(e.value("gpu", 0)));
        data->eventType = nvml::kEventXid;
        data->eventData = e.value("xid", 0ull);
        data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFF;
        return nvml::kSuccess;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return nvml::kTimeout;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

FAKE_EXPORT nvml::Return nvmlEventSetFree(nvml::EventSet) { return nvml::kSuccess; }
