#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "gpu/gpu_source.h"

namespace tau::gpu {

// Reads a GpuSource on two threads of its own — one polls every GPU each
// interval, one waits for XID events continuously — and hands what it reads
// to callbacks (which post it to the control loop: the health state lives
// there, not here).
//
// The event thread never gives up while the source has events at all: when
// the event set cannot be made or read, or a GPU cannot be registered in
// it, the GPUs concerned are reported unreadable and the thread registers
// them again after a backoff (doubling from `min_backoff` to
// `max_backoff`), reporting each GPU readable again once it is watched.
// How long the XID thread waits before registering again after an error.
struct XidBackoff {
  std::chrono::milliseconds min_backoff{1000};
  std::chrono::milliseconds max_backoff{60000};
};

class GpuMonitor {
 public:
  struct Callbacks {
    std::function<void(int index, GpuSample sample)> on_sample;
    std::function<void(XidEvent event)> on_xid;
    // A GPU's XID events cannot be read (`why`), or can again (nullopt).
    // Called on changes only; may be empty.
    std::function<void(int index, std::optional<std::string> why)> on_xid_unreadable;
  };
  GpuMonitor(GpuSource* source, std::chrono::milliseconds poll_interval, Callbacks callbacks,
             XidBackoff backoff = XidBackoff{});
  ~GpuMonitor();  // stops and joins
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  void Start();
  void Stop();

 private:
  void PollLoop();
  void EventLoop();
  // Reports the GPUs whose events cannot be read now (and those that
  // became readable) against what was reported before.
  void ReportUnreadable(std::map<int, std::string> now);
  // Sleeps up to `d`; false when stopping.
  bool SleepFor(std::chrono::milliseconds d);

  GpuSource* source_;
  std::chrono::milliseconds interval_;
  Callbacks callbacks_;
  XidBackoff backoff_;
  std::map<int, std::string> unreadable_;  // event thread only
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::atomic<bool> stop_events_{false};
  std::thread poller_, waiter_;
};

}  // namespace tau::gpu
