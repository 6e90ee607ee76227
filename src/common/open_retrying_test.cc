#include "common/open_retrying.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <thread>
#include <vector>

namespace tau {
namespace {

// Holds every free descriptor below a lowered limit (restored after).
class NoFreeDescriptors {
 public:
  NoFreeDescriptors() {
    ::getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    low.rlim_cur = 64;
    ::setrlimit(RLIMIT_NOFILE, &low);
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) held_.push_back(fd);
  }
  ~NoFreeDescriptors() {
    FreeOne();
    for (int fd : held_) ::close(fd);
    ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  void FreeOne() {
    if (!held_.empty()) {
      ::close(held_.back());
      held_.pop_back();
    }
  }
  bool full() const { return !held_.empty(); }

 private:
  rlimit saved_{};
  std::vector<int> held_;
};

TEST(OpenRetryingTest, ADescriptorFreedWithinThePatienceIsWaitedFor) {
  NoFreeDescriptors none;
  ASSERT_TRUE(none.full());
  ASSERT_LT(::open("/proc/self/stat", O_RDONLY), 0);
  ASSERT_EQ(errno, EMFILE) << "the shortage is real";
  std::thread freer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    none.FreeOne();
  });
  const int fd = OpenRetrying("/proc/self/stat", O_RDONLY | O_CLOEXEC, std::chrono::seconds(30));
  freer.join();
  EXPECT_GE(fd, 0) << "a brief shortage is not an absent file";
  if (fd >= 0) ::close(fd);
}

TEST(OpenRetryingTest, AShortageThatLastsIsReportedAsItsErrno) {
  NoFreeDescriptors none;
  ASSERT_TRUE(none.full());
  EXPECT_EQ(OpenRetrying("/proc/self/stat", O_RDONLY | O_CLOEXEC, std::chrono::milliseconds(20)), -1);
  EXPECT_EQ(errno, EMFILE);
  EXPECT_TRUE(IsTransientReadError(ErrnoError(EMFILE, "read x")));
  EXPECT_TRUE(IsTransientReadError(ErrnoError(ENFILE, "read x")));
  EXPECT_FALSE(IsTransientReadError(ErrnoError(ENOENT, "read x")));
  EXPECT_FALSE(IsTransientReadError(InvalidArgumentError("status file is not a JSON object")));
}

TEST(OpenRetryingTest, OtherErrorsAreNotWaitedOn) {
  EXPECT_EQ(OpenRetrying("/nonexistent/x", O_RDONLY, std::chrono::seconds(30)), -1);
  EXPECT_EQ(errno, ENOENT);
}

}  // namespace
}  // namespace tau
