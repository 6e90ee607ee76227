#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "spec/job_spec.h"

namespace tau::resume {

// Why an attempt ended, as far as retrying is concerned.
enum class EndCause {
  kPreempted,  // the admission engine took its quota back
  kGpuFault,   // a GPU under it turned Unhealthy
  kNodeLost,   // the machine or its supervisor went away (reason Lost)
  kOom,        // the kernel's OOM killer (reason OOMKilled)
  kExitCode,   // a non-zero exit code
  kSignal,     // a signal TauGrid did not send killed it (reason Signal)
  kUnknown,    // the attempt's end was not recorded and nothing of it runs (reason Unknown)
  kFinal,      // anything else: success, cancel, setup failure, deadline
};

// Interruptions the user did not cause: retried without a retry block and
// never charged to retry.max_restarts.
bool IsInterruption(EndCause cause);

// The counters kept with the job; a daemon restart keeps them.
struct RetryBudget {
  int64_t restarts = 0;       // charged to retry.max_restarts
  int64_t interruptions = 0;  // preempted, gpu_fault, node_lost
};

struct RetryDecision {
  bool retry = false;
  bool charged = false;  // counts against max_restarts (else interruptions)
  std::chrono::milliseconds delay{0};
  // The TAU_RETRY_REASON of the next attempt: "preempted", "gpu_fault",
  // "node_lost", "oom", "unknown", "exit:CODE" or "signal:NAME".
  std::string reason;
  // Why not, when retry is false and the cause could have been retried.
  std::string refusal;
};

// The retry.on condition `cause` matches ("exit:3", "oom", "signal:KILL",
// ...); `code` is the exit code of kExitCode, the signal of kSignal.
std::string ConditionName(EndCause cause, int code);

// Decides what follows an attempt that ended with `cause`:
//   - interruptions are retried up to `max_interruptions` in all (0: none);
//     preemption at once (the job goes back to its queue), the others
//     after a backoff;
//   - oom, unknown, exit codes and signals only when retry.on names them, up to
//     retry.max_restarts in all;
//   - the backoff of the n-th retry of a kind is min(backoff·2^(n-1),
//     max_backoff), less a random 0–25 % (`jitter` in [0, 1)) so that jobs
//     failing together do not come back together.
RetryDecision DecideRetry(const spec::RetrySpec& policy, EndCause cause, int code, const RetryBudget& budget,
                          int64_t max_interruptions, double jitter);

// The backoff before the `n`-th retry (n >= 1), before jitter.
std::chrono::milliseconds RetryBackoff(const spec::RetrySpec& policy, int64_t n);

}  // namespace tau::resume
