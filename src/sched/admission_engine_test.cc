// One scenario per rule of Kueue's admission the engine implements
// (kueue-semantics §1.2-1.5).

#include "sched/admission_engine.h"
#include "sched/test_builders.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tau::sched {
namespace {

using ::testing::HasSubstr;

ResourceQuota Q(const std::string& name, int64_t units, std::optional<int64_t> borrow = std::nullopt,
                std::optional<int64_t> lend = std::nullopt) {
  ResourceQuota q{name, Quantity::FromUnits(units), std::nullopt, std::nullopt};
  if (borrow) q.borrowing_limit = Quantity::FromUnits(*borrow);
  if (lend) q.lending_limit = Quantity::FromUnits(*lend);
  return q;
}

ClusterQueue CpuQueue(const std::string& name, ResourceQuota cpu, const std::string& cohort = "") {
  return testing::MakeCpuQueue(name, std::move(cpu), cohort);
}

Workload W(const std::string& id, int64_t cpus, const std::string& queue = "q", int64_t priority = 0) {
  return testing::MakeWorkload(id, queue, cpus, priority);
}

std::vector<std::string> Ids(const std::vector<Admission>& admitted) {
  std::vector<std::string> ids;
  for (const auto& a : admitted) ids.push_back(a.workload_id);
  return ids;
}

KueueConfig OneQueue(ClusterQueue cq) {
  KueueConfig c;
  c.resource_flavors = {{"default", {}, {}, {}}};
  c.local_queues = {{"default", "q", cq.name, "None"}};
  c.cluster_queues = {std::move(cq)};
  return c;
}

TEST(AdmissionEngineTest, BestEffortFifoLetsSmallerWorkloadsPastABlockedHead) {
  AdmissionEngine e;
  e.Configure(OneQueue(CpuQueue("cq", Q("cpu", 4))));
  ASSERT_TRUE(e.Submit(W("running", 3)).ok());
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"running"});
  ASSERT_TRUE(e.Submit(W("big", 2)).ok());
  ASSERT_TRUE(e.Submit(W("small", 1)).ok());
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"small"});
  auto why = e.Why("big");
  ASSERT_TRUE(why);
  EXPECT_EQ(why->reason, "WaitingForQuota");
  EXPECT_THAT(why->message, HasSubstr("2 cpu of flavor default requested, 1 available"));
  EXPECT_EQ(why->position, 1);
}

TEST(AdmissionEngineTest, AReasonNamesTheAmountsOfItsPassNotOfWhenItIsRead) {
  AdmissionEngine e;
  e.Configure(OneQueue(CpuQueue("cq", Q("cpu", 4))));
  ASSERT_TRUE(e.Submit(W("running", 3)).ok());
  (void)e.Schedule();
  ASSERT_TRUE(e.Submit(W("big", 2)).ok());
  ASSERT_TRUE(e.Submit(W("other", 2)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  e.Remove("running");  // no pass since: the reasons stay those of the last one
  for (const char* id : {"big", "other"}) {
    auto why = e.Why(id);
    ASSERT_TRUE(why) << id;
    EXPECT_EQ(why->message, "2 cpu of flavor default requested, 1 available") << id;
  }
  EXPECT_EQ(Ids(e.Schedule()), (std::vector<std::string>{"big", "other"}));
}

TEST(AdmissionEngineTest, APendingWorkloadRestoredAsAdmittedLeavesItsQueue) {
  AdmissionEngine e;
  e.Configure(OneQueue(CpuQueue("cq", Q("cpu", 4))));
  ASSERT_TRUE(e.Submit(W("x", 1)).ok());
  e.Restore(W("x", 1));
  EXPECT_TRUE(e.IsAdmitted("x"));
  EXPECT_FALSE(e.Why("x"));
  e.Remove("x");
  EXPECT_TRUE(e.Schedule().empty());  // nothing of "x" is left queued
  ASSERT_TRUE(e.Submit(W("y", 4)).ok());
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"y"});  // and its quota was released
}

