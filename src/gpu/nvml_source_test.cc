// The NVML source against the fake libnvidia-ml.so.1 (tests/fakes).

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gpu/gpu_source.h"

namespace tau::gpu {
namespace {

namespace fs = std::filesystem;

class NvmlSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() / ("tau-fake-nvml-" + std::to_string(::getpid()) + ".json");
    ::setenv("TAU_FAKE_NVML", path_.c_str(), 1);
  }
  void TearDown() override { fs::remove(path_); }
  void Scenario(const std::string& json) { std::ofstream(path_) << json; }
  fs::path path_;
};

TEST_F(NvmlSourceTest, InventoryTelemetryAndEvents) {
  Scenario(R"({"driver_version": "580.159.03", "cuda_version": 13000,
    "devices": [
      {"uuid": "GPU-aaaa", "name": "NVIDIA H200", "memory_total_mib": 143771, "temperature_c": 41,
       "power_mw": 72000, "utilization_gpu": 3, "ecc_uncorrected": 0, "clock_event_reasons": 64,
       "nvlinks": [1, 1, 0], "pcie_replays": 7, "recovery_action": 2},
      {"uuid": "not-a-uuid-format", "name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559, "lost": false}],
    "events": [{"at_s": 0.0, "gpu": 1, "xid": 79}]})");
  auto source = OpenNvml(TAU_FAKE_NVML_PATH);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  const Inventory& inv = (*source)->inventory();
  EXPECT_EQ(inv.driver_version, "580.159.03");
  EXPECT_EQ(inv.cuda_version, "13.0");
  ASSERT_EQ(inv.gpus.size(), 2u);
  EXPECT_EQ(inv.gpus[0].uuid, "GPU-aaaa");
  EXPECT_EQ(inv.gpus[0].gpu_class, "h200-141gb");
  EXPECT_EQ(inv.gpus[0].pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(inv.gpus[1].uuid, "not-a-uuid-format") << "UUIDs are opaque";
  EXPECT_EQ(inv.gpus[1].gpu_class, "h100-80gb");

  GpuSample s = (*source)->Sample(0);
  EXPECT_TRUE(s.readable);
  EXPECT_EQ(s.temperature_c, 41);
  EXPECT_EQ(s.power_mw, 72000);
  EXPECT_EQ(s.ecc_uncorrected, 0);
  EXPECT_FALSE(s.remapped_pending.has_value()) << "NOT_SUPPORTED leaves it out";
  EXPECT_EQ(s.clock_event_reasons, 64u);
  EXPECT_EQ(s.nvlinks, 3);
  EXPECT_EQ(s.nvlinks_down, 1);
  EXPECT_EQ(s.pcie_replays, 7);
  EXPECT_EQ(s.recovery_action, 2);
  GpuSample bare = (*source)->Sample(1);
  EXPECT_TRUE(bare.readable) << "NOT_SUPPORTED is an answer, not missing telemetry";
  EXPECT_FALSE(bare.temperature_c.has_value());
  EXPECT_FALSE(bare.nvlinks.has_value()) << "a GPU without NVLink";

  auto event = (*source)->WaitXid(std::chrono::milliseconds(2000));
  ASSERT_TRUE(event.ok());
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((*event)->gpu_index, 1);
  EXPECT_EQ((*event)->xid, 79);
  auto none = (*source)->WaitXid(std::chrono::milliseconds(20));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  // The scenario is read again when it changes: the GPU is lost now.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Scenario(R"({"devices": [{"uuid": "GPU-aaaa", "lost": true}, {"uuid": "not-a-uuid-format"}]})");
  GpuSample lost = (*source)->Sample(0);
  EXPECT_TRUE(lost.lost);
  EXPECT_NE(lost.error.find("NVML_ERROR_GPU_IS_LOST"), std::string::npos) << lost.error;
}

TEST_F(NvmlSourceTest, AMissingLibraryOrAFailedInitIsAnError) {
  auto missing = OpenNvml("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot load /nonexistent/libnvidia-ml.so.1"), std::string::npos);
  Scenario(R"({"init_error": 9})");
  auto failed = OpenNvml(TAU_FAKE_NVML_PATH);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("NVML_ERROR_DRIVER_NOT_LOADED (9)"), std::string::npos)
      << failed.status().message();
}

TEST(GpuClassTest, ModelAndMemoryInGiBRoundedUp) {
  EXPECT_EQ(GpuClassOf("NVIDIA H200", 143771), "h200-141gb");
  EXPECT_EQ(GpuClassOf("NVIDIA A100-SXM4-40GB", 40960), "a100-sxm4-40gb-40gb");
  EXPECT_EQ(GpuClassOf("Tesla T4", 15360), "tesla-15gb");
}

}  // namespace
}  // namespace tau::gpu
