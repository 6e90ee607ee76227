// GPU health end to end through the daemon, with the fake NVML library
// (tests/fakes): faults take a GPU out of service, the job on it resumes
// from its checkpoint on a healthy GPU, and waiting jobs say why.

#include <gmock/gmock.h>

#include <fstream>
#include <sstream>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr char kDevices[] = R"([
  {"uuid": "GPU-0000-aaaa", "name": "NVIDIA H200", "memory_total_mib": 143771, "temperature_c": 41,
   "power_mw": 72000, "utilization_gpu": 0, "ecc_uncorrected": 0},
  {"uuid": "GPU-1111-bbbb", "name": "NVIDIA H200", "memory_total_mib": 143771, "temperature_c": 43,
   "power_mw": 70000, "utilization_gpu": 0, "ecc_uncorrected": 0}])";

// Attempt 1 checkpoints every 50 ms until it is stopped; a later attempt
// says where it resumed and ends.
constexpr char kTrainer[] = R"(import json, os, sys, time
ck = os.environ["TAU_CHECKPOINT_DIR"]
step = 0
if os.environ.get("TAU_RESUME_FROM"):
    step = json.load(open(os.environ["TAU_RESUME_FROM"]))["step"]
print("attempt", os.environ["TAU_ATTEMPT"], "on", os.environ["CUDA_VISIBLE_DEVICES"],
      "reason", os.environ.get("TAU_RETRY_REASON", "-"), "from step", step, flush=True)
if os.environ["TAU_ATTEMPT"] != "1":
    sys.exit(0)
while True:
    step += 1
    path = os.path.join(ck, "step-%06d.json" % step)
    with open(path + ".tmp", "w") as f:
        json.dump({"step": step}, f)
    os.rename(path + ".tmp", path)
    time.sleep(0.05)
)";

class GpuHealthTest : public DaemonTest {
 protected:
  void BeforeStart() override {
    scenario_ = work_ / "nvml.json";
    Scenario("[]");
    extra_env_ = {{"TAU_NVML_LIBRARY", (fs::path(BinPath("tau")).parent_path().parent_path() / "lib" /
                                        "libtau-fake-nvml.so").string()},
                  {"TAU_FAKE_NVML", scenario_.string()},
                  {"TAU_GPU_POLL_INTERVAL", "100ms"}};
  }
  // Rewrites the scenario; the fake reads it again when it changes.
  void Scenario(const std::string& events, const std::string& devices = kDevices) {
    std::ofstream(scenario_.string() + ".new") << R"({"driver_version": "580.159.03", "cuda_version": 13000, "devices": )"
                                               << devices << R"(, "events": )" << events << "}";
    fs::rename(scenario_.string() + ".new", scenario_);
  }
  nlohmann::json Gpus() {
    CommandResult r = Tau({"nodes", "-o", "json"});
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_discarded() ? nlohmann::json::object() : j;
  }
  std::string Health(int index) {
    nlohmann::json g = Gpus();
    if (!g.contains("gpus") || g["gpus"].size() <= static_cast<size_t>(index)) return "";
    return g["gpus"][static_cast<size_t>(index)].value("health", "");
  }
  fs::path scenario_;
};

