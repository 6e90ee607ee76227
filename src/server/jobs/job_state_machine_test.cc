// The job state machine's table: every state's legal successors, and the
// state and reason each kind of attempt end leads to.

#include "server/jobs/job_state_machine.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

namespace tau::server {
namespace {

using store::JobState;

constexpr JobState kAll[] = {JobState::kQueued,    JobState::kAdmitted, JobState::kRunning,  JobState::kRetrying,
                             JobState::kSucceeded, JobState::kFailed,   JobState::kCancelled};

TEST(JobStateMachine, EveryStateHasExactlyTheSuccessorsOfDocsStates) {
  const std::vector<std::pair<JobState, std::set<JobState>>> table = {
      {JobState::kQueued, {JobState::kAdmitted, JobState::kFailed, JobState::kCancelled}},
      {JobState::kAdmitted,
       {JobState::kRunning, JobState::kQueued, JobState::kRetrying, JobState::kFailed, JobState::kCancelled}},
      {JobState::kRunning,
       {JobState::kSucceeded, JobState::kFailed, JobState::kCancelled, JobState::kQueued, JobState::kRetrying}},
      {JobState::kRetrying, {JobState::kQueued, JobState::kCancelled, JobState::kFailed}},
      {JobState::kSucceeded, {JobState::kQueued}},
      {JobState::kFailed, {JobState::kQueued}},
      {JobState::kCancelled, {JobState::kQueued}},
  };
  ASSERT_EQ(table.size(), std::size(kAll)) << "one row per state";
  for (const auto& [from, successors] : table) {
    for (JobState to : kAll) {
      EXPECT_EQ(IsLegalTransition(from, to), successors.count(to) > 0)
          << store::JobStateName(from) << " -> " << store::JobStateName(to);
    }
  }
}

exec::ExitStatus Exited(int code) {
  exec::ExitStatus s;
  s.exit_code = code;
  return s;
}

exec::ExitStatus Killed(int sig) {
  exec::ExitStatus s;
  s.signal = sig;
  return s;
}

AttemptEndFacts Ran(exec::ExitStatus status) {
  AttemptEndFacts f;
  f.status = std::move(status);
  f.was_running = true;
  f.memory_per_worker = "1Gi";
  f.max_runtime = "1h";
  return f;
}

struct Row {
  const char* name;
  AttemptEndFacts facts;
  JobState state;
  const char* reason;
  const char* message;
};

TEST(JobStateMachine, EachAttemptEndLeadsToItsStateAndReason) {
  std::vector<Row> rows;
  rows.push_back({"exit 0", Ran(Exited(0)), JobState::kSucceeded, "Completed", "exit code 0"});
  rows.push_back({"exit 3", Ran(Exited(3)), JobState::kFailed, "ExitCode", "exit code 3"});
  rows.push_back({"signal", Ran(Killed(9)), JobState::kFailed, "Signal", "killed by SIGKILL"});
  rows.push_back({"nothing recorded", Ran(exec::ExitStatus{}), JobState::kFailed, "Lost",
                  "no exit code or signal recorded"});
  {
    AttemptEndFacts f = Ran(Killed(9));
    f.oom_killed = true;
    rows.push_back({"oom", f, JobState::kFailed, "OOMKilled",
                    "the kernel's OOM killer stopped it at its memory limit (1Gi per worker)"});
  }
  {
    exec::ExitStatus s = Exited(1);
    s.error = "cannot exec ./run.sh";
    rows.push_back({"shim setup error", Ran(s), JobState::kFailed, "SetupFailed", "cannot exec ./run.sh"});
  }
  {
    AttemptEndFacts f = Ran(Exited(1));
    f.setup_failed = true;
    rows.push_back({"pip failed", f, JobState::kFailed, "SetupFailed",
                    "installing runtime.pip failed; pip's output is in the job's log"});
  }
  {
    exec::ExitStatus s = Killed(15);
    s.terminated_by = "deadline";
    rows.push_back({"deadline", Ran(s), JobState::kFailed, "DeadlineExceeded", "stopped after limits.max_runtime (1h)"});
  }
  {
    AttemptEndFacts f = Ran(Killed(15));
    f.cancel_requested = true;
    rows.push_back({"cancelled", f, JobState::kCancelled, "Cancelled", "cancelled while running"});
  }
  {
    AttemptEndFacts f = Ran(Exited(0));
    f.status = NotFoundError("its shim ended");
    rows.push_back({"lost", f, JobState::kFailed, "Lost", "its shim ended"});
    f.deadline_backstop = true;
    rows.push_back({"killed past its deadline", f, JobState::kFailed, "DeadlineExceeded",
                    "stopped after limits.max_runtime (1h): its tau-shim did not stop it, and was killed "
                    "(its shim ended)"});
    f.deadline_backstop = false;
    f.end_unknown = true;
    rows.push_back({"unknown", f, JobState::kFailed, "Unknown", "its shim ended"});
    f.cancel_requested = true;
    rows.push_back({"lost while cancelling", f, JobState::kCancelled, "Cancelled",
                    "cancelled while running (its shim ended)"});
  }
  {
    AttemptEndFacts f;
    f.status = PermissionDeniedError("cannot start tau-shim");
    rows.push_back({"start failed", f, JobState::kFailed, "SetupFailed", "cannot start tau-shim"});
    f.status = NotFoundError("no ray");
    rows.push_back({"never ran, nothing recorded", f, JobState::kFailed, "SetupFailed", "no ray"});
  }
  {
    AttemptEndFacts f = Ran(Exited(0));
    f.gpu_fault = "GpuFault";
    rows.push_back({"gpu fault", f, JobState::kFailed, "GpuFault", "a GPU under it failed"});
    f.gpu_fault_message = "GPU 0 turned Unhealthy";
    rows.push_back({"gpu fault with why", f, JobState::kFailed, "GpuFault", "GPU 0 turned Unhealthy"});
    f.preempted_by = "j_high";
    rows.push_back({"preempted beats gpu fault", f, JobState::kFailed, "Preempted", "preempted by j_high"});
    f.cancel_requested = true;
    rows.push_back({"cancel beats both", f, JobState::kCancelled, "Cancelled", "cancelled while running"});
  }
  {
    AttemptEndFacts f = Ran(Exited(0));
    f.preempted_by = "j_high";
    rows.push_back({"preempted, exit 0", f, JobState::kFailed, "Preempted", "preempted by j_high"});
  }
  for (const Row& row : rows) {
    AttemptEnd end = EndOfAttempt(row.facts);
    EXPECT_EQ(end.state, row.state) << row.name;
    EXPECT_EQ(end.reason, row.reason) << row.name;
    EXPECT_EQ(end.message, row.message) << row.name;
  }
}

TEST(JobStateMachine, AnAttemptIsRecordedWithTheOutcomeOfItsEnd) {
  EXPECT_EQ(AttemptStateOf(JobState::kSucceeded), store::AttemptState::kSucceeded);
  EXPECT_EQ(AttemptStateOf(JobState::kCancelled), store::AttemptState::kCancelled);
  for (JobState s : {JobState::kFailed, JobState::kQueued, JobState::kRetrying}) {
    EXPECT_EQ(AttemptStateOf(s), store::AttemptState::kFailed) << store::JobStateName(s);
  }
}

}  // namespace
}  // namespace tau::server
