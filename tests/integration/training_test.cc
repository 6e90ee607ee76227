// The training examples (examples/training) run end to end on CPU with the
// PyTorch, peft, transformers and Ray that scripts/install-deps puts into
// the project's venv: the loss falls, every rank takes part, and a rank
// killed midway ends the whole gang attempt, which is retried from the
// newest complete checkpoint with the same global step, so it ends with
// the weights an uninterrupted run ends with. Each case skips, saying
// why, where the venv lacks what it needs.

#include <gmock/gmock.h>
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "daemon_fixture.h"
#include "support/project_venv.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class TrainingTest : public DaemonTest {
 protected:
  virtual std::string Needs() const { return "torch"; }
  void BeforeStart() override {
    if (std::string why = ProjectVenvLacks(Needs()); !why.empty()) {
      GTEST_SKIP() << why;
    }
    // Jobs find the venv's python3 and torchrun first, as a researcher's
    // activated environment would give them.
    const char* path = std::getenv("PATH");
    extra_env_["PATH"] = ProjectVenv() + "/bin:" + (path ? path : "/usr/bin:/bin");
    extra_env_["TAU_RAY"] = ProjectVenvProgram("ray");
  }

  // Room for a torch job to start on a busy 2-core machine.
  bool WaitLong(const std::function<bool()>& ready) {
    return WaitUntil(ready, std::chrono::minutes(5), std::chrono::milliseconds(100));
  }
  bool Ended(const std::string& id) {
    const std::string state = Job(id).value("state", "");
    return state == "Succeeded" || state == "Failed" || state == "Cancelled";
  }

  // Python processes of the job (not its tau-shim, which carries the
  // job's command line too) whose environment holds every one of `vars`
  // ("RANK=1") and whose command line holds `program`.
  std::vector<pid_t> Processes(const std::string& id, const std::vector<std::string>& vars,
                               const std::string& program) {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream env_in(e.path() / "environ", std::ios::binary), cmd_in(e.path() / "cmdline", std::ios::binary);
      std::stringstream env, cmd;
      env << env_in.rdbuf();
      cmd << cmd_in.rdbuf();
      std::string environ = '\0' + env.str();
      bool all = environ.find(std::string(1, '\0') + "TAU_JOB_ID=" + id + '\0') != std::string::npos;
      for (const auto& v : vars) all = all && environ.find('\0' + v + '\0') != std::string::npos;
      const std::string argv0 = cmd.str().substr(0, cmd.str().find('\0'));
      const bool python = fs::path(argv0).filename().string().rfind("python", 0) == 0;
      if (all && python && cmd.str().find(program) != std::string::npos) out.push_back(std::stoi(name));
    }
    return out;
  }

  // What rank 0 appended to TAU_METRICS_FILE, in order.
  struct Reported {
    int64_t step = 0;
    double loss = 0;
    int64_t attempt = 0;  // 0 where the line does not say
  };
  std::vector<Reported> Losses(const std::string& id) {
    std::vector<Reported> out;
    std::ifstream in(home_ / "jobs" / id / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("loss") && j.contains("step")) {
        out.push_back({j["step"].get<int64_t>(), j["loss"].get<double>(), j.value("attempt", int64_t{0})});
      }
    }
    return out;
  }
  std::string Logs(const std::string& id, int rank) {
    return Tau({"logs", id, "--rank", std::to_string(rank), "--attempt", "all"}).out;
  }

  // A data-parallel run (ddp or fsdp) whose rank 1 is killed once a
  // checkpoint is complete.
  void KillRankOneAndResume(const std::string& spec, const std::string& parallel);
};

// The weights digest a finished rank prints.
std::string Digest(const std::string& log) {
  std::smatch m;
  std::string last;
  for (auto it = log.cbegin(); std::regex_search(it, log.cend(), m, std::regex("weights ([0-9a-f]{16})"));
       it = m.suffix().first) {
    last = m[1];
  }
  return last;
}