TEST(AdmissionEngineTest, StrictFifoBlocksBehindTheHead) {
  ClusterQueue cq = CpuQueue("cq", Q("cpu", 4));
  cq.queueing_strategy = "StrictFIFO";
  AdmissionEngine e;
  e.Configure(OneQueue(cq));
  ASSERT_TRUE(e.Submit(W("running", 3)).ok());
  e.Schedule();
  ASSERT_TRUE(e.Submit(W("big", 2)).ok());
  ASSERT_TRUE(e.Submit(W("small", 1)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_EQ(e.Why("small")->reason, "WaitingForQuota");
  EXPECT_THAT(e.Why("small")->message, HasSubstr("behind big"));
  EXPECT_EQ(e.Why("small")->position, 2);
  e.Remove("running");  // finishing frees quota
  EXPECT_EQ(Ids(e.Schedule()), (std::vector<std::string>{"big", "small"}));
}

TEST(AdmissionEngineTest, WhyGivesThePlaceInTheQueueNowAndNothingForAWorkloadNoPassDecided) {
  ClusterQueue cq = CpuQueue("cq", Q("cpu", 4));
  cq.queueing_strategy = "StrictFIFO";
  AdmissionEngine e;
  e.Configure(OneQueue(cq));
  ASSERT_TRUE(e.Submit(W("running", 3)).ok());
  e.Schedule();
  ASSERT_TRUE(e.Submit(W("big", 2)).ok());
  ASSERT_TRUE(e.Submit(W("a", 1)).ok());
  ASSERT_TRUE(e.Submit(W("b", 1)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_EQ(e.Why("b")->position, 3);
  e.Remove("a");  // no pass yet: the place is counted now
  EXPECT_EQ(e.Why("b")->position, 2);
  EXPECT_THAT(e.Why("b")->message, HasSubstr("behind big"));
  ASSERT_TRUE(e.Submit(W("late", 1)).ok());
  EXPECT_FALSE(e.Why("late"));  // queued after the last pass that decided its queue
  EXPECT_TRUE(e.Schedule().empty());
  ASSERT_TRUE(e.Why("late"));
  EXPECT_EQ(e.Why("late")->position, 3);
}

TEST(AdmissionEngineTest, ASubmitAPassWouldOnlyParkIsDecidedWithoutOne) {
  AdmissionEngine e;
  e.Configure(OneQueue(CpuQueue("cq", Q("cpu", 4))));
  ASSERT_TRUE(e.Submit(W("running", 3)).ok());
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"running"});
  EXPECT_TRUE(e.Schedule().empty());  // after a pass that admitted, its tree is decided again
  ASSERT_TRUE(e.Submit(W("big", 2)).ok());  // cannot fit, nothing to preempt
  ASSERT_TRUE(e.Why("big"));
  EXPECT_EQ(e.Why("big")->reason, "WaitingForQuota");
  EXPECT_THAT(e.Why("big")->message, HasSubstr("2 cpu of flavor default requested, 1 available"));
  ASSERT_TRUE(e.Submit(W("small", 1)).ok());  // fits: only a pass decides it
  EXPECT_FALSE(e.Why("small"));
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"small"});
}

TEST(AdmissionEngineTest, ASubmitBehindABlockedStrictFifoHeadIsDecidedWithoutAPass) {
  ClusterQueue cq = CpuQueue("cq", Q("cpu", 4));
  cq.queueing_strategy = "StrictFIFO";
  AdmissionEngine e;
  e.Configure(OneQueue(cq));
  ASSERT_TRUE(e.Submit(W("running", 3)).ok());
  e.Schedule();
  ASSERT_TRUE(e.Submit(W("big", 2)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  ASSERT_TRUE(e.Submit(W("small", 1)).ok());  // would fit, but the head blocks
  ASSERT_TRUE(e.Why("small"));
  EXPECT_THAT(e.Why("small")->message, HasSubstr("behind big"));
  EXPECT_EQ(e.Why("small")->position, 2);
  ASSERT_TRUE(e.Submit(W("urgent", 1, "q", 10)).ok());  // ahead of the head: a pass decides it
  EXPECT_FALSE(e.Why("urgent"));
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"urgent"});
}

