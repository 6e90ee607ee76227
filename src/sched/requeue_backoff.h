#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tau::sched {

// How long a workload put back in its queue after an eviction waits before
// it may be admitted again (Kueue's waitForPodsReady.requeuingStrategy,
// kueue-semantics §1.10).
struct RequeuingStrategy {
  int64_t backoff_base_seconds = 60;
  int64_t backoff_max_seconds = 3600;
  // Requeues allowed before the workload is deactivated; unset = no limit.
  std::optional<int64_t> backoff_limit_count;
};

// The delay before the `requeue_count`-th requeue (1-based) may be admitted:
// min(base * 2^(n-1), max) seconds, in milliseconds. nullopt when the count
// is past backoff_limit_count: the workload is to be deactivated instead.
// Deterministic: Kueue adds ~0.01% jitter, which a single machine does not
// need to spread API writes.
std::optional<int64_t> RequeueDelayMs(const RequeuingStrategy& strategy, int64_t requeue_count);

// The message of a workload waiting with reason Backoff, `remaining_ms`
// before it ends (rounded up to whole seconds).
std::string BackoffMessage(int64_t remaining_ms);

}  // namespace tau::sched
