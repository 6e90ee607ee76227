#include "server/jobs/job_state_machine.h"

#include <fmt/format.h>

#include <cstring>

namespace tau::server {

using store::JobState;

bool IsLegalTransition(JobState from, JobState to) {
  switch (from) {
    case JobState::kQueued:  // admitted; failed or cancelled while waiting
      return to == JobState::kAdmitted || to == JobState::kFailed || to == JobState::kCancelled;
    case JobState::kAdmitted:  // started; or its start failed, was undone or cancelled
      return to == JobState::kRunning || to == JobState::kQueued || to == JobState::kRetrying ||
             to == JobState::kFailed || to == JobState::kCancelled;
    case JobState::kRunning:  // the attempt ended
      return to == JobState::kSucceeded || to == JobState::kFailed || to == JobState::kCancelled ||
             to == JobState::kQueued || to == JobState::kRetrying;
    case JobState::kRetrying:  // the backoff ended, or it was cancelled
      return to == JobState::kQueued || to == JobState::kCancelled || to == JobState::kFailed;
    case JobState::kSucceeded:
    case JobState::kFailed:
    case JobState::kCancelled:
      return to == JobState::kQueued;  // tau resume
  }
  return false;
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", sig);
}

AttemptEnd EndOfAttempt(const AttemptEndFacts& f) {
  AttemptEnd end;
  if (!f.status.ok()) {
    end.message = f.status.error().message();
    if (f.status.error().code() == StatusCode::kNotFound && f.was_running) {
      // ShimLost's message says which of the two it is.
      end.reason = f.end_unknown ? "Unknown" : "Lost";
      if (f.deadline_backstop) {
        end.reason = "DeadlineExceeded";
        end.message = fmt::format(
            "stopped after limits.max_runtime ({}): its tau-shim did not stop it, and was killed ({})",
            f.max_runtime, end.message);
      }
      if (f.cancel_requested) {
        end.state = JobState::kCancelled;
        end.reason = "Cancelled";
        end.message = "cancelled while running (" + end.message + ")";
      }
    } else {
      end.reason = "SetupFailed";
    }
  } else {
    const exec::ExitStatus& s = *f.status;
    if (!s.error.empty()) {
      end.reason = "SetupFailed";
      end.message = s.error;
    } else if (f.oom_killed) {
      end.reason = "OOMKilled";
      end.message = f.oom_evidence.empty()
                        ? fmt::format("the kernel's OOM killer stopped it at its memory limit ({} per worker)",
                                      f.memory_per_worker)
                        : fmt::format("killed by SIGKILL, taken for the kernel's OOM killer without a cgroup to "
                                      "say so: {} ({} per worker)",
                                      f.oom_evidence, f.memory_per_worker);
    } else if (f.setup_failed) {
      end.reason = "SetupFailed";
      end.message = "installing runtime.pip failed; pip's output is in the job's log";
    } else if (s.terminated_by == "deadline") {
      end.reason = "DeadlineExceeded";
      end.message = fmt::format("stopped after limits.max_runtime ({})", f.max_runtime);
    } else if (f.cancel_requested) {
      end.state = JobState::kCancelled;
      end.reason = "Cancelled";
      end.message = "cancelled while running";
    } else if (s.exit_code == 0) {
      end.state = JobState::kSucceeded;
      end.reason = "Completed";
      end.message = "exit code 0";
    } else if (s.exit_code) {
      end.reason = "ExitCode";
      end.message = fmt::format("exit code {}", *s.exit_code);
    } else if (s.signal) {
      end.reason = "Signal";
      end.message = fmt::format("killed by {}", SignalName(*s.signal));
    } else {
      end.reason = "Lost";
      end.message = "no exit code or signal recorded";
    }
  }
  if (!f.gpu_fault.empty() && !f.cancel_requested && f.preempted_by.empty()) {
    end.state = JobState::kFailed;  // stopped because its GPU failed, whatever it exited with
    end.reason = f.gpu_fault;
    end.message = f.gpu_fault_message.empty() ? "a GPU under it failed" : f.gpu_fault_message;
  }
  if (!f.preempted_by.empty() && !f.cancel_requested) {
    end.state = JobState::kFailed;  // even if it exited 0 on SIGTERM: it stopped because asked to
    end.reason = "Preempted";
    end.message = fmt::format("preempted by {}", f.preempted_by);
  }
  return end;
}

store::AttemptState AttemptStateOf(JobState end) {
  return end == JobState::kSucceeded   ? store::AttemptState::kSucceeded
         : end == JobState::kCancelled ? store::AttemptState::kCancelled
                                       : store::AttemptState::kFailed;
}

}  // namespace tau::server