TEST(AdmissionEngineTest, HigherPriorityGoesFirst) {
  AdmissionEngine e;
  e.Configure(OneQueue(CpuQueue("cq", Q("cpu", 2))));
  ASSERT_TRUE(e.Submit(W("low", 2, "q", 0)).ok());
  ASSERT_TRUE(e.Submit(W("high", 2, "q", 100)).ok());
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"high"});
  EXPECT_EQ(e.Why("low")->position, 1);
}

KueueConfig TwoInACohort(ResourceQuota a, ResourceQuota b) {
  KueueConfig c;
  c.resource_flavors = {{"default", {}, {}, {}}};
  c.cluster_queues = {CpuQueue("a", a, "research"), CpuQueue("b", b, "research")};
  c.local_queues = {{"default", "qa", "a", "None"}, {"default", "qb", "b", "None"}};
  return c;
}

TEST(AdmissionEngineTest, BorrowingWithinACohortAndItsLimits) {
  AdmissionEngine e;
  e.Configure(TwoInACohort(Q("cpu", 2), Q("cpu", 2)));
  ASSERT_TRUE(e.Submit(W("a1", 3, "qa")).ok());
  auto admitted = e.Schedule();
  ASSERT_EQ(admitted.size(), 1u);
  EXPECT_EQ(admitted[0].borrowing_level, 1);

  AdmissionEngine limited;
  limited.Configure(TwoInACohort(Q("cpu", 2, /*borrow=*/0), Q("cpu", 2)));
  auto refused = limited.Submit(W("a1", 3, "qa"));
  EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("ExceedsMaxQuota: 3 cpu requested, at most 2 of flavor default"));
}

TEST(AdmissionEngineTest, ALendingLimitKeepsQuotaForItsOwner) {
  AdmissionEngine e;
  e.Configure(TwoInACohort(Q("cpu", 2), Q("cpu", 2, std::nullopt, /*lend=*/0)));
  EXPECT_EQ(e.Submit(W("a1", 3, "qa")).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(e.Submit(W("a2", 2, "qa")).ok());
  ASSERT_TRUE(e.Submit(W("b1", 2, "qb")).ok());
  EXPECT_EQ(e.Schedule().size(), 2u);
}

TEST(AdmissionEngineTest, NonBorrowingWorkloadsGoBeforeBorrowingOnes) {
  AdmissionEngine e;
  e.Configure(TwoInACohort(Q("cpu", 2), Q("cpu", 2)));
  ASSERT_TRUE(e.Submit(W("a-borrows", 3, "qa", 100)).ok());  // higher priority, but borrows
  ASSERT_TRUE(e.Submit(W("b-own", 2, "qb")).ok());
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"b-own"});
  EXPECT_EQ(e.Why("a-borrows")->reason, "WaitingForQuota");
}

KueueConfig GpuFlavors(const std::string& when_can_borrow) {
  KueueConfig c;
  c.resource_flavors = {{"h200", {{"taugrid.io/gpu-class", "h200-141gb"}}, {}, {}},
                        {"a100", {{"taugrid.io/gpu-class", "a100-80gb"}}, {}, {}}};
  ClusterQueue cq;
  cq.name = "gpus";
  cq.cohort_name = "shared";
  cq.namespace_selector = LabelSelector{};
  cq.flavor_fungibility.when_can_borrow = when_can_borrow;
  cq.resource_groups = {{{"nvidia.com/gpu"}, {{"h200", {Q("nvidia.com/gpu", 1)}}, {"a100", {Q("nvidia.com/gpu", 2)}}}}};
  ClusterQueue lender;
  lender.name = "lender";
  lender.cohort_name = "shared";
  lender.namespace_selector = LabelSelector{};
  lender.resource_groups = {{{"nvidia.com/gpu"}, {{"h200", {Q("nvidia.com/gpu", 4)}}}}};
  c.cluster_queues = {cq, lender};
  c.local_queues = {{"default", "q", "gpus", "None"}};
  return c;
}

Workload Gpus(const std::string& id, int64_t gpus, const std::string& gpu_class = "") {
  Workload w = W(id, 0);
  w.per_pod = {{"nvidia.com/gpu", gpus * 1000}};
  if (!gpu_class.empty()) w.node_selector = {{"taugrid.io/gpu-class", gpu_class}};
  return w;
}

