#include "exec/shim_launcher.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "exec/process_info.h"

namespace tau::exec {
namespace {

// The descriptor number the shim finds its lock on.
constexpr int kShimLockFd = 3;

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

Result<ShimProcess> LaunchShim(const ShimLaunch& l) {
  FdCloser lock(::open(l.lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (lock.get() < 0) return ErrnoError(errno, fmt::format("open {}", l.lock_path));
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return AlreadyExistsError(fmt::format("{} is locked: the attempt's shim is running", l.lock_path));
    }
    return ErrnoError(errno, fmt::format("lock {}", l.lock_path));
  }

  std::vector<std::string> args = {l.shim_path,     "--status",   l.status_path,
                                   "--log",         l.log_path,   "--cwd",
                                   l.cwd,           "--grace-ms", std::to_string(l.grace_ms),
                                   "--lock-fd",     std::to_string(kShimLockFd)};
  if (l.deadline_ms > 0) {
    args.push_back("--deadline-ms");
    args.push_back(std::to_string(l.deadline_ms));
  }
  if (!l.cgroup_dir.empty()) {
    args.push_back("--cgroup");
    args.push_back(l.cgroup_dir);
  }
  if (!l.cpu_list.empty()) {
    args.push_back("--cpu-list");
    args.push_back(l.cpu_list);
  }
  if (l.rlimit_data > 0) {
    args.push_back("--rlimit-data");
    args.push_back(std::to_string(l.rlimit_data));
  }
  if (l.status_retry_ms > 0) {
    args.push_back("--status-retry-ms");
    args.push_back(std::to_string(l.status_retry_ms));
  }
  if (l.fail_status_writes > 0) {
    args.push_back("--fail-status-writes");
    args.push_back(std::to_string(l.fail_status_writes));
  }
  args.push_back("--");
  args.insert(args.end(), l.argv.begin(), l.argv.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = l.env;
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, l.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_adddup2(&actions, lock.get(), kShimLockFd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, all_default;
  sigemptyset(&empty);
  sigemptyset(&all_default);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2}) sigaddset(&all_default, s);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &all_default);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, l.shim_path.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return ErrnoError(rc, fmt::format("start {}", l.shim_path));
  ShimProcess shim;
  shim.pid = pid;
  shim.start_ticks = ProcessStartTicks(pid).value_or(0);
  return shim;
}

std::optional<int64_t> AttemptLockHolder(const std::string& lock_path) {
  FdCloser fd(::open(lock_path.c_str(), O_RDWR | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
    ::flock(fd.get(), LOCK_UN);
    return std::nullopt;
  }
  char buf[32] = {};
  ssize_t n = ::pread(fd.get(), buf, sizeof buf - 1, 0);
  if (n <= 0) return int64_t{0};  // held, but the shim has not written its pid yet
  return std::strtoll(buf, nullptr, 10);
}

Status TerminateShim(const ShimProcess& shim) {
  if (shim.pid <= 0 || !ProcessIsAlive(shim.pid, shim.start_ticks)) return Status::Ok();
  if (::kill(static_cast<pid_t>(shim.pid), SIGTERM) != 0 && errno != ESRCH) {
    return ErrnoError(errno, fmt::format("signal shim {}", shim.pid));
  }
  ::kill(static_cast<pid_t>(shim.pid), SIGCONT);
  return Status::Ok();
}

Status KillShim(const ShimProcess& shim) {
  if (shim.pid <= 0 || !ProcessIsAlive(shim.pid, shim.start_ticks)) return Status::Ok();
  if (::kill(static_cast<pid_t>(shim.pid), SIGKILL) != 0 && errno != ESRCH) {
    return ErrnoError(errno, fmt::format("kill shim {}", shim.pid));
  }
  return Status::Ok();
}

}  // namespace tau::exec
