// Fair sharing (kueue-semantics §1.7): dominant resource shares, weights,
// and the admission tournament.

#include "sched/fair_sharing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "sched/admission_engine.h"
#include "sched/test_builders.h"

namespace tau::sched {
namespace {

ClusterQueue Cpu(const std::string& name, int64_t cpus, const std::string& cohort, std::optional<double> weight = {}) {
  ClusterQueue cq =
      testing::MakeCpuQueue(name, {"cpu", Quantity::FromUnits(cpus), std::nullopt, std::nullopt}, cohort);
  if (weight) cq.fair_sharing_weight = Quantity::FromMilli(static_cast<int64_t>(*weight * 1000));
  return cq;
}

Workload W(const std::string& id, const std::string& queue, int64_t cpus = 1, int64_t priority = 0) {
  return testing::MakeWorkload(id, queue, cpus, priority);
}

// ClusterQueues a and b (2 CPUs each) and an idle lender (4 CPUs), in one
// cohort; a's workloads are all older than b's.
KueueConfig Shared(bool fair, std::optional<double> weight_a = {}, std::optional<double> weight_b = {}) {
  KueueConfig c;
  c.fair_sharing.enable = fair;
  c.resource_flavors = {{"default", {}, {}, {}}};
  c.cluster_queues = {Cpu("a", 2, "all", weight_a), Cpu("b", 2, "all", weight_b), Cpu("lender", 4, "all")};
  c.local_queues = {{"default", "a", "a", "None"}, {"default", "b", "b", "None"}};
  return c;
}

std::map<std::string, int> AdmittedPerQueue(AdmissionEngine& e) {
  std::map<std::string, int> n;
  for (const Admission& a : e.Schedule()) ++n[a.cluster_queue];
  return n;
}

void SubmitMany(AdmissionEngine& e) {
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(e.Submit(W("a" + std::to_string(i), "a")).ok());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(e.Submit(W("b" + std::to_string(i), "b")).ok());
}

TEST(FairSharingTest, DominantResourceShareIsBorrowedPerMilleOfWhatTheParentCanLend) {
  QuotaTree t;
  auto cohort = t.AddCohort("all");
  auto a = t.AddClusterQueue("a");
  auto b = t.AddClusterQueue("b");
  t.SetParent(a, cohort);
  t.SetParent(b, cohort);
  FlavorResource cpu{"default", "cpu"};
  t.SetQuota(a, cpu, {4000});
  t.SetQuota(b, cpu, {4000});
  EXPECT_EQ(DominantResourceShare(t, a, {}), 0);
  t.AddUsage(a, {{cpu, 6000}});
  EXPECT_EQ(DominantResourceShare(t, a, {}), 250);  // 2 of the cohort's 8
  EXPECT_EQ(DominantResourceShare(t, a, {{cpu, 2000}}), 500);
  EXPECT_EQ(DominantResourceShare(t, cohort, {}), 0) << "a root has no parent to borrow from";
  EXPECT_EQ(WeightedShare(250, 2.0), 125);
  EXPECT_TRUE(std::isinf(WeightedShare(250, 0)));
  EXPECT_EQ(WeightedShare(0, 0), 0) << "weight 0 without borrowing";
  EXPECT_EQ(ReportedWeightedShare(WeightedShare(250, 3.0)), 84);
  EXPECT_EQ(ReportedWeightedShare(WeightedShare(1, 0)), std::numeric_limits<int64_t>::max());
}

TEST(FairSharingTest, TheShareIsAFloatLikeKueues) {
  QuotaTree t;
  auto cohort = t.AddCohort("all");
  auto a = t.AddClusterQueue("a");
  auto lender = t.AddClusterQueue("lender");
  t.SetParent(a, cohort);
  t.SetParent(lender, cohort);
  FlavorResource cpu{"default", "cpu"};
  t.SetQuota(lender, cpu, {3000});
  t.AddUsage(a, {{cpu, 1000}});
  EXPECT_DOUBLE_EQ(DominantResourceShare(t, a, {}), 1000.0 / 3);  // not rounded down to 333
  EXPECT_LT(DominantResourceShare(t, a, {{cpu, -1}}), DominantResourceShare(t, a, {}));
}

TEST(FairSharingTest, ACohortLendsWhatItCanTakeFromAboveToo) {
  // root has 4 CPUs of flavor f2; its child cohort mid has a and b (2 CPUs
  // of f1 each) and no f2 of its own: mid can lend 4 of f1 and 4 of f2.
  QuotaTree t;
  auto root = t.AddCohort("root");
  auto mid = t.AddCohort("mid");
  auto a = t.AddClusterQueue("a");
  auto b = t.AddClusterQueue("b");
  t.SetParent(mid, root);
  t.SetParent(a, mid);
  t.SetParent(b, mid);
  t.SetQuota(root, {"f2", "cpu"}, {4000});
  t.SetQuota(a, {"f1", "cpu"}, {2000});
  t.SetQuota(b, {"f1", "cpu"}, {2000});
  t.AddUsage(a, {{{"f1", "cpu"}, 3000}});
  EXPECT_EQ(t.LendableByResource(mid).at("cpu"), 8000);
  EXPECT_DOUBLE_EQ(DominantResourceShare(t, a, {}), 125);  // 1 of 8
}

// Under root: cohort x (x1, x2: 1 CPU each) and queue y (1 CPU). x1's head
// borrows x2's idle CPU, inside x: at the root x does not borrow, so x and
// y tie on borrowing and on share, and priority decides.
TEST(FairSharingTest, BorrowingIsJudgedAtEachLevelOfTheTournament) {
  KueueConfig c;
  c.fair_sharing.enable = true;
  c.resource_flavors = {{"default", {}, {}, {}}};
  c.cohorts = {{"x", "root", {}, {}}, {"root", "", {}, {}}};
  c.cluster_queues = {Cpu("x1", 1, "x"), Cpu("x2", 1, "x"), Cpu("y", 1, "root")};
  c.local_queues = {{"default", "x1", "x1", "None"}, {"default", "y", "y", "None"}};
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("y-low", "y", 1, 0)).ok());
  ASSERT_TRUE(e.Submit(W("x1-high", "x1", 2, 10)).ok());
  std::vector<std::string> order;
  for (const Admission& a : e.Schedule()) order.push_back(a.workload_id);
  EXPECT_EQ(order, (std::vector<std::string>{"x1-high", "y-low"}));
}