TEST(AdmissionEngineTest, FlavorFungibilityChoosesBetweenBorrowingAndTheNextFlavor) {
  // MayStopSearch: the first flavor that fits, even by borrowing.
  AdmissionEngine stop;
  stop.Configure(GpuFlavors("MayStopSearch"));
  ASSERT_TRUE(stop.Submit(Gpus("w", 2)).ok());
  auto a = stop.Schedule();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].flavors.at("nvidia.com/gpu"), "h200");
  EXPECT_EQ(a[0].borrowing_level, 1);
  // TryNextFlavor: a later flavor that fits without borrowing wins.
  AdmissionEngine next;
  next.Configure(GpuFlavors("TryNextFlavor"));
  ASSERT_TRUE(next.Submit(Gpus("w", 2)).ok());
  auto b = next.Schedule();
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].flavors.at("nvidia.com/gpu"), "a100");
  EXPECT_EQ(b[0].borrowing_level, 0);
}

TEST(AdmissionEngineTest, NodeLabelsSelectFlavorsAndNothingMatchingIsRefused) {
  AdmissionEngine e;
  e.Configure(GpuFlavors("TryNextFlavor"));
  ASSERT_TRUE(e.Submit(Gpus("h", 1, "h200-141gb")).ok());
  auto a = e.Schedule();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].flavors.at("nvidia.com/gpu"), "h200");
  Status st = e.Submit(Gpus("x", 1, "b200-192gb"));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("NoMatchingFlavor: flavor h200 has taugrid.io/gpu-class=h200-141gb, the job selects b200-192gb"));
}

TEST(AdmissionEngineTest, TaintsNeedTolerations) {
  KueueConfig c = GpuFlavors("TryNextFlavor");
  c.resource_flavors[0].node_taints = {{"nvidia.com/gpu", "true", "NoSchedule"}};
  c.resource_flavors[1].node_taints = {{"nvidia.com/gpu", "true", "NoSchedule"}};
  AdmissionEngine e;
  e.Configure(c);
  EXPECT_THAT(e.Submit(Gpus("intolerant", 1)).message(), HasSubstr("taint nvidia.com/gpu"));
  Workload w = Gpus("tolerant", 1);
  w.tolerations = {{"nvidia.com/gpu", "Exists", "", "NoSchedule"}};
  EXPECT_TRUE(e.Submit(w).ok());
}

// Kueue's flavor assigner: NoSchedule and NoExecute taints must be
// tolerated by the pods' tolerations or the flavor's own; PreferNoSchedule
// never blocks.
TEST(AdmissionEngineTest, FlavorTaintsAreMatchedWithThePodsAndTheFlavorsTolerations) {
  const Toleration gpu_pod = {"nvidia.com/gpu", "Exists", "", "NoSchedule"};  // what a GPU job's pods carry
  KueueConfig c = GpuFlavors("TryNextFlavor");
  c.resource_flavors[0].node_taints = {{"nvidia.com/gpu", "", "NoExecute"}};
  c.resource_flavors[1].node_taints = {{"pool", "spot", "PreferNoSchedule"}, {"nvidia.com/gpu", "true", "NoSchedule"}};
  AdmissionEngine e;
  e.Configure(c);
  Workload w = Gpus("w", 1);
  w.tolerations = {gpu_pod};
  ASSERT_TRUE(e.Submit(w).ok());
  auto a = e.Schedule();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].flavors.at("nvidia.com/gpu"), "a100") << "a NoSchedule toleration does not tolerate NoExecute";
  e.Remove("w");

  // The flavor's own toleration of its NoExecute taint makes it usable.
  c.resource_flavors[0].tolerations = {{"nvidia.com/gpu", "Exists", "", "NoExecute"}};
  e.Configure(c);
  ASSERT_TRUE(e.Submit(w).ok());
  a = e.Schedule();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].flavors.at("nvidia.com/gpu"), "h200");
  e.Remove("w");

  // Without tolerations neither flavor can be used; the refusal names the taint.
  Workload bare = Gpus("bare", 1);
  c.resource_flavors[0].tolerations.clear();
  e.Configure(c);
  EXPECT_THAT(e.Submit(bare).message(), HasSubstr("flavor h200 has taint nvidia.com/gpu:NoExecute"));
}

