#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace tau::exec {

// Tells when processes end. One thread waits on a pidfd per process with
// epoll; the processes need not be children of this one (a restarted
// daemon watches shims it did not start). Children are reaped.
class ProcessWatcher {
 public:
  // `on_exit(token)` runs on the watcher's thread, once per Watch call, after
  // the process is gone. It must not block for long (post to a queue).
  explicit ProcessWatcher(std::function<void(uint64_t token)> on_exit);
  ~ProcessWatcher();
  ProcessWatcher(const ProcessWatcher&) = delete;
  ProcessWatcher& operator=(const ProcessWatcher&) = delete;

  // Starts watching `pid`. A process that is already gone is reported right
  // away.
  Status Watch(uint64_t token, int64_t pid);

 private:
  void Run();

  std::function<void(uint64_t)> on_exit_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stop, or report already-gone processes
  std::mutex mu_;
  std::unordered_map<int, uint64_t> tokens_by_fd_;  // guarded by mu_
  std::vector<uint64_t> gone_;                       // guarded by mu_
  bool stopping_ = false;                            // guarded by mu_
  std::thread thread_;
};

}  // namespace tau::exec
