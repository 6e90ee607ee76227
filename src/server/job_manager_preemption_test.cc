// The admission pass in the daemon when the engine preempts: victims are
// stopped, preemptors wait for them, and nothing admitted in a pass is
// also preempted in it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "server/job_manager_test_fixture.h"

namespace tau::server {
namespace {

using store::JobState;

class PreemptionPassTest : public JobManagerTest {
 protected:
  // ClusterQueue a holds the machine's 2 CPUs and preempts lower priorities
  // in it; b (nominal 0) borrows what a leaves idle. Admission passes run
  // only when RunDeferred() is called, so several submissions meet in one.
  void SetUp() override {
    JobManagerTest::SetUp();
    tweak_ = [this](JobManagerOptions& o) {
      sched::KueueConfig& k = o.kueue;
      sched::ClusterQueue a = k.cluster_queues.at(0);
      a.name = "a";
      a.cohort_name = "all";
      a.preemption.within_cluster_queue = "LowerPriority";
      sched::ClusterQueue b = a;
      b.name = "b";
      b.preemption = {};
      for (auto& r : b.resource_groups.at(0).flavors.at(0).resources) r.nominal_quota = Quantity::FromUnits(0);
      k.cluster_queues = {a, b};
      k.local_queues = {{"default", "a", "a", "None"}, {"default", "b", "b", "None"}};
      k.priority_classes = {{"high", 1000, ""}};
      o.defer = [this](std::function<void()> f) { deferred_.push_back(std::move(f)); };
    };
  }
  void RunDeferred() {
    while (!deferred_.empty()) {
      auto f = std::move(deferred_.front());
      deferred_.erase(deferred_.begin());
      f();
    }
  }
  std::vector<std::function<void()>> deferred_;
};

TEST_F(PreemptionPassTest, ABorrowerArrivingWithAPreemptorWaitsInsteadOfRunningMarkedPreempted) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  const std::string low = (*jobs->Submit(Request("name: low\nqueue: a\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1}\n")))->job.id;
  RunDeferred();
  ASSERT_EQ(runner.starts.size(), 1u);
  // Both arrive before the next pass: high needs a's two CPUs (low must
  // go); borrower would fit on a's idle one.
  const std::string high =
      (*jobs->Submit(Request("name: high\nqueue: a\npriority: high\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 2}\n")))
          ->job.id;
  const std::string borrower =
      (*jobs->Submit(Request("name: borrower\nqueue: b\nrun: {entrypoint: ./run.sh}\ncompute: {cpus: 1}\n")))->job.id;
  RunDeferred();
  EXPECT_EQ(runner.stopped, std::vector<int64_t>{1000}) << "low is preempted";
  EXPECT_EQ(runner.starts.size(), 1u) << "the CPU low frees is high's, so borrower does not start";
  EXPECT_EQ(View(borrower)->job.state, JobState::kQueued);
  EXPECT_EQ(View(borrower)->job.reason, "WaitingForQuota");
  EXPECT_EQ(View(high)->job.reason, "WaitingForPreemptedWorkloads");
  // low stops: high starts at once; borrower keeps waiting, never preempted.
  exec::ExitStatus terminated;
  terminated.signal = 15;
  runner.statuses[StatusPath(low, 1)] = terminated;
  jobs->OnShimExit(runner.TokenOf(1000));
  RunDeferred();
  ASSERT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(runner.starts[1].ref.job_id, high);
  EXPECT_EQ(View(high)->job.state, JobState::kRunning);
  EXPECT_EQ(View(borrower)->job.state, JobState::kQueued);
  auto events = store_->LoadEvents(borrower, 0, 100);
  ASSERT_TRUE(events.ok());
  for (const auto& e : *events) EXPECT_NE(e.type, "Preempted");
  EXPECT_EQ(runner.stopped.size(), 1u);
}

// A configuration applied before tau admin apply refused borrowWithinCohort
// with fair sharing stays loadable: the daemon starts and admits.
TEST_F(JobManagerTest, AStoredConfigurationThatIsNowRefusedStillLoads) {
  const std::vector<store::KueueObjectRecord> objects = {
      {"Configuration", "", "config",
       R"({"apiVersion":"config.kueue.x-k8s.io/v1beta1","kind":"Configuration","fairSharing":{"enable":true}})"},
      {"ResourceFlavor", "", "default",
       R"({"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ResourceFlavor","metadata":{"name":"default"}})"},
      {"ClusterQueue", "", "default",
       R"({"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ClusterQueue","metadata":{"name":"default"},"spec":{)"
       R"("namespaceSelector":{},"cohortName":"all","resourceGroups":[{"coveredResources":["cpu","memory"],)"
       R"("flavors":[{"name":"default","resources":[{"name":"cpu","nominalQuota":"2"},)"
       R"({"name":"memory","nominalQuota":"4Gi"}]}]}],"preemption":{"reclaimWithinCohort":"Any",)"
       R"("borrowWithinCohort":{"policy":"LowerPriority"}}}})"},
      {"LocalQueue", "default", "default",
       R"({"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue","metadata":{"namespace":"default",)"
       R"("name":"default"},"spec":{"clusterQueue":"default"}})"}};
  ASSERT_TRUE(store_->ReplaceKueueObjects(objects).ok());
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  EXPECT_TRUE(jobs->Submit(Request(kJob)).ok());
  EXPECT_EQ(runner.starts.size(), 1u);
  // Applying it again is refused, naming the ClusterQueue.
  auto applied = jobs->ApplyKueue(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: other}\nspec:\n"
      "  namespaceSelector: {}\n  cohortName: all\n  preemption: {borrowWithinCohort: {policy: LowerPriority}}\n",
      {});
  ASSERT_FALSE(applied.ok());
  EXPECT_THAT(applied.status().message(), ::testing::HasSubstr("ClusterQueue \"other\": preemption.borrowWithinCohort"));
}

