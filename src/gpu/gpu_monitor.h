#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "gpu/gpu_source.h"

namespace tau::gpu {

// Reads a GpuSource on two threads of its own — one polls every GPU each
// interval, one waits for XID events continuously — and hands what it reads
// to callbacks (which post it to the control loop: the health state lives
// there, not here).
class GpuMonitor {
 public:
  struct Callbacks {
    std::function<void(int index, GpuSample sample)> on_sample;
    std::function<void(XidEvent event)> on_xid;
  };
  GpuMonitor(GpuSource* source, std::chrono::milliseconds poll_interval, Callbacks callbacks);
  ~GpuMonitor();  // stops and joins
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  void Start();
  void Stop();

 private:
  void PollLoop();
  void EventLoop();

  GpuSource* source_;
  std::chrono::milliseconds interval_;
  Callbacks callbacks_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::atomic<bool> stop_events_{false};
  std::thread poller_, waiter_;
};

}  // namespace tau::gpu
