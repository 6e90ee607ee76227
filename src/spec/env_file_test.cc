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

}  // namespace
}  // namespace tau::spec
