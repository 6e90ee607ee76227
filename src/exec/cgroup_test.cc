// The cgroup v2 driver against a fake cgroupfs (a temp folder of plain
// files): CI machines here have hybrid cgroups without writable v2
// controllers. Every folder created is removed.

#include "exec/cgroup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <sstream>

#include "exec/process_watcher.h"
#include "exec/shim_launcher.h"

namespace tau::exec {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tau-cgroupfs-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream(root_ / "cgroup.controllers") << "cpuset cpu io memory hugetlb pids rdma\n";
    std::ofstream(root_ / "cgroup.subtree_control") << "";
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(CgroupTest, EnablesControllersAndWritesLimits) {
  Cgroup2Driver driver(root_);
  ASSERT_TRUE(driver.Enable().ok());
  EXPECT_EQ(Read(root_ / "cgroup.subtree_control"), "+cpu +memory +pids");
  auto leaf = driver.CreateLeaf("j_abc-1-0", {500, int64_t{256} << 20, 4096});
  ASSERT_TRUE(leaf.ok()) << leaf.status().ToString();
  EXPECT_EQ(*leaf, (root_ / "j_abc-1-0").string());
  EXPECT_EQ(Read(root_ / "j_abc-1-0" / "cpu.max"), "50000 100000");
  EXPECT_EQ(Read(root_ / "j_abc-1-0" / "memory.max"), "268435456");
  EXPECT_EQ(Read(root_ / "j_abc-1-0" / "pids.max"), "4096");
  EXPECT_FALSE(driver.OomKilled(*leaf));
  std::ofstream(root_ / "j_abc-1-0" / "memory.events") << "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n";
  EXPECT_TRUE(driver.OomKilled(*leaf));
  ASSERT_TRUE(driver.Remove(*leaf).ok());
  EXPECT_FALSE(fs::exists(root_ / "j_abc-1-0"));
  EXPECT_TRUE(driver.Remove(*leaf).ok());  // already gone
}

TEST_F(CgroupTest, MissingControllersAreNamed) {
  std::ofstream(root_ / "cgroup.controllers") << "hugetlb\n";
  Cgroup2Driver driver(root_);
  Status st = driver.Enable();
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("does not offer the cpu, memory, pids controllers"));
}

TEST_F(CgroupTest, TheShimJoinsItsLeafBeforeStartingTheJob) {
  Cgroup2Driver driver(root_);
  auto leaf = driver.CreateLeaf("leaf", {1000, 1 << 30, 100});
  ASSERT_TRUE(leaf.ok());
  std::ofstream(fs::path(*leaf) / "cgroup.procs");  // the kernel provides it in every cgroup
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  ProcessWatcher watcher([&](uint64_t) {
    std::lock_guard lock(mu);
    done = true;
    cv.notify_all();
  });
  ShimLaunch l;
  l.shim_path = std::string(TAU_BIN_DIR) + "/tau-shim";
  l.argv = {"/bin/true"};
  l.env = {"PATH=/usr/bin:/bin"};
  l.cwd = root_.string();
  l.log_path = (root_ / "log").string();
  l.status_path = (root_ / "status.json").string();
  l.lock_path = (root_ / "lock").string();
  l.cgroup_dir = *leaf;
  auto shim = LaunchShim(l);
  ASSERT_TRUE(shim.ok());
  ASSERT_TRUE(watcher.Watch(1, shim->pid).ok());
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; }));
  }
  EXPECT_EQ(Read(fs::path(*leaf) / "cgroup.procs"), std::to_string(shim->pid) + "\n");
  ASSERT_TRUE(driver.Remove(*leaf).ok());
}

TEST_F(CgroupTest, DetectionExplainsWhyItCannotBeUsedOnAHostWithoutV2Controllers) {
  // A cgroup root that is not a cgroup v2 mount.
  auto driver = DetectCgroup2(root_ / "not-a-cgroup2-mount");
  ASSERT_FALSE(driver.ok());
  EXPECT_EQ(driver.error().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tau::exec
