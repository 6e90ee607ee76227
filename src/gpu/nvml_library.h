#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "gpu/nvml_types.h"

namespace tau::gpu {

// libnvidia-ml.so.1 loaded at run time (dlopen), its versioned symbols
// resolved by name. Required symbols missing make Load fail; optional ones
// are null and their checks report NOT_SUPPORTED.
struct NvmlLibrary {
  // Loads the library at `path` ("" means libnvidia-ml.so.1 from the
  // system's library path) and initialises NVML (nvmlInit_v2).
  static Result<std::unique_ptr<NvmlLibrary>> Load(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // "NVML_ERROR_GPU_IS_LOST (15)" style text for a return code.
  std::string ErrorText(nvml::Return r) const;

  void* handle = nullptr;
  std::string path;
  // Required.
  nvml::Return (*Init_v2)() = nullptr;
  nvml::Return (*Shutdown)() = nullptr;
  nvml::Return (*DeviceGetCount_v2)(unsigned*) = nullptr;
  nvml::Return (*DeviceGetHandleByIndex_v2)(unsigned, nvml::Device*) = nullptr;
  nvml::Return (*DeviceGetUUID)(nvml::Device, char*, unsigned) = nullptr;
  nvml::Return (*DeviceGetName)(nvml::Device, char*, unsigned) = nullptr;
  // Optional.
  const char* (*ErrorString)(nvml::Return) = nullptr;
  nvml::Return (*SystemGetDriverVersion)(char*, unsigned) = nullptr;
  nvml::Return (*SystemGetCudaDriverVersion_v2)(int*) = nullptr;
  nvml::Return (*DeviceGetPciInfo_v3)(nvml::Device, nvml::PciInfo*) = nullptr;
  nvml::Return (*DeviceGetMemoryInfo)(nvml::Device, nvml::Memory*) = nullptr;
  nvml::Return (*DeviceGetTemperature)(nvml::Device, unsigned, unsigned*) = nullptr;
  nvml::Return (*DeviceGetTemperatureThreshold)(nvml::Device, unsigned, unsigned*) = nullptr;
  nvml::Return (*DeviceGetPowerUsage)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*DeviceGetUtilizationRates)(nvml::Device, nvml::Utilization*) = nullptr;
  nvml::Return (*DeviceGetTotalEccErrors)(nvml::Device, int, int, unsigned long long*) = nullptr;
  nvml::Return (*DeviceGetRemappedRows)(nvml::Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;
  nvml::Return (*DeviceGetComputeRunningProcesses_v3)(nvml::Device, unsigned*, nvml::ProcessInfo*) = nullptr;
  nvml::Return (*DeviceGetCurrentClocksEventReasons)(nvml::Device, unsigned long long*) = nullptr;
  nvml::Return (*DeviceGetCurrentClocksThrottleReasons)(nvml::Device, unsigned long long*) = nullptr;
  nvml::Return (*DeviceGetNvLinkState)(nvml::Device, unsigned, int*) = nullptr;
  nvml::Return (*DeviceGetPcieReplayCounter)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*DeviceGetFieldValues)(nvml::Device, int, nvml::FieldValue*) = nullptr;
  nvml::Return (*EventSetCreate)(nvml::EventSet*) = nullptr;
  nvml::Return (*DeviceGetSupportedEventTypes)(nvml::Device, unsigned long long*) = nullptr;
  nvml::Return (*DeviceRegisterEvents)(nvml::Device, unsigned long long, nvml::EventSet) = nullptr;
  nvml::Return (*EventSetWait_v2)(nvml::EventSet, nvml::EventData*, unsigned) = nullptr;
  nvml::Return (*EventSetFree)(nvml::EventSet) = nullptr;

 private:
  NvmlLibrary() = default;
};

}  // namespace tau::gpu
