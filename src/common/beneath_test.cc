#include "common/beneath.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tau {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Every case runs twice: through openat2 (where the kernel has it) and
// through the component-wise walk.
class BeneathTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ForceComponentWalkForTesting(GetParam());
    root_ = fs::path(::testing::TempDir()) / ("beneath-" + std::to_string(::getpid()) + (GetParam() ? "-walk" : "-openat2"));
    fs::remove_all(root_);
    fs::create_directories(root_ / "outputs" / "plots");
    Write("outputs/model.txt", "weights\n");
    Write("outputs/plots/loss.csv", "1,0.5\n");
    outside_ = root_.string() + "-outside";
    fs::create_directories(outside_);
    std::ofstream(fs::path(outside_) / "secret") << "not yours\n";
  }
  void TearDown() override {
    ForceComponentWalkForTesting(false);
    fs::remove_all(root_);
    fs::remove_all(outside_);
  }
  void Write(const std::string& rel, const std::string& text) { std::ofstream(root_ / rel) << text; }
  static std::string Read(const UniqueFd& fd) {
    std::string out(4096, '\0');
    ssize_t n = ::read(fd.get(), out.data(), out.size());
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return out;
  }

  fs::path root_;
  std::string outside_;
};

TEST_P(BeneathTest, OpensARegularFileInNestedFolders) {
  auto fd = OpenBeneath(root_, "outputs/plots/loss.csv");
  ASSERT_TRUE(fd.ok()) << fd.error().ToString();
  EXPECT_EQ(Read(*fd), "1,0.5\n");
  auto same = OpenBeneath(root_, "outputs//plots/./loss.csv");
  ASSERT_TRUE(same.ok()) << same.error().ToString();
  EXPECT_EQ(Read(*same), "1,0.5\n");
}

TEST_P(BeneathTest, RefusesASymlinkedFolderOnTheWay) {
  fs::create_directory_symlink(outside_, root_ / "outputs" / "etcdir");
  auto fd = OpenBeneath(root_, "outputs/etcdir/secret");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(fd.error().message(), HasSubstr("\"outputs/etcdir\" is a symbolic link"));
  // A link that stays inside the root is refused all the same.
  fs::create_directory_symlink("plots", root_ / "outputs" / "inner");
  auto inner = OpenBeneath(root_, "outputs/inner/loss.csv");
  ASSERT_FALSE(inner.ok());
  EXPECT_EQ(inner.error().code(), StatusCode::kPermissionDenied);
}

TEST_P(BeneathTest, RefusesASymlinkedFolderAsTheRootsChild) {
  fs::remove_all(root_ / "outputs");
  fs::create_directory_symlink(outside_, root_ / "outputs");
  auto fd = OpenBeneath(root_, "outputs/secret");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code(), StatusCode::kPermissionDenied);
  auto dir = OpenBeneath(root_, "outputs", BeneathKind::kDirectory);
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(dir.error().message(), HasSubstr("symbolic link"));
}

TEST_P(BeneathTest, RefusesASymlinkedFile) {
  fs::create_symlink(fs::path(outside_) / "secret", root_ / "outputs" / "shadow");
  auto fd = OpenBeneath(root_, "outputs/shadow");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(fd.error().message(), HasSubstr("symbolic link"));
}

