// workload_kind rayjob on the local executor, against the fake runner: how
// the daemon finds Ray, refuses a rayjob without it, and starts one attempt
// as one process that runs the whole cluster. (tests/integration/ray_test.cc
// runs it on a real Ray.)

#include "server/local_ray.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>

#include "common/subprocess.h"
#include "exec/cgroup.h"
#include "server/job_manager_test_fixture.h"

namespace tau::server {
namespace {

using store::JobState;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

void WriteExecutable(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0755);
}

bool HasPrefix(const std::vector<std::string>& env, const std::string& prefix) {
  return std::any_of(env.begin(), env.end(), [&](const std::string& e) { return e.starts_with(prefix); });
}

class LocalRayTest : public JobManagerTest {
 protected:
  // A `ray` script as pip installs it, naming its venv's Python.
  void InstallFakeRay() {
    python_ = (root_ / "venv" / "bin" / "python3").string();
    WriteExecutable(python_, "#!/bin/sh\n");
    WriteExecutable(root_ / "venv" / "bin" / "ray", "#!" + python_ + "\n# -*- coding: utf-8 -*-\n");
    tweak_ = [this](JobManagerOptions& o) { o.base_env = {"PATH=" + (root_ / "venv" / "bin").string() + ":/bin"}; };
  }
  std::string python_;
};

TEST_F(LocalRayTest, RaysPythonIsTheOneItsScriptNames) {
  InstallFakeRay();
  EXPECT_EQ(*FindRayPython("", "/nonexistent:" + (root_ / "venv" / "bin").string()), python_);
  EXPECT_EQ(*FindRayPython((root_ / "venv" / "bin" / "ray").string(), ""), python_);
  WriteExecutable(root_ / "env" / "ray", "#!/usr/bin/env python3\n");
  EXPECT_EQ(*FindRayPython((root_ / "env" / "ray").string(), ""), "python3");
  WriteExecutable(root_ / "elf" / "ray", "\x7f" "ELF");
  EXPECT_THAT(FindRayPython((root_ / "elf" / "ray").string(), "").status().message(), HasSubstr("no #! line"));
  WriteExecutable(root_ / "gone" / "ray", "#!/nonexistent/python3\n");
  EXPECT_THAT(FindRayPython((root_ / "gone" / "ray").string(), "").status().message(),
              HasSubstr("is not there any more; reinstall Ray"));
  EXPECT_THAT(FindRayPython("/nonexistent/ray", "").status().message(), HasSubstr("TAU_RAY"));
}

TEST_F(LocalRayTest, WithoutRayARayJobIsRefusedAtSubmitSayingHowToGetIt) {
  tweak_ = [](JobManagerOptions& o) { o.base_env = {"PATH=/nonexistent"}; };
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  auto r = jobs->Submit(Request("name: r\nrun: {entrypoint: t.py, workload_kind: rayjob}\ncompute: {cpus: 1}\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("pip install 'ray[default]'"));
  EXPECT_THAT(r.status().message(), HasSubstr("KubeRay"));
  EXPECT_TRUE(runner.starts.empty());
  EXPECT_TRUE(store_->LoadJobs()->empty()) << "nothing is stored";
}

TEST_F(LocalRayTest, OneProcessRunsTheWholeClusterOnRaysPython) {
  InstallFakeRay();
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  auto view = jobs->Submit(Request(
      "name: r\nrun: {entrypoint: train.py, workload_kind: rayjob, args: [--epochs, '2']}\n"
      "compute: {workers: 2, cpus: 500m, memory: 256Mi}\n"));
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  const std::string id = (*view)->job.id;
  ASSERT_EQ(runner.starts.size(), 1u) << "one rank: the cluster";
  const AttemptStart& start = runner.starts[0];
  ASSERT_GE(start.argv.size(), 12u);
  EXPECT_EQ(start.argv[0], python_);
  EXPECT_EQ(start.argv[1], "-c");
  EXPECT_EQ(std::vector<std::string>(start.argv.begin() + 3, start.argv.end()),
            (std::vector<std::string>{"/tmp/tau-ray-" + id + "-1", "2", "1", "0", "268435456",
                                      home().attempt_dir(id, 1).string() + "/ray-logs", id + "-1",
                                      "python3 train.py --epochs 2",
                                      home().attempt_dir(id, 1).string() + "/ray.json"}));
  EXPECT_THAT(start.env, Contains("TAU_JOB_ID=" + id));
  EXPECT_FALSE(HasPrefix(start.env, "MASTER_ADDR=")) << "Ray does its own rendezvous";
  EXPECT_EQ(start.rlimit_data, 0) << "a per-process limit would not hold a cluster";
  EXPECT_GT(start.grace_ms, 30000) << "room to stop the Ray job and every node";
  EXPECT_EQ((*view)->ranks, 1);
  EXPECT_EQ((*view)->workers, 2);

  exec::ExitStatus done;
  done.exit_code = 0;
  runner.statuses[StatusPath(id, 1)] = done;
  fs::create_directories("/tmp/tau-ray-" + id + "-1");
  jobs->OnShimExit(runner.TokenOf(1000));
  EXPECT_EQ(View(id)->job.state, JobState::kSucceeded);
  EXPECT_FALSE(fs::exists("/tmp/tau-ray-" + id + "-1")) << "a killed cluster's temp folder goes with the attempt";
}

TEST_F(LocalRayTest, TheClustersCgroupHoldsEveryWorkerNodeAndTheHead) {
  InstallFakeRay();
  fs::path cgroupfs = root_ / "cgroupfs";
  fs::create_directories(cgroupfs);
  exec::Cgroup2Driver cgroups(cgroupfs);
  auto base = tweak_;
  tweak_ = [&](JobManagerOptions& o) {
    base(o);
    o.cgroups = &cgroups;
  };
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  std::string id = (*jobs->Submit(Request("name: r\nrun: {entrypoint: t.py, workload_kind: rayjob}\n"
                                          "compute: {workers: 2, cpus: 500m, memory: 256Mi}\n")))->job.id;
  ASSERT_EQ(runner.starts.size(), 1u);
  fs::path leaf = cgroupfs / (id + "-1-0");
  std::string memory, cpu;
  std::ifstream(leaf / "memory.max") >> memory;
  std::getline(std::ifstream(leaf / "cpu.max"), cpu);
  EXPECT_EQ(memory, std::to_string(2 * (int64_t{256} << 20) + (int64_t{2} << 30)));
  EXPECT_EQ(cpu, "200000 100000") << "2 x 500m for the workers and 1 CPU for the head";
}

TEST_F(LocalRayTest, TheClusterGetsEveryWorkerNodesGpusToShareOut) {
  InstallFakeRay();
  auto base = tweak_;
  tweak_ = [&](JobManagerOptions& o) {
    base(o);
    o.capacity.gpus = 4;
    o.kueue = DefaultKueueConfig(o.capacity);
    for (int g = 0; g < 4; ++g) o.gpu_info.push_back({.uuid = "GPU-" + std::to_string(g)});
  };
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  auto view = jobs->Submit(Request("name: r\nrun: {entrypoint: t.py, workload_kind: rayjob}\n"
                                   "compute: {workers: 2, gpus: 1, cpus: 500m, memory: 256Mi}\n"));
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  ASSERT_EQ(runner.starts.size(), 1u);
  EXPECT_THAT(runner.starts[0].env, Contains("CUDA_VISIBLE_DEVICES=GPU-0,GPU-1"));
  EXPECT_EQ(runner.starts[0].argv[6], "1") << "one GPU per worker node";
}

TEST_F(LocalRayTest, RuntimePipLayersAnEnvironmentOnRaysPython) {
  InstallFakeRay();
  FakeExecutor runner;
  auto jobs = Manager(&runner);
  ASSERT_TRUE(jobs->Submit(Request("name: r\nrun: {entrypoint: t.py, workload_kind: rayjob}\n"
                                   "compute: {cpus: 1}\nruntime: {pip: [six==1.16.0]}\n")).ok());
  ASSERT_EQ(runner.starts.size(), 1u);
  const auto& argv = runner.starts[0].argv;
  ASSERT_GT(argv.size(), 8u);
  EXPECT_EQ(argv[0], "/bin/sh");
  EXPECT_EQ(argv[7], python_) << "the environment is layered on Ray's Python";
  EXPECT_EQ(argv[8], "python3") << "the cluster runs on the environment's Python";
  EXPECT_THAT(argv, Not(Contains("--system-site-packages")));
}

TEST(LocalRayScriptTest, TheClusterProgramIsValidPython) {
  fs::path file = fs::temp_directory_path() / ("tau-local-ray-" + std::to_string(::getpid()) + ".py");
  std::ofstream(file) << LocalRayScript();
  auto r = RunCapture({"python3", "-m", "py_compile", file.string()});
  fs::remove(file);
  fs::remove_all(fs::temp_directory_path() / "__pycache__");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->exit_code, 0) << "python3 -m py_compile failed on LocalRayScript()";
}

}  // namespace
}  // namespace tau::server