void TrainingTest::KillRankOneAndResume(const std::string& spec, const std::string& parallel) {
  const std::string args = "run.args=[--parallel, " + parallel + ", --steps, \"40\", --step-time, \"0.15\"]";
  const std::string id = Submit(SourcePath(spec), {"--set", args});
  const fs::path checkpoints = home_ / "jobs" / id / "checkpoints";
  ASSERT_TRUE(WaitLong([&] { return fs::exists(checkpoints / "step-000010") || Ended(id); }));
  ASSERT_FALSE(Ended(id)) << Logs(id, 0) << Logs(id, 1);
  std::vector<pid_t> victims;
  ASSERT_TRUE(WaitLong([&] { return !(victims = Processes(id, {"RANK=1", "TAU_ATTEMPT=1"}, "train.py")).empty(); }));
  ASSERT_EQ(victims.size(), 1u) << "one training process is global rank 1";
  ASSERT_EQ(::kill(victims[0], SIGKILL), 0);

  ASSERT_TRUE(WaitLong([&] { return Ended(id); }));
  nlohmann::json job = Job(id);
  ASSERT_EQ(job["state"], "Succeeded") << Logs(id, 0) << Logs(id, 1);
  ASSERT_EQ(job["attempts"].size(), 2u) << job["attempts"].dump(1) << Logs(id, 0) << Logs(id, 1);
  // The whole gang attempt ended: rank 1's torchrun exited 1, and rank 0
  // was stopped with it rather than left holding the rendezvous.
  EXPECT_EQ(job["attempts"][0]["state"], "Failed");
  EXPECT_EQ(job["attempts"][0]["exit_code"], 1);
  EXPECT_TRUE(Processes(id, {"TAU_ATTEMPT=1"}, "").empty()) << "a process of attempt 1 outlived it";
  EXPECT_EQ(job["attempts"][1]["retry_reason"], "exit:1");
  const std::string resumed = fs::path(job["attempts"][1]["resumed_from"].get<std::string>()).filename();
  ASSERT_THAT(resumed, ::testing::MatchesRegex("step-0000[1-3]0"));
  const int64_t step = std::stoll(resumed.substr(5));

  // Both ranks carried on from the checkpoint's global step, to the end.
  for (int rank : {0, 1}) {
    const std::string log = Logs(id, rank);
    EXPECT_THAT(log, HasSubstr("rank " + std::to_string(rank) + ": resumed from " + resumed + " at global step " +
                               std::to_string(step)));
    EXPECT_THAT(log, HasSubstr("rank " + std::to_string(rank) + ": done at global step 40 after " +
                               std::to_string(40 - step) + " batches"));
    EXPECT_THAT(log, HasSubstr(parallel + " on gloo"));
  }
  EXPECT_THAT(Logs(id, 0), HasSubstr("--- attempt 2 (exit:1, resumed from " + resumed + ") ---"));

  // Rank 0 reported every step of both attempts; the second attempt's
  // first is the step after the checkpoint, and the loss fell.
  auto losses = Losses(id);
  ASSERT_FALSE(losses.empty());
  EXPECT_EQ(losses.back().step, 40);
  auto second = std::find_if(losses.begin(), losses.end(), [](const Reported& r) { return r.attempt == 2; });
  ASSERT_NE(second, losses.end());
  EXPECT_EQ(second->step, step + 1) << "the resumed attempt's first step";
  EXPECT_EQ(losses.front().attempt, 1);
  EXPECT_GE(second - losses.begin(), step) << "attempt 1 reported its steps up to the checkpoint";
  EXPECT_LT(losses.back().loss, losses.front().loss / 4);

  // Resuming lost nothing: the same weights as a run never interrupted.
  const std::string digest = Digest(Logs(id, 0));
  ASSERT_FALSE(digest.empty());
  EXPECT_EQ(Digest(Logs(id, 1)), digest);
  WriteFile("clean/.keep", "");
  CommandResult clean = RunCommand(
      {ProjectVenvProgram("torchrun"), "--nproc_per_node", "2",
       "--standalone", SourcePath("examples/training/data-parallel/train.py"), "--parallel", parallel,
       "--steps", "40"},
      (work_ / "clean").string(), {{"TAU_CHECKPOINT_DIR", (work_ / "clean" / "ck").string()}});
  ASSERT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_EQ(Digest(clean.out), digest) << clean.out;
}

TEST_F(TrainingTest, ADdpGangWhoseRankIsKilledResumesFromTheNewestCheckpointWithTheSameGlobalStep) {
  KillRankOneAndResume("examples/training/data-parallel/ddp.yaml", "ddp");
}

