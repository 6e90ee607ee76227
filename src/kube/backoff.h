#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <random>

namespace tau::kube {

// Capped exponential backoff with jitter: the n-th Next() after a Reset()
// is min(max, initial * factor^(n-1)) stretched by a random factor in
// [1, 1 + jitter). Not thread-safe.
class Backoff {
 public:
  struct Options {
    std::chrono::milliseconds initial{500};
    std::chrono::milliseconds max{30'000};
    double factor = 2.0;
    double jitter = 0.2;
  };
  explicit Backoff(Options options, uint64_t seed = std::random_device{}());

  std::chrono::milliseconds Next();
  // Back to `initial` (after a success).
  void Reset() { attempt_ = 0; }
  int attempt() const { return attempt_; }

 private:
  Options options_;
  int attempt_ = 0;
  std::mt19937_64 rng_;
};

// Waits between retries; tests substitute one that returns at once and
// records what it was asked to wait.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  // Waits `d`, or less when Wake() is called (before or during the wait);
  // returns false when woken.
  virtual bool Sleep(std::chrono::milliseconds d) = 0;
  // Ends the current and every later Sleep() at once. Thread-safe.
  virtual void Wake() = 0;
};

// Sleeps on a condition variable (steady clock).
class RealSleeper final : public Sleeper {
 public:
  bool Sleep(std::chrono::milliseconds d) override;
  void Wake() override;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;
};

}  // namespace tau::kube
