#include "evidence/snapshot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace tau::evidence {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("tau-snap-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "src");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& data) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel, std::ios::binary) << data;
  }
  std::string Read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream b;
    b << in.rdbuf();
    return b.str();
  }
  fs::path root_;
};

TEST_F(SnapshotTest, RoundTripsFilesModesLongNamesAndSymlinks) {
  Write("train.py", "print('hi')\n");
  Write("src/util.py", "x = 1\n");
  std::string long_name = "src/" + std::string(120, 'n') + ".py";
  Write(long_name, "long\n");
  Write("run.sh", "#!/bin/sh\necho run\n");
  fs::permissions(root_ / "run.sh", fs::perms::owner_exec, fs::perm_options::add);
  fs::create_symlink("train.py", root_ / "link.py");
  auto snap = PackSnapshot(root_, {});
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_THAT(snap->digest, ::testing::StartsWith("sha256:"));
  fs::path out = root_.string() + "-out";
  fs::remove_all(out);
  ASSERT_TRUE(UnpackSnapshot(snap->blob, out).ok());
  EXPECT_EQ(Read(out / "train.py"), "print('hi')\n");
  EXPECT_EQ(Read(out / long_name), "long\n");
  EXPECT_TRUE(fs::is_symlink(out / "link.py"));
  EXPECT_EQ(fs::read_symlink(out / "link.py"), "train.py");
  EXPECT_NE(fs::status(out / "run.sh").permissions() & fs::perms::owner_exec, fs::perms::none);
  fs::remove_all(out);
}

TEST_F(SnapshotTest, UnpackingGivesTheDigestsOfTheFilesItWrote) {
  Write("train.py", "print('hi')\n");
  Write("src/util.py", "x = 1\n");
  Write("src/" + std::string(120, 'n') + ".py", "long\n");
  fs::create_symlink("train.py", root_ / "link.py");
  auto snap = PackSnapshot(root_, {});
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  fs::path out = root_.string() + "-out";
  fs::remove_all(out);
  std::vector<FileDigest> files;
  ASSERT_TRUE(UnpackSnapshot(snap->blob, out, &files).ok());
  auto listed = ListFileDigests(out);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(files.size(), 3u);
  ASSERT_EQ(files.size(), listed->size());
  for (size_t i = 0; i < files.size(); ++i) {
    EXPECT_EQ(files[i].path, (*listed)[i].path);
    EXPECT_EQ(files[i].size, (*listed)[i].size);
    EXPECT_EQ(files[i].sha256, (*listed)[i].sha256);
  }
  fs::remove_all(out);
}

TEST_F(SnapshotTest, SameTreeSameDigest) {
  Write("a.py", "a");
  Write("src/b.py", "b");
  auto first = PackSnapshot(root_, {});
  ::usleep(20000);
  fs::last_write_time(root_ / "a.py", fs::file_time_type::clock::now());
  auto second = PackSnapshot(root_, {});
  EXPECT_EQ(first->digest, second->digest);
  Write("a.py", "changed");
  EXPECT_NE(PackSnapshot(root_, {})->digest, first->digest);
}

TEST_F(SnapshotTest, HonoursExcludeAndSkipsGit) {
  Write("train.py", "t");
  Write("data/big.bin", "xxxx");
  Write("model.ckpt", "c");
  Write(".git/HEAD", "ref");
  auto snap = PackSnapshot(root_, {.exclude = {"data/", "*.ckpt"}});
  ASSERT_TRUE(snap.ok());
  std::vector<std::string> paths;
  for (const auto& e : snap->entries) paths.push_back(e.path);
  EXPECT_THAT(paths, ::testing::UnorderedElementsAre("src", "train.py"));
}

TEST_F(SnapshotTest, TooLargeNamesTheLargestFiles) {
  Write("small.py", "s");
  Write("weights.bin", std::string(3000, 'w'));
  Write("more.bin", std::string(2000, 'm'));
  auto snap = PackSnapshot(root_, {.exclude = {}, .max_bytes = 4096});
  ASSERT_FALSE(snap.ok());
  EXPECT_EQ(snap.error().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(snap.error().message(), HasSubstr("weights.bin"));
  EXPECT_THAT(snap.error().message(), HasSubstr("run.exclude"));
  EXPECT_LT(snap.error().message().find("weights.bin"), snap.error().message().find("more.bin"));
}

TEST_F(SnapshotTest, RefusesCorruptBlobs) {
  EXPECT_FALSE(UnpackSnapshot("not zstd", root_ / "x").ok());
}

}  // namespace
}  // namespace tau::evidence

namespace tau::evidence {
namespace {

TEST_F(SnapshotTest, HonoursGitignoreFilesAsGitDoes) {
  Write(".gitignore", "*.log\n__pycache__/\ndata/\n!keep.log\n");
  Write("train.py", "t");
  Write("run.log", "l");
  Write("keep.log", "k");
  Write("__pycache__/x.pyc", "c");
  Write("data/big.bin", "b");
  Write("data/.gitignore", "!big.bin\n");  // cannot re-include inside an ignored folder
  Write("src/.gitignore", "*.tmp\n!src-keep.tmp\n");
  Write("src/a.tmp", "a");
  Write("src/src-keep.tmp", "s");
  Write("b.tmp", "b");  // src's rule does not reach up here
  auto snap = PackSnapshot(root_, {});
  ASSERT_TRUE(snap.ok());
  std::vector<std::string> paths;
  for (const auto& e : snap->entries) paths.push_back(e.path);
  EXPECT_THAT(paths, ::testing::UnorderedElementsAre(".gitignore", "b.tmp", "keep.log", "src", "src/.gitignore",
                                                     "src/src-keep.tmp", "train.py"));
}

}  // namespace
}  // namespace tau::evidence
