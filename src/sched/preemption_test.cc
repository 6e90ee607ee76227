// Classical preemption as Kueue's scheduler does it (kueue-semantics §1.6):
// one pass nominates, reserves and evicts; candidates are re-checked after
// each removal; borrowing is judged on the resources that need preemption;
// reclaim looks across the whole cohort tree.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sched/admission_engine.h"
#include "sched/test_builders.h"

namespace tau::sched {
namespace {

ResourceQuota Q(const std::string& name, int64_t units) {
  return {name, Quantity::FromUnits(units), std::nullopt, std::nullopt};
}

Workload W(const std::string& id, int64_t cpus, const std::string& queue, int64_t priority = 0) {
  return testing::MakeWorkload(id, queue, cpus, priority);
}

std::vector<std::string> Ids(const std::vector<Admission>& admitted) {
  std::vector<std::string> ids;
  for (const auto& a : admitted) ids.push_back(a.workload_id);
  return ids;
}

std::vector<std::string> Victims(const std::vector<Eviction>& evictions) {
  std::vector<std::string> ids;
  for (const auto& e : evictions) ids.push_back(e.victim_id);
  return ids;
}

// CPU-only ClusterQueues, LocalQueue q<name> each, in the cohorts given.
KueueConfig CpuQueues(const std::vector<std::tuple<std::string, int64_t, std::string>>& queues) {
  KueueConfig c;
  c.resource_flavors = {{"default", {}, {}, {}}};
  for (const auto& [name, cpus, cohort] : queues) {
    c.cluster_queues.push_back(testing::MakeCpuQueue(name, Q("cpu", cpus), cohort));
    c.local_queues.push_back({"default", "q" + name, name, "None"});
  }
  return c;
}

// a (2 CPUs) runs `low` on one of them; b (nominal 0) may borrow the other.
// `high` needs both of a's CPUs and preempts `low`.
KueueConfig PreemptorAndBorrower(const std::string& reclaim) {
  KueueConfig c = CpuQueues({{"a", 2, "all"}, {"b", 0, "all"}});
  c.cluster_queues[0].preemption.within_cluster_queue = "LowerPriority";
  c.cluster_queues[0].preemption.reclaim_within_cohort = reclaim;
  return c;
}

TEST(OnePassPreemptionTest, APreemptorReservesItsQuotaSoALaterHeadThatNoLongerFitsWaits) {
  for (const char* reclaim : {"Never", "Any"}) {
    SCOPED_TRACE(std::string("reclaimWithinCohort ") + reclaim);
    AdmissionEngine e;
    e.Configure(PreemptorAndBorrower(reclaim));
    ASSERT_TRUE(e.Submit(W("low", 1, "qa")).ok());
    ASSERT_EQ(Ids(e.Schedule()), std::vector<std::string>{"low"});
    // Both arrive before the next pass.
    ASSERT_TRUE(e.Submit(W("high", 2, "qa", 10)).ok());
    ASSERT_TRUE(e.Submit(W("borrower", 1, "qb")).ok());
    EXPECT_TRUE(e.Schedule().empty()) << "a's idle CPU is reserved for high, not lent to borrower";
    EXPECT_EQ(Victims(e.TakeEvictions()), std::vector<std::string>{"low"}) << "never a workload of the same pass";
    EXPECT_EQ(e.Why("high")->reason, "WaitingForPreemptedWorkloads");
    EXPECT_EQ(e.Why("borrower")->reason, "WaitingForQuota");
    // While low stops, the reservation holds in every pass.
    EXPECT_TRUE(e.Schedule().empty());
    EXPECT_TRUE(e.TakeEvictions().empty());
    EXPECT_FALSE(e.IsAdmitted("borrower"));
    e.Remove("low");
    EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"high"});
    EXPECT_TRUE(e.TakeEvictions().empty());
  }
}

