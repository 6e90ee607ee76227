#include "server/api_request_head.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tau::server {
namespace {

using ::testing::HasSubstr;

constexpr const char* kLine = "POST /api/v1/jobs HTTP/1.1\r\n";

Status Check(const std::string& headers) { return CheckRequestHead(std::string(kLine) + headers + "\r\n"); }

TEST(RequestHeadTest, AWellFormedHeadPasses) {
  EXPECT_TRUE(Check("Host: x\r\nContent-Length: 5\r\nX-Empty:\r\nX-Tab:\ta\tb\r\n").ok());
  EXPECT_TRUE(Check("transfer-encoding:  chunked \r\n").ok());
  EXPECT_TRUE(CheckRequestHead(std::string(kLine) + "Host: x\r\n").ok()) << "cut short: httplib answers it";
}

TEST(RequestHeadTest, EachMalformedLineIsNamed) {
  struct Case {
    std::string headers;
    std::string says;
  };
  const Case cases[] = {
      {"Host: x\r\nNoColon\r\n", "line 3 of the request head (\"NoColon\") is not a header"},
      {"Host: x\nContent-Length: 5\r\n", "line 2 of the request head ends with a bare LF"},
      {"Host: x\r\n folded\r\n", "line 3 of the request head begins with white space"},
      {"Host : x\r\n", "the header name \"Host \" on line 2"},
      {": x\r\n", "the header name \"\" on line 2"},
      {"X-A: a\x01" "b\r\n", "the value of the header \"X-A\" on line 2 of the request head holds a control character"},
      {"Content-Length:\r\n", "\"Content-Length\" on line 2 of the request head has no value"},
      {"content-length: \t \r\n", "has no value"},
      {"Transfer-Encoding:\r\n", "has no value"},
      {"Content-Length: %35\r\n", "('%' in it)"},
      {"Transfer-Encoding: %63hunked\r\n", "('%' in it)"},
  };
  for (const Case& c : cases) {
    Status st = Check(c.headers);
    ASSERT_FALSE(st.ok()) << c.headers;
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr(c.says)) << c.headers;
  }
  Status line = CheckRequestHead("GET / HTTP/1.1\n\r\n");
  EXPECT_THAT(line.message(), HasSubstr("line 1 of the request head ends with a bare LF"));
}

TEST(RequestHeadTest, WhatFollowsTheHeadIsNotChecked) {
  EXPECT_TRUE(CheckRequestHead(std::string(kLine) + "Host: x\r\n\r\nnot a header\n").ok());
}

}  // namespace
}  // namespace tau::server
