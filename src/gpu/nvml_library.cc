#include "gpu/nvml_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace tau::gpu {
namespace {

template <typename F>
void Resolve(void* handle, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(::dlsym(handle, name));
}

const char* ReturnName(nvml::Return r) {
  switch (r) {
    case nvml::kSuccess: return "NVML_SUCCESS";
    case nvml::kUninitialized: return "NVML_ERROR_UNINITIALIZED";
    case nvml::kInvalidArgument: return "NVML_ERROR_INVALID_ARGUMENT";
    case nvml::kNotSupported: return "NVML_ERROR_NOT_SUPPORTED";
    case nvml::kNoPermission: return "NVML_ERROR_NO_PERMISSION";
    case nvml::kNotFound: return "NVML_ERROR_NOT_FOUND";
    case nvml::kInsufficientSize: return "NVML_ERROR_INSUFFICIENT_SIZE";
    case nvml::kDriverNotLoaded: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case nvml::kTimeout: return "NVML_ERROR_TIMEOUT";
    case nvml::kFunctionNotFound: return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case nvml::kGpuIsLost: return "NVML_ERROR_GPU_IS_LOST";
    case nvml::kResetRequired: return "NVML_ERROR_RESET_REQUIRED";
    case nvml::kLibRmVersionMismatch: return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    default: return "NVML_ERROR_UNKNOWN";
  }
}

}  // namespace

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Load(const std::string& path) {
  std::string name = path.empty() ? "libnvidia-ml.so.1" : path;
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle && path.empty()) {
    // By soname the loader looks only where its cache says; a container
    // image without ld.so.cache (ours is one) does not know the folder the
    // NVIDIA container toolkit mounts the driver's library into. Try the
    // folders drivers and the toolkit use.
    const std::string first_error = ::dlerror();
    for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/aarch64-linux-gnu", "/usr/lib"}) {
      const std::string candidate = std::string(dir) + "/libnvidia-ml.so.1";
      handle = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) {
        name = candidate;
        break;
      }
    }
    if (!handle) {
      return NotFoundError(fmt::format("cannot load {}: {} (nor from /usr/lib/x86_64-linux-gnu, /usr/lib64, "
                                       "/usr/lib/aarch64-linux-gnu, /usr/lib)",
                                       name, first_error));
    }
  }
  if (!handle) return NotFoundError(fmt::format("cannot load {}: {}", name, ::dlerror()));
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->handle = handle;
  lib->path = name;
  // The versioned names: dlsym does not expand nvml.h's macros.
  Resolve(handle, "nvmlInit_v2", &lib->Init_v2);
  Resolve(handle, "nvmlShutdown", &lib->Shutdown);
  Resolve(handle, "nvmlDeviceGetCount_v2", &lib->DeviceGetCount_v2);
  Resolve(handle, "nvmlDeviceGetHandleByIndex_v2", &lib->DeviceGetHandleByIndex_v2);
  Resolve(handle, "nvmlDeviceGetUUID", &lib->DeviceGetUUID);
  Resolve(handle, "nvmlDeviceGetName", &lib->DeviceGetName);
  Resolve(handle, "nvmlErrorString", &lib->ErrorString);
  Resolve(handle, "nvmlSystemGetDriverVersion", &lib->SystemGetDriverVersion);
  Resolve(handle, "nvmlSystemGetCudaDriverVersion_v2", &lib->SystemGetCudaDriverVersion_v2);
  Resolve(handle, "nvmlDeviceGetPciInfo_v3", &lib->DeviceGetPciInfo_v3);
  Resolve(handle, "nvmlDeviceGetMemoryInfo", &lib->DeviceGetMemoryInfo);
  Resolve(handle, "nvmlDeviceGetTemperature", &lib->DeviceGetTemperature);
  Resolve(handle, "nvmlDeviceGetTemperatureThreshold", &lib->DeviceGetTemperatureThreshold);
  Resolve(handle, "nvmlDeviceGetPowerUsage", &lib->DeviceGetPowerUsage);
  Resolve(handle, "nvmlDeviceGetUtilizationRates", &lib->DeviceGetUtilizationRates);
  Resolve(handle, "nvmlDeviceGetTotalEccErrors", &lib->DeviceGetTotalEccErrors);
  Resolve(handle, "nvmlDeviceGetRemappedRows", &lib->DeviceGetRemappedRows);
  Resolve(handle, "nvmlDeviceGetComputeRunningProcesses_v3", &lib->DeviceGetComputeRunningProcesses_v3);
  Resolve(handle, "nvmlDeviceGetCurrentClocksEventReasons", &lib->DeviceGetCurrentClocksEventReasons);
  Resolve(handle, "nvmlDeviceGetCurrentClocksThrottleReasons", &lib->DeviceGetCurrentClocksThrottleReasons);
  Resolve(handle, "nvmlDeviceGetNvLinkState", &lib->DeviceGetNvLinkState);
  Resolve(handle, "nvmlDeviceGetPcieReplayCounter", &lib->DeviceGetPcieReplayCounter);
  Resolve(handle, "nvmlDeviceGetFieldValues", &lib->DeviceGetFieldValues);
  Resolve(handle, "nvmlEventSetCreate", &lib->EventSetCreate);
  Resolve(handle, "nvmlDeviceGetSupportedEventTypes", &lib->DeviceGetSupportedEventTypes);
  Resolve(handle, "nvmlDeviceRegisterEvents", &lib->DeviceRegisterEvents);
  Resolve(handle, "nvmlEventSetWait_v2", &lib->EventSetWait_v2);
  Resolve(handle, "nvmlEventSetFree", &lib->EventSetFree);
  for (auto [fn, sym] : {std::pair<bool, const char*>{lib->Init_v2 != nullptr, "nvmlInit_v2"},
                         {lib->Shutdown != nullptr, "nvmlShutdown"},
                         {lib->DeviceGetCount_v2 != nullptr, "nvmlDeviceGetCount_v2"},
                         {lib->DeviceGetHandleByIndex_v2 != nullptr, "nvmlDeviceGetHandleByIndex_v2"},
                         {lib->DeviceGetUUID != nullptr, "nvmlDeviceGetUUID"},
                         {lib->DeviceGetName != nullptr, "nvmlDeviceGetName"}}) {
    if (!fn) return FailedPreconditionError(fmt::format("{} has no {}; it is not a usable NVML", name, sym));
  }
  nvml::Return r = lib->Init_v2();
  if (r != nvml::kSuccess) {
    return UnavailableError(fmt::format("nvmlInit_v2 failed: {}", lib->ErrorText(r)));
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (Shutdown) Shutdown();
  // The library stays loaded: threads of the driver may still be in it.
}

std::string NvmlLibrary::ErrorText(nvml::Return r) const {
  std::string text = ErrorString ? ErrorString(r) : "";
  return fmt::format("{} ({}){}", ReturnName(r), r, text.empty() ? "" : ": " + text);
}

}  // namespace tau::gpu
