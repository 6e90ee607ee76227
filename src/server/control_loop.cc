#include "server/control_loop.h"

#include <fmt/format.h>

#include <optional>

#include "common/log.h"

namespace tau::server {

namespace {

thread_local bool on_loop_thread = false;

// The task, run under the trace of whoever posted it; an exception it
// throws is logged under that trace and goes no further.
std::function<void()> Guarded(std::function<void()> task) {
  return [trace = log::CurrentTrace(), task = std::move(task)] {
    std::optional<log::TraceScope> scope;
    if (!trace.empty()) scope.emplace(trace);
    try {
      task();
    } catch (...) {
      ControlLoop::LogTaskException(std::current_exception());
    }
  };
}

}  // namespace

ControlLoop::ControlLoop() : thread_([this] { Run(); }) {}

ControlLoop::~ControlLoop() { Stop(); }

bool ControlLoop::OnLoopThread() { return on_loop_thread; }

std::string ControlLoop::LogTaskException(std::exception_ptr error) {
  std::string what = "an unknown exception";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  std::string message = fmt::format("the request failed on the control loop: {}", what);
  if (!log::CurrentTrace().empty()) message += fmt::format(" (trace {})", log::CurrentTrace());
  log::Error("loop", "a control-loop task threw; its request fails, the loop goes on", {{"error", what}});
  return message;
}

void ControlLoop::Post(std::function<void()> task) {
  task = Guarded(std::move(task));
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ControlLoop::PostAfter(std::chrono::milliseconds delay, std::function<void()> task) {
  task = Guarded(std::move(task));
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
  on_loop_thread = true;
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
