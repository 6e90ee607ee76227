#include "resume/retry_policy.h"

#include <fmt/format.h>

#include <algorithm>

namespace tau::resume {

bool IsInterruption(EndCause cause) {
  return cause == EndCause::kPreempted || cause == EndCause::kGpuFault || cause == EndCause::kNodeLost;
}

std::string ConditionName(EndCause cause, int code) {
  switch (cause) {
    case EndCause::kPreempted: return "preempted";
    case EndCause::kGpuFault: return "gpu_fault";
    case EndCause::kNodeLost: return "node_lost";
    case EndCause::kOom: return "oom";
    case EndCause::kExitCode: return fmt::format("exit:{}", code);
    case EndCause::kSignal: return spec::SignalCondition(code);
    case EndCause::kUnknown: return "unknown";
    case EndCause::kFinal: return "";
  }
  return "";
}

std::chrono::milliseconds RetryBackoff(const spec::RetrySpec& policy, int64_t n) {
  const auto base = std::chrono::duration_cast<std::chrono::milliseconds>(policy.backoff);
  const auto cap = std::chrono::duration_cast<std::chrono::milliseconds>(policy.max_backoff);
  auto delay = base;
  for (int64_t i = 1; i < n && delay < cap; ++i) delay *= 2;
  return std::min(delay, std::max(cap, base));
}

RetryDecision DecideRetry(const spec::RetrySpec& policy, EndCause cause, int code, const RetryBudget& budget,
                          int64_t max_interruptions, double jitter) {
  RetryDecision d;
  if (cause == EndCause::kFinal) return d;
  d.reason = ConditionName(cause, code);
  auto jittered = [&](int64_t n) {
    auto full = RetryBackoff(policy, n);
    jitter = std::clamp(jitter, 0.0, 1.0);
    return std::chrono::milliseconds(full.count() - static_cast<int64_t>(static_cast<double>(full.count()) * 0.25 * jitter));
  };
  if (IsInterruption(cause)) {
    if (budget.interruptions >= max_interruptions) {
      d.refusal = fmt::format("interrupted {} times; the limit is {} (taugridd --max-interruptions)",
                              budget.interruptions + 1, max_interruptions);
      return d;
    }
    d.retry = true;
    if (cause != EndCause::kPreempted) d.delay = jittered(budget.interruptions + 1);
    return d;
  }
  const bool named = std::any_of(policy.on.begin(), policy.on.end(), [&](const spec::RetryCondition& c) {
    return c.ToString() == d.reason;
  });
  if (!named) {
    d.refusal = policy.on.empty() ? "the spec has no retry.on" : fmt::format("retry.on does not list {}", d.reason);
    return d;
  }
  if (budget.restarts >= policy.max_restarts) {
    d.refusal = fmt::format("the retry budget is spent ({} of retry.max_restarts {} used)", budget.restarts,
                            policy.max_restarts);
    return d;
  }
  d.retry = true;
  d.charged = true;
  d.delay = jittered(budget.restarts + 1);
  return d;
}

}  // namespace tau::resume
