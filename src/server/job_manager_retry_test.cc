// Retries, backoff, resume and the checkpoint index, against a fake runner
// and a fake clock.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <nlohmann/json.hpp>

#include "server/job_manager_test_fixture.h"

namespace tau::server {
namespace {

using store::JobState;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kRetryJob[] =
    "name: r\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1}\n"
    "retry:\n  max_restarts: 2\n  on: [\"exit:3\"]\n  backoff: 10s\n  max_backoff: 1m\n";

class RetryTest : public JobManagerTest {
 protected:
  // Ends the newest started shim with `exit_code` (none: it left no status,
  // reason Lost).
  void EndLatest(JobManager& jobs, FakeExecutor& runner, const std::string& id, int attempt,
                 std::optional<int> exit_code) {
    if (exit_code) {
      exec::ExitStatus s;
      s.exit_code = *exit_code;
      runner.statuses[StatusPath(id, attempt)] = s;
    }
    jobs.OnShimExit(runner.TokenOf(runner.next_pid - 1));
  }
  static std::string Env(const AttemptStart& start, const std::string& name) {
    for (const std::string& e : start.env) {
      if (e.starts_with(name + "=")) return e.substr(name.size() + 1);
    }
    return "<unset>";
  }
  int64_t NowMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now().time_since_epoch()).count();
  }
  // Writes a checkpoint file `age_s` seconds old.
  void WriteCheckpoint(const std::string& id, const std::string& name, int age_s) {
    fs::path p = home().checkpoint_dir(id) / name;
    std::ofstream(p) << name;
    fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::seconds(age_s));
  }
};

TEST_F(RetryTest, AFailureNamedInRetryOnRetriesAfterADoublingBackoffUntilTheBudgetIsSpent) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  EXPECT_EQ(Env(runner.starts[0], "TAU_RETRY_REASON"), "<unset>");

  EndLatest(*jobs, runner, id, 1, 3);
  auto v = View(id);
  EXPECT_EQ(v->job.state, JobState::kRetrying);
  EXPECT_EQ(v->job.reason, "ExitCode");
  EXPECT_EQ(v->job.message, "exit code 3; attempt 2 in 10s (retry 1 of 2)");
  EXPECT_EQ(v->job.retry_at, NowMs() + 10'000);
  EXPECT_EQ(v->job.restarts, 1);
  EXPECT_FALSE(v->job.finished_at.has_value());

  clock_.Advance(std::chrono::seconds(9));
  jobs->WakeRetries();
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying) << "the backoff has not ended";
  clock_.Advance(std::chrono::seconds(1));
  jobs->WakeRetries();
  ASSERT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  EXPECT_EQ(Env(runner.starts[1], "TAU_ATTEMPT"), "2");
  EXPECT_EQ(Env(runner.starts[1], "TAU_RETRY_REASON"), "exit:3");
  EXPECT_EQ(View(id)->attempts[1].retry_reason, "exit:3");

  EndLatest(*jobs, runner, id, 2, 3);
  EXPECT_EQ(View(id)->job.retry_at, NowMs() + 20'000) << "the backoff doubles";
  clock_.Advance(std::chrono::seconds(20));
  jobs->WakeRetries();
  ASSERT_EQ(runner.starts.size(), 3u);

  EndLatest(*jobs, runner, id, 3, 3);
  v = View(id);
  EXPECT_EQ(v->job.state, JobState::kFailed);
  EXPECT_EQ(v->job.reason, "ExitCode");
  EXPECT_EQ(v->job.message, "exit code 3; not retried: the retry budget is spent (2 of retry.max_restarts 2 used)");
  EXPECT_TRUE(v->job.finished_at.has_value());
  EXPECT_EQ(v->attempts.size(), 3u);
}

TEST_F(RetryTest, AFailureNotNamedInRetryOnEndsTheJob) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  EndLatest(*jobs, runner, id, 1, 4);
  EXPECT_EQ(View(id)->job.state, JobState::kFailed);
  EXPECT_EQ(View(id)->job.message, "exit code 4; not retried: retry.on does not list exit:4");
  EXPECT_EQ(View(id)->job.restarts, 0);
}

