#include "exec/leftovers.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "exec/process_info.h"

namespace tau::exec {
namespace {

// Reads up to `limit` bytes of a /proc file ("" when it cannot be read).
std::string ReadSmallFile(const std::string& path, size_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[8192];
  while (out.size() < limit) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

struct ProcStat {
  char state = '?';
  int64_t session = 0;
  int64_t start_ticks = 0;
};

std::optional<ProcStat> ReadStat(int64_t pid) {
  std::string line = ReadSmallFile(fmt::format("/proc/{}/stat", pid), 4096);
  // "PID (COMM) STATE PPID PGRP SESSION ...": COMM may hold spaces and ')'.
  size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return std::nullopt;
  std::istringstream rest(line.substr(close + 2));
  ProcStat st;
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return std::nullopt;
    if (i == 3) st.state = field[0];
    if (i == 6) st.session = std::atoll(field.c_str());
    if (i == 22) st.start_ticks = std::atoll(field.c_str());
  }
  return st;
}

bool EnvironHasAll(int64_t pid, const std::vector<std::string>& env) {
  if (env.empty()) return false;
  std::string environ = ReadSmallFile(fmt::format("/proc/{}/environ", pid), 1 << 20);
  if (environ.empty()) return false;
  environ.insert(environ.begin(), '\0');
  environ.push_back('\0');
  for (const std::string& kv : env) {
    std::string needle;
    needle.push_back('\0');
    needle += kv;
    needle.push_back('\0');
    if (environ.find(needle) == std::string::npos) return false;
  }
  return true;
}

}  // namespace

std::optional<ShimRecord> ReadShimRecord(const std::string& lock_path) {
  std::ifstream in(lock_path);
  ShimRecord r;
  if (!(in >> r.pid) || r.pid <= 0) return std::nullopt;
  in >> r.start_ticks >> r.boot_id;
  return r;
}

std::string CurrentBootId() {
  std::string id = ReadSmallFile("/proc/sys/kernel/random/boot_id", 64);
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

Leftovers KillLeftovers(const AttemptProcesses& attempt) {
  Leftovers out;
  const std::optional<ShimRecord>& shim = attempt.shim;
  if (shim && !shim->boot_id.empty() && shim->boot_id != CurrentBootId()) {
    out.rebooted = true;
    return out;
  }
  if (!attempt.cgroup_dir.empty()) {
    // cgroup.kill where the kernel has it; what is still listed is alive.
    if (std::ofstream killer(attempt.cgroup_dir + "/cgroup.kill"); killer) killer << "1\n";
    std::istringstream procs(ReadSmallFile(attempt.cgroup_dir + "/cgroup.procs", 1 << 20));
    int64_t pid;
    while (procs >> pid) {
      auto st = ReadStat(pid);
      if (!st || st->state == 'Z' || st->state == 'X') continue;
      ::kill(static_cast<pid_t>(pid), SIGKILL);
      ++out.alive;
    }
  }
  // The session is the shim's pid. A live process with that pid that is
  // not the shim means the number was reused (a new session may carry it):
  // then only the environment tells.
  bool use_session = shim && shim->pid > 0;
  if (use_session) {
    auto ticks = ProcessStartTicks(shim->pid);
    if (ticks && shim->start_ticks != 0 && *ticks != shim->start_ticks) use_session = false;
  }
  const int64_t self = ::getpid();
  DIR* dir = ::opendir("/proc");
  if (!dir) return out;
  while (struct dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const int64_t pid = std::atoll(e->d_name);
    if (pid == self) continue;
    auto st = ReadStat(pid);
    if (!st || st->state == 'Z' || st->state == 'X') continue;
    if (shim && shim->start_ticks != 0 && st->start_ticks < shim->start_ticks) continue;
    const bool ours = (use_session && st->session == shim->pid) || EnvironHasAll(pid, attempt.env);
    if (!ours) continue;
    ::kill(static_cast<pid_t>(pid), SIGKILL);
    ++out.alive;
  }
  ::closedir(dir);
  return out;
}

}  // namespace tau::exec
