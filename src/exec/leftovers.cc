#include "exec/leftovers.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/open_retrying.h"
#include "common/strings.h"
#include "exec/process_info.h"

namespace tau::exec {
namespace {

// Reads up to `limit` bytes of a /proc or cgroup file; nullopt when it
// cannot be opened.
std::optional<std::string> ReadSmallFile(const std::string& path, size_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
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
  std::string line = ReadSmallFile(fmt::format("/proc/{}/stat", pid), 4096).value_or("");
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

bool Dead(const std::optional<ProcStat>& st) { return !st || st->state == 'Z' || st->state == 'X'; }

bool EnvironHasAll(int64_t pid, const std::vector<std::string>& env) {
  if (env.empty()) return false;
  std::string environ = ReadSmallFile(fmt::format("/proc/{}/environ", pid), 1 << 20).value_or("");
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

// One look at the attempt's live processes.
struct Probe {
  std::vector<int64_t> pids;  // live processes of the attempt (a pid may appear twice)
  bool cgroup_read = false;   // its cgroup.procs could be read
};

// Finds the attempt's live processes: those in its cgroup, those of the
// shim's session and those carrying its environment.
Probe Look(const AttemptProcesses& attempt) {
  Probe probe;
  const std::optional<ShimRecord>& shim = attempt.shim;
  if (!attempt.cgroup_dir.empty()) {
    std::optional<std::string> listed = ReadSmallFile(attempt.cgroup_dir + "/cgroup.procs", 1 << 20);
    probe.cgroup_read = listed.has_value();
    std::istringstream procs(listed.value_or(""));
    int64_t pid;
    while (procs >> pid) {
      if (!Dead(ReadStat(pid))) probe.pids.push_back(pid);
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
  if (!dir) return probe;
  while (struct dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const int64_t pid = std::atoll(e->d_name);
    if (pid == self) continue;
    auto st = ReadStat(pid);
    if (Dead(st)) continue;
    if (shim && shim->start_ticks != 0 && st->start_ticks < shim->start_ticks) continue;
    const bool ours = (use_session && st->session == shim->pid) || EnvironHasAll(pid, attempt.env);
    if (ours) probe.pids.push_back(pid);
  }
  ::closedir(dir);
  return probe;
}

bool Rebooted(const AttemptProcesses& attempt) {
  const std::optional<ShimRecord>& shim = attempt.shim;
  return shim && !shim->boot_id.empty() && shim->boot_id != CurrentBootId();
}

}  // namespace

std::optional<ShimRecord> ReadShimRecord(const std::string& lock_path) {
  // Read whole (a record is a line): a brief shortage of descriptors is
  // waited out, not taken for a shim that never wrote its record.
  std::string text;
  if (int fd = OpenRetrying(lock_path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); fd >= 0) {
    char buf[4096];
    for (ssize_t n; text.size() < (1 << 16) && ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR));) {
      if (n > 0) text.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
  }
  std::istringstream in(text);
  ShimRecord r;
  if (!(in >> r.pid) || r.pid <= 0) return std::nullopt;
  in >> r.start_ticks >> r.boot_id;
  for (std::string mark; in >> mark;) {
    if (mark == "started") r.job_started = true;
    if (mark == "ended") r.status_written = true;
  }
  return r;
}

std::string CurrentBootId() {
  std::string id = ReadSmallFile("/proc/sys/kernel/random/boot_id", 64).value_or("");
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

int64_t CountLeftovers(const AttemptProcesses& attempt) {
  if (Rebooted(attempt)) return 0;
  std::vector<int64_t> pids = Look(attempt).pids;
  std::sort(pids.begin(), pids.end());
  return std::unique(pids.begin(), pids.end()) - pids.begin();
}

Result<Leftovers> KillLeftovers(const AttemptProcesses& attempt, const KillLimits& limits) {
  Leftovers out;
  if (Rebooted(attempt)) {
    out.rebooted = true;
    return out;
  }
  auto send = [&](int64_t pid) {
    if (limits.send_signal) {
      limits.send_signal(pid, SIGKILL);
    } else {
      ::kill(static_cast<pid_t>(pid), SIGKILL);
    }
  };
  const auto give_up = std::chrono::steady_clock::now() + limits.patience;
  auto pause = std::chrono::microseconds(500);
  std::set<int64_t> killed;
  for (;;) {
    // Kill what is there; cgroup.kill where the kernel has it also takes
    // what the cgroup gains meanwhile.
    if (!attempt.cgroup_dir.empty()) {
      if (std::ofstream killer(attempt.cgroup_dir + "/cgroup.kill"); killer) killer << "1\n";
    }
    for (int64_t pid : Look(attempt).pids) {
      send(pid);
      killed.insert(pid);
    }
    // Then count: a process forked while its parent was being killed, or
    // one SIGKILL has not ended yet, is still there.
    Probe probe = Look(attempt);
    if (probe.pids.empty()) {
      out.killed = static_cast<int64_t>(killed.size());
      out.contained = probe.cgroup_read;
      return out;
    }
    if (std::chrono::steady_clock::now() >= give_up) {
      std::sort(probe.pids.begin(), probe.pids.end());
      probe.pids.erase(std::unique(probe.pids.begin(), probe.pids.end()), probe.pids.end());
      std::vector<std::string> shown;
      for (size_t i = 0; i < probe.pids.size() && i < 10; ++i) shown.push_back(std::to_string(probe.pids[i]));
      if (probe.pids.size() > shown.size()) shown.push_back("...");
      return DeadlineExceededError(fmt::format(
          "{} process{} of the attempt {} still alive {} ms after SIGKILL (pid{} {}): stuck in the kernel, or "
          "forking faster than they are killed",
          probe.pids.size(), probe.pids.size() == 1 ? "" : "es", probe.pids.size() == 1 ? "is" : "are",
          limits.patience.count(), probe.pids.size() == 1 ? "" : "s", Join(shown, ", ")));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
  }
}

}  // namespace tau::exec