TEST(OnePassPreemptionTest, APreemptorIsNotPutBehindLowerPriorityHeadsThatFit) {
  // Both heads borrow (high would hold 3 CPUs in a, which has 2), so
  // priority decides: Kueue's order does not look at whether a head fits or
  // must preempt. The preemptor goes first and the borrower no longer fits.
  AdmissionEngine e;
  e.Configure(PreemptorAndBorrower("Never"));
  ASSERT_TRUE(e.Submit(W("low", 1, "qa")).ok());
  e.Schedule();
  ASSERT_TRUE(e.Submit(W("borrower", 1, "qb", 5)).ok());
  ASSERT_TRUE(e.Submit(W("high", 2, "qa", 10)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_EQ(Victims(e.TakeEvictions()), std::vector<std::string>{"low"});
  // With a higher priority the borrower goes first, and high, no longer
  // fitting once it is in, waits without preempting.
  AdmissionEngine f;
  f.Configure(PreemptorAndBorrower("Never"));
  ASSERT_TRUE(f.Submit(W("low", 1, "qa")).ok());
  f.Schedule();
  ASSERT_TRUE(f.Submit(W("borrower", 1, "qb", 100)).ok());
  ASSERT_TRUE(f.Submit(W("high", 2, "qa", 10)).ok());
  EXPECT_EQ(Ids(f.Schedule()), std::vector<std::string>{"borrower"});
  EXPECT_TRUE(f.TakeEvictions().empty());
  EXPECT_EQ(f.Why("high")->reason, "WaitingForQuota");
}

TEST(OnePassPreemptionTest, TwoPreemptorsNeverShareVictims) {
  KueueConfig c = CpuQueues({{"a", 2, ""}});
  c.cluster_queues[0].preemption.within_cluster_queue = "LowerPriority";
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("low", 2, "qa")).ok());
  e.Schedule();
  ASSERT_TRUE(e.Submit(W("high1", 2, "qa", 10)).ok());
  ASSERT_TRUE(e.Submit(W("high2", 2, "qa", 10)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_EQ(Victims(e.TakeEvictions()), std::vector<std::string>{"low"});
  EXPECT_EQ(e.Why("high1")->reason, "WaitingForPreemptedWorkloads");
  EXPECT_EQ(e.Why("high2")->reason, "WaitingForQuota");
  e.Remove("low");
  EXPECT_EQ(Ids(e.Schedule()), std::vector<std::string>{"high1"});
}

// b (3 CPUs) lent 1 to a (runs a1..a3, 1 CPU each, on 2 of its own) and 1
// to c (nominal 0, runs c1). b wants 2 back: once a3 is gone a is within
// its nominal quota, so a1 and a2 are no longer candidates and c1 goes.
TEST(ReclaimTest, ALenderIsNeverTakenBelowItsNominalQuota) {
  KueueConfig c = CpuQueues({{"a", 2, "all"}, {"b", 2, "all"}, {"c", 0, "all"}});
  c.cluster_queues[1].preemption.reclaim_within_cohort = "Any";
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("c1", 1, "qc")).ok());
  ASSERT_EQ(e.Schedule().size(), 1u);
  for (const char* id : {"a1", "a2", "a3"}) {
    ASSERT_TRUE(e.Submit(W(id, 1, "qa")).ok());
    ASSERT_EQ(e.Schedule().size(), 1u);  // admitted one after the other: a3 last
  }
  ASSERT_TRUE(e.Submit(W("b1", 2, "qb")).ok());
  EXPECT_TRUE(e.Schedule().empty());
  auto evictions = e.TakeEvictions();
  EXPECT_THAT(Victims(evictions), ::testing::UnorderedElementsAre("a3", "c1"));
  for (const auto& v : evictions) EXPECT_EQ(v.reason, "InCohortReclamation");
}