TEST_F(GpuHealthTest, AnUncontainedEccErrorMovesTheJobToAHealthyGpuFromItsCheckpoint) {
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Healthy" && Health(1) == "Healthy"; })) << Gpus().dump();
  nlohmann::json gpus = Gpus();
  EXPECT_EQ(gpus["gpus"][0]["uuid"], "GPU-0000-aaaa");
  EXPECT_EQ(gpus["gpus"][0]["gpu_class"], "h200-141gb");
  EXPECT_EQ(gpus["gpus"][0]["temperature_c"], 41);
  EXPECT_THAT(Tau({"nodes"}).out, HasSubstr("GPU-1111-bbbb"));

  WriteFile("train.py", kTrainer);
  std::string id = Submit(WriteSpec("train.yaml",
                                    "schema_version: 1\nname: train\nrun:\n  entrypoint: train.py\ncompute:\n  gpus: 1\n"
                                    "  gpu_class: h200-141gb\n  cpus: 100m\n  memory: 128Mi\nretry:\n  backoff: 1s\n"));
  ASSERT_TRUE(WaitUntil([&] { return Job(id)["checkpoints"].size() > 0 || fs::exists(home_ / "jobs" / id / "checkpoints" / "step-000003.json"); }));
  EXPECT_EQ(Gpus()["gpus"][0]["job"]["id"], id);

  // XID 95 on GPU 0, the job's GPU.
  Scenario(R"([{"at_s": 0, "gpu": 0, "xid": 95}])");
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Unhealthy"; }));
  ASSERT_TRUE(WaitForState(id, "Succeeded")) << Job(id).dump();
  nlohmann::json job = Job(id);
  ASSERT_EQ(job["attempts"].size(), 2u);
  EXPECT_EQ(job["attempts"][0]["reason"], "GpuFault");
  EXPECT_EQ(job["attempts"][1]["gpus"], nlohmann::json::array({"1"}));
  EXPECT_EQ(job["retries"]["interruptions"], 1);
  EXPECT_EQ(job["retries"]["restarts"], 0);
  std::string logs = Tau({"logs", id}).out;
  EXPECT_THAT(logs, HasSubstr("attempt 2 on GPU-1111-bbbb reason gpu_fault from step"));
  EXPECT_THAT(logs, ::testing::Not(HasSubstr("from step 0")));
  nlohmann::json g0 = Gpus()["gpus"][0];
  EXPECT_EQ(g0["reason"], "XidFatal");
  EXPECT_THAT(g0["message"].get<std::string>(), HasSubstr("XID 95 (uncontained ECC error)"));

  // A 2-GPU job waits, naming the unhealthy GPU.
  std::string big = Submit(WriteSpec("big.yaml",
                                     "schema_version: 1\nname: big\nrun:\n  entrypoint: 'echo big on $CUDA_VISIBLE_DEVICES'\n"
                                     "compute:\n  gpus: 2\n  cpus: 100m\n"));
  ASSERT_TRUE(WaitUntil([&] { return Job(big).value("reason", "") == "WaitingForResources"; }));
  EXPECT_THAT(Job(big).value("message", ""), HasSubstr("GPU 0 GPU-0000-aaaa (Unhealthy: XID 95"));
  EXPECT_THAT(Tau({"why", big}).out, HasSubstr("GPU-0000-aaaa"));

  // The fault is sticky until an operator clears it; then the job runs.
  ASSERT_EQ(Tau({"admin", "gpu", "clear", "GPU-0000-aaaa"}).exit_code, 0);
  ASSERT_TRUE(WaitForState(big, "Succeeded"));
  EXPECT_THAT(Tau({"logs", big}).out, HasSubstr("big on GPU-0000-aaaa,GPU-1111-bbbb"));
  EXPECT_EQ(Tau({"admin", "gpu", "clear", "GPU-nope"}).exit_code, 1);
}

TEST_F(GpuHealthTest, AnApplicationXidFailsOnlyTheJobAndDrainedGpusTakeNoWork) {
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Healthy" && Health(1) == "Healthy"; }));
  WriteFile("train.py", kTrainer);
  std::string id = Submit(WriteSpec("app.yaml",
                                    "schema_version: 1\nname: app\nrun:\n  entrypoint: train.py\ncompute:\n  gpus: 1\n"
                                    "  cpus: 100m\n"));
  ASSERT_TRUE(WaitForState(id, "Running"));
  Scenario(R"([{"at_s": 0, "gpu": 0, "xid": 13}])");
  ASSERT_TRUE(WaitUntil([&] { return Job(id).value("state", "") == "Failed"; }));
  EXPECT_EQ(Job(id)["reason"], "GpuXid");
  EXPECT_THAT(Job(id).value("message", ""), HasSubstr("XID 13 (graphics engine exception)"));
  EXPECT_EQ(Health(0), "Healthy") << "an application error leaves the GPU in service";

  ASSERT_EQ(Tau({"admin", "gpu", "drain", "GPU-0000-aaaa"}).exit_code, 0);
  ASSERT_EQ(Tau({"admin", "gpu", "drain", "GPU-1111-bbbb"}).exit_code, 0);
  std::string waiting = Submit(WriteSpec("one.yaml",
                                         "schema_version: 1\nname: one\nrun:\n  entrypoint: 'echo on $CUDA_VISIBLE_DEVICES'\n"
                                         "compute:\n  gpus: 1\n  cpus: 100m\n"));
  ASSERT_TRUE(WaitUntil([&] { return Job(waiting).value("reason", "") == "WaitingForResources"; }));
  EXPECT_THAT(Job(waiting).value("message", ""), HasSubstr("GPU 1 GPU-1111-bbbb (drained)"));
  ASSERT_EQ(Tau({"admin", "gpu", "undrain", "GPU-1111-bbbb"}).exit_code, 0);
  ASSERT_TRUE(WaitForState(waiting, "Succeeded"));
  EXPECT_THAT(Tau({"logs", waiting}).out, HasSubstr("on GPU-1111-bbbb"));
}

