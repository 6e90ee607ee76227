#include "evidence/path_match.h"

#include <gtest/gtest.h>

namespace tau::evidence {
namespace {

TEST(GlobMatchTest, StarsAndQuestionMarks) {
  EXPECT_TRUE(GlobMatch("*.ckpt", "model.ckpt"));
  EXPECT_FALSE(GlobMatch("*.ckpt", "a/model.ckpt"));
  EXPECT_TRUE(GlobMatch("**/*.ckpt", "a/b/model.ckpt"));
  EXPECT_TRUE(GlobMatch("**/*.ckpt", "model.ckpt"));
  EXPECT_TRUE(GlobMatch("src/**/*.tmp", "src/x.tmp"));
  EXPECT_TRUE(GlobMatch("src/**/*.tmp", "src/a/b/x.tmp"));
  EXPECT_FALSE(GlobMatch("src/*.tmp", "src/a/x.tmp"));
  EXPECT_TRUE(GlobMatch("data?", "data1"));
  EXPECT_FALSE(GlobMatch("data?", "data/"));
  EXPECT_TRUE(GlobMatch("**", "anything/at/all"));
}

TEST(ExcludeMatcherTest, NamesAnywhereAnchoredPathsAndFoldersOnly) {
  ExcludeMatcher m({"*.ckpt", "data/", "logs/raw", "__pycache__/", "/top.txt"});
  EXPECT_TRUE(m.Excluded("model.ckpt", false));
  EXPECT_TRUE(m.Excluded("runs/7/model.ckpt", false));
  EXPECT_TRUE(m.Excluded("data", true));
  EXPECT_TRUE(m.Excluded("sub/data", true));
  EXPECT_FALSE(m.Excluded("data", false));  // a file named data stays
  EXPECT_TRUE(m.Excluded("logs/raw", true));
  EXPECT_FALSE(m.Excluded("other/logs/raw", true));
  EXPECT_TRUE(m.Excluded("a/__pycache__", true));
  EXPECT_TRUE(m.Excluded("top.txt", false));
  EXPECT_FALSE(m.Excluded("train.py", false));
}

}  // namespace
}  // namespace tau::evidence