// Every workload asks for CPUs and a GPU. a borrows CPUs but uses only its
// own GPUs; c borrows a GPU. b's preemptor needs GPUs only (its CPUs fit):
// a is not borrowing what b needs, so only c's workload is a candidate.
TEST(ReclaimTest, BorrowingIsJudgedOnTheResourcesThatNeedPreemption) {
  KueueConfig c;
  c.resource_flavors = {{"default", {}, {}, {}}};
  auto queue = [](const std::string& name, int64_t cpus, int64_t gpus) {
    ClusterQueue cq = testing::MakeCpuQueue(name, Q("cpu", cpus), "all");
    cq.resource_groups = {{{"cpu", "nvidia.com/gpu"}, {{"default", {Q("cpu", cpus), Q("nvidia.com/gpu", gpus)}}}}};
    return cq;
  };
  c.cluster_queues = {queue("a", 4, 2), queue("b", 8, 2), queue("c", 0, 0)};
  c.cluster_queues[1].preemption.reclaim_within_cohort = "Any";
  for (const char* q : {"a", "b", "c"}) c.local_queues.push_back({"default", std::string("q") + q, q, "None"});
  auto job = [](const std::string& id, const std::string& queue, int64_t cpus, int64_t gpus) {
    Workload w = W(id, cpus, queue);
    w.per_pod["nvidia.com/gpu"] = gpus * 1000;
    return w;
  };
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(job("c1", "qc", 1, 1)).ok());
  ASSERT_EQ(e.Schedule().size(), 1u);
  ASSERT_TRUE(e.Submit(job("a1", "qa", 6, 2)).ok());  // 2 CPUs borrowed, GPUs its own; admitted after c1
  ASSERT_EQ(e.Schedule().size(), 1u);
  ASSERT_TRUE(e.Submit(job("b1", "qb", 1, 2)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_EQ(Victims(e.TakeEvictions()), std::vector<std::string>{"c1"});
}

// Sub-cohorts left {a} and right {b} under one root: b borrows a's idle
// quota through the root, and a reclaims it although the two ClusterQueues
// name different cohorts.
TEST(ReclaimTest, ReclaimReachesAcrossTheWholeCohortTree) {
  KueueConfig c = CpuQueues({{"a", 2, "left"}, {"b", 0, "right"}});
  c.cohorts = {{"root", "", {}, std::nullopt}, {"left", "root", {}, std::nullopt}, {"right", "root", {}, std::nullopt}};
  c.cluster_queues[0].preemption.reclaim_within_cohort = "Any";
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("b1", 2, "qb")).ok());
  ASSERT_EQ(Ids(e.Schedule()), std::vector<std::string>{"b1"});
  ASSERT_TRUE(e.Submit(W("a1", 2, "qa")).ok());
  EXPECT_TRUE(e.Schedule().empty());
  auto evictions = e.TakeEvictions();
  EXPECT_EQ(Victims(evictions), std::vector<std::string>{"b1"});
  ASSERT_EQ(evictions.size(), 1u);
  EXPECT_EQ(evictions[0].reason, "InCohortReclamation");
}

