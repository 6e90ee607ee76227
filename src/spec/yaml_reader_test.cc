#include "spec/yaml_tree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tau::spec {
namespace {

using ::testing::HasSubstr;

std::string Errors(std::string_view text, ReadLimits limits = {}) {
  Node root;
  Diagnostics diags;
  ReadYaml(text, "f.yaml", limits, &root, &diags);
  return diags.Format();
}

TEST(YamlReaderTest, KeepsPositionsAndQuoting) {
  Node root;
  Diagnostics diags;
  ASSERT_TRUE(ReadYaml("a: 1\nb:\n  c: \"2\"\n  d: [x, 'y']\n", "f.yaml", {}, &root, &diags));
  EXPECT_EQ(diags.Format(), "");
  ASSERT_TRUE(root.IsMapping());
  const Node* b = root.Find("b");
  ASSERT_NE(b, nullptr);
  const Node* c = b->Find("c");
  EXPECT_EQ(c->scalar, "2");
  EXPECT_TRUE(c->quoted);
  EXPECT_EQ(c->location.line, 3);
  EXPECT_EQ(c->location.column, 6);
  EXPECT_FALSE(root.Find("a")->quoted);
  EXPECT_EQ(b->Find("d")->items.size(), 2u);
}

TEST(YamlReaderTest, EmptyValuesAreNullAtTheirKey) {
  Node root;
  Diagnostics diags;
  ASSERT_TRUE(ReadYaml("x: 1\nrun:\n", "f.yaml", {}, &root, &diags));
  const Node* run = root.Find("run");
  EXPECT_TRUE(run->IsNull());
  EXPECT_EQ(run->location.line, 2);
  EXPECT_EQ(run->location.column, 1);
}

TEST(YamlReaderTest, DuplicateKeysAreErrors) {
  EXPECT_THAT(Errors("a: 1\nb: 2\na: 3\n"), HasSubstr("f.yaml:3:1: error: duplicate key \"a\""));
}

TEST(YamlReaderTest, SeveralDocumentsAreAnError) {
  EXPECT_THAT(Errors("a: 1\n---\nb: 2\n"), HasSubstr("several YAML documents"));
  EXPECT_EQ(Errors("---\na: 1\n"), "");
  EXPECT_EQ(Errors("a: 1\n---\n"), "");
}

TEST(YamlReaderTest, SyntaxErrorsArePositioned) {
  EXPECT_THAT(Errors("a: [1, 2\n"), HasSubstr("f.yaml:"));
  EXPECT_THAT(Errors("a: b: c\n"), HasSubstr("unexpected ':'"));
}

TEST(YamlReaderTest, AliasBombsStopAtTheNodeLimit) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'j'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = c;
  }
  EXPECT_THAT(Errors(bomb), HasSubstr("document is too large"));
}

TEST(YamlReaderTest, DeepNestingIsCapped) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  EXPECT_THAT(Errors(deep), HasSubstr("nesting is deeper than 32 levels"));
}

TEST(YamlReaderTest, SizeIsCapped) {
  ReadLimits limits;
  limits.max_bytes = 10;
  EXPECT_THAT(Errors("a: 12345678901234567890\n", limits), HasSubstr("at most 10 bytes"));
}

TEST(YamlReaderTest, RejectsComplexKeysAndTags) {
  EXPECT_THAT(Errors("? [a]\n: 1\n"), HasSubstr("mapping keys must be plain text"));
  EXPECT_THAT(Errors("a: !custom 1\n"), HasSubstr("unsupported YAML tag"));
}

}  // namespace
}  // namespace tau::spec

namespace tau::spec {
namespace {

TEST(YamlReaderTest, RejectsInvalidUtf8WithItsPosition) {
  EXPECT_THAT(Errors("a: ok\nb: caf\xc3\xa9 \x9e\n"), HasSubstr("f.yaml:2:9: error: the file is not valid UTF-8"));
  EXPECT_THAT(Errors("a: \xc0\xaf\n"), HasSubstr("not valid UTF-8"));        // overlong '/'
  EXPECT_THAT(Errors("a: \xed\xa0\x80\n"), HasSubstr("not valid UTF-8"));    // surrogate
  EXPECT_EQ(Errors("a: caf\xc3\xa9 \xf0\x9f\x9a\x80\n"), "");
}

}  // namespace
}  // namespace tau::spec

