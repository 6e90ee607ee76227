#include "evidence/file_list.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "common/digest.h"

namespace tau::evidence {
namespace {

namespace fs = std::filesystem;

TEST(FileListTest, ListsRegularFilesSortedWithTheirDigests) {
  fs::path root = fs::temp_directory_path() / ("tau-files-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "sub");
  std::ofstream(root / "b.txt") << "bee";
  std::ofstream(root / "sub" / "a.txt") << "a";
  fs::create_symlink(root / "b.txt", root / "link");
  auto files = ListFileDigests(root);
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].path, "b.txt");
  EXPECT_EQ((*files)[0].size, 3);
  EXPECT_EQ((*files)[0].sha256, Sha256Hex("bee"));
  EXPECT_EQ((*files)[1].path, "sub/a.txt");
  EXPECT_TRUE(ListFileDigests(root / "absent")->empty());
  fs::remove_all(root);
}

TEST(FileListTest, SecretNamesAreRecognisedInAnyCase) {
  for (const char* name : {"WANDB_API_KEY", "hf_token", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "MyKeyring"}) {
    EXPECT_TRUE(IsSecretEnvName(name)) << name;
  }
  for (const char* name : {"PATH", "HOME", "CUDA_VISIBLE_DEVICES", "LR"}) EXPECT_FALSE(IsSecretEnvName(name)) << name;
}

}  // namespace
}  // namespace tau::evidence
