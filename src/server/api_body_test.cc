#include "server/api_body.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace tau::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string ErrorOf(std::string_view body, nlohmann::json* details = nullptr) {
  auto r = ParseJsonObjectBody(body, details);
  return r.ok() ? "" : r.error().message();
}

TEST(ApiBodyTest, InvalidUtf8NamesTheByteItsOffsetAndTheField) {
  // "\xff" at offset 29, inside the value of spec.name.
  const std::string body = std::string(R"({"spec": {"x": 1, "name": "ab)") + "\xff" + R"(cd"}})";
  ASSERT_EQ(body.find(static_cast<char>(0xff)), 29u);
  nlohmann::json details;
  const std::string error = ErrorOf(body, &details);
  EXPECT_EQ(error,
            "the request body is not valid UTF-8: byte 0xFF at offset 29 (in spec.name) does not begin or continue "
            "a UTF-8 character");
  EXPECT_EQ(details.value("offset", 0), 29);
  EXPECT_EQ(details.value("field", ""), "spec.name");
  EXPECT_EQ(details.value("byte", ""), "0xFF");
}

TEST(ApiBodyTest, InvalidUtf8InAListOrAKeyOrATruncatedCharacter) {
  EXPECT_THAT(ErrorOf(std::string(R"({"spec": {"env": ["a", "b", "c)") + "\xc3" + "\"]}}"),
              HasSubstr("at offset 30 (in spec.env[2])"));
  EXPECT_THAT(ErrorOf(std::string(R"({"spec": {"na)") + "\xe9" + R"(me": 1}})"),
              HasSubstr("byte 0xE9 at offset 13 (in a key of spec)"));
  // A lead byte whose continuation is missing is named, not the byte after it.
  EXPECT_THAT(ErrorOf(std::string(R"({"name": "x)") + "\xc3" + "(\"}"), HasSubstr("byte 0xC3 at offset 11 (in name)"));
  // An encoded surrogate is not UTF-8 either.
  EXPECT_THAT(ErrorOf(std::string(R"({"name": ")") + "\xed\xa0\x80" + "\"}"), HasSubstr("byte 0xED at offset 10"));
}

TEST(ApiBodyTest, NestingDeeperThanTheLimitIsRefusedBeforeParsing) {
  // 20,000 levels once overflowed a request thread's stack in code that
  // walks the parsed spec.
  const std::string deep = "{\"spec\": " + std::string(20000, '[') + std::string(20000, ']') + "}";
  EXPECT_THAT(ErrorOf(deep), HasSubstr("nests arrays and objects deeper than 64 levels (at offset 72)"));
  // Brackets inside strings do not count; the limit itself is accepted.
  const std::string quoted = "{\"a\": \"" + std::string(1000, '[') + "\"}";
  EXPECT_TRUE(ParseJsonObjectBody(quoted).ok());
  const std::string at_limit = std::string(1, '{') + "\"a\": " + std::string(63, '[') + std::string(63, ']') + "}";
  EXPECT_TRUE(ParseJsonObjectBody(at_limit).ok()) << ParseJsonObjectBody(at_limit).error().ToString();
  const std::string escaped = "{\"a\": \"\\\"" + std::string(100, '{') + "\"}";
  EXPECT_TRUE(ParseJsonObjectBody(escaped).ok()) << "an escaped quote does not end the string";
}

TEST(ApiBodyTest, OtherErrorsSayWhatTheBodyIs) {
  EXPECT_THAT(ErrorOf("[1, 2]"), HasSubstr("the request body is an array; send a JSON object"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("the request body is empty"));
  const std::string syntax = ErrorOf(R"({"spec": {"name": tru}})");
  EXPECT_THAT(syntax, HasSubstr("the request body is not JSON (in spec.name): "));
  EXPECT_THAT(syntax, HasSubstr("line 1, column"));
  EXPECT_THAT(syntax, Not(HasSubstr("json.exception")));
  // A syntax error before a byte that is not UTF-8 is the one named.
  EXPECT_THAT(ErrorOf(std::string(R"({"a": nul, "b": ")") + "\xff" + "\"}"), HasSubstr("is not JSON"));
}

TEST(ApiBodyTest, AWellFormedObjectWithUnicodeParses) {
  auto r = ParseJsonObjectBody(R"({"name": "caf\u00e9 )" "\xc3\xa9" R"( \ud83d\ude00", "n": [1, {"k": null}]})");
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ((*r)["name"].get<std::string>(), "caf\xc3\xa9 \xc3\xa9 \xf0\x9f\x98\x80");
}

TEST(ApiBodyTest, FirstInvalidUtf8Byte) {
  EXPECT_EQ(FirstInvalidUtf8Byte("plain \xc3\xa9 \xf0\x9f\x98\x80"), std::string_view::npos);
  EXPECT_EQ(FirstInvalidUtf8Byte("ab\xc0\xaf"), 2u);  // overlong "/"
  EXPECT_EQ(FirstInvalidUtf8Byte("a\xf4\x90\x80\x80"), 1u);  // past U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8Byte("abc\xe2\x82"), 3u);  // cut short at the end
}

}  // namespace
}  // namespace tau::server
