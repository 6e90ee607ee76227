#include "server/control_loop.h"

#include <gtest/gtest.h>

#include <vector>

namespace tau::server {
namespace {

TEST(ControlLoopTest, TimersRunOnTheLoopInDeadlineOrderAfterPostedTasks) {
  ControlLoop loop;
  std::vector<int> order;  // touched only on the loop
  // Posted from a task on the loop, so that nothing runs before all three
  // are in: then the plain task comes first, the due timer next.
  loop.Call([&] {
    loop.PostAfter(std::chrono::milliseconds(40), [&] { order.push_back(3); });
    loop.PostAfter(std::chrono::milliseconds(0), [&] { order.push_back(2); });
    loop.Post([&] { order.push_back(1); });
  });
  // Wait for the later timer by posting a timer after it and blocking on it.
  std::promise<void> done;
  loop.PostAfter(std::chrono::milliseconds(60), [&] { done.set_value(); });
  done.get_future().wait();
  EXPECT_EQ(loop.Call([&] { return order; }), (std::vector<int>{1, 2, 3}));
}

TEST(ControlLoopTest, PendingTimersAreDroppedAtStop) {
  bool ran = false;
  {
    ControlLoop loop;
    loop.PostAfter(std::chrono::hours(1), [&] { ran = true; });
  }
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace tau::server
