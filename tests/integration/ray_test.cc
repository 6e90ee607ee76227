// workload_kind rayjob on the local executor, with the real Ray that
// scripts/install-deps puts into the project's venv (.venv): the job's
// entrypoint runs Ray tasks on a per-job cluster on 127.0.0.1, its output
// reaches the job's log, the attempt ends as the driver did, and no Ray
// process outlives the job; runtime.pip packages reach the driver and the
// tasks. Each test starts a whole Ray cluster, so they
// run alone (RUN_SERIAL) and skip, saying why, where Ray is not installed.

#include <gmock/gmock.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "daemon_fixture.h"
#include "support/project_venv.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;


// Runs tasks on every worker node; records the pids of the driver, the
// workers and their raylets (TAU_OUTPUT_DIR/pids) so the test can check
// they are gone afterwards.
constexpr char kRayTasks[] = R"(import os, sys, time, ray
ray.init()

@ray.remote(num_cpus=1)
def square(x):
    time.sleep(0.2)
    return x * x, os.getpid(), os.getppid(), os.environ.get("TAU_JOB_ID", ""), ray.get_runtime_context().get_node_id()

results = ray.get([square.remote(i) for i in range(8)])
print("sum of squares:", sum(r[0] for r in results))
print("worker nodes used:", len({r[4] for r in results}))
print("tasks saw TAU_JOB_ID:", all(r[3] == os.environ["TAU_JOB_ID"] for r in results))
pids = {os.getpid()} | {r[1] for r in results} | {r[2] for r in results}
with open(os.path.join(os.environ["TAU_OUTPUT_DIR"], "pids"), "w") as f:
    f.write("\n".join(str(p) for p in sorted(pids)) + "\n")
if len(sys.argv) > 1 and sys.argv[1] == "wait":
    print("waiting to be cancelled", flush=True)
    ray.get(ray.remote(lambda: time.sleep(600)).remote())
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1] != "wait" else 0)
)";

class RayTest : public DaemonTest {
 protected:
  void BeforeStart() override {
    if (std::string why = ProjectVenvLacks("ray"); !why.empty()) {
      GTEST_SKIP() << "Ray is not installed: " << why;
    }
    extra_env_["TAU_RAY"] = ProjectVenvProgram("ray");
    WriteFile("tasks.py", kRayTasks);
  }

  // Room for a Ray cluster to start on a busy 2-core machine.
  bool WaitLong(const std::function<bool()>& ready) {
    return WaitUntil(ready, std::chrono::minutes(4), std::chrono::milliseconds(200));
  }

  // The pids the entrypoint recorded, each of which must be gone.
  std::vector<int> RecordedPids(const std::string& job_id) {
    std::ifstream in(home_ / "jobs" / job_id / "outputs" / "pids");
    std::vector<int> pids;
    for (int pid; in >> pid;) pids.push_back(pid);
    return pids;
  }

  // Processes whose command line names the job's Ray temp folder.
  std::vector<std::string> RayProcessesOf(const std::string& job_id) {
    std::vector<std::string> found;
    const std::string needle = "/tmp/tau-ray-" + job_id;
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::ifstream in(e.path() / "cmdline", std::ios::binary);
      std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (cmdline.find(needle) != std::string::npos) found.push_back(e.path().filename().string());
    }
    return found;
  }

  void ExpectNothingLeft(const std::string& job_id) {
    std::vector<int> pids = RecordedPids(job_id);
    EXPECT_FALSE(pids.empty()) << "the entrypoint recorded no pids";
    for (int pid : pids) EXPECT_NE(::kill(pid, 0), 0) << "Ray process " << pid << " outlived the job";
    EXPECT_THAT(RayProcessesOf(job_id), ::testing::IsEmpty());
    EXPECT_FALSE(fs::exists("/tmp/tau-ray-" + job_id + "-1"));
  }
};

