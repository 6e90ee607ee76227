#include "sched/quota_tree.h"

#include <gtest/gtest.h>

namespace tau::sched {
namespace {

const FlavorResource kGpu{"h200", "nvidia.com/gpu"};
using Fit = QuotaTree::Fit;

TEST(QuotaTreeTest, AStandaloneClusterQueueHasItsNominalQuota) {
  QuotaTree t;
  auto cq = t.AddClusterQueue("team-a");
  t.SetQuota(cq, kGpu, {10});
  EXPECT_EQ(t.Available(cq, kGpu), 10);
  t.AddUsage(cq, {{kGpu, 4}});
  EXPECT_EQ(t.Available(cq, kGpu), 6);
  EXPECT_EQ(t.Check(cq, kGpu, 6).fit, Fit::kFit);
  EXPECT_EQ(t.Check(cq, kGpu, 6).borrowing_level, 0);
  EXPECT_EQ(t.Check(cq, kGpu, 7).fit, Fit::kNeedsPreemption);  // if its own workloads made room
  EXPECT_EQ(t.Check(cq, kGpu, 11).fit, Fit::kNoFit);           // never, whatever finishes
  t.RemoveUsage(cq, {{kGpu, 4}});
  EXPECT_EQ(t.Usage(cq, kGpu), 0);
}

TEST(QuotaTreeTest, CohortMembersBorrowWhatOthersDoNotUse) {
  QuotaTree t;
  auto cohort = t.AddCohort("research");
  auto a = t.AddClusterQueue("a");
  auto b = t.AddClusterQueue("b");
  t.SetParent(a, cohort);
  t.SetParent(b, cohort);
  t.SetQuota(a, kGpu, {10});
  t.SetQuota(b, kGpu, {10});
  EXPECT_EQ(t.SubtreeQuota(cohort, kGpu), 20);
  EXPECT_EQ(t.PotentialAvailable(a, kGpu), 20);
  auto fit = t.Check(a, kGpu, 15);
  EXPECT_EQ(fit.fit, Fit::kFit);
  EXPECT_EQ(fit.borrowing_level, 1);
  t.AddUsage(a, {{kGpu, 15}});
  EXPECT_EQ(t.Borrowed(a, kGpu), 5);
  EXPECT_EQ(t.Available(a, kGpu), 5);
  EXPECT_EQ(t.Available(b, kGpu), 5);  // b lent 5 of its 10 to a
  EXPECT_EQ(t.Check(b, kGpu, 6).fit, Fit::kNeedsPreemption);  // reclaimable from a
}

TEST(QuotaTreeTest, ABorrowingLimitCapsWhatAQueueTakesFromTheCohort) {
  QuotaTree t;
  auto cohort = t.AddCohort("research");
  auto a = t.AddClusterQueue("a");
  auto b = t.AddClusterQueue("b");
  t.SetParent(a, cohort);
  t.SetParent(b, cohort);
  t.SetQuota(a, kGpu, {10, 2, std::nullopt});
  t.SetQuota(b, kGpu, {10});
  EXPECT_EQ(t.PotentialAvailable(a, kGpu), 12);
  t.AddUsage(a, {{kGpu, 10}});
  EXPECT_EQ(t.Available(a, kGpu), 2);
  EXPECT_EQ(t.Check(a, kGpu, 2).fit, Fit::kFit);
  EXPECT_EQ(t.Check(a, kGpu, 3).fit, Fit::kNeedsPreemption);
  EXPECT_EQ(t.Check(a, kGpu, 13).fit, Fit::kNoFit);
  EXPECT_EQ(t.Available(b, kGpu), 10);
}

TEST(QuotaTreeTest, ALendingLimitKeepsPartOfTheQuotaForItsOwner) {
  QuotaTree t;
  auto cohort = t.AddCohort("research");
  auto a = t.AddClusterQueue("a");
  auto b = t.AddClusterQueue("b");
  t.SetParent(a, cohort);
  t.SetParent(b, cohort);
  t.SetQuota(a, kGpu, {10});
  t.SetQuota(b, kGpu, {10, std::nullopt, 4});  // lends at most 4
  EXPECT_EQ(t.LocalQuota(b, kGpu), 6);
  EXPECT_EQ(t.SubtreeQuota(cohort, kGpu), 14);
  EXPECT_EQ(t.PotentialAvailable(a, kGpu), 14);
  EXPECT_EQ(t.Available(b, kGpu), 20);
  t.AddUsage(a, {{kGpu, 14}});
  EXPECT_EQ(t.Available(a, kGpu), 0);
  EXPECT_EQ(t.Available(b, kGpu), 6);  // its local 6 stay usable whatever a does
  t.AddUsage(b, {{kGpu, 6}});
  EXPECT_EQ(t.Usage(cohort, kGpu), 14);  // b's first 6 never reach the cohort
  EXPECT_EQ(t.Available(b, kGpu), 0);
}

TEST(QuotaTreeTest, UsageBubblesThroughNestedCohorts) {
  QuotaTree t;
  auto root = t.AddCohort("org");
  auto team = t.AddCohort("team");
  auto a = t.AddClusterQueue("a");
  auto b = t.AddClusterQueue("b");
  auto d = t.AddClusterQueue("d");
  t.SetParent(team, root);
  t.SetParent(a, team);
  t.SetParent(b, team);
  t.SetParent(d, root);
  t.SetQuota(a, kGpu, {5});
  t.SetQuota(b, kGpu, {5});
  t.SetQuota(d, kGpu, {10});
  EXPECT_EQ(t.SubtreeQuota(team, kGpu), 10);
  EXPECT_EQ(t.SubtreeQuota(root, kGpu), 20);
  t.AddUsage(a, {{kGpu, 6}});
  EXPECT_EQ(t.Check(a, kGpu, 1).borrowing_level, 1);   // fits within the team
  EXPECT_EQ(t.Check(a, kGpu, 5).borrowing_level, 2);   // needs the organisation
  t.AddUsage(a, {{kGpu, 6}});
  EXPECT_EQ(t.Usage(team, kGpu), 12);
  EXPECT_EQ(t.Usage(root, kGpu), 12);
  EXPECT_EQ(t.Available(d, kGpu), 8);
  EXPECT_EQ(t.Available(b, kGpu), 8);
}

}  // namespace
}  // namespace tau::sched
