#include "exec/process_watcher.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace tau::exec {

ProcessWatcher::ProcessWatcher(std::function<void(uint64_t)> on_exit) : on_exit_(std::move(on_exit)) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  thread_ = std::thread([this] { Run(); });
}

ProcessWatcher::~ProcessWatcher() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
  thread_.join();
  for (auto& [fd, token] : tokens_by_fd_) ::close(fd);
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

Status ProcessWatcher::Watch(uint64_t token, int64_t pid) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  std::lock_guard lock(mu_);
  if (fd < 0) {
    if (errno != ESRCH) return ErrnoError(errno, fmt::format("pidfd_open {}", pid));
    gone_.push_back(token);
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    return Status::Ok();
  }
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  tokens_by_fd_[fd] = token;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    int err = errno;
    tokens_by_fd_.erase(fd);
    ::close(fd);
    return ErrnoError(err, "epoll_ctl");
  }
  return Status::Ok();
}

void ProcessWatcher::Run() {
  epoll_event events[64];
  while (true) {
    int n = ::epoll_wait(epoll_fd_, events, 64, -1);
    if (n < 0 && errno == EINTR) continue;
    std::vector<uint64_t> exited;
    {
      std::lock_guard lock(mu_);
      for (int i = 0; i < n; ++i) {
        int fd = events[i].data.fd;
        if (fd == wake_fd_) {
          uint64_t count;
          (void)!::read(wake_fd_, &count, sizeof count);
          continue;
        }
        // Reap it when it is our child; ECHILD otherwise, which is fine.
        siginfo_t info{};
        ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(fd), &info, WEXITED | WNOHANG);
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
        ::close(fd);
        exited.push_back(tokens_by_fd_[fd]);
        tokens_by_fd_.erase(fd);
      }
      exited.insert(exited.end(), gone_.begin(), gone_.end());
      gone_.clear();
      if (stopping_) return;
    }
    for (uint64_t token : exited) on_exit_(token);
  }
}

}  // namespace tau::exec
