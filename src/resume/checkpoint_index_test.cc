#include "resume/checkpoint_index.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "common/digest.h"
#include "resume/checkpoint_layout.h"

namespace tau::resume {
namespace {

namespace fs = std::filesystem;

class CheckpointIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tau-ckpt-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a file with an mtime of `at_s` seconds after a fixed instant.
  void Write(const fs::path& rel, const std::string& data, int at_s) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel, std::ios::binary) << data;
    Touch(rel, at_s);
  }
  void Touch(const fs::path& rel, int at_s) {
    auto at = std::chrono::system_clock::time_point(std::chrono::seconds(1'700'000'000 + at_s));
    fs::last_write_time(dir_ / rel, std::chrono::file_clock::from_sys(at));
  }
  std::vector<std::string> Names(const std::vector<Checkpoint>& index) {
    std::vector<std::string> out;
    for (const auto& cp : index) out.push_back(cp.name);
    return out;
  }

  fs::path dir_;
};

TEST_F(CheckpointIndexTest, TemporaryAndHiddenNamesAreNeverComplete) {
  EXPECT_TRUE(IsIncompleteName("step-3.tmp"));
  EXPECT_TRUE(IsIncompleteName("step-3.partial"));
  EXPECT_TRUE(IsIncompleteName(".step-3"));
  EXPECT_FALSE(IsIncompleteName("step-3.pt"));
  Write("step-1.pt", "one", 10);
  Write("step-2.pt.tmp", "two, half written", 20);
  Write("step-2.partial/model.bin", "x", 20);
  Write(".hidden", "h", 30);
  auto index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(Names(*index), std::vector<std::string>{"step-1.pt"});
}

TEST_F(CheckpointIndexTest, NewestIsTheLastCompletedWithTiesByName) {
  Write("b.pt", "b", 10);
  Write("a.pt", "a", 30);
  Write("c.pt", "c", 30);
  Write("d.pt", "d", 20);
  auto index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(Names(*index), (std::vector<std::string>{"c.pt", "a.pt", "d.pt", "b.pt"}));
}

TEST_F(CheckpointIndexTest, AFolderCompletesAtItsNewestFile) {
  Write("step-1/model.bin", "m1", 10);
  Touch("step-1", 10);
  Write("step-2/model.bin", "m2", 5);
  Write("step-2/optim.bin", "o2", 40);
  Touch("step-2", 5);
  auto index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(Names(*index), (std::vector<std::string>{"step-2", "step-1"}));
  EXPECT_TRUE((*index)[0].folder);
  EXPECT_EQ((*index)[0].size_bytes, 4);
}

TEST_F(CheckpointIndexTest, WithMarkersFoldersWithoutOneAreIncomplete) {
  Write("step-1/model.bin", "m1", 10);
  Write("step-1/.complete", "", 11);
  Write("step-2/model.bin", "m2 still being written", 50);
  Write("final.pt", "f", 5);
  auto index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(Names(*index), (std::vector<std::string>{"step-1", "final.pt"}));
  EXPECT_EQ((*index)[0].completed_at_ms, (1'700'000'000LL + 11) * 1000);
}

TEST_F(CheckpointIndexTest, DigestsFilesAndFoldersAndReusesKnownOnes) {
  Write("a.pt", "abc", 10);
  Write("step-dir/x", "1", 20);
  Write("step-dir/sub/y", "2", 20);
  auto index = IndexCheckpoints(dir_, {});
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(index->size(), 2u);
  EXPECT_EQ((*index)[1].digest, "sha256:" + Sha256Hex("abc"));
  EXPECT_EQ((*index)[0].digest, "sha256:" + Sha256Hex("sub/y\t" + Sha256Hex("2") + "\nx\t" + Sha256Hex("1") + "\n"));
  // A known entry with the same name, size and time is not read again.
  std::vector<Checkpoint> known = *index;
  known[1].digest = "sha256:remembered";
  auto again = IndexCheckpoints(dir_, known);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[1].digest, "sha256:remembered");
}

TEST_F(CheckpointIndexTest, LinksAreNeitherListedNorFollowed) {
  const fs::path outside = dir_.string() + "-outside";
  fs::create_directories(outside / "etc");
  std::ofstream(outside / "etc" / "shadow") << "secret";
  Write("step-real/x", "1", 20);
  fs::create_directory_symlink(outside / "etc", dir_ / "linked-folder");
  fs::create_symlink(outside / "etc" / "shadow", dir_ / "linked-file.pt");
  fs::create_symlink(outside / "etc" / "shadow", dir_ / "step-real" / "inner-link");
  auto index = IndexCheckpoints(dir_, {});
  fs::remove_all(outside);
  ASSERT_TRUE(index.ok()) << index.error().ToString();
  EXPECT_EQ(Names(*index), (std::vector<std::string>{"step-real"}));
  EXPECT_EQ((*index)[0].size_bytes, 1);
  EXPECT_EQ((*index)[0].digest, "sha256:" + Sha256Hex("x\t" + Sha256Hex("1") + "\n"));
}

TEST_F(CheckpointIndexTest, PruneKeepsTheNewestAndTheProtected) {
  for (int i = 1; i <= 5; ++i) Write("step-" + std::to_string(i), "x", i * 10);
  auto index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  std::vector<std::string> deleted;
  auto kept = PruneCheckpoints(dir_, *index, 2, {"step-1"}, &deleted);
  EXPECT_EQ(Names(kept), (std::vector<std::string>{"step-5", "step-4", "step-1"}));
  EXPECT_EQ(deleted, (std::vector<std::string>{"step-3", "step-2"}));
  EXPECT_FALSE(fs::exists(dir_ / "step-3"));
  EXPECT_TRUE(fs::exists(dir_ / "step-1"));
}

TEST_F(CheckpointIndexTest, JsonRoundTrip) {
  std::vector<Checkpoint> index = {{"a", true, 12, 34, "sha256:ff"}, {"b.pt", false, 1, 2, ""}};
  EXPECT_EQ(CheckpointsFromJson(CheckpointsToJson(index)), index);
  EXPECT_TRUE(CheckpointsFromJson("").empty());
  EXPECT_TRUE(CheckpointsFromJson("{bad").empty());
}

TEST_F(CheckpointIndexTest, StrayFilesAreNotCheckpoints) {
  Write("step-0010.json", "{}", 10);
  Write("pid", "4242", 20);              // a job's own pid file
  Write("train.log", "loss 0.4", 30);    // its log
  Write("wandb/run-1/files.txt", "", 40);  // a tracker's folder
  Write("notes", "", 50);
  auto index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(Names(*index), std::vector<std::string>{"step-0010.json"});
}

TEST_F(CheckpointIndexTest, LogsLocksAndTablesNamedLikeCheckpointsAreNotCheckpoints) {
  Write("step-0010.json", "{}", 10);
  Write("ckpt_3", "c", 15);
  Write("epoch7.pt", "e", 18);
  Write("steps.log", "step 1", 20);         // a word that only starts like "step"
  Write("checkpoint.lock", "", 30);         // a lock beside the checkpoints
  Write("epoch_metrics.csv", "1,0.4", 40);  // a table per epoch
  Write("2024-01-01.log", "", 50);          // a dated log
  Write("iteration.json", "{}", 60);
  Write("step-0011.txt", "notes", 70);
  auto index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(Names(*index), (std::vector<std::string>{"epoch7.pt", "ckpt_3", "step-0010.json"}));
  // Named in checkpoint.include, any of them is one.
  spec::CheckpointSpec rules;
  rules.include = {"*.log"};
  EXPECT_EQ(Names(*ListCheckpoints(dir_, rules)), (std::vector<std::string>{"2024-01-01.log", "steps.log"}));
}

TEST_F(CheckpointIndexTest, IncludeGlobsChooseTheCheckpoints) {
  Write("model-1.bin", "m", 10);
  Write("model-2.bin", "m", 20);
  Write("step-3.pt", "s", 30);  // a default name, but include is given
  Write("model-3.bin.tmp", "m", 40);
  spec::CheckpointSpec rules;
  rules.include = {"model-*.bin"};
  auto index = ListCheckpoints(dir_, rules);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(Names(*index), (std::vector<std::string>{"model-2.bin", "model-1.bin"}));
}

// transformers' Trainer (4.46): output_dir/checkpoint-N/ holding
// config.json, generation_config.json, model.safetensors,
// training_args.bin, optimizer.pt, scheduler.pt, rng_state.pth and, last,
// trainer_state.json (the order and names of a real run).
TEST_F(CheckpointIndexTest, HuggingFaceTrainerFoldersAreCompleteOnceTrainerStateIsWritten) {
  const char* files[] = {"config.json", "generation_config.json", "model.safetensors", "training_args.bin",
                         "optimizer.pt", "scheduler.pt", "rng_state.pth"};
  auto checkpoint = [&](const std::string& name, int at_s, bool finished) {
    for (const char* f : files) Write(name + "/" + f, f, at_s);
    if (finished) {
      Write(name + "/trainer_state.json", "{\"global_step\": 2}", at_s + 1);
    }
  };
  checkpoint("checkpoint-2", 10, true);
  checkpoint("checkpoint-4", 20, true);
  checkpoint("checkpoint-6", 30, false);     // being written when the attempt died
  checkpoint("tmp-checkpoint-8", 40, true);  // staged before the rename into place
  Write("runs/events.out.tfevents", "", 50);  // report_to=tensorboard
  Write("pid", "1", 60);
  EXPECT_EQ(DetectLayout(dir_), spec::CheckpointLayout::kHuggingFace);
  auto index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(Names(*index), (std::vector<std::string>{"checkpoint-4", "checkpoint-2"}));
  EXPECT_EQ((*index)[0].completed_at_ms, (1'700'000'000LL + 21) * 1000) << "when trainer_state.json was written";
}

// orbax-checkpoint's CheckpointManager (0.12): ROOT/STEP/ holding
// _CHECKPOINT_METADATA, commit_success.txt and the item's folder (default/
// with _METADATA, commit_success.txt, manifest.ocdbt, d/HASH,
// ocdbt.process_0/...), written as STEP.orbax-checkpoint-tmp-TIMESTAMP and
// renamed into place (the names of a real run).
TEST_F(CheckpointIndexTest, OrbaxStepFoldersAreCheckpointsButNeverItsTemporaryOnes) {
  auto step = [&](const std::string& name, int at_s, bool committed) {
    Write(name + "/default/_METADATA", "{}", at_s);
    Write(name + "/default/manifest.ocdbt", "m", at_s);
    Write(name + "/default/d/8aa6728959aceb8a31cfbf37cba2af29", "x", at_s);
    Write(name + "/default/ocdbt.process_0/manifest.ocdbt", "m", at_s);
    Write(name + "/default/commit_success.txt", "Checkpoint commit was successful", at_s);
    Write(name + "/_CHECKPOINT_METADATA", "{}", at_s);
    if (committed) {
      Write(name + "/commit_success.txt", "Checkpoint commit was successful to " + name, at_s + 1);
    }
  };
  step("10", 10, true);
  step("20", 20, true);
  step("30.orbax-checkpoint-tmp-1733312345678901", 30, false);  // being written
  step("40", 40, false);  // renamed, but its commit marker is not written yet
  Write("pid", "1", 60);
  EXPECT_EQ(DetectLayout(dir_), spec::CheckpointLayout::kOrbax);
  auto index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(Names(*index), (std::vector<std::string>{"20", "10"}));
  EXPECT_EQ((*index)[0].completed_at_ms, (1'700'000'000LL + 21) * 1000) << "when commit_success.txt was written";

  // Without commit markers (older Orbax, renaming into place), the final
  // name is what makes a step complete.
  for (const char* name : {"10", "20"}) {
    fs::remove(dir_ / name / "commit_success.txt");
  }
  index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(Names(*index).size(), 3u);
}

// DeepSpeed's save_checkpoint(save_dir): save_dir/TAG/ (mp_rank_00_model_states.pt,
// zero_pp_rank_0_mp_rank_00_optim_states.pt), then save_dir/latest holding
// TAG, and zero_to_fp32.py beside them.
TEST_F(CheckpointIndexTest, DeepSpeedTagsAreCompleteUpToTheOneLatestNames) {
  auto tag = [&](const std::string& name, int at_s) {
    Write(name + "/mp_rank_00_model_states.pt", "m", at_s);
    Write(name + "/zero_pp_rank_0_mp_rank_00_optim_states.pt", "o", at_s);
    Touch(name, at_s);
  };
  tag("global_step100", 10);
  tag("global_step200", 20);
  Write("latest", "global_step200", 21);
  Write("zero_to_fp32.py", "#!/usr/bin/env python", 5);
  tag("global_step300", 30);  // being written: latest still names 200
  EXPECT_EQ(DetectLayout(dir_), spec::CheckpointLayout::kDeepSpeed);
  auto index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(Names(*index), (std::vector<std::string>{"global_step200", "global_step100"}));

  // A tag of the job's own naming is found through latest.
  tag("best", 40);
  Write("latest", "best\n", 41);
  index = ListCheckpoints(dir_);
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(Names(*index), (std::vector<std::string>{"best", "global_step300", "global_step200", "global_step100"}));
}

TEST_F(CheckpointIndexTest, ALayoutCanBeNamedInsteadOfFound) {
  Write("checkpoint-2/model.safetensors", "m", 10);  // no trainer_state.json: not a Trainer's
  Touch("checkpoint-2", 10);
  Write("step-5.pt", "s", 20);
  spec::CheckpointSpec rules;
  auto found = ListCheckpoints(dir_, rules);
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(Names(*found), std::vector<std::string>{}) << "found as huggingface: folders only, with trainer_state.json";
  rules.layout = spec::CheckpointLayout::kPlain;
  auto plain = ListCheckpoints(dir_, rules);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(Names(*plain), (std::vector<std::string>{"step-5.pt", "checkpoint-2"}));
}

TEST_F(CheckpointIndexTest, AMissingFolderListsNothing) {
  auto index = ListCheckpoints(dir_ / "absent");
  ASSERT_TRUE(index.ok());
  EXPECT_TRUE(index->empty());
}

}  // namespace
}  // namespace tau::resume