TEST_F(RetryTest, InterruptionsAreRetriedWithoutARetryBlockUpToTheirOwnLimit) {
  tweak_ = [](JobManagerOptions& o) { o.max_interruptions = 1; };
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  runner.rebooted = true;  // the machine went away with the attempt: Lost
  EndLatest(*jobs, runner, id, 1, std::nullopt);
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.interruptions, 1);
  EXPECT_EQ(View(id)->job.restarts, 0);
  EXPECT_THAT(View(id)->job.message, HasSubstr("(interruption 1 of 1)"));
  clock_.Advance(std::chrono::seconds(10));
  jobs->WakeRetries();
  ASSERT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(Env(runner.starts[1], "TAU_RETRY_REASON"), "node_lost");
  EndLatest(*jobs, runner, id, 2, std::nullopt);
  EXPECT_EQ(View(id)->job.state, JobState::kFailed);
  EXPECT_EQ(View(id)->job.reason, "Lost");
  EXPECT_THAT(View(id)->job.message, HasSubstr("not retried: interrupted 2 times; the limit is 1"));
}

TEST_F(RetryTest, APreemptionRequeuesAtOnceAndIsNotChargedToTheBudget) {
  FakeExecutor runner;
  auto jobs = Manager(&runner, /*preemption=*/true);
  std::string low = (*jobs->Submit(Request("name: low\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 2}\n")))->job.id;
  std::string high =
      (*jobs->Submit(Request("name: high\npriority: high\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 2}\n")))->job.id;
  ASSERT_EQ(runner.stopped, std::vector<int64_t>{1000});
  // It saved a checkpoint on SIGTERM and exited 0: still a preemption.
  exec::ExitStatus saved;
  saved.exit_code = 0;
  runner.statuses[StatusPath(low, 1)] = saved;
  jobs->OnShimExit(runner.TokenOf(1000));
  EXPECT_EQ(View(low)->job.state, JobState::kQueued);
  EXPECT_EQ(View(low)->job.interruptions, 1);
  EXPECT_EQ(View(low)->job.restarts, 0);
  EXPECT_EQ(View(low)->job.retry_reason, "preempted");
  EXPECT_EQ(View(high)->job.state, JobState::kRunning);
  // When high ends, low's next attempt knows why it runs.
  exec::ExitStatus ok;
  ok.exit_code = 0;
  runner.statuses[StatusPath(high, 1)] = ok;
  jobs->OnShimExit(runner.TokenOf(1001));
  ASSERT_EQ(runner.starts.size(), 3u);
  EXPECT_EQ(Env(runner.starts[2], "TAU_RETRY_REASON"), "preempted");
  EXPECT_EQ(Env(runner.starts[2], "TAU_ATTEMPT"), "2");
}

TEST_F(RetryTest, ADaemonRestartKeepsTheBudgetAndTheBackoff) {
  std::vector<std::chrono::milliseconds> armed;
  tweak_ = [&armed](JobManagerOptions& o) {
    o.after = [&armed](std::chrono::milliseconds delay, std::function<void()>) { armed.push_back(delay); };
  };
  std::string id;
  int64_t retry_at = 0;
  {
    FakeExecutor first;
    auto jobs = Manager(&first);
    id = (*jobs->Submit(Request(kRetryJob)))->job.id;
    EndLatest(*jobs, first, id, 1, 3);
    retry_at = *View(id)->job.retry_at;
    ASSERT_EQ(armed, std::vector<std::chrono::milliseconds>{std::chrono::seconds(10)});
  }
  clock_.Advance(std::chrono::seconds(4));
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.retry_at, retry_at);
  EXPECT_EQ(View(id)->job.restarts, 1);
  EXPECT_EQ(armed.back(), std::chrono::seconds(6)) << "the rest of the backoff, not a new one";
  EXPECT_TRUE(runner.starts.empty());
  clock_.Advance(std::chrono::seconds(6));
  jobs->WakeRetries();
  ASSERT_EQ(runner.starts.size(), 1u);
  EXPECT_EQ(Env(runner.starts[0], "TAU_ATTEMPT"), "2");
  EndLatest(*jobs, runner, id, 2, 3);
  EXPECT_EQ(View(id)->job.restarts, 2) << "the budget spent before the restart still counts";
}

