#include "gpu/gpu_monitor.h"

#include "common/log.h"

namespace tau::gpu {

GpuMonitor::GpuMonitor(GpuSource* source, std::chrono::milliseconds poll_interval, Callbacks callbacks)
    : source_(source), interval_(poll_interval), callbacks_(std::move(callbacks)) {}

GpuMonitor::~GpuMonitor() { Stop(); }

void GpuMonitor::Start() {
  poller_ = std::thread([this] { PollLoop(); });
  waiter_ = std::thread([this] { EventLoop(); });
}

void GpuMonitor::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_events_ = true;
  cv_.notify_all();
  if (poller_.joinable()) poller_.join();
  if (waiter_.joinable()) waiter_.join();
}

void GpuMonitor::PollLoop() {
  const int count = static_cast<int>(source_->inventory().gpus.size());
  while (true) {
    for (int i = 0; i < count; ++i) callbacks_.on_sample(i, source_->Sample(i));
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, interval_, [&] { return stopping_; })) return;
  }
}

void GpuMonitor::EventLoop() {
  while (!stop_events_) {
    auto event = source_->WaitXid(std::chrono::milliseconds(500));
    if (!event.ok()) {
      log::Warn("gpu", "XID events are not available; faults are seen at the next poll only",
                {{"reason", event.status().message()}});
      return;
    }
    if (*event) callbacks_.on_xid(**event);
  }
}

}  // namespace tau::gpu
