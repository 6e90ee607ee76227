#include "common/clock.h"

#include <fmt/format.h>

#include <ctime>
#include <string>

namespace tau {

SystemClock* SystemClock::Get() {
  static SystemClock clock;
  return &clock;
}

FakeClock::FakeClock() : FakeClock(WallTime(std::chrono::seconds(1767225600))) {}

FakeClock::FakeClock(WallTime start) : wall_(start), mono_(MonoTime(std::chrono::hours(1))) {}

Clock::WallTime FakeClock::Now() const {
  std::lock_guard lock(mu_);
  return wall_;
}

Clock::MonoTime FakeClock::Monotonic() const {
  std::lock_guard lock(mu_);
  return mono_;
}

void FakeClock::Advance(std::chrono::nanoseconds d) {
  std::lock_guard lock(mu_);
  wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
  mono_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
}

std::string FormatRfc3339(Clock::WallTime t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  int frac = static_cast<int>(ms % 1000);
  if (frac < 0) {
    frac += 1000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

}  // namespace tau