TEST_F(RetryTest, ARetriedJobThatRunsAgainShowsNoPendingReason) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  EndLatest(*jobs, runner, id, 1, 3);
  clock_.Advance(std::chrono::seconds(10));
  jobs->WakeRetries();
  ASSERT_EQ(View(id)->job.state, JobState::kRunning);
  EXPECT_EQ(View(id)->job.reason, "") << View(id)->job.message;
  EXPECT_EQ(View(id)->job.message, "");
  EXPECT_EQ(View(id)->attempts[0].reason, "ExitCode") << "the last attempt keeps why it ended";
  EXPECT_FALSE(View(id)->job.exit_code.has_value()) << "the running attempt has no exit code yet";
  EXPECT_EQ(View(id)->attempts[0].exit_code, 3) << "the last attempt keeps its exit code";
  auto why = jobs->WhyJson(id);
  ASSERT_TRUE(why.ok());
  auto j = nlohmann::json::parse(*why);
  EXPECT_EQ(j["state"], "Running");
  EXPECT_EQ(j["reason"], "");
  EXPECT_EQ(j["attempt"], 2);
  // Stored so: a restarted daemon shows the same.
  auto stored = store_->LoadJob(id);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->reason, "");
  EXPECT_FALSE((*stored)->exit_code.has_value());
}

TEST_F(RetryTest, TheProgressRateStartsAgainWithEachAttemptAndStopsWhileStalled) {
  FakeExecutor runner;
  tweak_ = [](JobManagerOptions& o) { o.progress_stall_after = std::chrono::minutes(1); };
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  const fs::path metrics = home().metrics_file(id);
  fs::create_directories(metrics.parent_path());
  std::ofstream(metrics, std::ios::app) << "{\"step\": 0, \"total_steps\": 100}\n";
  jobs->RefreshProgress();
  clock_.Advance(std::chrono::seconds(10));
  std::ofstream(metrics, std::ios::app) << "{\"step\": 30}\n";
  jobs->RefreshProgress();
  ASSERT_TRUE(View(id)->progress->steps_per_second.has_value());
  EXPECT_DOUBLE_EQ(*View(id)->progress->steps_per_second, 3.0);

  EndLatest(*jobs, runner, id, 1, 3);
  clock_.Advance(std::chrono::seconds(10));
  jobs->WakeRetries();
  ASSERT_EQ(View(id)->job.state, JobState::kRunning);
  EXPECT_FALSE(View(id)->progress->steps_per_second.has_value()) << "attempt 1's rate is not attempt 2's";
  EXPECT_FALSE(View(id)->progress->eta_seconds.has_value());
  std::ofstream(metrics, std::ios::app) << "{\"step\": 20}\n";  // resumed from a checkpoint
  jobs->RefreshProgress();
  clock_.Advance(std::chrono::seconds(10));
  std::ofstream(metrics, std::ios::app) << "{\"step\": 30}\n";
  jobs->RefreshProgress();
  ASSERT_TRUE(View(id)->progress->steps_per_second.has_value());
  EXPECT_DOUBLE_EQ(*View(id)->progress->steps_per_second, 1.0);
  EXPECT_DOUBLE_EQ(*View(id)->progress->eta_seconds, 70.0);

  clock_.Advance(std::chrono::minutes(2));  // no line since
  jobs->RefreshProgress();
  EXPECT_TRUE(View(id)->progress_stalled);
  EXPECT_FALSE(View(id)->progress->eta_seconds.has_value()) << "no ETA while stalled";
}

TEST_F(RetryTest, WithoutCgroupsASigkillWhileTheKernelsOomKillsRoseIsAnOomAndRetried) {
  FakeExecutor runner;
  int64_t oom_kills = 40;
  tweak_ = [&](JobManagerOptions& o) { o.oom_kill_count = [&] { return std::optional<int64_t>(oom_kills); }; };
  auto jobs = Manager(&runner);  // no cgroups: nothing reads memory.events
  std::string id = (*jobs->Submit(Request("name: r\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1, memory: 1Gi}\n"
                                          "retry: {max_restarts: 1, on: [oom], backoff: 1s}\n")))->job.id;
  ++oom_kills;  // the kernel OOM-killed something meanwhile
  exec::ExitStatus killed;
  killed.signal = SIGKILL;
  killed.max_rss_kb = 100 * 1024;
  runner.statuses[StatusPath(id, 1)] = killed;
  jobs->OnShimExit(runner.TokenOf(runner.next_pid - 1));
  auto v = View(id);
  EXPECT_EQ(v->job.state, JobState::kRetrying);
  EXPECT_EQ(v->job.reason, "OOMKilled");
  EXPECT_THAT(v->job.message, HasSubstr("the kernel's OOM kill count (/proc/vmstat oom_kill) rose from 40 to 41"));
  clock_.Advance(std::chrono::seconds(1));
  jobs->WakeRetries();
  ASSERT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(Env(runner.starts[1], "TAU_RETRY_REASON"), "oom");

  // A kill -9 while the count stays and far from its limit is a signal.
  runner.statuses[StatusPath(id, 2)] = killed;
  jobs->OnShimExit(runner.TokenOf(runner.next_pid - 1));
  EXPECT_EQ(View(id)->job.state, JobState::kFailed);
  EXPECT_EQ(View(id)->job.reason, "Signal");
}

