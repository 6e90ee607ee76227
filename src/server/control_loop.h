#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>

namespace tau::server {

// The one thread that owns the control plane's mutable state. Other threads
// Post work to it (or Call and wait for the result); tasks run one at a
// time in the order posted, so domain code needs no locks.
class ControlLoop {
 public:
  ControlLoop();
  ~ControlLoop();  // runs what was posted, then stops
  ControlLoop(const ControlLoop&) = delete;
  ControlLoop& operator=(const ControlLoop&) = delete;

  void Post(std::function<void()> task);
  // Runs `task` on the loop once `delay` has passed (steady clock). Timers
  // still pending at Stop are dropped.
  void PostAfter(std::chrono::milliseconds delay, std::function<void()> task);

  // Runs `fn` on the loop and returns its result to the calling thread.
  // Must not be called from the loop itself.
  template <typename F>
  auto Call(F fn) -> std::invoke_result_t<F> {
    using R = std::invoke_result_t<F>;
    auto promise = std::make_shared<std::promise<R>>();
    auto future = promise->get_future();
    Post([promise, fn = std::move(fn)]() mutable {
      if constexpr (std::is_void_v<R>) {
        fn();
        promise->set_value();
      } else {
        promise->set_value(fn());
      }
    });
    return future.get();
  }

  // Stops after the tasks already posted; later posts are dropped.
  void Stop();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> timers_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::thread thread_;
};

}  // namespace tau::server
