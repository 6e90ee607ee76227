#pragma once

// The job state machine (docs/states.md): which state changes are legal,
// and what state and reason an attempt's end leads to. Pure: it knows
// nothing of where jobs run, the store or the clock.

#include <optional>
#include <string>

#include "common/result.h"
#include "exec/exit_status.h"
#include "store/records.h"

namespace tau::server {

// Whether a job may go from `from` to `to` (docs/states.md). Terminal
// states change only by tau resume (to Queued).
bool IsLegalTransition(store::JobState from, store::JobState to);

// What is known when an attempt ends.
struct AttemptEndFacts {
  // How its ranks ended: an exit status, or the error that stands for one
  // (NotFound: it ended without a record of how; another: it never
  // started, with why).
  Result<exec::ExitStatus> status = NotFoundError("no status");
  bool was_running = false;      // the attempt was recorded as running
  bool end_unknown = false;      // ended without a record, and may still run or have run to its end
  bool deadline_backstop = false;  // killed, supervisor and all, after limits.max_runtime had passed
  bool cancel_requested = false;
  bool oom_killed = false;       // the OOM killer stopped a process of it
  std::string oom_evidence;      // without cgroups, what says so (else "": memory.events did)
  bool setup_failed = false;     // installing runtime.pip failed
  std::string memory_per_worker; // compute.memory, for the OOMKilled message
  std::string max_runtime;       // limits.max_runtime, formatted, for DeadlineExceeded
  std::string gpu_fault;         // GpuFault or GpuXid when a GPU under it failed; "" otherwise
  std::string gpu_fault_message;
  std::string preempted_by;      // who preempted it; "" when not
};

// The attempt's end before the retry policy: Succeeded, Cancelled or
// Failed with its reason. A Failed one may still be retried (Queued or
// Retrying; the retry policy decides, and a preemption is never charged
// to retry.max_restarts).
struct AttemptEnd {
  store::JobState state = store::JobState::kFailed;
  std::string reason;
  std::string message;
};
AttemptEnd EndOfAttempt(const AttemptEndFacts& facts);

// The attempt state an attempt's end is recorded with.
store::AttemptState AttemptStateOf(store::JobState end);

// A signal's name ("SIGKILL"), or "signal N".
std::string SignalName(int sig);

}  // namespace tau::server
