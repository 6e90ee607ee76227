#include "exec/process_info.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>

#include "exec/proc_file.h"

namespace tau::exec {

std::optional<int64_t> ProcessStartTicks(int64_t pid) {
  if (pid <= 0) return std::nullopt;
  auto stat = ReadProcFile(fmt::format("/proc/{}/stat", pid), 4096);
  if (!stat) return std::nullopt;
  // The command name (field 2) is in parentheses and may contain spaces.
  const size_t close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  // Fields after the name start at 3 (state); starttime is field 22.
  const char* p = stat->c_str() + close + 1;
  for (int i = 3; i <= 22; ++i) {
    while (*p == ' ') ++p;
    if (*p == '\0' || *p == '\n') return std::nullopt;
    if (i == 22) break;
    while (*p != ' ' && *p != '\0') ++p;
  }
  char* end = nullptr;
  errno = 0;
  const long long ticks = std::strtoll(p, &end, 10);
  if (end == p || errno != 0 || (*end != ' ' && *end != '\n' && *end != '\0')) return std::nullopt;
  return int64_t{ticks};
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