TEST_F(TrainingTest, AnFsdpGangResumesFromItsShardedCheckpoint) {
  KillRankOneAndResume("examples/training/data-parallel/fsdp.yaml", "fsdp");
  // Each rank wrote its own shard of every checkpoint.
  const std::string id = Job("fsdp-resume")["id"];
  const fs::path newest = home_ / "jobs" / id / "checkpoints" / "step-000040";
  EXPECT_TRUE(fs::exists(newest / "__0_0.distcp"));
  EXPECT_TRUE(fs::exists(newest / "__1_0.distcp"));
  EXPECT_TRUE(fs::exists(newest / ".metadata"));
}

class LoraTest : public TrainingTest {
  std::string Needs() const override { return "torch, transformers, peft, accelerate"; }
};

TEST_F(LoraTest, AKilledFineTuneResumesFromTheTrainersNewestCheckpointAndSavesItsAdapter) {
  const std::string id =
      Submit(SourcePath("examples/training/lora/lora.yaml"),
             {"--set", "run.args=[--steps, \"40\", --save-every, \"10\", --step-time, \"0.1\"]"});
  const fs::path checkpoints = home_ / "jobs" / id / "checkpoints";
  ASSERT_TRUE(WaitLong([&] { return fs::exists(checkpoints / "checkpoint-10" / "trainer_state.json") || Ended(id); }));
  ASSERT_FALSE(Ended(id)) << Logs(id, 0);
  std::vector<pid_t> victims;
  ASSERT_TRUE(WaitLong([&] { return !(victims = Processes(id, {"TAU_ATTEMPT=1"}, "finetune.py")).empty(); }));
  ASSERT_EQ(::kill(victims[0], SIGKILL), 0);

  ASSERT_TRUE(WaitLong([&] { return Ended(id); }));
  nlohmann::json job = Job(id);
  ASSERT_EQ(job["state"], "Succeeded") << job.dump(1) << Logs(id, 0);
  ASSERT_EQ(job["attempts"].size(), 2u);
  EXPECT_EQ(job["attempts"][1]["retry_reason"], "signal:KILL");
  const std::string resumed = fs::path(job["attempts"][1]["resumed_from"].get<std::string>()).filename();
  ASSERT_THAT(resumed, ::testing::MatchesRegex("checkpoint-[1-3]0"));
  const std::string log = Logs(id, 0);
  EXPECT_THAT(log, HasSubstr("resuming from " + resumed));
  EXPECT_THAT(log, HasSubstr("done at global step 40"));
  EXPECT_THAT(log, ::testing::ContainsRegex("LoRA: [0-9]+ of [0-9]+ parameters train"));

  // The checkpoints hold the adapter (not the base model), and keep: 2
  // left the newest two.
  EXPECT_TRUE(fs::exists(checkpoints / "checkpoint-40" / "adapter_model.safetensors"));
  EXPECT_TRUE(fs::exists(checkpoints / "checkpoint-40" / "adapter_config.json"));
  EXPECT_FALSE(fs::exists(checkpoints / "checkpoint-40" / "model.safetensors"));
  EXPECT_TRUE(fs::exists(home_ / "jobs" / id / "outputs" / "adapter" / "adapter_model.safetensors"));
  auto losses = Losses(id);
  ASSERT_GE(losses.size(), 2u);
  EXPECT_EQ(losses.back().step, 40);
  EXPECT_LT(losses.back().loss, losses.front().loss);
}

class RayTrainTest : public TrainingTest {
  std::string Needs() const override { return "torch, ray.train.torch"; }
};

TEST_F(RayTrainTest, ATorchTrainerRunsTwoWorkersOnTheJobsRayCluster) {
  CommandResult r = Tau({"run", "-f", SourcePath("examples/training/ray-train/ray-train.yaml")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("worker rank 0 of 2"));
  EXPECT_THAT(r.out, HasSubstr("worker rank 1 of 2"));
  EXPECT_THAT(r.out, HasSubstr("worker rank 0 done after 30 steps"));
  EXPECT_THAT(r.out, HasSubstr("worker rank 1 done after 30 steps"));
  EXPECT_THAT(r.out, HasSubstr("result: step 30"));
  const std::string id = Job("ray-train")["id"];
  EXPECT_EQ(Job(id)["state"], "Succeeded");
  auto losses = Losses(id);
  ASSERT_GE(losses.size(), 2u);
  EXPECT_LT(losses.back().loss, losses.front().loss / 4);
}

}  // namespace
}  // namespace tau::testing