TEST_F(GpuHealthTest, LostGpusEccErrorsAndForeignProcessesKeepWorkAway) {
  // GPU 0 is lost; GPU 1 runs a process TauGrid did not start.
  Scenario("[]", R"([{"uuid": "GPU-0000-aaaa", "name": "NVIDIA H200", "lost": true},
    {"uuid": "GPU-1111-bbbb", "name": "NVIDIA H200", "memory_total_mib": 143771, "temperature_c": 40,
     "ecc_uncorrected": 0, "processes": [4242]}])");
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Unhealthy" && Health(1) == "Healthy"; })) << Gpus().dump();
  EXPECT_EQ(Gpus()["gpus"][0]["reason"], "GpuLost");
  std::string id = Submit(WriteSpec("one.yaml", "schema_version: 1\nname: one\nrun:\n  entrypoint: 'echo on $CUDA_VISIBLE_DEVICES'\n"
                                                "compute:\n  gpus: 1\n  cpus: 100m\n"));
  ASSERT_TRUE(WaitUntil([&] { return Job(id).value("reason", "") == "WaitingForResources"; }));
  EXPECT_THAT(Job(id).value("message", ""), HasSubstr("busy with processes TauGrid did not start: GPU 1 (pids 4242)"));
  // The process ends: the job runs on GPU 1.
  Scenario("[]", R"([{"uuid": "GPU-0000-aaaa", "name": "NVIDIA H200", "lost": true},
    {"uuid": "GPU-1111-bbbb", "name": "NVIDIA H200", "memory_total_mib": 143771, "temperature_c": 40,
     "ecc_uncorrected": 0}])");
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
  // An uncorrectable ECC error: GPU 1 is out too.
  Scenario("[]", R"([{"uuid": "GPU-0000-aaaa", "name": "NVIDIA H200", "lost": true},
    {"uuid": "GPU-1111-bbbb", "name": "NVIDIA H200", "memory_total_mib": 143771, "temperature_c": 40,
     "ecc_uncorrected": 3}])");
  ASSERT_TRUE(WaitUntil([&] { return Health(1) == "Unhealthy"; }));
  EXPECT_EQ(Gpus()["gpus"][1]["reason"], "EccUncorrectable");
  // Fatal states survive a daemon restart.
  ASSERT_EQ(Tau({"server", "stop"}).exit_code, 0);
  ASSERT_TRUE(WaitForDaemonGone());
  EXPECT_EQ(Health(1), "Unhealthy");
}

TEST_F(GpuHealthTest, ThresholdAndDriverSignalsReachTheDaemon) {
  // GPU 0 runs hot (a warning after two polls); the driver asks for a
  // reset of GPU 1 (fatal at once).
  Scenario("[]", R"([{"uuid": "GPU-0000-aaaa", "name": "NVIDIA H200", "temperature_c": 90, "nvlinks": [1, 1]},
    {"uuid": "GPU-1111-bbbb", "name": "NVIDIA H200", "temperature_c": 40, "recovery_action": 1}])");
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Suspect" && Health(1) == "Unhealthy"; })) << Gpus().dump();
  EXPECT_EQ(Gpus()["gpus"][0]["reason"], "Temperature");
  EXPECT_EQ(Gpus()["gpus"][1]["reason"], "RecoveryAction");
  // A Suspect GPU still takes work.
  std::string id = Submit(WriteSpec("s.yaml", "schema_version: 1\nname: s\nrun:\n  entrypoint: 'echo on $CUDA_VISIBLE_DEVICES'\n"
                                              "compute:\n  gpus: 1\n  cpus: 100m\n"));
  ASSERT_TRUE(WaitForState(id, "Succeeded"));
  EXPECT_THAT(Tau({"logs", id}).out, HasSubstr("on GPU-0000-aaaa"));
  // An NVLink goes down: fatal.
  Scenario("[]", R"([{"uuid": "GPU-0000-aaaa", "name": "NVIDIA H200", "temperature_c": 60, "nvlinks": [1, 0]},
    {"uuid": "GPU-1111-bbbb", "name": "NVIDIA H200", "temperature_c": 40, "recovery_action": 1}])");
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Unhealthy"; }));
  EXPECT_EQ(Gpus()["gpus"][0]["message"], "1 of its 2 NVLinks are down");
}

