#include "gpu/placement.h"

#include <gtest/gtest.h>

namespace tau::gpu {
namespace {

GpuCandidate Gpu(int index, HealthState health, int64_t temp, int64_t util = 0) {
  return GpuCandidate{index, health, temp, util, 0};
}

TEST(PlacementTest, HealthyGpusGoFirstAndSuspectOnesOnlyWhenNothingElseFits) {
  std::vector<GpuCandidate> gpus = {Gpu(0, HealthState::kSuspect, 30), Gpu(1, HealthState::kHealthy, 70),
                                    Gpu(2, HealthState::kHealthy, 60)};
  EXPECT_EQ(PickGpus(gpus, 1), std::vector<int>({2})) << "the coolest Healthy GPU, not the cooler Suspect one";
  EXPECT_EQ(PickGpus(gpus, 2), std::vector<int>({1, 2}));
  EXPECT_EQ(PickGpus(gpus, 3), std::vector<int>({0, 1, 2})) << "Suspect when nothing else fits";
  EXPECT_EQ(PickGpus(gpus, 4), std::vector<int>({0, 1, 2}));
}

TEST(PlacementTest, AmongEqualsTheCoolestThenTheLeastUsedThenTheLowestIndex) {
  EXPECT_EQ(PickGpus({Gpu(0, HealthState::kHealthy, 50, 90), Gpu(1, HealthState::kHealthy, 50, 10)}, 1),
            std::vector<int>({1}));
  EXPECT_EQ(PickGpus({Gpu(0, HealthState::kHealthy, 50, 10), Gpu(1, HealthState::kHealthy, 50, 10)}, 1),
            std::vector<int>({0}));
  GpuCandidate unread{3, HealthState::kHealthy, std::nullopt, std::nullopt, std::nullopt};
  EXPECT_EQ(PickGpus({unread, Gpu(4, HealthState::kHealthy, 80)}, 1), std::vector<int>({4}))
      << "a GPU whose temperature is known ranks before one whose is not";
}

}  // namespace
}  // namespace tau::gpu
