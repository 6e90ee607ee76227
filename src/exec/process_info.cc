#include "exec/process_info.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tau::exec {

std::optional<int64_t> ProcessStartTicks(int64_t pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  if (!in) return std::nullopt;
  std::string line;
  std::getline(in, line);
  // The command name (field 2) is in parentheses and may contain spaces.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  // Fields after the name start at 3 (state); starttime is field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  try {
    return std::stoll(field);
  } catch (...) {
    return std::nullopt;
  }
}

bool ProcessIsAlive(int64_t pid, int64_t start_ticks) {
  auto ticks = ProcessStartTicks(pid);
  return ticks && *ticks == start_ticks;
}

Result<MachineCapacity> ReadMachineCapacity() {
  MachineCapacity cap;
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
  if (cpus <= 0) cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  cap.cpus_milli = int64_t{cpus} * 1000;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit) {
    if (key == "MemTotal:") {
      cap.memory_bytes = kb * 1024;
      break;
    }
  }
  if (cap.memory_bytes == 0) return InternalError("cannot read MemTotal from /proc/meminfo");
  return cap;
}

}  // namespace tau::exec
