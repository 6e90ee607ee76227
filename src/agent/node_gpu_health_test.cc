#include "agent/node_gpu_health.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tau::agent {
namespace {

using gpu::HealthState;
using ::testing::HasSubstr;

std::vector<gpu::GpuInfo> TwoGpus() {
  return {{0, "GPU-aaaa", "NVIDIA H100 80GB HBM3", "0000:01:00.0", 81559, "h100-80gb", {}, {}},
          {1, "GPU-bbbb", "NVIDIA H100 80GB HBM3", "0000:02:00.0", 81559, "h100-80gb", {}, {}}};
}

gpu::GpuSample Good() {
  gpu::GpuSample s;
  s.readable = true;
  s.temperature_c = 40;
  return s;
}

NodeGpuHealth Polled() {
  NodeGpuHealth h(TwoGpus(), {}, gpu::XidCatalog::Defaults());
  h.OnSample(0, Good());
  h.OnSample(1, Good());
  return h;
}

TEST(NodeGpuHealthTest, GpusAreUnknownUntilPolledAndTheNodeIsNotUnhealthyMeanwhile) {
  NodeGpuHealth h(TwoGpus(), {}, gpu::XidCatalog::Defaults());
  EXPECT_EQ(h.gpus()[0].health.state(), HealthState::kUnknown);
  EXPECT_TRUE(h.Healthy());
  EXPECT_THAT(h.Message(), HasSubstr("2 not read yet"));
  EXPECT_TRUE(h.OnSample(0, Good()));
  EXPECT_FALSE(h.OnSample(0, Good())) << "no change, nothing to report";
  EXPECT_EQ(h.gpus()[0].health.state(), HealthState::kHealthy);
}

TEST(NodeGpuHealthTest, AResetClassXidMakesThatGpuUnhealthyUntilCleared) {
  NodeGpuHealth h = Polled();
  EXPECT_TRUE(h.OnXid({1, 95}));
  EXPECT_EQ(h.gpus()[1].health.state(), HealthState::kUnhealthy);
  EXPECT_EQ(h.gpus()[0].health.state(), HealthState::kHealthy);
  EXPECT_EQ(h.gpus()[1].last_xid, 95);
  EXPECT_FALSE(h.Healthy());
  EXPECT_EQ(h.Reason(), "XidFatal");
  EXPECT_THAT(h.Message(), HasSubstr("GPU 1 GPU-bbbb Unhealthy: XID 95"));
  // Sticky: good polls do not clear it.
  EXPECT_FALSE(h.OnSample(1, Good()));
  EXPECT_FALSE(h.Healthy());
  // An operator's clear: Unknown, then Healthy at the next good poll.
  auto cleared = h.Clear("GPU-bbbb");
  ASSERT_TRUE(cleared.ok());
  EXPECT_TRUE(*cleared);
  EXPECT_TRUE(h.Healthy());
  EXPECT_TRUE(h.OnSample(1, Good()));
  EXPECT_EQ(h.gpus()[1].health.state(), HealthState::kHealthy);
}

TEST(NodeGpuHealthTest, AnApplicationXidLeavesTheGpuInService) {
  NodeGpuHealth h = Polled();
  EXPECT_FALSE(h.OnXid({0, 13}));  // graphics engine exception: the job's fault
  EXPECT_TRUE(h.Healthy());
  EXPECT_THAT(h.last_event(), HasSubstr("XID 13"));
}

TEST(NodeGpuHealthTest, ARebootClassXidOrRecoveryActionTakesEveryGpuOut) {
  NodeGpuHealth h = Polled();
  EXPECT_TRUE(h.OnXid({0, 79}));  // fallen off the bus
  EXPECT_EQ(h.gpus()[0].health.state(), HealthState::kUnhealthy);
  EXPECT_EQ(h.gpus()[1].health.state(), HealthState::kUnhealthy);

  NodeGpuHealth r = Polled();
  gpu::GpuSample reboot = Good();
  reboot.recovery_action = 2;
  EXPECT_TRUE(r.OnSample(1, reboot));
  EXPECT_EQ(r.gpus()[0].health.state(), HealthState::kUnhealthy);
  EXPECT_EQ(r.Reason(), "RecoveryAction");
}

TEST(NodeGpuHealthTest, ClearNamesAGpuByIndexUuidOrAll) {
  NodeGpuHealth h = Polled();
  h.OnXid({0, 79});
  EXPECT_FALSE(h.Clear("GPU-zzzz").ok());
  EXPECT_FALSE(h.Clear("7").ok());
  ASSERT_TRUE(h.Clear("0").ok());
  EXPECT_FALSE(h.Healthy()) << "GPU 1 is still out";
  ASSERT_TRUE(h.Clear("all").ok());
  EXPECT_TRUE(h.Healthy());
}

TEST(NodeGpuHealthTest, AnXidForAGpuTheNodeDoesNotListChangesNothing) {
  NodeGpuHealth h = Polled();
  EXPECT_FALSE(h.OnXid({-1, 95}));
  EXPECT_FALSE(h.OnXid({5, 95}));
  EXPECT_TRUE(h.Healthy());
}

}  // namespace
}  // namespace tau::agent
