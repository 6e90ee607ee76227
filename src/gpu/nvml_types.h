#pragma once

// The parts of NVML's C ABI that TauGrid uses, declared here so that no
// NVIDIA header is needed at build time. Layouts and values follow nvml.h
// (API v13); only what is used is declared.

#include <cstdint>

namespace tau::gpu::nvml {

using Return = int;  // nvmlReturn_t
using Device = struct DeviceOpaque*;
using EventSet = struct EventSetOpaque*;

constexpr Return kSuccess = 0;
constexpr Return kUninitialized = 1;
constexpr Return kInvalidArgument = 2;
constexpr Return kNotSupported = 3;
constexpr Return kNoPermission = 4;
constexpr Return kNotFound = 6;
constexpr Return kInsufficientSize = 7;
constexpr Return kDriverNotLoaded = 9;
constexpr Return kTimeout = 10;
constexpr Return kFunctionNotFound = 13;
constexpr Return kGpuIsLost = 15;
constexpr Return kResetRequired = 16;
constexpr Return kLibRmVersionMismatch = 18;
constexpr Return kUnknown = 999;

constexpr unsigned kTemperatureGpu = 0;
// nvmlTemperatureThresholds_t
constexpr unsigned kTemperatureThresholdShutdown = 0;
constexpr unsigned kTemperatureThresholdSlowdown = 1;
constexpr int kMemoryErrorUncorrected = 1;
constexpr int kMemoryErrorCorrected = 0;
constexpr int kVolatileEcc = 0;

constexpr unsigned long long kEventXid = 0x8;
constexpr unsigned long long kEventDoubleBitEcc = 0x2;

constexpr unsigned kUuidBuffer = 96;
constexpr unsigned kNameBuffer = 96;
constexpr unsigned kDriverBuffer = 80;

constexpr unsigned kFieldRecoveryAction = 230;  // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
constexpr int kFeatureEnabled = 1;

// Clock event reasons that mean trouble (benign ones: idle, app clocks,
// software power cap, sync boost).
constexpr unsigned long long kClocksHwSlowdown = 0x8;
constexpr unsigned long long kClocksSwThermal = 0x20;
constexpr unsigned long long kClocksHwThermal = 0x40;
constexpr unsigned long long kClocksHwPowerBrake = 0x80;

struct FieldValue {  // nvmlFieldValue_t
  unsigned fieldId;
  unsigned scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;
  Return nvmlReturn;
  union {
    double dVal;
    unsigned uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    int siVal;
    unsigned short usVal;
  } value;
};

struct PciInfo {  // nvmlPciInfo_t (v3)
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};

struct Memory {  // nvmlMemory_t
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct Utilization {  // nvmlUtilization_t
  unsigned gpu;
  unsigned memory;
};

struct EventData {  // nvmlEventData_t
  Device device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
};

struct ProcessInfo {  // nvmlProcessInfo_t (v2/v3 layout)
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId;
  unsigned computeInstanceId;
};

}  // namespace tau::gpu::nvml
