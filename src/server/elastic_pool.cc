#include "server/elastic_pool.h"

#include <pthread.h>

#include <memory>

#include "common/log.h"

namespace tau::server {

ElasticPool::ElasticPool(ElasticPoolOptions options) : options_(options) {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < options_.min_threads; ++i) StartThreadLocked();
}

ElasticPool::~ElasticPool() { Shutdown(); }

bool ElasticPool::StartThreadLocked() {
  if (threads_ >= options_.max_threads) return false;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, options_.stack_bytes);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  int rc = pthread_create(
      &thread, &attr,
      [](void* self) -> void* {
        static_cast<ElasticPool*>(self)->Worker();
        return nullptr;
      },
      this);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    // Out of threads or memory: the task waits for a running thread.
    log::Warn("api", "cannot start another API thread", {{"threads", std::to_string(threads_)}, {"errno", std::to_string(rc)}});
    return false;
  }
  ++threads_;
  if (threads_ > peak_) peak_ = threads_;
  return true;
}

void ElasticPool::Enqueue(std::function<void()> task) {
  std::lock_guard lock(mutex_);
  tasks_.push_back(std::move(task));
  // More tasks waiting than threads idle: one more thread.
  if (tasks_.size() > idle_) StartThreadLocked();
  work_.notify_one();
}

void ElasticPool::Worker() {
  std::unique_lock lock(mutex_);
  while (true) {
    if (tasks_.empty()) {
      if (shutdown_) break;
      ++idle_;
      bool woke = work_.wait_for(lock, options_.idle_exit, [&] { return !tasks_.empty() || shutdown_; });
      --idle_;
      if (!woke && threads_ > options_.min_threads) break;
      continue;
    }
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // destroyed before the pool may be
    lock.lock();
  }
  --threads_;
  exited_.notify_all();
}

void ElasticPool::Shutdown() {
  std::unique_lock lock(mutex_);
  shutdown_ = true;
  work_.notify_all();
  // No thread could be started for them: they run here.
  while (threads_ == 0 && !tasks_.empty()) {
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
  exited_.wait(lock, [&] { return threads_ == 0 && tasks_.empty(); });
}

size_t ElasticPool::threads() const {
  std::lock_guard lock(mutex_);
  return threads_;
}

size_t ElasticPool::peak_threads() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

size_t ElasticPool::queued() const {
  std::lock_guard lock(mutex_);
  return tasks_.size();
}

}  // namespace tau::server
