#include "spec/env_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tau::spec {
namespace {

struct Parsed {
  StringPairs vars;
  std::string diagnostics;
};

Parsed Parse(std::string_view text) {
  Parsed p;
  Diagnostics diags;
  p.vars = ParseEnvFile(text, "x.env", &diags);
  p.diagnostics = diags.Format();
  return p;
}

TEST(EnvFileTest, QuotesAroundAValueAreRemoved) {
  Parsed p = Parse("A='one two'\nexport B=\"three\"\nC=plain\n");
  EXPECT_EQ(p.diagnostics, "");
  EXPECT_EQ(p.vars, (StringPairs{{"A", "one two"}, {"B", "three"}, {"C", "plain"}}));
}

// A value that opens a quote and never closes it is an error at the quote;
// the variable is not passed on with a stray quote in it.
TEST(EnvFileTest, AnUnterminatedQuoteIsAnErrorAtTheQuote) {
  Parsed p = Parse("OK=1\nTOKEN=\"abc\n  export KEY='x\nQ=\"\n");
  EXPECT_EQ(p.diagnostics,
            "x.env:2:7: error: the double quote that opens the value of TOKEN is never closed on this line\n"
            "x.env:3:14: error: the single quote that opens the value of KEY is never closed on this line\n"
            "x.env:4:3: error: the double quote that opens the value of Q is never closed on this line\n");
  EXPECT_EQ(p.vars, (StringPairs{{"OK", "1"}}));
}

TEST(EnvFileTest, TextAfterAClosingQuoteIsAnErrorThatSaysSo) {
  Parsed p = Parse("S_A=\"a\" junk\n");
  EXPECT_EQ(p.diagnostics, "x.env:1:5: error: the value of S_A goes on after its closing double quote (at column 7); "
                           "quote the whole value\n");
  EXPECT_TRUE(p.vars.empty());
}

TEST(EnvFileTest, ALeadingByteOrderMarkIsNotPartOfTheFirstKey) {
  Parsed p = Parse("\xEF\xBB\xBFS_A=1\n");
  EXPECT_EQ(p.diagnostics, "");
  EXPECT_EQ(p.vars, (StringPairs{{"S_A", "1"}}));
}

TEST(EnvFileTest, AKeySetTwiceIsAnErrorNamingBothLines) {
  Parsed p = Parse("A=1\nB=2\nA=3\n");
  EXPECT_EQ(p.diagnostics, "x.env:3:1: error: A is set twice, on lines 1 and 3; which one is meant?\n");
  EXPECT_EQ(p.vars, (StringPairs{{"A", "1"}, {"B", "2"}}));
}

// A value that is not UTF-8 text (or holds a NUL) is refused at its line,
// naming the variable and the byte's place but never the value, which may
// be a secret; well-formed multi-byte text passes.
TEST(EnvFileTest, AValueThatIsNotUtf8TextIsRefusedWithoutShowingIt) {
  std::string text = "OK=caf\xc3\xa9\nSECRET=ab\xff";
  text += "cd\nTRUNC=x\xe2\x82\nNUL=a";
  text.push_back('\0');
  text += "b\n";
  Parsed p = Parse(text);
  EXPECT_EQ(p.diagnostics,
            "x.env:2:1: error: the value of SECRET is not valid UTF-8 text: a byte that is not UTF-8 at byte 3 of the "
            "value; an environment variable must be text\n"
            "x.env:3:1: error: the value of TRUNC is not valid UTF-8 text: a byte that is not UTF-8 at byte 2 of the "
            "value; an environment variable must be text\n"
            "x.env:4:1: error: the value of NUL is not valid UTF-8 text: a NUL byte at byte 2 of the value; an "
            "environment variable must be text\n");
  EXPECT_EQ(p.vars, (StringPairs{{"OK", "caf\xc3\xa9"}}));
}

}  // namespace
}  // namespace tau::spec