// Kueue has no rule that resumes an evicted workload on the flavor it last
// ran on: its flavor assigner keeps a scan position (LastTriedFlavorIdx)
// only for a workload still pending, and an eviction drops it. Requeued
// after a preemption, a workload gets the first flavor that suits it now.
TEST(AdmissionEngineTest, AnEvictedWorkloadAdmittedAgainTakesTheFirstFlavorThatFitsNotItsLastOne) {
  ClusterQueue cq = CpuQueue("cq", Q("cpu", 2));
  cq.resource_groups[0].flavors.push_back({"spare", {Q("cpu", 2)}});
  KueueConfig c = OneQueue(cq);
  c.resource_flavors.push_back({"spare", {}, {}, {}});
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("first", 2)).ok());
  ASSERT_TRUE(e.Submit(W("w", 2)).ok());
  auto a = e.Schedule();
  ASSERT_EQ(Ids(a), (std::vector<std::string>{"first", "w"}));
  EXPECT_EQ(a[1].flavors.at("cpu"), "spare") << "w runs on the second flavor";
  // w is evicted and requeued, as the daemon does once it has stopped;
  // then "first" ends and frees the first flavor.
  e.Remove("w");
  ASSERT_TRUE(e.Submit(W("w", 2)).ok());
  e.Remove("first");
  a = e.Schedule();
  ASSERT_EQ(Ids(a), std::vector<std::string>{"w"});
  EXPECT_EQ(a[0].flavors.at("cpu"), "default") << "the first flavor that fits, not the one it last ran on";
}

TEST(AdmissionEngineTest, QueuesAndClusterQueuesThatDoNotWork) {
  KueueConfig c = OneQueue(CpuQueue("cq", Q("cpu", 4)));
  AdmissionEngine e;
  e.Configure(c);
  EXPECT_THAT(e.Submit(W("nowhere", 1, "missing")).message(), HasSubstr("LocalQueueNotFound"));
  c.cluster_queues[0].resource_groups[0].flavors[0].name = "gone";
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("w", 1)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_EQ(e.Why("w")->reason, "ClusterQueueInactive");
  EXPECT_THAT(e.Why("w")->message, HasSubstr("ResourceFlavor \"gone\" does not exist"));
}

TEST(AdmissionEngineTest, ANamespaceSelectorDecidesWhichWorkspacesMayUseAQueue) {
  ClusterQueue cq = CpuQueue("cq", Q("cpu", 4));
  cq.namespace_selector = LabelSelector{{{kWorkspaceNameLabel, "team-a"}}, {}};
  KueueConfig c = OneQueue(cq);
  c.local_queues = {{"team-a", "q", "cq", "None"}, {"team-b", "q", "cq", "None"}};
  AdmissionEngine e;
  e.Configure(c);
  Workload a = W("a", 1);
  a.namespace_ = "team-a";
  Workload b = W("b", 1);
  b.namespace_ = "team-b";
  EXPECT_TRUE(e.Submit(a).ok());
  Status refused = e.Submit(b);
  EXPECT_FALSE(refused.ok());
  EXPECT_THAT(refused.message(), HasSubstr("does not select workspace \"team-b\""));
  cq.namespace_selector.reset();  // absent: no workspace, as in Kueue
  c.cluster_queues = {cq};
  AdmissionEngine none;
  none.Configure(c);
  Status not_selected = none.CheckFeasible(a);
  EXPECT_FALSE(not_selected.ok());
  EXPECT_THAT(not_selected.message(), HasSubstr("does not select workspace \"team-a\""));
}

