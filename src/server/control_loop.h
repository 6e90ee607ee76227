#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>

#include "common/result.h"

namespace tau::server {

namespace internal {
template <typename T>
struct IsResult : std::false_type {};
template <typename T>
struct IsResult<Result<T>> : std::true_type {};
}  // namespace internal

// The one thread that owns the control plane's mutable state. Other threads
// Post work to it (or Call and wait for the result); tasks run one at a
// time in the order posted, so domain code needs no locks.
//
// A task that throws fails alone: the exception is logged (with the trace
// id of the request that posted the task) and the loop goes on with the
// next task. Call turns it into an Internal error when the task returns a
// Status or a Result, and rethrows it to the caller otherwise.
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
      try {
        if constexpr (std::is_void_v<R>) {
          fn();
          promise->set_value();
        } else {
          promise->set_value(fn());
        }
      } catch (...) {
        const std::string what = LogTaskException(std::current_exception());
        if constexpr (std::is_same_v<R, Status> || internal::IsResult<R>::value) {
          promise->set_value(R(InternalError(what)));
        } else {
          promise->set_exception(std::current_exception());
        }
      }
    });
    return future.get();
  }

  // Stops after the tasks already posted; later posts are dropped.
  void Stop();

  // True on the thread of a ControlLoop (any), while it runs a task.
  static bool OnLoopThread();

  // Logs an exception that escaped a task, with the current trace id, and
  // returns the message for the failed request.
  static std::string LogTaskException(std::exception_ptr error);

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
