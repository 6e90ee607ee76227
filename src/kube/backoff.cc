#include "kube/backoff.h"

#include <algorithm>

namespace tau::kube {

Backoff::Backoff(Options options, uint64_t seed) : options_(options), rng_(seed) {}

std::chrono::milliseconds Backoff::Next() {
  double base = static_cast<double>(options_.initial.count());
  double cap = static_cast<double>(options_.max.count());
  for (int i = 0; i < attempt_ && base < cap; ++i) {
    base *= options_.factor;
  }
  base = std::min(base, cap);
  ++attempt_;
  double stretch = 1.0;
  if (options_.jitter > 0) {
    stretch += options_.jitter * std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  }
  return std::chrono::milliseconds(static_cast<int64_t>(base * stretch));
}

bool RealSleeper::Sleep(std::chrono::milliseconds d) {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, d, [&] { return woken_; });
}

void RealSleeper::Wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

}  // namespace tau::kube
