#include "server/control_loop.h"

#include "common/log.h"

namespace tau::server {

ControlLoop::ControlLoop() : thread_([this] { Run(); }) {}

ControlLoop::~ControlLoop() { Stop(); }

namespace {

// The task, run under the trace of whoever posted it.
std::function<void()> Traced(std::function<void()> task) {
  if (log::CurrentTrace().empty()) return task;
  return [trace = log::CurrentTrace(), task = std::move(task)] {
    log::TraceScope scope(trace);
    task();
  };
}

}  // namespace

void ControlLoop::Post(std::function<void()> task) {
  task = Traced(std::move(task));
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ControlLoop::PostAfter(std::chrono::milliseconds delay, std::function<void()> task) {
  task = Traced(std::move(task));
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    timers_.emplace(std::chrono::steady_clock::now() + delay, std::move(task));
  }
  cv_.notify_one();
}

void ControlLoop::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void ControlLoop::Run() {
  while (true) {
    std::deque<std::function<void()>> batch;
    {
      std::unique_lock lock(mu_);
      while (!stopping_ && tasks_.empty()) {
        if (timers_.empty()) {
          cv_.wait(lock);
          continue;
        }
        auto due = timers_.begin()->first;
        if (std::chrono::steady_clock::now() >= due) break;
        cv_.wait_until(lock, due);
      }
      if (tasks_.empty() && stopping_) return;
      batch.swap(tasks_);
      auto now = std::chrono::steady_clock::now();
      while (!stopping_ && !timers_.empty() && timers_.begin()->first <= now) {
        batch.push_back(std::move(timers_.begin()->second));
        timers_.erase(timers_.begin());
      }
    }
    for (auto& task : batch) task();
  }
}

}  // namespace tau::server
