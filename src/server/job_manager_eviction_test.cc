// Jobs the admission engine evicts without a preemptor — a LocalQueue's
// stopPolicy — and the requeue backoff of evicted jobs (the Configuration's
// waitForPodsReady.requeuingStrategy), through the daemon's JobManager.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/job_manager_test_fixture.h"

namespace tau::server {
namespace {

using store::JobState;
using ::testing::HasSubstr;

// The default ClusterQueue (2 CPUs) and its LocalQueue with `stop_policy`.
std::string Queues(const std::string& stop_policy) {
  return "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}\n---\n"
         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: default}\nspec:\n"
         "  namespaceSelector: {}\n  preemption: {withinClusterQueue: LowerPriority}\n"
         "  resourceGroups:\n  - coveredResources: [cpu, memory]\n    flavors:\n    - name: default\n"
         "      resources:\n      - {name: cpu, nominalQuota: 2}\n      - {name: memory, nominalQuota: 4Gi}\n---\n"
         "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {namespace: default, name: default}\n"
         "spec: {clusterQueue: default, stopPolicy: " + stop_policy + "}\n";
}

int64_t NowMsOf(const Clock& clock) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now().time_since_epoch()).count();
}

constexpr char kOneCpu[] = "name: %s\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1}\n";

std::string OneCpu(const std::string& name) {
  std::string body = kOneCpu;
  body.replace(body.find("%s"), 2, name);
  return body;
}

TEST_F(JobManagerTest, ALocalQueueOnHoldAdmitsNothingAndHoldAndDrainRequeuesWhatRuns) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->ApplyKueue(Queues("None"), {}).ok());
  const std::string a = (*jobs->Submit(Request(OneCpu("a"))))->job.id;
  ASSERT_EQ(runner.starts.size(), 1u);

  ASSERT_TRUE(jobs->ApplyKueue(Queues("Hold"), {}).ok());
  const std::string b = (*jobs->Submit(Request(OneCpu("b"))))->job.id;
  EXPECT_EQ(runner.starts.size(), 1u) << "nothing of a LocalQueue on Hold is admitted";
  EXPECT_EQ(View(b)->job.state, JobState::kQueued);
  EXPECT_EQ(View(b)->job.reason, "LocalQueueStopped");
  EXPECT_THAT(View(b)->job.message, HasSubstr("LocalQueue default/default is inactive: it has stopPolicy Hold"));
  EXPECT_TRUE(runner.stopped.empty()) << "Hold keeps what runs";

  ASSERT_TRUE(jobs->ApplyKueue(Queues("HoldAndDrain"), {}).ok());
  ASSERT_EQ(runner.stopped, std::vector<int64_t>{1000}) << "HoldAndDrain stops what the LocalQueue runs";
  auto events = store_->LoadEvents(a, 0, 100);
  ASSERT_TRUE(events.ok());
  bool preempted = false;
  for (const auto& e : *events) {
    if (e.type == "Preempted") {
      preempted = true;
      EXPECT_THAT(e.message, HasSubstr("preempted by its LocalQueue's stopPolicy HoldAndDrain (LocalQueueStopped)"));
    }
  }
  EXPECT_TRUE(preempted);
  exec::ExitStatus terminated;
  terminated.signal = 15;
  runner.statuses[StatusPath(a, 1)] = terminated;
  jobs->OnShimExit(runner.TokenOf(1000));
  EXPECT_EQ(View(a)->job.state, JobState::kQueued) << "drained back to its queue";
  EXPECT_EQ(View(a)->job.reason, "LocalQueueStopped");
  EXPECT_EQ(runner.starts.size(), 1u);

  ASSERT_TRUE(jobs->ApplyKueue(Queues("None"), {}).ok());
  EXPECT_EQ(runner.starts.size(), 3u) << "both run again once the LocalQueue is not stopped";
  EXPECT_EQ(View(a)->job.state, JobState::kRunning);
  EXPECT_EQ(View(b)->job.state, JobState::kRunning);
}

class EvictionBackoffTest : public JobManagerTest {
 protected:
  void SetUp() override {
    JobManagerTest::SetUp();
    tweak_ = [this](JobManagerOptions& o) {
      o.kueue.requeuing_strategy = sched::RequeuingStrategy{};  // 60 s, doubling, at most 3600 s
      o.after = [this](std::chrono::milliseconds delay, std::function<void()> f) {
        timers_.push_back({delay, std::move(f)});
      };
    };
  }
  // Preempts `victim` (running as shim `pid`) with a new high-priority job
  // and lets it stop; returns the preemptor's id.
  std::string PreemptWithHigh(JobManager& jobs, FakeExecutor& runner, const std::string& victim, int attempt,
                              int64_t pid, const std::string& name) {
    const std::string high = (*jobs.Submit(
        Request("name: " + name + "\npriority: high\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 2}\n")))->job.id;
    EXPECT_EQ(runner.stopped.back(), pid);
    exec::ExitStatus terminated;
    terminated.signal = 15;
    runner.statuses[StatusPath(victim, attempt)] = terminated;
    jobs.OnShimExit(runner.TokenOf(pid));
    return high;
  }
  void End(JobManager& jobs, FakeExecutor& runner, const std::string& id, int attempt, int64_t pid) {
    exec::ExitStatus ok;
    ok.exit_code = 0;
    runner.statuses[StatusPath(id, attempt)] = ok;
    jobs.OnShimExit(runner.TokenOf(pid));
  }
  std::string WhyMessage(JobManager& jobs, const std::string& id) {
    auto why = jobs.WhyJson(id);
    EXPECT_TRUE(why.ok());
    return why.ok() ? nlohmann::json::parse(*why).value("message", "") : "";
  }
  std::vector<std::pair<std::chrono::milliseconds, std::function<void()>>> timers_;
};

