#include "resume/checkpoint_index.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "common/digest.h"

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
  Write("dir/x", "1", 20);
  Write("dir/sub/y", "2", 20);
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
  Write("real/x", "1", 20);
  fs::create_directory_symlink(outside / "etc", dir_ / "linked-folder");
  fs::create_symlink(outside / "etc" / "shadow", dir_ / "linked-file.pt");
  fs::create_symlink(outside / "etc" / "shadow", dir_ / "real" / "inner-link");
  auto index = IndexCheckpoints(dir_, {});
  fs::remove_all(outside);
  ASSERT_TRUE(index.ok()) << index.error().ToString();
  EXPECT_EQ(Names(*index), (std::vector<std::string>{"real"}));
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

TEST_F(CheckpointIndexTest, AMissingFolderListsNothing) {
  auto index = ListCheckpoints(dir_ / "absent");
  ASSERT_TRUE(index.ok());
  EXPECT_TRUE(index->empty());
}

}  // namespace
}  // namespace tau::resume