// Each cycle admits at most one head per ClusterQueue, so a and b fill the
// idle quota in turns either way; what fair sharing decides is who gets a
// CPU when one is freed and both want it.
std::string WhoGetsAFreedCpu(KueueConfig config, const std::string& finished) {
  AdmissionEngine e;
  e.Configure(config);
  SubmitMany(e);
  auto filled = AdmittedPerQueue(e);
  EXPECT_EQ(filled["a"] + filled["b"], 8);
  e.Remove(finished);
  auto next = e.Schedule();
  EXPECT_EQ(next.size(), 1u);
  return next.empty() ? "" : next[0].cluster_queue;
}

TEST(FairSharingTest, WithoutFairSharingTheOlderWorkloadGetsTheFreedCpu) {
  EXPECT_EQ(WhoGetsAFreedCpu(Shared(false), "b0"), "a");
}

TEST(FairSharingTest, TheTournamentGivesTheFreedCpuToTheLowerShare) {
  // a borrows 2, b 1 once b0 ends: b's share after admission is lower.
  EXPECT_EQ(WhoGetsAFreedCpu(Shared(true), "b0"), "b");
  AdmissionEngine e;
  e.Configure(Shared(true));
  SubmitMany(e);
  AdmittedPerQueue(e);
  EXPECT_EQ(e.WeightedShareOf(*e.ClusterQueueNode("a")), 250);  // 2 of the cohort's 8 CPUs
}

TEST(FairSharingTest, WeightsDivideTheShare) {
  // With three times b's weight, a's share after admission (3 borrowed,
  // 375/3) is below b's (2 borrowed, 250).
  EXPECT_EQ(WhoGetsAFreedCpu(Shared(true, 3.0, 1.0), "b0"), "a");
}

TEST(FairSharingTest, AWeightZeroQueueOnlyGetsWhatNobodyElseWants) {
  // Even the CPU its own workload freed goes to b, which still wants more.
  EXPECT_EQ(WhoGetsAFreedCpu(Shared(true, 0.0, 1.0), "a0"), "b");
  // With nobody else wanting anything, it gets the idle quota.
  AdmissionEngine idle;
  idle.Configure(Shared(true, 0.0, 1.0));
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(idle.Submit(W("z" + std::to_string(i), "a")).ok());
  ASSERT_TRUE(idle.Submit(W("y0", "b")).ok());
  auto m = AdmittedPerQueue(idle);
  EXPECT_EQ(m["a"], 7);
  EXPECT_EQ(m["b"], 1);
  EXPECT_EQ(ReportedWeightedShare(idle.WeightedShareOf(*idle.ClusterQueueNode("a"))),
            std::numeric_limits<int64_t>::max());
}

