#include "evidence/gitignore.h"

#include <gtest/gtest.h>

namespace tau::evidence {
namespace {

TEST(GitIgnoreTest, PatternsAsGitReadsThem) {
  GitIgnore g;
  g.AddFile("", "# comment\n\n*.log\n!keep.log\n/build/\ndata/raw\n\\#literal\ntrailing   \n*.py[co]\n");
  EXPECT_TRUE(g.Ignored("a.log", false));
  EXPECT_TRUE(g.Ignored("sub/b.log", false));
  EXPECT_FALSE(g.Ignored("keep.log", false));
  EXPECT_FALSE(g.Ignored("sub/keep.log", false));
  EXPECT_TRUE(g.Ignored("build", true));
  EXPECT_FALSE(g.Ignored("build", false));       // folders only
  EXPECT_FALSE(g.Ignored("src/build", true));    // anchored at the root
  EXPECT_TRUE(g.Ignored("data/raw", true));
  EXPECT_FALSE(g.Ignored("x/data/raw", true));
  EXPECT_TRUE(g.Ignored("#literal", false));
  EXPECT_TRUE(g.Ignored("trailing", false));
  EXPECT_TRUE(g.Ignored("m.pyc", false));
  EXPECT_FALSE(g.Ignored("m.py", false));
}

TEST(GitIgnoreTest, NestedFilesApplyBelowTheirFolderAndWinOverOuterOnes) {
  GitIgnore g;
  g.AddFile("", "*.tmp\n");
  g.AddFile("sub", "!important.tmp\n/only-here.txt\n");
  EXPECT_TRUE(g.Ignored("x.tmp", false));
  EXPECT_TRUE(g.Ignored("sub/x.tmp", false));
  EXPECT_FALSE(g.Ignored("sub/important.tmp", false));
  EXPECT_TRUE(g.Ignored("important.tmp", false));  // the negation is sub's only
  EXPECT_TRUE(g.Ignored("sub/only-here.txt", false));
  EXPECT_FALSE(g.Ignored("sub/deeper/only-here.txt", false));
  EXPECT_FALSE(g.Ignored("only-here.txt", false));
  size_t n = g.size();
  g.AddFile("other", "*\n");
  g.Truncate(n);
  EXPECT_FALSE(g.Ignored("other/file", false));
}

}  // namespace
}  // namespace tau::evidence
