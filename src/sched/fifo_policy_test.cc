#include <gtest/gtest.h>

#include "sched/admission_policy.h"

namespace tau::sched {
namespace {

Resources R(int64_t cpus_milli, int64_t mem, int64_t gpus = 0) { return {cpus_milli, mem, gpus}; }

TEST(FifoPolicyTest, AdmitsInOrderWhileCapacityLasts) {
  FifoPolicy p;
  std::vector<PendingJob> q = {{"a", R(1000, 10)}, {"b", R(1000, 10)}, {"c", R(1000, 10)}};
  EXPECT_EQ(p.Admit(q, R(2000, 100)), (std::vector<std::string>{"a", "b"}));
}

TEST(FifoPolicyTest, SmallJobsPassABlockedLargeOne) {
  FifoPolicy p;
  std::vector<PendingJob> q = {{"big", R(1000, 10, 4)}, {"small", R(500, 10)}};
  EXPECT_EQ(p.Admit(q, R(2000, 100, 2)), (std::vector<std::string>{"small"}));
}

TEST(FifoPolicyTest, NothingFitsNothingStarts) {
  FifoPolicy p;
  std::vector<PendingJob> q = {{"a", R(3000, 10)}};
  EXPECT_TRUE(p.Admit(q, R(2000, 100)).empty());
}

TEST(FifoPolicyTest, InfeasibleJobsNameTheGap) {
  FifoPolicy p;
  EXPECT_TRUE(p.CheckFeasible(R(2000, 1 << 20, 1), R(2000, 1 << 20, 1)).ok());
  Status st = p.CheckFeasible(R(1000, 1, 64), R(2000, 1 << 30, 8));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(st.message(), "the job can never run on this machine: 64 GPUs requested, the machine has 8");
  Status both = p.CheckFeasible(R(4000, int64_t{3} << 30), R(2000, int64_t{2} << 30));
  EXPECT_NE(both.message().find("4 CPU requested, the machine has 2; 3Gi memory requested, the machine has 2Gi"),
            std::string::npos)
      << both.message();
}

}  // namespace
}  // namespace tau::sched