TEST(FairSharingTest, SubCohortsCompeteAsWholes) {
  // root: cohort x (queues x1, x2: 1 CPU each) and queue y (2 CPUs); a
  // lender holds 4 idle CPUs. x as a whole and y are scored against each
  // other, then x1 and x2 inside x.
  KueueConfig c;
  c.fair_sharing.enable = true;
  c.resource_flavors = {{"default", {}, {}, {}}};
  c.cohorts = {{"x", "root", {}, {}}, {"root", "", {}, {}}};
  c.cluster_queues = {Cpu("x1", 1, "x"), Cpu("x2", 1, "x"), Cpu("y", 2, "root"), Cpu("lender", 4, "root")};
  c.local_queues = {{"default", "x1", "x1", "None"}, {"default", "x2", "x2", "None"}, {"default", "y", "y", "None"}};
  AdmissionEngine e;
  e.Configure(c);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(e.Submit(W("x1-" + std::to_string(i), "x1")).ok());
    ASSERT_TRUE(e.Submit(W("x2-" + std::to_string(i), "x2")).ok());
    ASSERT_TRUE(e.Submit(W("y-" + std::to_string(i), "y")).ok());
  }
  // Cycle 3 has 2 CPUs for three heads: y (the lower share after
  // admission than cohort x as a whole) first, then x1 (older than x2).
  auto n = AdmittedPerQueue(e);
  EXPECT_EQ(n["x1"], 3);
  EXPECT_EQ(n["x2"], 2);
  EXPECT_EQ(n["y"], 3);
  // x1 ends one: cohort x, borrowing more than y, does not get it back.
  e.Remove("x1-0");
  auto next = e.Schedule();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].cluster_queue, "y");
  EXPECT_GT(e.WeightedShareOf(*e.CohortNode("x")), 0);
}

KueueConfig Reclaiming(std::vector<std::string> strategies, int64_t nominal_a, int64_t nominal_b, int64_t lender) {
  KueueConfig c;
  c.fair_sharing.enable = true;
  c.fair_sharing.preemption_strategies = std::move(strategies);
  c.resource_flavors = {{"default", {}, {}, {}}};
  c.cluster_queues = {Cpu("a", nominal_a, "all"), Cpu("b", nominal_b, "all"), Cpu("lender", lender, "all")};
  for (auto& cq : c.cluster_queues) cq.preemption.reclaim_within_cohort = "Any";
  c.local_queues = {{"default", "a", "a", "None"}, {"default", "b", "b", "None"}};
  return c;
}

// Lets every pending eviction finish (the victims stop) and schedules.
std::vector<Eviction> Settle(AdmissionEngine& e) {
  std::vector<Eviction> all;
  for (int round = 0; round < 10; ++round) {
    e.Schedule();
    auto ev = e.TakeEvictions();
    if (ev.empty()) break;
    for (const auto& v : ev) e.Remove(v.victim_id);
    all.insert(all.end(), ev.begin(), ev.end());
  }
  return all;
}

TEST(FairSharingTest, AQueueBelowItsShareReclaimsFromTheOneAboveItAndThenNobodyPingPongs) {
  AdmissionEngine e;
  e.Configure(Reclaiming({"LessThanOrEqualToFinalShare", "LessThanInitialShare"}, 2, 2, 0));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(e.Submit(W("a" + std::to_string(i), "a")).ok());
  ASSERT_EQ(AdmittedPerQueue(e)["a"], 4);  // b is idle: a borrows all of it
  ASSERT_TRUE(e.Submit(W("b0", "b")).ok());
  ASSERT_TRUE(e.Submit(W("b1", "b")).ok());
  auto evicted = Settle(e);
  ASSERT_EQ(evicted.size(), 2u);
  // b stays within its nominal quota: it reclaims (Kueue's
  // FairSharingPreemptWithinNominal).
  EXPECT_EQ(evicted[0].reason, "InCohortReclamation");
  EXPECT_TRUE(e.IsAdmitted("b0"));
  EXPECT_TRUE(e.IsAdmitted("b1"));
  // At even shares, more work on either side preempts nothing, round
  // after round.
  for (int round = 0; round < 5; ++round) {
    ASSERT_TRUE(e.Submit(W("a-more" + std::to_string(round), "a")).ok());
    ASSERT_TRUE(e.Submit(W("b-more" + std::to_string(round), "b")).ok());
    EXPECT_TRUE(Settle(e).empty()) << "round " << round;
  }
}

