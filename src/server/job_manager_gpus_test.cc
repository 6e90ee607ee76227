// GPU health as the job manager uses it: where attempts are placed, how an
// operator names a GPU, what counts as out of service, and the ECC count
// that outlives a restart.

#include <nlohmann/json.hpp>

#include "server/job_manager_test_fixture.h"

namespace tau::server {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

class JobManagerGpuTest : public JobManagerTest {
 protected:
  void SetUp() override {
    JobManagerTest::SetUp();
    tweak_ = [](JobManagerOptions& o) {
      o.capacity.gpus = 3;
      o.kueue = DefaultKueueConfig(o.capacity);
      o.gpu_info = {{.index = 0, .uuid = "GPU-0000-aaaa"},
                    {.index = 1, .uuid = "GPU-1111-bbbb"},
                    {.index = 2, .uuid = "GPU-1112-cccc"}};
      o.gpu_health_monitored = true;
    };
  }
  static gpu::GpuSample Poll(int64_t temperature_c, int64_t ecc_uncorrected = 0) {
    gpu::GpuSample s;
    s.readable = true;
    s.temperature_c = temperature_c;
    s.utilization_pct = 0;
    s.ecc_uncorrected = ecc_uncorrected;
    return s;
  }
  static nlohmann::json Gpus(JobManager& jobs) { return nlohmann::json::parse(jobs.GpusJson()); }
  static std::string Env(const std::vector<std::string>& env, const std::string& name) {
    for (const std::string& e : env) {
      if (e.rfind(name + "=", 0) == 0) {
        return e.substr(name.size() + 1);
      }
    }
    return "";
  }
};

TEST_F(JobManagerGpuTest, HealthyGpusTakeWorkBeforeSuspectOnesAndTheCoolestFirst) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  // GPU 0 is the coolest but its XID events cannot be read: Suspect.
  jobs->OnGpuSample(0, Poll(30));
  jobs->OnGpuSample(1, Poll(60));
  jobs->OnGpuSample(2, Poll(50));
  jobs->OnGpuXidUnreadable(0, "nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999)");
  ASSERT_EQ(Gpus(*jobs)["gpus"][0]["health"], "Suspect");
  ASSERT_TRUE(jobs->Submit(Request("name: a\nrun: {entrypoint: ./run.sh}\ncompute: {gpus: 1, cpus: 100m, memory: 128Mi}\n")).ok());
  ASSERT_EQ(runner.starts.size(), 1u);
  EXPECT_EQ(Env(runner.starts[0].env, "CUDA_VISIBLE_DEVICES"), "GPU-1112-cccc") << "the coolest Healthy GPU";
  ASSERT_TRUE(jobs->Submit(Request("name: b\nrun: {entrypoint: ./run.sh}\ncompute: {gpus: 1, cpus: 100m, memory: 128Mi}\n")).ok());
  ASSERT_EQ(runner.starts.size(), 2u);
  EXPECT_EQ(Env(runner.starts[1].env, "CUDA_VISIBLE_DEVICES"), "GPU-1111-bbbb") << "a Healthy GPU, though warmer";
  ASSERT_TRUE(jobs->Submit(Request("name: c\nrun: {entrypoint: ./run.sh}\ncompute: {gpus: 1, cpus: 100m, memory: 128Mi}\n")).ok());
  ASSERT_EQ(runner.starts.size(), 3u);
  EXPECT_EQ(Env(runner.starts[2].env, "CUDA_VISIBLE_DEVICES"), "GPU-0000-aaaa") << "Suspect when nothing else fits";
}

TEST_F(JobManagerGpuTest, OutOfServiceCountsDrainedAndUnhealthyGpusNotSuspectOnes) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  for (int g = 0; g < 3; ++g) jobs->OnGpuSample(g, Poll(40));
  jobs->OnGpuXidUnreadable(0, "nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999)");
  EXPECT_EQ(Gpus(*jobs)["out_of_service"], 0) << "a Suspect GPU still takes work";
  jobs->OnGpuXid({1, 95});
  ASSERT_TRUE(jobs->DrainGpu("2", true).ok());
  nlohmann::json gpus = Gpus(*jobs);
  EXPECT_EQ(gpus["gpus"][1]["health"], "Unhealthy");
  EXPECT_EQ(gpus["gpus"][2]["drained"], true);
  EXPECT_EQ(gpus["out_of_service"], 2);
}

