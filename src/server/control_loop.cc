#include "server/control_loop.h"

namespace tau::server {

ControlLoop::ControlLoop() : thread_([this] { Run(); }) {}

ControlLoop::~ControlLoop() { Stop(); }

void ControlLoop::Post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    tasks_.push_back(std::move(task));
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
      cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty() && stopping_) return;
      batch.swap(tasks_);
    }
    for (auto& task : batch) task();
  }
}

}  // namespace tau::server
