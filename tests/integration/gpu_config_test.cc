// GPUs listed in TAU_HOME/gpus.json are capacity: jobs get them by UUID in
// CUDA_VISIBLE_DEVICES and wait when they are taken.

#include <gmock/gmock.h>

#include <fstream>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

using ::testing::HasSubstr;

class GpuConfigTest : public DaemonTest {
 protected:
  void BeforeStart() override {
    std::filesystem::create_directories(home_);
    std::ofstream(home_ / "gpus.json")
        << R"({"gpus": [{"uuid": "GPU-aaaa", "model": "NVIDIA H200", "memory_mib": 143771},
                        {"uuid": "GPU-bbbb", "model": "NVIDIA H200", "memory_mib": 143771}]})";
  }
};

TEST_F(GpuConfigTest, JobsGetGpusByUuidAndWaitForThem) {
  CommandResult one = Tau({"run", "-f", WriteSpec("one.yaml",
      "schema_version: 1\nname: one\nrun:\n  entrypoint: 'echo gpus=$CUDA_VISIBLE_DEVICES'\ncompute:\n  gpus: 1\n  cpus: 100m\n")});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(one.out, HasSubstr("gpus=GPU-aaaa\n"));

  std::string both = WriteSpec("both.yaml",
      "schema_version: 1\nname: both\nrun:\n  entrypoint: 'echo gpus=$CUDA_VISIBLE_DEVICES; sleep 0.5'\ncompute:\n  gpus: 2\n  cpus: 100m\n");
  std::string first = Submit(both);
  std::string second = Submit(both);
  EXPECT_EQ(Job(second)["state"], "Queued");
  ASSERT_TRUE(WaitForState(second, "Succeeded"));
  EXPECT_THAT(Tau({"logs", first}).out, HasSubstr("gpus=GPU-aaaa,GPU-bbbb\n"));
  EXPECT_GE(Job(second)["started_at"].get<std::string>(), Job(first)["finished_at"].get<std::string>());

  CommandResult three = Tau({"run", WriteSpec("three.yaml",
      "schema_version: 1\nname: three\nrun:\n  entrypoint: 'true'\ncompute:\n  gpus: 3\n")});
  EXPECT_EQ(three.exit_code, 1);
  EXPECT_THAT(three.err, HasSubstr("3 GPUs requested, the machine has 2"));
}

}  // namespace
}  // namespace tau::testing