TEST_F(RetryTest, ASignalNamedInRetryOnIsRetried) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request("name: r\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1}\n"
                                          "retry: {max_restarts: 1, on: [\"signal:KILL\"], backoff: 1s}\n")))->job.id;
  exec::ExitStatus killed;
  killed.signal = SIGKILL;
  runner.statuses[StatusPath(id, 1)] = killed;
  jobs->OnShimExit(runner.TokenOf(runner.next_pid - 1));
  EXPECT_EQ(View(id)->job.state, JobState::kRetrying);
  EXPECT_EQ(View(id)->job.reason, "Signal");
  clock_.Advance(std::chrono::seconds(1));
  jobs->WakeRetries();
  ASSERT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(Env(runner.starts[1], "TAU_RETRY_REASON"), "signal:KILL");

  exec::ExitStatus segv;
  segv.signal = SIGSEGV;
  runner.statuses[StatusPath(id, 2)] = segv;
  jobs->OnShimExit(runner.TokenOf(runner.next_pid - 1));
  EXPECT_EQ(View(id)->job.state, JobState::kFailed);
  EXPECT_THAT(View(id)->job.message, HasSubstr("not retried: retry.on does not list signal:SEGV"));
}

TEST_F(RetryTest, TheNextAttemptResumesFromTheNewestCompleteCheckpoint) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(std::string(kRetryJob) + "checkpoint: {keep: 1}\n")))->job.id;
  EXPECT_EQ(Env(runner.starts[0], "TAU_RESUME_FROM"), "<unset>");
  WriteCheckpoint(id, "step-1.pt", 30);
  WriteCheckpoint(id, "step-2.pt", 20);
  WriteCheckpoint(id, "step-3.pt.tmp", 10);  // killed mid-write
  EndLatest(*jobs, runner, id, 1, 3);
  // The index was rebuilt after the attempt and pruned to checkpoint.keep.
  EXPECT_THAT(View(id)->job.checkpoints, HasSubstr("\"name\":\"step-2.pt\""));
  EXPECT_THAT(View(id)->job.checkpoints, HasSubstr("sha256:"));
  EXPECT_FALSE(fs::exists(home().checkpoint_dir(id) / "step-1.pt"));
  EXPECT_TRUE(fs::exists(home().checkpoint_dir(id) / "step-3.pt.tmp")) << "incomplete ones are not touched";
  EXPECT_TRUE(HasEvent(id, "Checkpoint", "step-2.pt (9 B, sha256:"));
  EXPECT_TRUE(HasEvent(id, "CheckpointsPruned", "deleted step-1.pt"));

  clock_.Advance(std::chrono::seconds(10));
  jobs->WakeRetries();
  ASSERT_EQ(runner.starts.size(), 2u);
  const std::string expected = (home().checkpoint_dir(id) / "step-2.pt").string();
  EXPECT_EQ(Env(runner.starts[1], "TAU_RESUME_FROM"), expected);
  EXPECT_EQ(View(id)->attempts[1].resumed_from, expected);
}