namespace tau::spec {
namespace {

// A quoted scalar that is never closed is a syntax error that points at its
// opening quote, whether the file ends right after it or later lines would
// be swallowed into it.
TEST(YamlReaderTest, UnterminatedQuotesAreErrorsAtTheOpeningQuote) {
  const std::string never_closed =
      "f.yaml:2:15: error: invalid YAML: this quoted string is never closed (its closing quote is "
      "missing)\n";
  EXPECT_EQ(Errors("run:\n  entrypoint: \"train.py\n"), never_closed);
  EXPECT_EQ(Errors("run:\n  entrypoint: \"train.py"), never_closed);
  EXPECT_EQ(Errors("run:\n  entrypoint: 'train.py\n"), never_closed);
  EXPECT_EQ(Errors("run:\n  entrypoint: \"train.py\n  args: [a]\n"), never_closed);
  EXPECT_THAT(Errors("\"name: x\n"), HasSubstr("f.yaml:1:1: error: invalid YAML: this quoted string is never closed"));
}

// What yaml-cpp accepted and the YAML grammar does not.
TEST(YamlReaderTest, RejectsWhatTheGrammarRejects) {
  EXPECT_THAT(Errors("- a\nb: 1\n"), HasSubstr("f.yaml:2:1: error: invalid YAML: "));
  EXPECT_THAT(Errors("%YAML 1.2\na: 1\n"), HasSubstr("f.yaml:"));
  EXPECT_THAT(Errors("a: *nope\n"), HasSubstr("f.yaml:1:4: error: alias *nope refers to no anchor"));
  EXPECT_THAT(Errors("a: &x 1\nb: &x 2\nc: *x\n"),
              HasSubstr("f.yaml:2:4: error: anchor &x is defined twice; give each anchor its own name"));
}

TEST(YamlReaderTest, CoreTagsAreKeptAndMustFitTheText) {
  Node root;
  Diagnostics diags;
  ASSERT_TRUE(ReadYaml("a: !!float 1\nb: !!str 2\nc: 3\n", "f.yaml", {}, &root, &diags));
  EXPECT_EQ(diags.Format(), "");
  EXPECT_EQ(root.Find("a")->tag, "float");
  EXPECT_EQ(root.Find("b")->tag, "str");
  EXPECT_TRUE(root.Find("b")->quoted);
  EXPECT_EQ(root.Find("c")->tag, "");
  EXPECT_THAT(Errors("a: !!int abc\n"), HasSubstr("f.yaml:1:4: error: \"abc\" is not a valid !!int"));
  EXPECT_THAT(Errors("a: !!bool yes\n"), HasSubstr("is not a valid !!bool"));
  EXPECT_THAT(Errors("a: !!float x1\n"), HasSubstr("is not a valid !!float"));
  EXPECT_EQ(Errors("a: !!int 0x1F\nb: !!float -1.5e3\nc: !!bool false\nd: !!null ~\n"), "");
}

}  // namespace
}  // namespace tau::spec

namespace tau::spec {
namespace {

TEST(YamlReaderTest, AControlCharacterIsAnErrorWhereItIs) {
  EXPECT_EQ(Errors("a: 1\nb: x\x01y\n"),
            "f.yaml:2:5: error: a control character (U+0001) is not allowed in YAML; write it as an escape in "
            "double quotes (\"\\x01\")\n");
  EXPECT_EQ(Errors(std::string("a: 1\nbé: \0\n", 11)), "f.yaml:2:5: error: the file holds a NUL byte here; a YAML "
                                                        "file is UTF-8 text\n");
  EXPECT_EQ(Errors("a: \"x\\x01y\"\n"), "") << "written as an escape it is a string";
}

TEST(YamlReaderTest, JsonSurrogatePairEscapesAreTheCharacterTheyWrite) {
  Node root;
  Diagnostics diags;
  ASSERT_TRUE(ReadYaml(R"({"a": "x \ud83d\ude00 y", "b": "\\ud83d\\ude00"})", "f.json", {}, &root, &diags))
      << diags.Format();
  EXPECT_EQ(root.Find("a")->scalar, "x \xF0\x9F\x98\x80 y");
  EXPECT_EQ(root.Find("b")->scalar, "\\ud83d\\ude00") << "escaped backslashes are not escapes";
  // Outside JSON a plain "\ud83d" is text, and a lone surrogate is still refused.
  ASSERT_TRUE(ReadYaml("a: x\\ud83d\\ude00\n", "f.yaml", {}, &root, &diags));
  EXPECT_EQ(root.Find("a")->scalar, "x\\ud83d\\ude00");
  EXPECT_NE(Errors(R"({"a": "\ud83d"})"), "");
}

}  // namespace
}  // namespace tau::spec