// b (nominal 1) borrows 2 through the root; a (left, nominal 2) runs one,
// and its higher-priority preemptor needs 2 more, which means borrowing:
// borrowWithinCohort lets it take b's lower-priority workload across the
// tree.
TEST(ReclaimTest, BorrowWithinCohortReachesAcrossTheWholeCohortTree) {
  KueueConfig c = CpuQueues({{"a", 2, "left"}, {"b", 1, "right"}});
  c.cohorts = {{"root", "", {}, std::nullopt}, {"left", "root", {}, std::nullopt}, {"right", "root", {}, std::nullopt}};
  c.cluster_queues[0].preemption.reclaim_within_cohort = "LowerPriority";
  c.cluster_queues[0].preemption.borrow_within_cohort = "LowerPriority";
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("a1", 1, "qa", 10)).ok());
  ASSERT_TRUE(e.Submit(W("b1", 2, "qb")).ok());
  ASSERT_EQ(e.Schedule().size(), 2u);
  ASSERT_TRUE(e.Submit(W("a2", 2, "qa", 10)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  auto evictions = e.TakeEvictions();
  EXPECT_EQ(Victims(evictions), std::vector<std::string>{"b1"});
  ASSERT_EQ(evictions.size(), 1u);
  EXPECT_EQ(evictions[0].reason, "InCohortReclaimWhileBorrowing");
}

// Flavors f1 then f2 (2 CPUs each), whenCanPreempt: MayStopSearch. f1 is
// full of equal-priority work (nothing can be preempted there): the search
// goes on to f2 instead of stopping at f1 and waiting for ever.
TEST(FlavorAssignmentTest, MayStopSearchMovesOnWhenAFlavorHasNoVictims) {
  KueueConfig c;
  c.resource_flavors = {{"f1", {}, {}, {}}, {"f2", {}, {}, {}}};
  ClusterQueue cq = testing::MakeCpuQueue("a", Q("cpu", 2), "");
  cq.resource_groups = {{{"cpu"}, {{"f1", {Q("cpu", 2)}}, {"f2", {Q("cpu", 2)}}}}};
  cq.preemption.within_cluster_queue = "LowerPriority";
  cq.flavor_fungibility.when_can_preempt = "MayStopSearch";
  c.cluster_queues = {cq};
  c.local_queues = {{"default", "qa", "a", "None"}};
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("first", 2, "qa", 5)).ok());
  ASSERT_EQ(e.Schedule().size(), 1u);
  ASSERT_TRUE(e.Submit(W("second", 1, "qa", 5)).ok());
  auto admitted = e.Schedule();
  ASSERT_EQ(Ids(admitted), std::vector<std::string>{"second"});
  EXPECT_EQ(admitted[0].flavors.at("cpu"), "f2");
  // With a victim on f1 the search stops there, as MayStopSearch says.
  ASSERT_TRUE(e.Submit(W("high", 2, "qa", 10)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_EQ(Victims(e.TakeEvictions()), std::vector<std::string>{"first"});
}

// Under MayStopSearch, whether a flavor has victims is judged as Kueue's
// cycle judges it: a workload admitted by an earlier cycle of the pass
// counts, so the search stops at that flavor (and the preemptor waits for
// the next pass to evict it) rather than going on to the next flavor.
TEST(FlavorAssignmentTest, MayStopSearchCountsAWorkloadTheSamePassAdmittedAsAVictim) {
  KueueConfig c;
  c.resource_flavors = {{"f1", {}, {}, {}}, {"f2", {}, {}, {}}};
  ClusterQueue a = testing::MakeCpuQueue("a", Q("cpu", 4), "all");
  a.resource_groups = {{{"cpu"}, {{"f1", {Q("cpu", 4)}}, {"f2", {Q("cpu", 2)}}}}};
  a.preemption.within_cluster_queue = "LowerPriority";
  a.preemption.reclaim_within_cohort = "Any";
  a.flavor_fungibility.when_can_preempt = "MayStopSearch";
  ClusterQueue b = testing::MakeCpuQueue("b", Q("cpu", 0), "all");
  b.resource_groups = {{{"cpu"}, {{"f1", {Q("cpu", 0)}}}}};
  c.cluster_queues = {a, b};
  c.local_queues = {{"default", "qa", "a", "None"}, {"default", "qb", "b", "None"}};
  AdmissionEngine e;
  e.Configure(c);
  // First cycle: a1 takes half of a's f1, low (b) borrows the other half.
  // Second cycle: high finds f1 full; low is its victim there.
  ASSERT_TRUE(e.Submit(W("a1", 2, "qa", 20)).ok());
  ASSERT_TRUE(e.Submit(W("high", 2, "qa", 10)).ok());
  ASSERT_TRUE(e.Submit(W("low", 2, "qb", 0)).ok());
  EXPECT_EQ(Ids(e.Schedule()), (std::vector<std::string>{"a1", "low"}));
  EXPECT_EQ(Victims(e.TakeEvictions()), std::vector<std::string>{});
  EXPECT_FALSE(e.IsAdmitted("high")) << "the search stopped at f1 instead of going on to f2";
  EXPECT_TRUE(e.Schedule().empty());
  std::vector<Eviction> evictions = e.TakeEvictions();
  ASSERT_EQ(Victims(evictions), std::vector<std::string>{"low"});
  EXPECT_EQ(evictions[0].preemptor_id, "high");
  e.Remove("low");
  auto admitted = e.Schedule();
  ASSERT_EQ(Ids(admitted), std::vector<std::string>{"high"});
  EXPECT_EQ(admitted[0].flavors.at("cpu"), "f1");
}

TEST(VictimOrderTest, TheMostRecentlyAdmittedGoesFirstWhateverItsSubmission) {
  KueueConfig c = CpuQueues({{"a", 2, ""}});
  c.cluster_queues[0].preemption.within_cluster_queue = "LowerPriority";
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("older", 1, "qa")).ok());
  ASSERT_TRUE(e.Submit(W("newer", 1, "qa")).ok());
  e.SetHeld("older", true);
  ASSERT_EQ(Ids(e.Schedule()), std::vector<std::string>{"newer"});
  e.SetHeld("older", false);
  ASSERT_EQ(Ids(e.Schedule()), std::vector<std::string>{"older"});  // submitted first, admitted last
  ASSERT_TRUE(e.Submit(W("high", 1, "qa", 10)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_EQ(Victims(e.TakeEvictions()), std::vector<std::string>{"older"});
}


// Kueue's hierarchical advantage: q (no quota of its own) sits in Cohort c,
// which owns 2 CPUs that q-borrowing, directly under the root, borrows. q's
// workload fits c's quota, so it reclaims them from a workload of the same
// priority (reclaimWithinCohort: Any), although q itself is above its
// nominal quota (0) and may not borrowWithinCohort.
KueueConfig Advantage() {
  KueueConfig c = CpuQueues({{"q", 0, "c"}, {"borrowing", 0, "r"}});
  for (auto& cq : c.cluster_queues) {
    cq.preemption.within_cluster_queue = "LowerPriority";
    cq.preemption.reclaim_within_cohort = "Any";
  }
  Cohort r;
  r.name = "r";
  Cohort cohort;
  cohort.name = "c";
  cohort.parent_name = "r";
  cohort.resource_groups = {{{"cpu"}, {{"default", {Q("cpu", 2)}}}}};
  c.cohorts = {r, cohort};
  return c;
}

TEST(HierarchicalPreemptionTest, AQueueReclaimsItsCohortsQuotaWhateverThePriority) {
  AdmissionEngine e;
  e.Configure(Advantage());
  ASSERT_TRUE(e.Submit(W("borrower", 2, "qborrowing", 5)).ok());
  ASSERT_EQ(Ids(e.Schedule()), std::vector<std::string>{"borrower"});
  ASSERT_TRUE(e.Submit(W("in", 2, "qq", 0)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  auto evictions = e.TakeEvictions();
  ASSERT_EQ(evictions.size(), 1u);
  EXPECT_EQ(evictions[0].victim_id, "borrower");
  EXPECT_EQ(evictions[0].reason, "InCohortReclamation");
}

// Without the advantage (the workload needs more than Cohort c owns), the
// same higher-priority borrower stays.
TEST(HierarchicalPreemptionTest, WithoutTheAdvantagePriorityDecides) {
  KueueConfig c = Advantage();
  c.cluster_queues.push_back(testing::MakeCpuQueue("lender", Q("cpu", 2), "r"));
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("borrower", 4, "qborrowing", 5)).ok());
  ASSERT_EQ(Ids(e.Schedule()), std::vector<std::string>{"borrower"});
  ASSERT_TRUE(e.Submit(W("in", 3, "qq", 0)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_TRUE(e.TakeEvictions().empty());
}

// Kueue decides each cycle on the workloads admitted before it, including
// those of the cycle just before; a pass runs many cycles. A workload the
// pass admitted is never its victim, but it still counts as a candidate
// when the victims are chosen: left out, it would keep its ClusterQueue
// over its nominal quota, and a larger workload there would be taken
// instead of the ones Kueue takes.
TEST(VictimOrderTest, AWorkloadAdmittedInThePassStaysACandidateAndItsPreemptorWaitsForTheNextPass) {
  auto config = [] {
    KueueConfig c = CpuQueues({{"a", 20, "all"}, {"d", 20, "all"}, {"p", 20, "all"}});
    for (auto& cq : c.cluster_queues) {
      cq.preemption.within_cluster_queue = "LowerPriority";
      cq.preemption.reclaim_within_cohort = "Any";
    }
    return c;
  };
  AdmissionEngine e;
  e.Configure(config());
  // a borrows 5 of the cohort's 60 CPUs.
  ASSERT_TRUE(e.Submit(W("a-large", 20, "qa", 200)).ok());
  ASSERT_TRUE(e.Submit(W("a-medium", 5, "qa", 100)).ok());
  ASSERT_EQ(Ids(e.Schedule()), (std::vector<std::string>{"a-large", "a-medium"}));
  // First cycle: d-large and p-large both fit within their nominal quota;
  // d-large is older and goes first, p-large no longer fits, and a-small
  // (borrowing) takes one of the 15 CPUs left.
  ASSERT_TRUE(e.Submit(W("d-large", 20, "qd", 200)).ok());
  ASSERT_TRUE(e.Submit(W("p-large", 20, "qp", 200)).ok());
  ASSERT_TRUE(e.Submit(W("a-small", 1, "qa", 50)).ok());
  EXPECT_EQ(Ids(e.Schedule()), (std::vector<std::string>{"d-large", "a-small"}));
  // In Kueue's next cycle p-large would reclaim a-small and a-medium, a's
  // lowest-priority and most recent workloads (a back at its nominal 20).
  // The pass does not evict what it admitted, and does not evict a-large
  // instead: p-large waits for the next pass.
  EXPECT_EQ(Victims(e.TakeEvictions()), std::vector<std::string>{});
  EXPECT_TRUE(e.NeedsAnotherPass()) << "the caller must run the pass p-large waits for";
  EXPECT_TRUE(e.Schedule().empty());
  EXPECT_FALSE(e.NeedsAnotherPass());
  std::vector<Eviction> evictions = e.TakeEvictions();
  EXPECT_THAT(Victims(evictions), ::testing::UnorderedElementsAre("a-small", "a-medium"));
  for (const Eviction& v : evictions) {
    EXPECT_EQ(v.preemptor_id, "p-large");
    EXPECT_EQ(v.reason, "InCohortReclamation");
  }
  EXPECT_EQ(e.Why("p-large")->reason, "WaitingForPreemptedWorkloads");
}

// a (4 CPUs, never preempts its own) runs a-old on 2; b (2 CPUs) is full.
// a-big needs all 4 of a's CPUs and has no candidates; b-small would borrow
// the 2 left. The quota a-big holds back lasts for its cycle when it is
// parked (BestEffortFIFO), for the pass when it blocks its queue
// (StrictFIFO), and not at all when a can always reclaim.
KueueConfig HeadWithoutCandidates(const std::string& strategy, const std::string& reclaim) {
  KueueConfig c = CpuQueues({{"a", 4, "team"}, {"b", 2, "team"}});
  c.cluster_queues[0].queueing_strategy = strategy;
  c.cluster_queues[0].preemption.reclaim_within_cohort = reclaim;
  return c;
}

std::vector<std::string> AfterHeadWithoutCandidates(const std::string& strategy, const std::string& reclaim) {
  AdmissionEngine e;
  e.Configure(HeadWithoutCandidates(strategy, reclaim));
  EXPECT_TRUE(e.Submit(W("a-old", 2, "qa")).ok());
  EXPECT_TRUE(e.Submit(W("b-full", 2, "qb")).ok());
  EXPECT_EQ(e.Schedule().size(), 2u);
  EXPECT_TRUE(e.Submit(W("a-big", 4, "qa", 5)).ok());
  EXPECT_TRUE(e.Submit(W("b-small", 1, "qb")).ok());
  std::vector<std::string> admitted = Ids(e.Schedule());
  EXPECT_TRUE(e.TakeEvictions().empty());
  return admitted;
}

TEST(ReservationWithoutCandidatesTest, AStrictFifoHeadHoldsItsNominalQuotaForThePass) {
  EXPECT_TRUE(AfterHeadWithoutCandidates("StrictFIFO", "LowerPriority").empty());
}

TEST(ReservationWithoutCandidatesTest, ABestEffortFifoHeadHoldsItForItsCycleOnly) {
  // b-small no longer fits in the cycle where a-big holds the quota back,
  // and is admitted in the next one, where a-big is parked.
  EXPECT_EQ(AfterHeadWithoutCandidates("BestEffortFIFO", "LowerPriority"), std::vector<std::string>{"b-small"});
}

TEST(ReservationWithoutCandidatesTest, AQueueThatCanAlwaysReclaimHoldsNothing) {
  EXPECT_EQ(AfterHeadWithoutCandidates("StrictFIFO", "Any"), std::vector<std::string>{"b-small"});
}

}  // namespace
}  // namespace tau::sched