TEST_F(EvictionBackoffTest, AnEvictedJobWaitsOutItsBackoffAndAWokenPassAdmitsIt) {
  FakeExecutor runner;
  auto jobs = Manager(&runner, /*preemption=*/true);
  const std::string low =
      (*jobs->Submit(Request("name: low\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 2}\n")))->job.id;
  const std::string high = PreemptWithHigh(*jobs, runner, low, 1, 1000, "high");
  EXPECT_EQ(View(low)->job.state, JobState::kQueued);
  ASSERT_TRUE(View(low)->job.retry_at.has_value());
  EXPECT_EQ(*View(low)->job.retry_at - NowMsOf(clock_), 60'000);

  // The preemptor ends: the quota is free, but low waits out its backoff.
  End(*jobs, runner, high, 1, 1001);
  EXPECT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(View(low)->job.state, JobState::kQueued);
  EXPECT_EQ(View(low)->job.reason, "Backoff");
  EXPECT_EQ(WhyMessage(*jobs, low), "requeued after an eviction; may be admitted again in 60s");
  clock_.Advance(std::chrono::seconds(20));
  EXPECT_EQ(WhyMessage(*jobs, low), "requeued after an eviction; may be admitted again in 40s") << "counted down";

  // A timer, not polling, wakes it when the backoff ends.
  ASSERT_FALSE(timers_.empty());
  EXPECT_EQ(timers_.back().first, std::chrono::seconds(60));
  clock_.Advance(std::chrono::seconds(40));
  timers_.back().second();
  ASSERT_EQ(runner.starts.size(), 3u);
  EXPECT_EQ(View(low)->job.state, JobState::kRunning);
  EXPECT_FALSE(View(low)->job.retry_at.has_value());

  // The second eviction doubles it.
  PreemptWithHigh(*jobs, runner, low, 2, 1002, "high2");
  ASSERT_TRUE(View(low)->job.retry_at.has_value());
  EXPECT_EQ(*View(low)->job.retry_at - NowMsOf(clock_), 120'000);
  auto events = store_->LoadEvents(low, 0, 100);
  ASSERT_TRUE(events.ok());
  ASSERT_FALSE(events->empty());
  EXPECT_EQ(events->back().type, "Requeued");
  EXPECT_THAT(events->back().message, HasSubstr("; requeue backoff 2m (eviction 2)"));
}

TEST_F(EvictionBackoffTest, TheBackoffSurvivesADaemonRestart) {
  std::string low;
  {
    FakeExecutor first;
    auto jobs = Manager(&first, /*preemption=*/true);
    low = (*jobs->Submit(Request("name: low\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 2}\n")))->job.id;
    PreemptWithHigh(*jobs, first, low, 1, 1000, "high");
  }
  clock_.Advance(std::chrono::seconds(10));
  FakeExecutor runner;
  auto jobs = Manager(&runner, /*preemption=*/true);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_EQ(View(low)->job.state, JobState::kQueued);
  EXPECT_EQ(View(low)->job.reason, "Backoff");
  for (const auto& s : runner.starts) EXPECT_NE(s.ref.job_id, low);
  EXPECT_EQ(WhyMessage(*jobs, low), "requeued after an eviction; may be admitted again in 50s");
}

TEST_F(EvictionBackoffTest, PastTheBackoffLimitCountAnEvictedJobEnds) {
  tweak_ = [](JobManagerOptions& o) {
    o.kueue.requeuing_strategy = sched::RequeuingStrategy{};
    o.kueue.requeuing_strategy->backoff_limit_count = 0;
  };
  FakeExecutor runner;
  auto jobs = Manager(&runner, /*preemption=*/true);
  const std::string low =
      (*jobs->Submit(Request("name: low\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 2}\n")))->job.id;
  PreemptWithHigh(*jobs, runner, low, 1, 1000, "high");
  EXPECT_EQ(View(low)->job.state, JobState::kFailed);
  EXPECT_EQ(View(low)->job.reason, "RequeuingLimitExceeded");
  EXPECT_THAT(View(low)->job.message, HasSubstr("not requeued: eviction 1 is past waitForPodsReady.requeuingStrategy."
                                                "backoffLimitCount (0)"));
}

}  // namespace
}  // namespace tau::server