// a borrows 1 of b's CPUs; b runs a low-priority workload of its own and
// its high-priority one needs a CPU. The queue with the highest share (a)
// is taken from first, not b's own workload.
TEST(FairSharingTest, FairPreemptionTakesFromTheHighestShareFirstEvenOverThePreemptorsOwnQueue) {
  KueueConfig c = Reclaiming({"LessThanOrEqualToFinalShare", "LessThanInitialShare"}, 2, 2, 0);
  c.cluster_queues[1].preemption.within_cluster_queue = "LowerPriority";
  AdmissionEngine e;
  e.Configure(c);
  for (const char* id : {"a0", "a1", "a2"}) ASSERT_TRUE(e.Submit(W(id, "a")).ok());
  ASSERT_EQ(e.Schedule().size(), 3u);
  ASSERT_TRUE(e.Submit(W("b-low", "b")).ok());
  ASSERT_EQ(e.Schedule().size(), 1u);
  ASSERT_TRUE(e.Submit(W("b-high", "b", 1, 10)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  auto evictions = e.TakeEvictions();
  ASSERT_EQ(evictions.size(), 1u);
  EXPECT_EQ(evictions[0].victim_id, "a2");
  EXPECT_EQ(evictions[0].reason, "InCohortReclamation");  // b-high fits within b's nominal quota
}

TEST(FairSharingTest, TheStrategiesDecideWhichTargetsAreFair) {
  // a (nominal 0) runs one 3-CPU workload on the lender's quota; b (nominal
  // 0) wants 2 CPUs. After preempting, b's share (500) would exceed a's
  // (0): LessThanOrEqualToFinalShare refuses, LessThanInitialShare (a's
  // share now is 750) allows.
  auto run = [](std::vector<std::string> strategies) {
    AdmissionEngine e;
    e.Configure(Reclaiming(std::move(strategies), 0, 0, 4));
    EXPECT_TRUE(e.Submit(W("big", "a", 3)).ok());
    e.Schedule();
    EXPECT_TRUE(e.Submit(W("two", "b", 2)).ok());
    return Settle(e).size();
  };
  EXPECT_EQ(run({"LessThanOrEqualToFinalShare"}), 0u);
  EXPECT_EQ(run({"LessThanInitialShare"}), 1u);
  EXPECT_EQ(run({"LessThanOrEqualToFinalShare", "LessThanInitialShare"}), 1u) << "the second is tried when the first fails";
}

// Admission fair sharing (kueue-semantics §1.8): one ClusterQueue, two
// LocalQueues (teams) feeding it.
KueueConfig TwoTeamsOneQueue(int64_t cpus, bool afs) {
  KueueConfig c;
  c.resource_flavors = {{"default", {}, {}, {}}};
  ClusterQueue cq = Cpu("shared", cpus, "");
  if (afs) cq.admission_mode = "UsageBasedAdmissionFairSharing";
  c.cluster_queues = {cq};
  c.local_queues = {{"default", "heavy", "shared", "None"}, {"default", "light", "shared", "None"}};
  c.admission_fair_sharing.usage_sampling_interval_ms = 60'000;
  c.admission_fair_sharing.usage_half_life_ms = 60'000;  // α = 0.5 per sample
  return c;
}

TEST(AdmissionFairSharingTest, EntryPenaltiesInterleaveTwoTeamsInOneQueue) {
  for (bool afs : {false, true}) {
    AdmissionEngine e;
    e.Configure(TwoTeamsOneQueue(4, afs));
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(e.Submit(W("h" + std::to_string(i), "heavy")).ok());
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(e.Submit(W("l" + std::to_string(i), "light")).ok());
    std::map<std::string, int> per_team;
    for (const Admission& a : e.Schedule()) ++per_team[a.workload_id.substr(0, 1)];
    if (afs) {
      EXPECT_EQ(per_team["h"], 2) << "each admission's penalty lets the other team's head go next";
      EXPECT_EQ(per_team["l"], 2);
    } else {
      EXPECT_EQ(per_team["h"], 4) << "FIFO: the older team takes it all";
    }
  }
}

TEST(AdmissionFairSharingTest, DecayedUsageFavoursTheTeamThatUsedLess) {
  AdmissionEngine e;
  e.Configure(TwoTeamsOneQueue(2, true));
  e.SetNow(0);
  ASSERT_TRUE(e.Submit(W("h0", "heavy")).ok());
  ASSERT_TRUE(e.Submit(W("h1", "heavy")).ok());
  e.Schedule();  // heavy holds both CPUs for a while
  for (int64_t t = 60'000; t <= 300'000; t += 60'000) {
    e.SetNow(t);
    e.Schedule();
  }
  // α = 0.5 per minute on 2 CPUs for five minutes: 2·(1 − 0.5^5).
  EXPECT_NEAR(e.LocalQueueScore("default", "heavy"), 2 * (1 - 1.0 / 32), 1e-9);
  EXPECT_EQ(e.LocalQueueScore("default", "light"), 0);
  // heavy's older workload and light's newer one wait for the CPU h0 frees.
  ASSERT_TRUE(e.Submit(W("h2", "heavy")).ok());
  ASSERT_TRUE(e.Submit(W("l0", "light")).ok());
  e.Remove("h0");
  auto next = e.Schedule();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].workload_id, "l0");
  // The usage decays with its half-life once heavy stops.
  e.Remove("h1");
  e.SetNow(360'000);
  e.Schedule();
  e.Remove("h2");
  e.Remove("l0");
  e.SetNow(420'000);
  e.Schedule();
  EXPECT_LT(e.LocalQueueScore("default", "heavy"), 1.0);
}

TEST(AdmissionFairSharingTest, ALocalQueueWeightDividesItsScore) {
  KueueConfig c = TwoTeamsOneQueue(2, true);
  c.local_queues[0].fair_sharing_weight = Quantity::FromUnits(4);
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("h0", "heavy")).ok());
  e.Schedule();
  ASSERT_TRUE(e.Submit(W("l0", "light")).ok());
  e.Schedule();
  // Both paid the same entry penalty (α·1 CPU); heavy's counts a quarter.
  EXPECT_DOUBLE_EQ(e.LocalQueueScore("default", "heavy") * 4, e.LocalQueueScore("default", "light"));
}