// Kueue's next cycle, on the daemon's next loop turn: a preemptor whose
// victims include a workload the same pass admitted waits for one more
// pass, and the daemon runs that pass at once rather than at some later,
// unrelated event (the engine's own rule is in src/sched/preemption_test.cc).
TEST_F(PreemptionPassTest, APreemptorWaitingOnAWorkloadThePassAdmittedIsDecidedOnTheNextLoopTurn) {
  tweak_ = [this](JobManagerOptions& o) {
    o.capacity.cpus_milli = 60000;
    o.capacity.memory_bytes = int64_t{64} << 30;
    sched::KueueConfig k = DefaultKueueConfig(o.capacity);
    sched::ClusterQueue base = k.cluster_queues.at(0);
    base.cohort_name = "all";
    base.preemption.within_cluster_queue = "LowerPriority";
    base.preemption.reclaim_within_cohort = "Any";
    for (auto& r : base.resource_groups.at(0).flavors.at(0).resources) {
      if (r.name == "cpu") r.nominal_quota = Quantity::FromUnits(20);
      if (r.name == "memory") r.nominal_quota = Quantity::FromUnits(int64_t{16} << 30);
    }
    k.cluster_queues.clear();
    k.local_queues.clear();
    for (const char* name : {"a", "d", "p"}) {
      sched::ClusterQueue cq = base;
      cq.name = name;
      k.cluster_queues.push_back(cq);
      k.local_queues.push_back({"default", std::string("q") + name, name, "None"});
    }
    k.priority_classes = {{"p200", 200, ""}, {"p100", 100, ""}, {"p50", 50, ""}};
    o.kueue = k;
    o.defer = [this](std::function<void()> f) { deferred_.push_back(std::move(f)); };
  };
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  auto submit = [&](const std::string& name, const std::string& queue, const std::string& priority, int cpus) {
    return (*jobs->Submit(Request(fmt::format("name: {}\nqueue: {}\npriority: {}\nrun: {{entrypoint: ./run.sh}}\n"
                                              "compute: {{cpus: {}, memory: 1Gi}}\n",
                                              name, queue, priority, cpus))))
        ->job.id;
  };
  // a borrows 5 of the cohort's 60 CPUs.
  submit("a-large", "qa", "p200", 20);
  submit("a-medium", "qa", "p100", 5);
  RunDeferred();
  ASSERT_EQ(runner.starts.size(), 2u);
  // One pass: d-large goes first, p-large no longer fits, a-small borrows
  // one more CPU. p-large's reclaim takes a-small (admitted in that pass)
  // and a-medium, so it waits for the next pass, which the daemon runs on
  // its own.
  submit("d-large", "qd", "p200", 20);
  const std::string p_large = submit("p-large", "qp", "p200", 20);
  submit("a-small", "qa", "p50", 1);
  RunDeferred();
  EXPECT_EQ(runner.starts.size(), 4u) << "d-large and a-small started";
  EXPECT_EQ(runner.stopped.size(), 2u) << "a-small and a-medium are being preempted without another event";
  EXPECT_EQ(View(p_large)->job.reason, "WaitingForPreemptedWorkloads");
}

}  // namespace
}  // namespace tau::server