TEST_F(GpuHealthTest, ADriverAskingForAMachineRebootTakesEveryGpuOut) {
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Healthy" && Health(1) == "Healthy"; }));
  Scenario("[]", R"([{"uuid": "GPU-0000-aaaa", "name": "NVIDIA H200", "temperature_c": 40},
    {"uuid": "GPU-1111-bbbb", "name": "NVIDIA H200", "temperature_c": 40, "recovery_action": 2}])");
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Unhealthy" && Health(1) == "Unhealthy"; })) << Gpus().dump();
  EXPECT_EQ(Gpus()["gpus"][0]["message"], "GPU 1's driver asks for a reboot of the machine");
}

// /metrics: the taugrid_* families are lint-clean for promtool; the
// DCGM_* families keep dcgm-exporter's names and camelCase labels, which
// are the only findings allowed.
TEST_F(GpuHealthTest, MetricsAreLintCleanAndNameGpusAsDcgmExporterDoes) {
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Healthy" && Health(1) == "Healthy"; }));
  CommandResult run = Tau({"run", "-f", WriteSpec("m.yaml", "schema_version: 1\nname: m\nrun:\n  entrypoint: 'echo hi'\n"
                                                            "compute:\n  gpus: 1\n  cpus: 100m\n")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  Scenario(R"([{"at_s": 0, "gpu": 1, "xid": 63}])");
  ASSERT_TRUE(WaitUntil([&] { return Gpus()["events"].dump().find("XID 63") != std::string::npos; }));

  const std::string token = ApiToken();
  const std::string url = ApiUrl() + "/metrics";
  const std::string fetch =
      "import sys, urllib.request\n"
      "req = urllib.request.Request(sys.argv[1], headers={'Authorization': 'Bearer ' + sys.argv[2]} if sys.argv[2] else {})\n"
      "try:\n    print(urllib.request.urlopen(req).read().decode(), end='')\n"
      "except urllib.error.HTTPError as e:\n    print(e.code); sys.exit(1)\n";
  CommandResult anonymous = RunCommand({"/usr/bin/env", "python3", "-c", fetch, url, ""});
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_THAT(anonymous.out, HasSubstr("401"));
  CommandResult scraped = RunCommand({"/usr/bin/env", "python3", "-c", fetch, url, token});
  ASSERT_EQ(scraped.exit_code, 0) << scraped.err;
  const std::string& text = scraped.out;
  for (const char* family : {"taugrid_build_info", "taugrid_jobs", "taugrid_job_submissions_total",
                             "taugrid_job_attempts_total", "taugrid_preemptions_total", "taugrid_admission_wait_seconds",
                             "taugrid_job_start_seconds", "taugrid_cluster_queue_pending_jobs",
                             "taugrid_local_queue_pending_jobs", "taugrid_cluster_queue_nominal_quota",
                             "taugrid_cluster_queue_resource_usage", "taugrid_api_request_duration_seconds",
                             "taugrid_gpu_health_state", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
                             "DCGM_FI_DEV_XID_ERRORS"}) {
    EXPECT_THAT(text, HasSubstr(std::string("# TYPE ") + family + " ")) << family;
  }
  EXPECT_THAT(text, HasSubstr("taugrid_jobs{state=\"Succeeded\",queue=\"default\",workspace=\"default\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-0000-aaaa\",pci_bus_id=\"00000000:18:00.0\","
                              "device=\"nvidia0\",modelName=\"NVIDIA H200\",Hostname=\""));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_XID_ERRORS{gpu=\"1\""));
  // Typed as dcgm-exporter types them; the health gauge labelled UUID as DCGM's are.
  EXPECT_THAT(text, HasSubstr("# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE DCGM_FI_DEV_XID_ERRORS gauge\n"));
  EXPECT_THAT(text, ::testing::ContainsRegex("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL\\{gpu=\"0\",UUID=\"GPU-0000-aaaa\"[^}]*\\} 0\n"));
  EXPECT_THAT(text, HasSubstr("taugrid_gpu_health_state{gpu=\"0\",UUID=\"GPU-0000-aaaa\",state=\"Healthy\"} 1\n"));
  EXPECT_THAT(text, ::testing::ContainsRegex("DCGM_FI_DEV_XID_ERRORS\\{gpu=\"1\"[^}]*\\} 63\n"));
  EXPECT_THAT(text, HasSubstr("taugrid_api_request_duration_seconds_count{route=\"/api/v1/jobs/{job}\",method=\"GET\",code=\"200\"}"));

  if (RunCommand({"/usr/bin/env", "sh", "-c", "command -v promtool"}).exit_code != 0) {
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus; scripts/install-deps installs it), "
                    "so the exposition was checked here but not linted";
  }
  std::ofstream(work_ / "metrics.txt") << text;
  CommandResult lint = RunCommand({"/bin/sh", "-c", "promtool check metrics < '" + (work_ / "metrics.txt").string() + "' 2>&1"});
  std::stringstream findings(lint.out);
  for (std::string line; std::getline(findings, line);) {
    if (line.empty()) continue;
    EXPECT_EQ(line.rfind("DCGM_", 0), 0u) << "a finding outside the DCGM_* families: " << line;
  }
}

