#include "sched/requeue_backoff.h"

#include <fmt/format.h>

#include <algorithm>

namespace tau::sched {

std::optional<int64_t> RequeueDelayMs(const RequeuingStrategy& strategy, int64_t requeue_count) {
  if (strategy.backoff_limit_count && requeue_count > *strategy.backoff_limit_count) return std::nullopt;
  const int64_t max_seconds = std::max<int64_t>(0, strategy.backoff_max_seconds);
  int64_t seconds = std::max<int64_t>(0, strategy.backoff_base_seconds);
  // Doubling stops at the cap, so large counts cannot overflow.
  for (int64_t n = 1; n < requeue_count && seconds < max_seconds; ++n) seconds *= 2;
  return std::min(seconds, max_seconds) * 1000;
}

std::string BackoffMessage(int64_t remaining_ms) {
  return fmt::format("requeued after an eviction; may be admitted again in {}s",
                     (std::max<int64_t>(0, remaining_ms) + 999) / 1000);
}

}  // namespace tau::sched