TEST(AdmissionEngineTest, AHeldWorkloadKeepsItsPlaceButIsNotAdmitted) {
  AdmissionEngine e;
  e.Configure(OneQueue(CpuQueue("cq", Q("cpu", 4))));
  ASSERT_TRUE(e.Submit(W("held", 1)).ok());
  ASSERT_TRUE(e.Submit(W("next", 1)).ok());
  e.SetHeld("held", true);
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"next"});
  EXPECT_EQ(e.Why("held")->reason, "Held");
  EXPECT_EQ(e.Why("held")->position, 1);
  e.SetHeld("held", false);
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"held"});
}

TEST(AdmissionEngineTest, ABackingOffWorkloadWaitsWithoutBlockingAStrictFifoQueue) {
  AdmissionEngine e;
  ClusterQueue cq = CpuQueue("cq", Q("cpu", 4));
  cq.queueing_strategy = "StrictFIFO";
  e.Configure(OneQueue(cq));
  e.SetNow(1'000);
  ASSERT_TRUE(e.Submit(W("requeued", 1)).ok());
  ASSERT_TRUE(e.Submit(W("next", 1)).ok());
  e.SetBackoff("requeued", 61'000);
  EXPECT_EQ(e.NextBackoffEnd(), 61'000);
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"next"});
  EXPECT_EQ(e.Why("requeued")->reason, "Backoff");
  EXPECT_THAT(e.Why("requeued")->message, HasSubstr("in 60s"));
  EXPECT_EQ(e.Why("requeued")->position, 1);
  e.SetNow(60'999);
  EXPECT_TRUE(e.Schedule().empty());
  e.SetNow(61'000);
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"requeued"});
  EXPECT_EQ(e.NextBackoffEnd(), std::nullopt);
}

TEST(AdmissionEngineTest, ABackoffThatHasAlreadyEndedIsIgnored) {
  AdmissionEngine e;
  e.Configure(OneQueue(CpuQueue("cq", Q("cpu", 4))));
  e.SetNow(5'000);
  ASSERT_TRUE(e.Submit(W("requeued", 1)).ok());
  e.SetBackoff("requeued", 5'000);
  EXPECT_EQ(e.NextBackoffEnd(), std::nullopt);
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"requeued"});
}

TEST(AdmissionEngineTest, ReconfiguringKeepsTheUsageOfAdmittedWorkloads) {
  KueueConfig c = OneQueue(CpuQueue("cq", Q("cpu", 4)));
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("a", 3)).ok());
  e.Schedule();
  c.cluster_queues[0].resource_groups[0].flavors[0].resources[0].nominal_quota = Quantity::FromUnits(5);
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("b", 2)).ok());
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"b"});
  ASSERT_TRUE(e.Submit(W("c", 1)).ok());
  EXPECT_TRUE(e.Schedule().empty());
}

}  // namespace
}  // namespace tau::sched