TEST_F(RetryTest, CheckpointsFoundTogetherAreRecordedOldestFirstSoTheLastEventNamesTheNewest) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  WriteCheckpoint(id, "step-1000", 30);
  WriteCheckpoint(id, "step-1002.json", 10);
  WriteCheckpoint(id, "step-1001", 20);
  EndLatest(*jobs, runner, id, 1, 3);
  auto events = store_->LoadEvents(id, 0, 1000);
  ASSERT_TRUE(events.ok());
  std::vector<std::string> order;
  for (const auto& e : *events) {
    if (e.type == "Checkpoint") order.push_back(e.message.substr(0, e.message.find(' ')));
  }
  EXPECT_EQ(order, (std::vector<std::string>{"step-1000", "step-1001", "step-1002.json"}));
}

TEST_F(RetryTest, AStrayFileInTheCheckpointFolderIsNeverResumedFrom) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  WriteCheckpoint(id, "step-0025.json", 30);
  WriteCheckpoint(id, "pid", 5);  // written after the checkpoint: the newest file
  EndLatest(*jobs, runner, id, 1, 3);
  EXPECT_THAT(View(id)->job.checkpoints, Not(HasSubstr("\"name\":\"pid\"")));
  clock_.Advance(std::chrono::seconds(10));
  jobs->WakeRetries();
  ASSERT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(Env(runner.starts[1], "TAU_RESUME_FROM"), (home().checkpoint_dir(id) / "step-0025.json").string());
}

TEST_F(RetryTest, TheSpecsIncludeGlobsChooseWhatIsResumedFrom) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(std::string(kRetryJob) + "checkpoint: {include: [\"state-*.bin\"]}\n")))->job.id;
  WriteCheckpoint(id, "state-7.bin", 30);
  WriteCheckpoint(id, "step-9.pt", 5);  // a default name, but not one the spec includes
  EndLatest(*jobs, runner, id, 1, 3);
  clock_.Advance(std::chrono::seconds(10));
  jobs->WakeRetries();
  ASSERT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(Env(runner.starts[1], "TAU_RESUME_FROM"), (home().checkpoint_dir(id) / "state-7.bin").string());
  EXPECT_TRUE(fs::exists(home().checkpoint_dir(id) / "step-9.pt")) << "what is not a checkpoint is never pruned";
}

TEST_F(RetryTest, ResumeStartsAnEndedJobFromTheNamedCheckpoint) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kJob)))->job.id;
  auto running = jobs->Resume(id, "");
  ASSERT_FALSE(running.ok());
  EXPECT_EQ(running.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(running.error().message(), HasSubstr("is Running; tau resume starts a new attempt of a job that has ended"));

  WriteCheckpoint(id, "ckpt-a", 20);
  WriteCheckpoint(id, "ckpt-b", 10);
  EndLatest(*jobs, runner, id, 1, 1);
  ASSERT_EQ(View(id)->job.state, JobState::kFailed);
  auto missing = jobs->Resume(id, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message(),
            "job " + id + " has no complete checkpoint named \"nope\"; complete ones, newest first: ckpt-b, ckpt-a");

  auto resumed = jobs->Resume(id, "ckpt-a");
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  ASSERT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(View(id)->job.state, JobState::kRunning);
  EXPECT_FALSE(View(id)->job.finished_at.has_value());
  EXPECT_EQ(Env(runner.starts[1], "TAU_RESUME_FROM"), (home().checkpoint_dir(id) / "ckpt-a").string());
  EXPECT_EQ(Env(runner.starts[1], "TAU_RETRY_REASON"), "resume");
  EXPECT_EQ(Env(runner.starts[1], "TAU_ATTEMPT"), "2");
  EXPECT_TRUE(HasEvent(id, "Resumed", "resumed from checkpoint ckpt-a"));
  EXPECT_TRUE(HasEvent(id, "Admitted", "attempt 2, resuming from " + (home().checkpoint_dir(id) / "ckpt-a").string()));
}

TEST_F(RetryTest, CancellingAJobThatWaitsToRetryEndsIt) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request(kRetryJob)))->job.id;
  EndLatest(*jobs, runner, id, 1, 3);
  ASSERT_EQ(View(id)->job.state, JobState::kRetrying);
  ASSERT_TRUE(jobs->Cancel(id).ok());
  EXPECT_EQ(View(id)->job.state, JobState::kCancelled);
  EXPECT_EQ(View(id)->job.message, "cancelled while waiting to retry");
  clock_.Advance(std::chrono::minutes(5));
  jobs->WakeRetries();
  EXPECT_EQ(runner.starts.size(), 1u);
}

}  // namespace
}  // namespace tau::server