TEST_F(JobManagerGpuTest, AnOperatorNamesAGpuByIndexUuidOrAUniqueUuidPrefix) {
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  ASSERT_TRUE(jobs->DrainGpu("1", true).ok());
  EXPECT_EQ(Gpus(*jobs)["gpus"][1]["drained"], true) << "by index";
  ASSERT_TRUE(jobs->DrainGpu("GPU-0000", true).ok());
  EXPECT_EQ(Gpus(*jobs)["gpus"][0]["drained"], true) << "by a unique UUID prefix";
  ASSERT_TRUE(jobs->DrainGpu("GPU-1112-cccc", true).ok());
  EXPECT_EQ(Gpus(*jobs)["gpus"][2]["drained"], true) << "by the whole UUID";
  Status ambiguous = jobs->DrainGpu("GPU-111", false);
  EXPECT_EQ(ambiguous.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ambiguous.message(), HasSubstr("\"GPU-111\" is the start of 2 GPUs' UUIDs: GPU-1111-bbbb (1), GPU-1112-cccc (2)"));
  Status out_of_range = jobs->ClearGpu("3");
  EXPECT_EQ(out_of_range.code(), StatusCode::kNotFound);
  EXPECT_THAT(out_of_range.message(), HasSubstr("no GPU 3 (it has 3: 0 to 2"));
  EXPECT_EQ(jobs->ClearGpu("GPU-9").code(), StatusCode::kNotFound);
}

TEST_F(JobManagerGpuTest, EccErrorsThatArriveWhileTheDaemonIsDownAreFlaggedAtTheFirstPoll) {
  {
    FakeExecutor runner;
    auto jobs = Manager(&runner);
    ASSERT_TRUE(jobs->Recover().ok());
    for (int g = 0; g < 3; ++g) jobs->OnGpuSample(g, Poll(40, 2));
    EXPECT_EQ(Gpus(*jobs)["gpus"][0]["health"], "Healthy") << "a count already there at the first poll ever";
  }
  // The daemon is down while GPU 0's count rises from 2 to 3.
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  jobs->OnGpuSample(0, Poll(40, 3));
  jobs->OnGpuSample(1, Poll(40, 2));
  nlohmann::json gpus = Gpus(*jobs);
  EXPECT_EQ(gpus["gpus"][0]["health"], "Unhealthy");
  EXPECT_EQ(gpus["gpus"][0]["reason"], "EccUncorrectable");
  EXPECT_EQ(gpus["gpus"][0]["message"], "uncorrectable ECC errors rose from 2 to 3");
  EXPECT_EQ(gpus["gpus"][1]["health"], "Healthy");
}

TEST_F(JobManagerGpuTest, ModelTemperatureThresholdsApplyPerGpu) {
  auto base = tweak_;
  tweak_ = [&](JobManagerOptions& o) {
    base(o);
    o.gpu_info[0].temperature_slowdown_c = 70;
    o.gpu_info[0].temperature_shutdown_c = 80;
  };
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Recover().ok());
  for (int i = 0; i < 3; ++i) {
    jobs->OnGpuSample(0, Poll(75));
    jobs->OnGpuSample(1, Poll(75));
  }
  nlohmann::json gpus = Gpus(*jobs);
  EXPECT_EQ(gpus["gpus"][0]["health"], "Suspect") << "over its own slowdown line";
  EXPECT_EQ(gpus["gpus"][0]["reason"], "Temperature");
  EXPECT_EQ(gpus["gpus"][1]["health"], "Healthy") << "under the configured 85 °C";
}

}  // namespace
}  // namespace tau::server
