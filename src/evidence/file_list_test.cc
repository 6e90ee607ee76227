#include "evidence/file_list.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
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

TEST(FileListTest, TheTooDeepErrorNeverCutsACharacter) {
  // Folders named "\u20ac\u20ac" (6 bytes; 7 with the '/'): the 200-byte
  // cut of the path falls inside the 29th folder's second euro sign.
  fs::path root = fs::temp_directory_path() / ("tau-deep-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::path deep = root;
  for (int i = 0; i < 260; ++i) deep /= "\u20ac\u20ac";
  fs::create_directories(deep);
  auto files = ListFileDigests(root);
  fs::remove_all(root);
  ASSERT_FALSE(files.ok());
  const std::string& message = files.error().message();
  EXPECT_NE(message.find("is nested more than 256 folders deep"), std::string::npos) << message;
  // Every byte sequence in the message is whole UTF-8.
  for (size_t i = 0; i < message.size();) {
    const auto b = static_cast<unsigned char>(message[i]);
    const size_t length = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
    ASSERT_TRUE(b < 0x80 || b >= 0xC2) << "a continuation byte starts a character at " << i;
    ASSERT_LE(i + length, message.size()) << "a character is cut at the end";
    for (size_t k = 1; k < length; ++k) {
      ASSERT_EQ(static_cast<unsigned char>(message[i + k]) & 0xC0, 0x80) << "a character is cut at " << i;
    }
    i += length;
  }
}

TEST(FileListTest, LinksFifosAndLinkedRootsAreNeitherListedNorFollowed) {
  fs::path root = fs::temp_directory_path() / ("tau-files-links-" + std::to_string(::getpid()));
  fs::path outside = root.string() + "-outside";
  fs::remove_all(root);
  fs::remove_all(outside);
  fs::create_directories(root / "out");
  fs::create_directories(outside);
  std::ofstream(outside / "shadow") << "secret";
  std::ofstream(root / "out" / "model.txt") << "w";
  fs::create_directory_symlink(outside, root / "out" / "etcdir");
  fs::create_symlink(outside / "shadow", root / "out" / "shadow");
  ASSERT_EQ(::mkfifo((root / "out" / "pipe").c_str(), 0600), 0);
  auto files = ListFileDigests(root / "out");
  ASSERT_TRUE(files.ok()) << files.error().ToString();
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].path, "model.txt");

  // The listed folder itself replaced by a link to elsewhere.
  fs::create_directory_symlink(outside, root / "linked");
  auto linked = ListFileDigests(root / "linked");
  ASSERT_FALSE(linked.ok());
  EXPECT_EQ(linked.error().code(), StatusCode::kPermissionDenied);

  auto via_link = FileSha256Hex(root / "out" / "shadow");
  ASSERT_FALSE(via_link.ok());
  EXPECT_EQ(via_link.error().code(), StatusCode::kPermissionDenied);
  auto fifo = FileSha256Hex(root / "out" / "pipe");  // refused, not blocked on
  ASSERT_FALSE(fifo.ok());
  EXPECT_EQ(fifo.error().code(), StatusCode::kPermissionDenied);
  fs::remove_all(root);
  fs::remove_all(outside);
}

TEST(FileListTest, SecretNamesAreRecognisedInAnyCase) {
  for (const char* name : {"WANDB_API_KEY", "hf_token", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "MyKeyring", "MY_PASSWD",
                           "GH_PAT", "CREDENTIALS", "DB_PASS", "SENTRY_DSN", "BASIC_AUTH", "SSH_PRIVATE_KEY_FILE"}) {
    EXPECT_TRUE(IsSecretEnvName(name)) << name;
  }
  for (const char* name : {"PATH", "HOME", "CUDA_VISIBLE_DEVICES", "LR", "PWD", "OLDPWD", "GIT_AUTHOR_NAME", "PATCH_SIZE",
                           "PASSES"}) {
    EXPECT_FALSE(IsSecretEnvName(name)) << name;
  }
}

}  // namespace
}  // namespace tau::evidence