namespace tau::sched {
namespace {

std::vector<std::string> Victims(const std::vector<Eviction>& evictions) {
  std::vector<std::string> ids;
  for (const auto& e : evictions) ids.push_back(e.victim_id);
  return ids;
}

TEST(PreemptionTest, HigherPriorityPreemptsTheNewestLowerPriorityWorkloadOnly) {
  ClusterQueue cq = CpuQueue("cq", Q("cpu", 2));
  cq.preemption.within_cluster_queue = "LowerPriority";
  AdmissionEngine e;
  e.Configure(OneQueue(cq));
  ASSERT_TRUE(e.Submit(W("low1", 1)).ok());
  ASSERT_TRUE(e.Submit(W("low2", 1)).ok());
  EXPECT_EQ(e.Schedule().size(), 2u);
  ASSERT_TRUE(e.Submit(W("high", 1, "q", 100)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  auto evictions = e.TakeEvictions();
  EXPECT_EQ(Victims(evictions), std::vector<std::string>{"low2"});  // minimized: one is enough
  EXPECT_EQ(evictions[0].preemptor_id, "high");
  EXPECT_EQ(evictions[0].reason, "InClusterQueue");
  EXPECT_EQ(e.Why("high")->reason, "WaitingForPreemptedWorkloads");
  // Until the victim has stopped, nothing more is preempted.
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_TRUE(e.TakeEvictions().empty());
  e.Remove("low2");
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"high"});
  Workload again = W("low2", 1);
  ASSERT_TRUE(e.Submit(again).ok());  // requeued
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_EQ(e.Why("low2")->reason, "WaitingForQuota");
}

TEST(PreemptionTest, NeverMeansWaiting) {
  AdmissionEngine e;
  e.Configure(OneQueue(CpuQueue("cq", Q("cpu", 1))));
  ASSERT_TRUE(e.Submit(W("low", 1)).ok());
  e.Schedule();
  ASSERT_TRUE(e.Submit(W("high", 1, "q", 100)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_TRUE(e.TakeEvictions().empty());
  EXPECT_EQ(e.Why("high")->reason, "WaitingForQuota");
}

TEST(PreemptionTest, AQueueReclaimsItsLentQuotaFromBorrowers) {
  KueueConfig c = TwoInACohort(Q("cpu", 2), Q("cpu", 2));
  c.cluster_queues[1].preemption.reclaim_within_cohort = "Any";
  AdmissionEngine e;
  e.Configure(c);
  for (const char* id : {"a1", "a2", "a3", "a4"}) ASSERT_TRUE(e.Submit(W(id, 1, "qa")).ok());
  EXPECT_EQ(e.Schedule().size(), 4u);  // a borrows b's idle 2 CPUs
  ASSERT_TRUE(e.Submit(W("b1", 2, "qb")).ok());
  EXPECT_TRUE(e.Schedule().empty());
  auto evictions = e.TakeEvictions();
  EXPECT_EQ(Victims(evictions), (std::vector<std::string>{"a4", "a3"}));
  EXPECT_EQ(evictions[0].reason, "InCohortReclamation");
  e.Remove("a4");
  e.Remove("a3");
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"b1"});
}

TEST(PreemptionTest, NoReclaimFromAQueueThatIsNotBorrowing) {
  KueueConfig c = TwoInACohort(Q("cpu", 2), Q("cpu", 2));
  c.cluster_queues[1].preemption.reclaim_within_cohort = "Any";
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("a1", 2, "qa")).ok());
  ASSERT_TRUE(e.Submit(W("b1", 2, "qb")).ok());
  EXPECT_EQ(e.Schedule().size(), 2u);
  ASSERT_TRUE(e.Submit(W("b2", 1, "qb")).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_TRUE(e.TakeEvictions().empty());  // a uses only its own quota
}

}  // namespace
}  // namespace tau::sched

namespace tau::sched {
namespace {

TEST(StopPolicyTest, HoldStopsAdmittingAndHoldAndDrainEvicts) {
  ClusterQueue cq = CpuQueue("cq", Q("cpu", 4));
  AdmissionEngine e;
  e.Configure(OneQueue(cq));
  ASSERT_TRUE(e.Submit(W("running", 1)).ok());
  e.Schedule();
  cq.stop_policy = "Hold";
  e.Configure(OneQueue(cq));
  ASSERT_TRUE(e.Submit(W("waiting", 1)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_EQ(e.Why("waiting")->reason, "ClusterQueueStopped");
  EXPECT_TRUE(e.TakeEvictions().empty());
  cq.stop_policy = "HoldAndDrain";
  e.Configure(OneQueue(cq));
  e.Schedule();
  auto evictions = e.TakeEvictions();
  ASSERT_EQ(evictions.size(), 1u);
  EXPECT_EQ(evictions[0].victim_id, "running");
  EXPECT_EQ(evictions[0].reason, "ClusterQueueStopped");
}

// A LocalQueue's stopPolicy (Kueue's LocalQueue.spec.stopPolicy): Hold
// admits nothing of that LocalQueue, without blocking the others of its
// ClusterQueue (even StrictFIFO); HoldAndDrain also evicts what it has
// admitted, back to its queue; None lets it go again.
TEST(StopPolicyTest, ALocalQueueOnHoldAdmitsNothingAndHoldAndDrainEvictsItsWorkloads) {
  ClusterQueue cq = CpuQueue("cq", Q("cpu", 4));
  cq.queueing_strategy = "StrictFIFO";
  KueueConfig c = OneQueue(cq);
  c.local_queues.push_back({"default", "other", "cq", "None"});
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("running", 1)).ok());
  ASSERT_EQ(Ids(e.Schedule()), std::vector<std::string>{"running"});

  c.local_queues[0].stop_policy = "Hold";
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("held-back", 1)).ok());
  ASSERT_TRUE(e.Submit(W("other-1", 1, "other")).ok());
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"other-1"}) << "the stopped head does not block StrictFIFO";
  EXPECT_EQ(e.Why("held-back")->reason, "LocalQueueStopped");
  EXPECT_EQ(e.Why("held-back")->message, "LocalQueue default/q is inactive: it has stopPolicy Hold");
  EXPECT_TRUE(e.TakeEvictions().empty()) << "Hold keeps what runs";

  c.local_queues[0].stop_policy = "HoldAndDrain";
  e.Configure(c);
  EXPECT_TRUE(e.Schedule().empty());
  auto evictions = e.TakeEvictions();
  ASSERT_EQ(evictions.size(), 1u) << "only the stopped LocalQueue's workloads are drained";
  EXPECT_EQ(evictions[0].victim_id, "running");
  EXPECT_EQ(evictions[0].preemptor_id, "");
  EXPECT_EQ(evictions[0].reason, "LocalQueueStopped");
  e.Schedule();
  EXPECT_TRUE(e.TakeEvictions().empty()) << "evicted once";

  c.local_queues[0].stop_policy = "None";
  e.Configure(c);
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"held-back"});
}

