#pragma once

#include <chrono>
#include <mutex>

namespace tau {

// All time goes through a Clock so tests can run time forward instead of
// sleeping. Implementations are thread-safe.
class Clock {
 public:
  using WallTime = std::chrono::system_clock::time_point;
  using MonoTime = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;
  // Wall-clock time, for timestamps shown to people and stored.
  virtual WallTime Now() const = 0;
  // Monotonic time, for timeouts, backoff and rates.
  virtual MonoTime Monotonic() const = 0;
};

// The real clocks.
class SystemClock final : public Clock {
 public:
  WallTime Now() const override { return std::chrono::system_clock::now(); }
  MonoTime Monotonic() const override { return std::chrono::steady_clock::now(); }
  // A process-wide instance.
  static SystemClock* Get();
};

// A clock that only moves when told. Starts at a fixed wall time
// (2026-01-01T00:00:00Z) unless given another.
class FakeClock final : public Clock {
 public:
  FakeClock();
  explicit FakeClock(WallTime start);

  WallTime Now() const override;
  MonoTime Monotonic() const override;

  // Moves both clocks forward by `d` (d >= 0).
  void Advance(std::chrono::nanoseconds d);

 private:
  mutable std::mutex mu_;
  WallTime wall_;
  MonoTime mono_;
};

// RFC 3339 with millisecond precision in UTC: "2026-12-02T09:56:44.123Z".
std::string FormatRfc3339(Clock::WallTime t);

}  // namespace tau