TEST_P(BeneathTest, RefusesDotDotAbsoluteEmptyAndNulPaths) {
  for (std::string_view bad : {"../beneath-outside/secret", "outputs/../outputs/model.txt", "outputs/..", "..",
                               "/etc/passwd", "", ".", "./", "//"}) {
    auto fd = OpenBeneath(root_, bad);
    ASSERT_FALSE(fd.ok()) << bad;
    EXPECT_EQ(fd.error().code(), StatusCode::kInvalidArgument) << bad;
  }
  auto nul = OpenBeneath(root_, std::string_view("outputs/model.txt\0x", 19));
  ASSERT_FALSE(nul.ok());
  EXPECT_EQ(nul.error().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(nul.error().message(), HasSubstr("NUL"));
}

TEST_P(BeneathTest, RefusesAFifoWithoutBlocking) {
  ASSERT_EQ(::mkfifo((root_ / "outputs" / "pipe").c_str(), 0600), 0);
  auto fd = OpenBeneath(root_, "outputs/pipe");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(fd.error().message(), HasSubstr("a fifo, not a regular file"));
}

TEST_P(BeneathTest, RefusesADevice) {
  auto fd = OpenBeneath("/dev", "null");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.error().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(fd.error().message(), HasSubstr("a device"));
}

TEST_P(BeneathTest, RefusesTheWrongKind) {
  auto dir_as_file = OpenBeneath(root_, "outputs/plots");
  ASSERT_FALSE(dir_as_file.ok());
  EXPECT_EQ(dir_as_file.error().code(), StatusCode::kPermissionDenied);
  auto file_as_dir = OpenBeneath(root_, "outputs/model.txt", BeneathKind::kDirectory);
  ASSERT_FALSE(file_as_dir.ok());
  EXPECT_EQ(file_as_dir.error().code(), StatusCode::kPermissionDenied);
  auto through_file = OpenBeneath(root_, "outputs/model.txt/x");
  ASSERT_FALSE(through_file.ok());
  EXPECT_EQ(through_file.error().code(), StatusCode::kPermissionDenied);
  EXPECT_THAT(through_file.error().message(), HasSubstr("not a folder"));
  auto trailing_slash = OpenBeneath(root_, "outputs/model.txt/");  // names a folder, as open(2) reads it
  ASSERT_FALSE(trailing_slash.ok());
  EXPECT_EQ(trailing_slash.error().code(), StatusCode::kPermissionDenied);
}

TEST_P(BeneathTest, MissingFilesAreNotFound) {
  auto file = OpenBeneath(root_, "outputs/nope.txt");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.error().code(), StatusCode::kNotFound);
  auto folder = OpenBeneath(root_, "nope/model.txt");
  ASSERT_FALSE(folder.ok());
  EXPECT_EQ(folder.error().code(), StatusCode::kNotFound);
  EXPECT_THAT(folder.error().message(), HasSubstr("\"nope\" does not exist"));
  auto root = OpenBeneath(root_ / "absent", "x");
  ASSERT_FALSE(root.ok());
  EXPECT_EQ(root.error().code(), StatusCode::kNotFound);
}

TEST_P(BeneathTest, OpensFoldersAndFilesBeneathAnOpenFolder) {
  auto dir = OpenBeneath(root_, "outputs", BeneathKind::kDirectory);
  ASSERT_TRUE(dir.ok()) << dir.error().ToString();
  auto fd = OpenBeneathAt(dir->get(), "model.txt");
  ASSERT_TRUE(fd.ok()) << fd.error().ToString();
  EXPECT_EQ(Read(*fd), "weights\n");
  EXPECT_NE(::fcntl(fd->get(), F_GETFD) & FD_CLOEXEC, 0);
}

TEST_P(BeneathTest, OpensAPathUnderTheRoot) {
  auto fd = OpenPathBeneath(root_, root_ / "outputs" / "model.txt");
  ASSERT_TRUE(fd.ok()) << fd.error().ToString();
  EXPECT_EQ(Read(*fd), "weights\n");
  auto outside = OpenPathBeneath(root_, fs::path(outside_) / "secret");
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().code(), StatusCode::kInvalidArgument);
  fs::create_directory_symlink(outside_, root_ / "attempts");
  auto linked = OpenPathBeneath(root_, root_ / "attempts" / "secret");
  ASSERT_FALSE(linked.ok());
  EXPECT_EQ(linked.error().code(), StatusCode::kPermissionDenied);
}

INSTANTIATE_TEST_SUITE_P(Modes, BeneathTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Walk" : "Openat2"; });

}  // namespace
}  // namespace tau