TEST(StopPolicyTest, AQueueNamingAnAdmissionCheckIsInactive) {
  ClusterQueue cq = CpuQueue("cq", Q("cpu", 4));
  cq.admission_checks = {"provisioning"};
  AdmissionEngine e;
  e.Configure(OneQueue(cq));
  ASSERT_TRUE(e.Submit(W("w", 1)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_EQ(e.Why("w")->reason, "ClusterQueueInactive");
  EXPECT_THAT(e.Why("w")->message, HasSubstr("AdmissionCheck \"provisioning\" does not exist"));
}

// b-high needs 2 CPUs in b, which uses 1 of its 2; a borrows 1 of b's with a
// low-priority workload. Reclaiming alone gives b back only what it would
// then have to borrow, so it is not allowed; borrowWithinCohort allows it,
// up to its priority threshold.
TEST(PreemptionTest, BorrowWithinCohortPreemptsLowerPriorityBorrowersSoThePreemptorCanBorrow) {
  struct Case {
    std::string borrow_policy;
    std::optional<int64_t> threshold;
    std::vector<std::string> victims;
  };
  for (const Case& t : std::vector<Case>{{"Never", std::nullopt, {}},
                                         {"LowerPriority", std::nullopt, {"a-low"}},
                                         {"LowerPriority", 0, {"a-low"}},
                                         {"LowerPriority", -1, {}}}) {
    SCOPED_TRACE(t.borrow_policy + " threshold " + (t.threshold ? std::to_string(*t.threshold) : "unset"));
    KueueConfig c = TwoInACohort(Q("cpu", 2), Q("cpu", 2));
    c.cluster_queues[1].preemption.reclaim_within_cohort = "LowerPriority";
    c.cluster_queues[1].preemption.borrow_within_cohort = t.borrow_policy;
    c.cluster_queues[1].preemption.max_priority_threshold = t.threshold;
    AdmissionEngine e;
    e.Configure(c);
    ASSERT_TRUE(e.Submit(W("a-low", 3, "qa", 0)).ok());
    ASSERT_TRUE(e.Submit(W("b-own", 1, "qb", 10)).ok());
    ASSERT_EQ(e.Schedule().size(), 2u);
    ASSERT_TRUE(e.Submit(W("b-high", 2, "qb", 10)).ok());
    EXPECT_TRUE(e.Schedule().empty());
    auto evictions = e.TakeEvictions();
    EXPECT_EQ(Victims(evictions), t.victims);
    if (!evictions.empty()) {
      EXPECT_EQ(evictions[0].reason, "InCohortReclaimWhileBorrowing");
      e.Remove("a-low");
      EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"b-high"});
    }
  }
}

}  // namespace
}  // namespace tau::sched
