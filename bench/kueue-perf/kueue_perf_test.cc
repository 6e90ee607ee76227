#include <gtest/gtest.h>

#include <string>

#include "generator_config.h"
#include "replay.h"

namespace tau::bench {
namespace {

GeneratorConfig Parse(const std::string& yaml) {
  auto c = ParseGeneratorConfig(yaml, "test.yaml");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : GeneratorConfig{};
}

std::string ParseError(const std::string& yaml) {
  auto c = ParseGeneratorConfig(yaml, "test.yaml");
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : c.error().message();
}

TEST(GeneratorConfigTest, ReadsTheCommittedScaledBaseline) {
  auto c = LoadGeneratorConfig(std::string(TAU_SOURCE_DIR) + "/bench/kueue-perf/baseline-tenth.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->cohorts.size(), 1u);
  EXPECT_EQ(c->cohorts[0].class_name, "cohort");
  EXPECT_EQ(c->cohorts[0].count, 5);
  ASSERT_EQ(c->cohorts[0].queues_sets.size(), 1u);
  const QueuesSet& q = c->cohorts[0].queues_sets[0];
  EXPECT_EQ(q.count, 6);
  EXPECT_EQ(q.nominal_quota, Quantity::FromUnits(20));
  ASSERT_TRUE(q.borrowing_limit.has_value());
  EXPECT_EQ(*q.borrowing_limit, Quantity::FromUnits(100));
  EXPECT_EQ(q.reclaim_within_cohort, "Any");
  EXPECT_EQ(q.within_cluster_queue, "LowerPriority");
  ASSERT_EQ(q.workloads_sets.size(), 3u);
  EXPECT_EQ(q.workloads_sets[0].count, 35);
  EXPECT_EQ(q.workloads_sets[0].creation_interval_ms, 100);
  EXPECT_EQ(q.workloads_sets[2].workloads[0].class_name, "large");
  EXPECT_EQ(q.workloads_sets[2].workloads[0].runtime_ms, 1000);
  EXPECT_EQ(q.workloads_sets[2].workloads[0].priority, 200);
  EXPECT_EQ(q.workloads_sets[2].workloads[0].request, Quantity::FromUnits(20));
}

TEST(GeneratorConfigTest, ErrorsNameTheFileLineAndField) {
  std::string e = ParseError(
      "cohorts:\n"
      "- className: c\n"
      "  count: 1\n"
      "  queuesSets:\n"
      "  - className: q\n"
      "    count: 1\n"
      "    nominalQuota: 20Gb\n");
  EXPECT_NE(e.find("test.yaml:7: cohorts[0].queuesSets[0].nominalQuota: "), std::string::npos) << e;
}

TEST(GeneratorConfigTest, RefusesTopologyFieldsUnknownFieldsAndMissingOnes) {
  const std::string head =
      "cohorts:\n- className: c\n  count: 1\n  queuesSets:\n  - className: q\n    count: 1\n"
      "    nominalQuota: 1\n    workloadsSets:\n    - count: 1\n      workloads:\n      - className: w\n";
  EXPECT_NE(ParseError(head + "        request: 1\n        podCount: 4\n").find("topology-aware scheduling is not replayed"),
            std::string::npos);
  EXPECT_NE(ParseError(head + "        request: 1\n        runtime: 5\n")
                .find("cohorts[0].queuesSets[0].workloadsSets[0].workloads[0].runtime: unknown field"),
            std::string::npos);
  EXPECT_NE(ParseError(head + "        runtimeMs: 5\n").find("workloads[0].request: missing"), std::string::npos);
  EXPECT_NE(ParseError(head + "        request: 1\n        priority: high\n").find("\"high\" is not a whole number"),
            std::string::npos);
  EXPECT_NE(ParseError("cohorts: []\n").find("at least one cohort"), std::string::npos);
}

TEST(GeneratorConfigTest, AMappingAsAKeyIsAnErrorNotAThrow) {
  EXPECT_NE(ParseError("cohorts:\n- ? {a: 1}\n  : 2\n").find("test.yaml:"), std::string::npos);
}

TEST(ReplayTest, NamesObjectsAsKueuesGenerator) {
  GeneratorConfig c = Parse(
      "cohorts:\n- className: team\n  count: 2\n  queuesSets:\n  - className: cq\n    count: 1\n"
      "    nominalQuota: 3\n    reclaimWithinCohort: Any\n");
  sched::KueueConfig k = BuildKueueConfig(c);
  ASSERT_EQ(k.cluster_queues.size(), 2u);
  EXPECT_EQ(k.cluster_queues[1].name, "cq-0-0-team-1");
  EXPECT_EQ(k.cluster_queues[1].cohort_name, "team-1");
  EXPECT_EQ(k.cluster_queues[1].preemption.reclaim_within_cohort, "Any");
  EXPECT_EQ(k.cluster_queues[1].preemption.within_cluster_queue, "Never");
  EXPECT_FALSE(k.cluster_queues[1].resource_groups[0].flavors[0].resources[0].borrowing_limit.has_value());
  ASSERT_EQ(k.local_queues.size(), 2u);
  EXPECT_EQ(k.local_queues[1].namespace_, "cq-0-0-team-1");
  EXPECT_EQ(k.local_queues[1].cluster_queue, "cq-0-0-team-1");
}

// Two 1-CPU workloads, created at 10 and 20 ms, on a 1-CPU queue: the
// second waits for the first to finish at 110 ms.
TEST(ReplayTest, AWorkloadWaitsForQuotaUntilTheOneBeforeFinishes) {
  auto r = Replay(Parse(
      "cohorts:\n- className: c\n  count: 1\n  queuesSets:\n  - className: q\n    count: 1\n"
      "    nominalQuota: 1\n    workloadsSets:\n    - count: 2\n      creationIntervalMs: 10\n      workloads:\n"
      "      - className: w\n        runtimeMs: 100\n        request: 1\n"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->workloads, 2);
  EXPECT_EQ(r->finished, 2);
  EXPECT_EQ(r->makespan_ms, 210);
  const WorkloadClassStats& w = r->workload_classes.at("w");
  EXPECT_EQ(w.count, 2);
  EXPECT_EQ(w.AverageTimeToAdmissionMs(), 45);  // (0 + 90) / 2
  EXPECT_EQ(w.AverageTimeToFinishMs(), 145);    // (100 + 190) / 2
  EXPECT_EQ(w.evictions, 0);
  // 1 CPU held from 10 to 210 ms out of 210 ms.
  EXPECT_NEAR(r->cluster_queue_classes.at("q").AverageUsagePercent(), 100.0 * 200 / 210, 1e-9);
}

// withinClusterQueue LowerPriority: the high-priority workload created at
// 50 ms evicts the low one, which holds its quota until the eviction ends
// 5 ms later, then queues again and runs its full runtime once re-admitted.
TEST(ReplayTest, APreemptedWorkloadIsRequeuedAndRunsAgain) {
  auto r = Replay(Parse(
      "cohorts:\n- className: c\n  count: 1\n  queuesSets:\n  - className: q\n    count: 1\n"
      "    nominalQuota: 1\n    withinClusterQueue: LowerPriority\n    workloadsSets:\n"
      "    - count: 1\n      creationIntervalMs: 10\n      workloads:\n"
      "      - className: low\n        runtimeMs: 100\n        request: 1\n"
      "    - count: 1\n      creationIntervalMs: 50\n      workloads:\n"
      "      - className: high\n        runtimeMs: 100\n        priority: 10\n        request: 1\n"),
                  ReplayOptions{.eviction_delay_ms = 5});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->evictions, 1);
  EXPECT_EQ(r->admissions, 3);
  EXPECT_EQ(r->makespan_ms, 255);
  EXPECT_EQ(r->workload_classes.at("low").evictions, 1);
  EXPECT_EQ(r->workload_classes.at("low").AverageTimeToAdmissionMs(), 145);  // re-admitted at 155
  EXPECT_EQ(r->workload_classes.at("low").AverageTimeToFinishMs(), 245);
  EXPECT_EQ(r->workload_classes.at("high").AverageTimeToAdmissionMs(), 5);   // once the eviction ended
  EXPECT_EQ(r->workload_classes.at("high").AverageTimeToFinishMs(), 105);
}

// A borrower holding its cohort's idle quota is evicted when the lender
// (reclaimWithinCohort Any) needs its nominal quota back.
TEST(ReplayTest, ALenderReclaimsItsQuotaFromABorrower) {
  auto r = Replay(Parse(
      "cohorts:\n- className: c\n  count: 1\n  queuesSets:\n"
      "  - className: borrower\n    count: 1\n    nominalQuota: 1\n    workloadsSets:\n"
      "    - count: 1\n      creationIntervalMs: 10\n      workloads:\n"
      "      - className: big\n        runtimeMs: 1000\n        request: 2\n"
      "  - className: lender\n    count: 1\n    nominalQuota: 1\n    reclaimWithinCohort: Any\n    workloadsSets:\n"
      "    - count: 1\n      creationIntervalMs: 20\n      workloads:\n"
      "      - className: small\n        runtimeMs: 100\n        request: 1\n"),
                  ReplayOptions{.eviction_delay_ms = 5});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->evictions, 1);
  EXPECT_EQ(r->workload_classes.at("big").evictions, 1);
  EXPECT_EQ(r->workload_classes.at("small").AverageTimeToAdmissionMs(), 5);
  EXPECT_EQ(r->workload_classes.at("big").AverageTimeToAdmissionMs(), 115);  // again at 125, when small ends
  EXPECT_EQ(r->makespan_ms, 1125);
}

// One cohort of Kueue's scaled baseline: as in Kueue's runs, no large
// workload is evicted, and with no eviction delay at all the decisions of
// each instant settle (reclaimed large workloads no longer reclaim from one
// queue after another).
TEST(ReplayTest, TheScaledBaselineEvictsNoLargeWorkloadAndSettlesWithoutAnEvictionDelay) {
  auto c = LoadGeneratorConfig(std::string(TAU_SOURCE_DIR) + "/bench/kueue-perf/baseline-tenth.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->cohorts.size(), 1u);
  c->cohorts[0].count = 1;
  for (int64_t delay : {0, 10}) {
    SCOPED_TRACE("eviction delay " + std::to_string(delay) + " ms");
    auto r = Replay(*c, ReplayOptions{.eviction_delay_ms = delay});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->finished, 300);
    EXPECT_EQ(r->workload_classes.at("large").evictions, 0);
  }
}

TEST(ReplayTest, ANegativeEvictionDelayIsAnError) {
  auto r = Replay(Parse("cohorts:\n- className: c\n  count: 1\n"), ReplayOptions{.eviction_delay_ms = -1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "eviction delay must not be negative");
}

TEST(ReplayTest, AWorkloadAboveEveryQuotaIsAnError) {
  auto r = Replay(Parse(
      "cohorts:\n- className: c\n  count: 1\n  queuesSets:\n  - className: q\n    count: 1\n"
      "    nominalQuota: 1\n    borrowingLimit: 0\n    workloadsSets:\n    - count: 1\n      workloads:\n"
      "      - className: w\n        request: 2\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("workload q-0-0-c-0/w-0-0-0"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace tau::bench
