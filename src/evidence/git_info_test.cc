#include "evidence/git_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "common/subprocess.h"

namespace tau::evidence {
namespace {

namespace fs = std::filesystem;

class GitInfoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tau-git-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    auto probe = RunCapture({"git", "--version"});
    if (!probe.ok() || probe->exit_code != 0) GTEST_SKIP() << "git is not installed";
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Git(std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-C", dir_.string(), "-c", "user.name=t", "-c", "user.email=t@example.com"});
    auto run = RunCapture(args);
    ASSERT_TRUE(run.ok());
    ASSERT_EQ(run->exit_code, 0);
  }
  fs::path dir_;
};

TEST_F(GitInfoTest, OutsideARepositoryThereIsNone) { EXPECT_FALSE(ReadGitInfo(dir_).has_value()); }

TEST_F(GitInfoTest, OutsideARepositoryGitIsNotStarted) {
  // A `git` first on PATH that leaves a mark when it runs.
  fs::path bin = dir_ / "bin";
  fs::create_directories(bin);
  fs::path mark = dir_ / "git-ran";
  {
    std::ofstream git(bin / "git");
    git << "#!/bin/sh\ntouch '" << mark.string() << "'\nexit 128\n";
  }
  fs::permissions(bin / "git", fs::perms::owner_all);
  fs::path work = dir_ / "work";
  fs::create_directories(work);
  const char* old_path = std::getenv("PATH");
  std::string saved = old_path ? old_path : "";
  ::setenv("PATH", (bin.string() + ":" + saved).c_str(), 1);
  std::optional<GitInfo> info = ReadGitInfo(work);
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_FALSE(info.has_value());
  EXPECT_FALSE(fs::exists(mark)) << "git was started for a folder with no .git above it";
}

TEST_F(GitInfoTest, CommitBranchDirtyAndTheDiffOfTrackedFiles) {
  Git({"init", "-q", "-b", "main"});
  std::ofstream(dir_ / "train.py") << "lr = 0.1\n";
  Git({"add", "train.py"});
  Git({"commit", "-q", "-m", "first"});
  auto clean = ReadGitInfo(dir_);
  ASSERT_TRUE(clean.has_value());
  EXPECT_EQ(clean->commit.size(), 40u);
  EXPECT_EQ(clean->branch, "main");
  EXPECT_FALSE(clean->dirty);
  EXPECT_TRUE(clean->diff.empty());

  std::ofstream(dir_ / "untracked.txt") << "not part of the diff\n";
  EXPECT_FALSE(ReadGitInfo(dir_)->dirty) << "untracked files do not make it dirty";
  std::ofstream(dir_ / "train.py") << "lr = 0.2\n";
  auto dirty = ReadGitInfo(dir_);
  EXPECT_TRUE(dirty->dirty);
  EXPECT_NE(dirty->diff.find("+lr = 0.2"), std::string::npos) << dirty->diff;
  EXPECT_EQ(dirty->diff.find("untracked"), std::string::npos);
  auto cut = ReadGitInfo(dir_, 10);
  EXPECT_TRUE(cut->diff_truncated);
  EXPECT_EQ(cut->diff.size(), 10u);
}

}  // namespace
}  // namespace tau::evidence