TEST(AdmissionFairSharingTest, TheHistorySurvivesARestartOfTheEngine) {
  AdmissionEngine e;
  e.Configure(TwoTeamsOneQueue(2, true));
  e.SetNow(0);
  ASSERT_TRUE(e.Submit(W("h0", "heavy", 2)).ok());
  e.Schedule();
  e.SetNow(120'000);
  e.Schedule();
  auto history = e.ExportLocalQueueHistory();
  EXPECT_EQ(history.last_sample_ms, 120'000);
  ASSERT_GT(history.consumed.at({"default", "heavy"}), 0);

  AdmissionEngine restarted;
  restarted.Configure(TwoTeamsOneQueue(2, true));
  restarted.RestoreLocalQueueHistory(history);
  // Right after a sample no entry penalty is pending: the scores agree.
  EXPECT_DOUBLE_EQ(restarted.LocalQueueScore("default", "heavy"), e.LocalQueueScore("default", "heavy"));
  ASSERT_TRUE(restarted.Submit(W("h1", "heavy")).ok());
  ASSERT_TRUE(restarted.Submit(W("l1", "light")).ok());
  restarted.SetNow(130'000);
  auto first = restarted.Schedule();
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(first[0].workload_id, "l1") << "heavy's past usage still counts after the restart";
}


// Kueue's FairSharingPreemptWithinNominal: a (weight 0, so an infinite
// share as soon as it borrows) still reclaims its nominal CPU from the
// borrower b, because with the incoming workload it stays within it.
TEST(FairSharingTest, AWorkloadWithinItsQueuesNominalQuotaReclaimsWhateverTheShares) {
  KueueConfig c;
  c.fair_sharing.enable = true;
  c.resource_flavors = {{"default", {}, {}, {}}};
  c.cluster_queues = {Cpu("a", 1, "root", 0.0), Cpu("b", 0, "root", 1.0)};
  c.cluster_queues[0].preemption.reclaim_within_cohort = "Any";
  c.local_queues = {{"default", "a", "a", "None"}, {"default", "b", "b", "None"}};
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("b1", "b")).ok());
  ASSERT_EQ(e.Schedule().size(), 1u);
  ASSERT_TRUE(e.Submit(W("a1", "a")).ok());
  EXPECT_TRUE(e.Schedule().empty());
  auto evictions = e.TakeEvictions();
  ASSERT_EQ(evictions.size(), 1u);
  EXPECT_EQ(evictions[0].victim_id, "b1");
  EXPECT_EQ(evictions[0].reason, "InCohortReclamation");
}

// The quota is Cohort team-a's (weight 0), not a's: a is not within a
// nominal quota of its own, so the strategies decide, comparing the shares
// just below the common ancestor: team-a's (0, it lends nothing and borrows
// nothing once a1 runs) against b's, as Kueue does — not a's own share,
// which is infinite at weight 0.
TEST(FairSharingTest, StrategiesCompareTheSubtreesBelowTheCommonAncestor) {
  KueueConfig c;
  c.fair_sharing.enable = true;
  c.resource_flavors = {{"default", {}, {}, {}}};
  c.cluster_queues = {Cpu("a", 0, "team-a", 0.0), Cpu("b", 0, "root", 1.0)};
  c.cluster_queues[0].preemption.reclaim_within_cohort = "Any";
  Cohort team_a;
  team_a.name = "team-a";
  team_a.parent_name = "root";
  team_a.fair_sharing_weight = Quantity::FromUnits(0);
  team_a.resource_groups = {{{"cpu"}, {{"default", {{"cpu", Quantity::FromUnits(1), std::nullopt, std::nullopt}}}}}};
  Cohort root;
  root.name = "root";
  c.cohorts = {root, team_a};
  c.local_queues = {{"default", "a", "a", "None"}, {"default", "b", "b", "None"}};
  AdmissionEngine e;
  e.Configure(c);
  ASSERT_TRUE(e.Submit(W("b1", "b")).ok());
  ASSERT_EQ(e.Schedule().size(), 1u);
  ASSERT_TRUE(e.Submit(W("a1", "a")).ok());
  EXPECT_TRUE(e.Schedule().empty());
  auto evictions = e.TakeEvictions();
  ASSERT_EQ(evictions.size(), 1u);
  EXPECT_EQ(evictions[0].victim_id, "b1");
  EXPECT_EQ(evictions[0].reason, "InCohortFairSharing");
}


// Kueue's hierarchical target order: the tree root (5 CPUs) holds Cohorts
// left (a, b; weight 2) and right (d, e; e weighs 0.99) of 5 CPUs each,
// and c; every queue has 1 CPU. b, c, d and e fill the tree with five
// 1-CPU workloads each (priorities 1..5). a's 5-CPU workload takes its
// victims by a walk from the root, each time into the child with the
// highest share: b's two lowest (its sibling), c's two lowest, and e's
// lowest — not d's, which a flat order by ClusterQueue share would reach.
TEST(FairSharingTest, TargetsAreChosenByAWalkFromTheRootOfTheTree) {
  KueueConfig c;
  c.fair_sharing.enable = true;
  c.resource_flavors = {{"default", {}, {}, {}}};
  auto cohort = [](const std::string& name, const std::string& parent, std::optional<int64_t> weight_milli) {
    Cohort h;
    h.name = name;
    h.parent_name = parent;
    h.resource_groups = {{{"cpu"}, {{"default", {{"cpu", Quantity::FromUnits(5), std::nullopt, std::nullopt}}}}}};
    if (weight_milli) {
      h.fair_sharing_weight = Quantity::FromMilli(*weight_milli);
    }
    return h;
  };
  c.cohorts = {cohort("root", "", std::nullopt), cohort("left", "root", 2000), cohort("right", "root", std::nullopt)};
  c.cluster_queues = {Cpu("a", 1, "left", 2.0), Cpu("b", 1, "left"), Cpu("c", 1, "root"), Cpu("d", 1, "right"),
                      Cpu("e", 1, "right", 0.99)};
  c.cluster_queues[0].preemption.reclaim_within_cohort = "Any";
  for (const char* q : {"a", "b", "c", "d", "e"}) c.local_queues.push_back({"default", q, q, "None"});
  AdmissionEngine e;
  e.Configure(c);
  for (const char* q : {"b", "c", "d", "e"}) {
    for (int i = 1; i <= 5; ++i) {
      ASSERT_TRUE(e.Submit(W(std::string(q) + std::to_string(i), q, 1, i)).ok());
      ASSERT_EQ(e.Schedule().size(), 1u);
    }
  }
  ASSERT_TRUE(e.Submit(W("unit", "a", 5)).ok());
  EXPECT_TRUE(e.Schedule().empty());
  std::set<std::string> victims;
  for (const Eviction& v : e.TakeEvictions()) {
    EXPECT_EQ(v.reason, "InCohortFairSharing") << v.victim_id;
    victims.insert(v.victim_id);
  }
  EXPECT_EQ(victims, (std::set<std::string>{"b1", "b2", "c1", "c2", "e1"}));
}

}  // namespace
}  // namespace tau::sched