TEST_F(RayTest, ARayJobRunsItsTasksOnALocalClusterAndLeavesNothingBehind) {
  std::string spec = WriteSpec("ray.yaml",
                               "schema_version: 1\nname: ray-tasks\nrun:\n  entrypoint: tasks.py\n"
                               "  workload_kind: rayjob\ncompute:\n  workers: 2\n  cpus: 1\n  memory: 1Gi\n");
  CommandResult r = Tau({"run", "-f", spec});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("tau: starting a local Ray cluster: a head and 2 worker node(s)"));
  EXPECT_THAT(r.out, HasSubstr("sum of squares: 140"));
  EXPECT_THAT(r.out, HasSubstr("worker nodes used: 2"));
  EXPECT_THAT(r.out, HasSubstr("tasks saw TAU_JOB_ID: True"));
  EXPECT_THAT(r.out, HasSubstr("SUCCEEDED"));
  nlohmann::json job = Job("ray-tasks");
  EXPECT_EQ(job["state"], "Succeeded");
  EXPECT_EQ(job["reason"], "Completed");
  const std::string id = job["id"];
  ExpectNothingLeft(id);
  // Ray's own logs are kept with the attempt.
  EXPECT_TRUE(fs::exists(home_ / "jobs" / id / "attempts" / "1" / "ray-logs" / "gcs_server.out"));
  // The evidence names the Ray it ran on and what its environment held.
  ASSERT_TRUE(WaitUntil([&] { return Job(id)["evidence"].is_string(); }));
  nlohmann::json capsule = nlohmann::json::parse(Tau({"evidence", id, "-o", "json"}).out, nullptr, false);
  ASSERT_TRUE(capsule.is_object());
  EXPECT_EQ(capsule["ray"]["version"], "2.60.0");
  std::string shebang;
  std::getline(std::ifstream(ProjectVenvProgram("ray")), shebang);
  EXPECT_EQ("#!" + capsule["ray"]["python_executable"].get<std::string>(), shebang) << "the Python `ray` names";
  EXPECT_THAT(capsule["pip_freeze"].dump(), HasSubstr("ray==2.60.0"));
}

TEST_F(RayTest, TheAttemptEndsWithTheDriversExitCode) {
  std::string spec = WriteSpec("ray.yaml",
                               "schema_version: 1\nname: ray-fails\nrun:\n  entrypoint: tasks.py\n  args: ['3']\n"
                               "  workload_kind: rayjob\ncompute:\n  cpus: 1\n  memory: 1Gi\n");
  CommandResult r = Tau({"run", "-f", spec});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("sum of squares: 140"));
  EXPECT_THAT(r.out, HasSubstr("FAILED: Job entrypoint command failed with exit code 3"));
  nlohmann::json job = Job("ray-fails");
  EXPECT_EQ(job["state"], "Failed");
  EXPECT_EQ(job["reason"], "ExitCode");
  ExpectNothingLeft(job["id"]);
}

TEST_F(RayTest, CancellingStopsTheRayJobAndTheCluster) {
  std::string spec = WriteSpec("ray.yaml",
                               "schema_version: 1\nname: ray-cancel\nrun:\n  entrypoint: tasks.py\n  args: [wait]\n"
                               "  workload_kind: rayjob\ncompute:\n  cpus: 2\n  memory: 1Gi\n");
  std::string id = Submit(spec);
  ASSERT_TRUE(WaitLong([&] { return Tau({"logs", id}).out.find("waiting to be cancelled") != std::string::npos; }))
      << Tau({"logs", id}).out;
  ASSERT_EQ(Tau({"cancel", id}).exit_code, 0);
  ASSERT_TRUE(WaitLong([&] { return Job(id).value("state", "") == "Cancelled"; })) << Job(id).dump();
  ExpectNothingLeft(id);
}

TEST_F(RayTest, RuntimePipPackagesReachTheDriverAndTheTasks) {
  if (std::string why = PyPiUnreachable(); !why.empty()) GTEST_SKIP() << why;
  // Ray's own environment has another six (a dependency of Ray's): the
  // job's pin must win in the driver and in the tasks.
  WriteFile("six_version.py", R"(import sys, ray, six
ray.init()
task = ray.get(ray.remote(lambda: (__import__("six").__version__, sys.executable)).remote())
print("driver:", six.__version__, sys.executable)
print("task:", task[0], task[1])
)");
  std::string spec = WriteSpec("ray.yaml",
                               "schema_version: 1\nname: ray-pip\nrun:\n  entrypoint: six_version.py\n"
                               "  workload_kind: rayjob\ncompute:\n  cpus: 1\n  memory: 1Gi\n"
                               "runtime:\n  pip: [six==1.16.0]\n");
  CommandResult r = Tau({"run", "-f", spec});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string venvs = (home_ / "venvs").string();
  EXPECT_THAT(r.out, HasSubstr("tau: building the Python environment for runtime.pip"));
  EXPECT_THAT(r.out, HasSubstr("driver: 1.16.0 " + venvs));
  EXPECT_THAT(r.out, HasSubstr("task: 1.16.0 " + venvs));
  EXPECT_EQ(Job("ray-pip")["state"], "Succeeded");
}

}  // namespace
}  // namespace tau::testing