// nvmlEventSetWait_v2 failing does not end the watch: the GPUs are
// Suspect while their events cannot be read, Healthy once a new event set
// reads, and an XID after that is still acted on.
TEST_F(GpuHealthTest, XidEventsAreWatchedAgainAfterNvmlEventErrors) {
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Healthy" && Health(1) == "Healthy"; }));
  auto with = [&](const std::string& extra, const std::string& events) {
    std::ofstream(scenario_.string() + ".new") << R"({"driver_version": "580.159.03", "devices": )" << kDevices
                                               << R"(, "events": )" << events << extra << "}";
    fs::rename(scenario_.string() + ".new", scenario_);
  };
  with(R"(, "event_wait_error": 999)", "[]");
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Suspect" && Health(1) == "Suspect"; })) << Gpus().dump();
  nlohmann::json g0 = Gpus()["gpus"][0];
  EXPECT_EQ(g0["reason"], "XidEventsUnreadable");
  EXPECT_THAT(g0["message"].get<std::string>(), HasSubstr("nvmlEventSetWait_v2: NVML_ERROR_UNKNOWN (999)"));
  EXPECT_EQ(Gpus()["out_of_service"], 0) << "Suspect GPUs are still in service";

  with("", "[]");
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Healthy" && Health(1) == "Healthy"; })) << Gpus().dump();
  with("", R"([{"at_s": 0, "gpu": 0, "xid": 95}])");
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Unhealthy"; })) << Gpus().dump();
  EXPECT_EQ(Gpus()["gpus"][0]["reason"], "XidFatal");
  // By index, as tau nodes shows it.
  CommandResult cleared = Tau({"admin", "gpu", "clear", "0"});
  ASSERT_EQ(cleared.exit_code, 0) << cleared.err;
  EXPECT_THAT(cleared.out, HasSubstr("GPU-0000-aaaa: cleared"));
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Healthy"; }));
}

TEST_F(GpuHealthTest, ASubmitForAGpuClassTheMachineLacksIsRefused) {
  ASSERT_TRUE(WaitUntil([&] { return Health(0) == "Healthy"; }));
  CommandResult r = Tau({"run", WriteSpec("h100.yaml", "schema_version: 1\nname: h100\nrun:\n  entrypoint: 'true'\n"
                                                       "compute:\n  gpus: 1\n  gpu_class: h100-80gb\n")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("compute.gpu_class \"h100-80gb\": this machine has no such GPU; its GPUs are h200-141gb"));
}

}  // namespace
}  // namespace tau::testing
