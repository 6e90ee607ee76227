#include "sched/requeue_backoff.h"

#include <gtest/gtest.h>

namespace tau::sched {
namespace {

TEST(RequeueBackoffTest, DoublesFromTheBaseUpToTheMaximum) {
  RequeuingStrategy kueue_defaults;
  struct Case {
    int64_t requeue_count;
    int64_t delay_seconds;
  };
  for (const Case& c : std::initializer_list<Case>{
           {1, 60}, {2, 120}, {3, 240}, {6, 1920}, {7, 3600}, {8, 3600}, {1000, 3600}}) {
    auto delay = RequeueDelayMs(kueue_defaults, c.requeue_count);
    ASSERT_TRUE(delay.has_value()) << c.requeue_count;
    EXPECT_EQ(*delay, c.delay_seconds * 1000) << "requeue " << c.requeue_count;
  }
}

TEST(RequeueBackoffTest, PastTheLimitCountTheWorkloadIsDeactivated) {
  RequeuingStrategy s{10, 100, 2};
  EXPECT_EQ(RequeueDelayMs(s, 1), 10'000);
  EXPECT_EQ(RequeueDelayMs(s, 2), 20'000);
  EXPECT_EQ(RequeueDelayMs(s, 3), std::nullopt);
}

TEST(RequeueBackoffTest, TheBackoffMessageRoundsTheTimeLeftUpToWholeSeconds) {
  EXPECT_EQ(BackoffMessage(59'001), "requeued after an eviction; may be admitted again in 60s");
  EXPECT_EQ(BackoffMessage(60'000), "requeued after an eviction; may be admitted again in 60s");
  EXPECT_EQ(BackoffMessage(1), "requeued after an eviction; may be admitted again in 1s");
  EXPECT_EQ(BackoffMessage(-5), "requeued after an eviction; may be admitted again in 0s");
}

}  // namespace
}  // namespace tau::sched
