// The checkpoint layouts' rules (docs/checkpoints.md#layouts) against
// folders written by the libraries themselves: transformers' Trainer on a
// tiny model built in code, and orbax-checkpoint's CheckpointManager. They
// run from the project's venv (.venv, or TAU_TEST_VENV), where
// scripts/install-deps installs the pinned versions; where it could not,
// each case is skipped, saying why. Copies of these layouts
// (and DeepSpeed's) are tested everywhere in src/resume.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "resume/checkpoint_index.h"
#include "resume/checkpoint_layout.h"
#include "support/project_venv.h"
#include "support/subprocess.h"

namespace tau::resume {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using tau::testing::RunCommand;

class CheckpointLayoutsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    python_ = tau::testing::ProjectVenvProgram("python");
    dir_ = fs::temp_directory_path() / ("tau-layouts-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  tau::testing::CommandResult Script(const std::string& name, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {python_.string(), std::string(TAU_SOURCE_DIR) + "/tests/checkpoint-layouts/" + name};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, "", {{"HF_HUB_OFFLINE", "1"}, {"TRANSFORMERS_OFFLINE", "1"}, {"JAX_PLATFORMS", "cpu"}});
  }
  static std::vector<std::string> Names(const Result<std::vector<Checkpoint>>& index) {
    std::vector<std::string> out;
    if (index.ok()) {
      for (const auto& cp : *index) out.push_back(cp.name);
    }
    return out;
  }

  fs::path python_;
  fs::path dir_;
};

TEST_F(CheckpointLayoutsTest, HuggingFaceTrainerCheckpoints) {
  if (std::string why = tau::testing::ProjectVenvLacks("torch, transformers, accelerate"); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const fs::path out = dir_ / "checkpoints";
  auto run = Script("hf_trainer.py", {out.string()});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::ofstream(out / "pid") << ::getpid();  // a job's stray file, written last
  EXPECT_EQ(DetectLayout(out), spec::CheckpointLayout::kHuggingFace);
  EXPECT_EQ(Names(ListCheckpoints(out)), (std::vector<std::string>{"checkpoint-4", "checkpoint-2"}));
  // The rule rests on trainer_state.json being the last file written.
  for (const char* folder : {"checkpoint-2", "checkpoint-4"}) {
    const auto state = fs::last_write_time(out / folder / "trainer_state.json");
    for (const auto& f : fs::recursive_directory_iterator(out / folder)) {
      EXPECT_LE(fs::last_write_time(f.path()), state) << f.path() << " was written after trainer_state.json";
    }
  }

  // A save killed before its last file: the Trainer writes trainer_state.json last.
  fs::remove(out / "checkpoint-4" / "trainer_state.json");
  auto index = ListCheckpoints(out);
  ASSERT_EQ(Names(index), std::vector<std::string>{"checkpoint-2"});

  // What would be TAU_RESUME_FROM is one the Trainer resumes from.
  auto resumed = Script("hf_trainer.py", {(dir_ / "again").string(), "--resume", (out / "checkpoint-2").string()});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("starting at global step 2"));
  EXPECT_THAT(resumed.out, HasSubstr("ended at global step 6"));
}

TEST_F(CheckpointLayoutsTest, OrbaxCheckpointManagerSteps) {
  if (std::string why = tau::testing::ProjectVenvLacks("orbax.checkpoint, jax, numpy"); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const fs::path out = dir_ / "checkpoints";
  auto run = Script("orbax_manager.py", {out.string()});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::ofstream(out / "pid") << ::getpid();
  EXPECT_EQ(DetectLayout(out), spec::CheckpointLayout::kOrbax);
  EXPECT_EQ(Names(ListCheckpoints(out)), (std::vector<std::string>{"20", "10"}));

  // A step whose commit marker is not written yet is not complete.
  ASSERT_TRUE(fs::exists(out / "20" / "commit_success.txt")) << "this Orbax writes commit markers";
  fs::remove(out / "20" / "commit_success.txt");
  EXPECT_EQ(Names(ListCheckpoints(out)), std::vector<std::string>{"10"});

  auto restored = Script("orbax_manager.py", {out.string(), "--restore", (out / "10").string()});
  ASSERT_EQ(restored.exit_code, 0) << restored.out << restored.err;
  EXPECT_THAT(restored.out, HasSubstr("restored step 10: w = [0.0, 10.0, 20.0, 30.0]"));
}

}  // namespace
}  // namespace tau::resume
