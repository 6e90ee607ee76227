#include "resume/retry_policy.h"

#include <gtest/gtest.h>

namespace tau::resume {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

spec::RetrySpec Policy(int64_t max_restarts, std::vector<spec::RetryCondition> on) {
  spec::RetrySpec p;
  p.max_restarts = max_restarts;
  p.on = std::move(on);
  p.backoff = seconds(10);
  p.max_backoff = seconds(60);
  return p;
}

using K = spec::RetryCondition::Kind;

TEST(RetryPolicyTest, InterruptionsAreRetriedWithoutARetryBlockAndNotCharged) {
  for (EndCause cause : {EndCause::kPreempted, EndCause::kGpuFault, EndCause::kNodeLost}) {
    RetryDecision d = DecideRetry(spec::RetrySpec{}, cause, 0, {0, 3}, 10, 0.0);
    EXPECT_TRUE(d.retry);
    EXPECT_FALSE(d.charged);
  }
  EXPECT_EQ(DecideRetry(spec::RetrySpec{}, EndCause::kPreempted, 0, {}, 10, 0.0).reason, "preempted");
  EXPECT_EQ(DecideRetry(spec::RetrySpec{}, EndCause::kGpuFault, 0, {}, 10, 0.0).reason, "gpu_fault");
}

TEST(RetryPolicyTest, PreemptionRequeuesAtOnceOtherInterruptionsBackOff) {
  auto p = Policy(0, {});
  EXPECT_EQ(DecideRetry(p, EndCause::kPreempted, 0, {0, 4}, 10, 0.0).delay, milliseconds(0));
  EXPECT_EQ(DecideRetry(p, EndCause::kNodeLost, 0, {0, 0}, 10, 0.0).delay, seconds(10));
  EXPECT_EQ(DecideRetry(p, EndCause::kNodeLost, 0, {0, 1}, 10, 0.0).delay, seconds(20));
}

TEST(RetryPolicyTest, InterruptionsHaveTheirOwnLimit) {
  RetryDecision d = DecideRetry(Policy(5, {}), EndCause::kPreempted, 0, {0, 10}, 10, 0.0);
  EXPECT_FALSE(d.retry);
  EXPECT_NE(d.refusal.find("interrupted 11 times; the limit is 10"), std::string::npos) << d.refusal;
}

TEST(RetryPolicyTest, FailuresOfTheJobNeedRetryOn) {
  RetryDecision d = DecideRetry(Policy(3, {}), EndCause::kExitCode, 0, {}, 10, 0.0);
  EXPECT_FALSE(d.retry);
  d = DecideRetry(Policy(3, {{K::kExitCode, 3}}), EndCause::kExitCode, 4, {}, 10, 0.0);
  EXPECT_FALSE(d.retry);
  EXPECT_EQ(d.refusal, "retry.on does not list exit:4");
  d = DecideRetry(Policy(3, {{K::kExitCode, 3}}), EndCause::kExitCode, 3, {}, 10, 0.0);
  EXPECT_TRUE(d.retry);
  EXPECT_TRUE(d.charged);
  EXPECT_EQ(d.reason, "exit:3");
  d = DecideRetry(Policy(3, {{K::kOom, 0}}), EndCause::kOom, 0, {}, 10, 0.0);
  EXPECT_TRUE(d.retry);
  EXPECT_EQ(d.reason, "oom");
}

TEST(RetryPolicyTest, TheBudgetRunsOut) {
  auto p = Policy(2, {{K::kExitCode, 1}});
  EXPECT_TRUE(DecideRetry(p, EndCause::kExitCode, 1, {1, 7}, 10, 0.0).retry);
  RetryDecision d = DecideRetry(p, EndCause::kExitCode, 1, {2, 0}, 10, 0.0);
  EXPECT_FALSE(d.retry);
  EXPECT_EQ(d.refusal, "the retry budget is spent (2 of retry.max_restarts 2 used)");
}

TEST(RetryPolicyTest, BackoffDoublesUpToTheCapWithAtMostAQuarterJitter) {
  auto p = Policy(10, {{K::kExitCode, 1}});
  EXPECT_EQ(RetryBackoff(p, 1), seconds(10));
  EXPECT_EQ(RetryBackoff(p, 2), seconds(20));
  EXPECT_EQ(RetryBackoff(p, 3), seconds(40));
  EXPECT_EQ(RetryBackoff(p, 4), seconds(60));
  EXPECT_EQ(RetryBackoff(p, 50), seconds(60));
  EXPECT_EQ(DecideRetry(p, EndCause::kExitCode, 1, {1, 0}, 10, 0.999).delay.count(), 20000 - 4995);
  for (double j : {0.0, 0.3, 0.7, 0.99}) {
    auto delay = DecideRetry(p, EndCause::kExitCode, 1, {0, 0}, 10, j).delay;
    EXPECT_LE(delay, seconds(10));
    EXPECT_GE(delay, milliseconds(7500));
  }
}

TEST(RetryPolicyTest, FinalCausesAreNeverRetried) {
  EXPECT_FALSE(DecideRetry(Policy(5, {{K::kExitCode, 1}}), EndCause::kFinal, 1, {}, 10, 0.0).retry);
  EXPECT_EQ(DecideRetry(Policy(5, {}), EndCause::kFinal, 1, {}, 10, 0.0).refusal, "");
}

TEST(RetryPolicyTest, ASignalIsRetriedWhenRetryOnNamesIt) {
  spec::RetryCondition kill{K::kSignal, 0, 9};
  EXPECT_EQ(kill.ToString(), "signal:KILL");
  RetryDecision d = DecideRetry(Policy(2, {kill}), EndCause::kSignal, 9, {}, 10, 0.0);
  EXPECT_TRUE(d.retry);
  EXPECT_TRUE(d.charged);
  EXPECT_EQ(d.reason, "signal:KILL");
  RetryDecision segv = DecideRetry(Policy(2, {kill}), EndCause::kSignal, 11, {}, 10, 0.0);
  EXPECT_FALSE(segv.retry);
  EXPECT_EQ(segv.refusal, "retry.on does not list signal:SEGV");
}

}  // namespace
}  // namespace tau::resume
