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
  // The fake reads the file again when its mtime changes: a pause first
  // keeps two writes from sharing one timestamp.
  void Scenario(const std::string& json) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ofstream(path_) << json;
  }
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

  auto registered = (*source)->RegisterXidEvents();
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  EXPECT_EQ(registered->watched, std::vector<int>({0, 1}));
  EXPECT_TRUE(registered->failed.empty());
  auto event = (*source)->WaitXid(std::chrono::milliseconds(2000));
  ASSERT_TRUE(event.ok());
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((*event)->gpu_index, 1);
  EXPECT_EQ((*event)->xid, 79);
  auto none = (*source)->WaitXid(std::chrono::milliseconds(20));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());

  // The scenario is read again when it changes: the GPU is lost now.
  Scenario(R"({"devices": [{"uuid": "GPU-aaaa", "lost": true}, {"uuid": "not-a-uuid-format"}]})");
  GpuSample lost = (*source)->Sample(0);
  EXPECT_TRUE(lost.lost);
  EXPECT_NE(lost.error.find("NVML_ERROR_GPU_IS_LOST"), std::string::npos) << lost.error;
}

TEST_F(NvmlSourceTest, EventErrorsAreReportedAndANewEventSetReadsEventsAgain) {
  const std::string devices = R"("devices": [{"uuid": "GPU-aaaa"}, {"uuid": "GPU-bbbb"}, {"uuid": "GPU-cccc", "supports_events": false}])";
  Scenario("{" + devices + R"(, "event_wait_error": 999})");
  auto source = OpenNvml(TAU_FAKE_NVML_PATH);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ((*source)->WaitXid(std::chrono::milliseconds(10)).status().code(), StatusCode::kFailedPrecondition)
      << "nothing is registered yet";
  auto registered = (*source)->RegisterXidEvents();
  ASSERT_TRUE(registered.ok());
  EXPECT_EQ(registered->watched, std::vector<int>({0, 1})) << "GPU 2 supports no events: neither watched nor failed";
  auto broken = (*source)->WaitXid(std::chrono::milliseconds(10));
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(broken.status().message(), "nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999): Unknown Error");

  // The event set cannot be made again for a while, then one GPU cannot be registered.
  Scenario("{" + devices + R"(, "event_set_create_error": 999})");
  auto no_set = (*source)->RegisterXidEvents();
  ASSERT_FALSE(no_set.ok());
  EXPECT_EQ(no_set.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(no_set.status().message(), "nvmlEventSetCreate: NVML_ERROR_UNKNOWN (999): Unknown Error");
  Scenario(R"({"devices": [{"uuid": "GPU-aaaa", "register_events_error": 999}, {"uuid": "GPU-bbbb"},
                           {"uuid": "GPU-cccc", "supports_events": false}],
               "events": [{"at_s": 0, "gpu": 1, "xid": 95}]})");
  auto partial = (*source)->RegisterXidEvents();
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->watched, std::vector<int>({1}));
  ASSERT_EQ(partial->failed.size(), 1u);
  EXPECT_EQ(partial->failed.at(0), "nvmlDeviceRegisterEvents: NVML_ERROR_UNKNOWN (999): Unknown Error");
  auto event = (*source)->WaitXid(std::chrono::milliseconds(2000));
  ASSERT_TRUE(event.ok()) << event.status().ToString();
  ASSERT_TRUE(event->has_value()) << "events are read again from the new set";
  EXPECT_EQ((*event)->gpu_index, 1);
  EXPECT_EQ((*event)->xid, 95);
}

TEST_F(NvmlSourceTest, TheModelsTemperatureThresholdsAreReadWhereReported) {
  Scenario(R"({"devices": [{"uuid": "GPU-aaaa", "temperature_slowdown_c": 87, "temperature_shutdown_c": 92},
                           {"uuid": "GPU-bbbb"}]})");
  auto source = OpenNvml(TAU_FAKE_NVML_PATH);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  const Inventory& inv = (*source)->inventory();
  EXPECT_EQ(inv.gpus[0].temperature_slowdown_c, 87);
  EXPECT_EQ(inv.gpus[0].temperature_shutdown_c, 92);
  EXPECT_FALSE(inv.gpus[1].temperature_slowdown_c.has_value()) << "NOT_SUPPORTED: the configured lines apply";
  EXPECT_FALSE(inv.gpus[1].temperature_shutdown_c.has_value());
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
