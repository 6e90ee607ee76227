// The evidence capsule end to end: what a finished job's capsule holds,
// reproduce, diff, outputs and the exported bundle.

#include <gmock/gmock.h>

#include <filesystem>
#include <fstream>

#include "daemon_fixture.h"

namespace tau::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class EvidenceTest : public DaemonTest {
 protected:
  bool HaveGit() { return RunCommand({"/usr/bin/env", "git", "--version"}).exit_code == 0; }
  void Git(std::vector<std::string> args) {
    args.insert(args.begin(), {"/usr/bin/env", "git", "-C", (work_ / "code").string(), "-c", "user.name=t", "-c",
                               "user.email=t@example.com"});
    ASSERT_EQ(RunCommand(args).exit_code, 0);
  }
  nlohmann::json Evidence(const std::string& id) {
    CommandResult r = Tau({"evidence", id, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
};

constexpr char kTrain[] = R"(import json, os
print(open("data.txt").read().strip(), flush=True)
ckpt = os.path.join(os.environ["TAU_CHECKPOINT_DIR"], "step-1.json")
with open(ckpt + ".tmp", "w") as f:
    json.dump({"step": 1}, f)
os.rename(ckpt + ".tmp", ckpt)
os.makedirs(os.path.join(os.environ["TAU_OUTPUT_DIR"], "plots"), exist_ok=True)
with open(os.path.join(os.environ["TAU_OUTPUT_DIR"], "model.txt"), "w") as f:
    f.write("weights " + os.environ["LR"] + "\n")
with open(os.path.join(os.environ["TAU_OUTPUT_DIR"], "plots", "loss.csv"), "w") as f:
    f.write("1,0.5\n")
)";

constexpr char kSpec[] =
    "schema_version: 1\nname: exp\nrun:\n  entrypoint: train.py\n  working_dir: code\ncompute:\n  cpus: 100m\n"
    "  memory: 128Mi\nruntime:\n  env:\n    LR: \"0.1\"\n    WANDB_API_KEY: not-for-the-record\n"
    "experiment:\n  project: vision\n  tags:\n    arch: resnet\n";

TEST_F(EvidenceTest, AFinishedJobsCapsuleHoldsEveryField) {
  if (!HaveGit()) GTEST_SKIP() << "git is not installed, so the capsule's git block cannot be checked";
  WriteFile("code/train.py", kTrain);
  WriteFile("code/data.txt", "original data\n");
  Git({"init", "-q", "-b", "main"});
  Git({"add", "."});
  Git({"commit", "-q", "-m", "first"});
  WriteFile("code/data.txt", "edited but not committed\n");  // dirty
  WriteFile("secrets.env", "HF_TOKEN=hf_secret_value\n");
  std::string spec = WriteSpec("exp.yaml", kSpec);
  CommandResult r = Tau({"run", "-f", spec, "--env-file", (work_ / "secrets.env").string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string id = r.out.substr(0, r.out.find('\n'));
  ASSERT_TRUE(WaitUntil([&] { return Job(id)["evidence"].is_string(); })) << "the capsule is sealed when the job ends";

  nlohmann::json c = Evidence(id);
  EXPECT_EQ(c["complete"], true);
  EXPECT_EQ(c["job"]["id"], id);
  EXPECT_EQ(c["job"]["project"], "vision");
  EXPECT_EQ(c["job"]["tags"]["arch"], "resnet");
  EXPECT_EQ(c["spec"]["name"], "exp");
  EXPECT_EQ(c["spec"]["runtime"]["env"]["WANDB_API_KEY"], "<redacted>");
  EXPECT_EQ(c["spec_sha256"], Job(id)["spec_sha256"]);
  EXPECT_EQ(c["code"]["snapshot"], Job(id)["snapshot"]);
  ASSERT_EQ(c["code"]["files"].size(), 2u);
  EXPECT_EQ(c["code"]["files"][0]["path"], "data.txt");
  EXPECT_EQ(c["code"]["files"][0]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(c["git"]["branch"], "main");
  EXPECT_EQ(c["git"]["commit"].get<std::string>().size(), 40u);
  EXPECT_EQ(c["git"]["dirty"], true);
  EXPECT_THAT(c["git"]["diff"].get<std::string>(), HasSubstr("+edited but not committed"));
  EXPECT_THAT(c["submit_command"].get<std::string>(), HasSubstr("run -f"));
  EXPECT_EQ(c["environment"]["LR"], "0.1");
  EXPECT_EQ(c["environment"]["WANDB_API_KEY"], "<redacted>");
  EXPECT_EQ(c["secret_env"], nlohmann::json::array({"HF_TOKEN"}));
  EXPECT_THAT(c.dump(), Not(HasSubstr("hf_secret_value")));
  EXPECT_THAT(c.dump(), Not(HasSubstr("not-for-the-record")));
  for (const char* field : {"hostname", "os", "kernel", "cpu_model", "cpus", "memory_bytes", "python3", "gpus"}) {
    EXPECT_TRUE(c["host"].contains(field)) << field;
  }
  ASSERT_EQ(c["attempts"].size(), 1u);
  const nlohmann::json& a = c["attempts"][0];
  EXPECT_EQ(a["exit_code"], 0);
  EXPECT_EQ(a["reason"], "Completed");
  EXPECT_TRUE(a["started_at"].is_string());
  EXPECT_TRUE(a["finished_at"].is_string());
  EXPECT_EQ(a["resources"]["cpus_per_worker"], "100m");
  EXPECT_TRUE(a["resources"]["gpus"].is_array());
  EXPECT_GT(a["peak_memory_bytes"].get<int64_t>(), 0);
  EXPECT_EQ(a["logs"][0]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(a["checkpoints_written"], nlohmann::json::array({"step-1.json"}));
  EXPECT_EQ(a["resumed_from"], "");
  EXPECT_EQ(c["checkpoints"][0]["name"], "step-1.json");
  EXPECT_EQ(c["outcome"]["state"], "Succeeded");
  EXPECT_GE(c["events"].size(), 4u);

  // Filters and the status view show the experiment.
  EXPECT_THAT(Tau({"list", "--project", "vision", "--tag", "arch=resnet"}).out, HasSubstr(id));
  EXPECT_THAT(Tau({"list", "--tag", "arch=vit"}).out, Not(HasSubstr(id)));
  EXPECT_THAT(Tau({"status", id}).out, HasSubstr("arch=resnet"));

  // Outputs stay with the job and can be copied out.
  CommandResult outputs = Tau({"outputs", id, "-o", "json"});
  ASSERT_EQ(outputs.exit_code, 0) << outputs.err;
  nlohmann::json files = nlohmann::json::parse(outputs.out)["files"];
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0]["path"], "model.txt");
  ASSERT_EQ(Tau({"cp", id + ":model.txt", (work_ / "model.txt").string()}).exit_code, 0);
  std::ifstream model(work_ / "model.txt");
  std::string line;
  std::getline(model, line);
  EXPECT_EQ(line, "weights 0.1");
  ASSERT_EQ(Tau({"cp", id + ":", (work_ / "all").string()}).exit_code, 0);
  EXPECT_TRUE(fs::exists(work_ / "all" / "plots" / "loss.csv"));
  EXPECT_EQ(Tau({"cp", id + ":nope.txt", (work_ / "x").string()}).exit_code, 1);
  EXPECT_EQ(Tau({"cp", id + ":../../token", (work_ / "x").string()}).exit_code, 1);

  // The bundle: capsule, logs and the checkpoint index.
  fs::path bundle = work_ / "exp.tar.zst";
  ASSERT_EQ(Tau({"evidence", id, "--export", bundle.string()}).exit_code, 0);
  CommandResult listing = RunCommand({"/bin/sh", "-c", "zstd -dc '" + bundle.string() + "' | tar t"});
  EXPECT_THAT(listing.out, HasSubstr(id + "/capsule.json"));
  EXPECT_THAT(listing.out, HasSubstr(id + "/logs/attempt-1-rank-0.log"));
  EXPECT_THAT(listing.out, HasSubstr(id + "/checkpoints.json"));
}

TEST_F(EvidenceTest, ReproduceRunsTheOriginalCodeAndDiffShowsWhatChanged) {
  WriteFile("code/train.py", kTrain);
  WriteFile("code/data.txt", "original data\n");
  std::string spec = WriteSpec("exp.yaml", kSpec);
  CommandResult first = Tau({"run", "-f", spec});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::string id = first.out.substr(0, first.out.find('\n'));
  WriteFile("code/data.txt", "edited after submit\n");

  CommandResult again = Tau({"reproduce", id, "-f", "--set", "runtime.env.LR=0.5"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("original data\n"));
  EXPECT_THAT(again.out, Not(HasSubstr("edited")));
  std::string copy = again.out.substr(0, again.out.find('\n'));
  EXPECT_EQ(Job(copy)["reproduces"], id);
  EXPECT_EQ(Job(copy)["snapshot"], Job(id)["snapshot"]);

  CommandResult diff = Tau({"diff", id, copy});
  ASSERT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_THAT(diff.out, HasSubstr("spec:\n  ~ runtime.env.LR: 0.1 -> 0.5\n"));
  EXPECT_THAT(diff.out, Not(HasSubstr("code:")));

  CommandResult bad = Tau({"reproduce", id, "--set", "compute.cpus=-1"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("compute.cpus: must be greater than 0"));

  // A run of the edited code differs in its code.
  CommandResult edited = Tau({"run", "-f", spec});
  ASSERT_EQ(edited.exit_code, 0);
  std::string edited_id = edited.out.substr(0, edited.out.find('\n'));
  EXPECT_THAT(Tau({"diff", id, edited_id}).out, HasSubstr("code:\n  ~ data.txt\n"));
}

}  // namespace
}  // namespace tau::testing
