#pragma once

#include <cstdint>
#include <optional>

#include "common/result.h"

namespace tau::exec {

// Start time of process `pid` in clock ticks since boot (field 22 of
// /proc/PID/stat), or nullopt when no such process exists. A pid together
// with its start time names one process even after the pid is reused.
std::optional<int64_t> ProcessStartTicks(int64_t pid);

// True when `pid` exists and started at `start_ticks`.
bool ProcessIsAlive(int64_t pid, int64_t start_ticks);

// The machine's capacity for jobs: CPUs this process may run on (in
// milli-CPUs) and total memory in bytes.
struct MachineCapacity {
  int64_t cpus_milli = 0;
  int64_t memory_bytes = 0;
};
Result<MachineCapacity> ReadMachineCapacity();

}  // namespace tau::exec
