#include "server/control_loop.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/result.h"

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

TEST(ControlLoopTest, AThrowingCallFailsItsRequestAndTheLoopKeepsServing) {
  ControlLoop loop;
  log::TraceScope trace("feedc0de00000001");
  Status st = loop.Call([]() -> Status { throw std::runtime_error("bad index"); });
  EXPECT_EQ(st.code(), StatusCode::kInternal);
  EXPECT_NE(st.message().find("bad index"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("feedc0de00000001"), std::string::npos) << st.message();
  Result<int> r = loop.Call([]() -> Result<int> { throw std::out_of_range("map::at"); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("map::at"), std::string::npos);
  // A call whose result is no Status gets the exception itself.
  EXPECT_THROW(loop.Call([]() -> int { throw std::runtime_error("plain"); }), std::runtime_error);
  // Posted tasks and timers that throw do not stop the loop either.
  loop.Post([] { throw std::runtime_error("posted"); });
  loop.PostAfter(std::chrono::milliseconds(0), [] { throw 42; });
  std::promise<void> timer_ran;
  loop.PostAfter(std::chrono::milliseconds(1), [&] { timer_ran.set_value(); });
  timer_ran.get_future().wait();
  EXPECT_EQ(loop.Call([] { return 7; }), 7);
}

TEST(ControlLoopTest, TasksKnowTheyRunOnTheLoopThread) {
  ControlLoop loop;
  EXPECT_FALSE(ControlLoop::OnLoopThread());
  EXPECT_TRUE(loop.Call([] { return ControlLoop::OnLoopThread(); }));
}

}  // namespace
}  // namespace tau::server
