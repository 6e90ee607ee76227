#include "server/api_chunked_body.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace tau::server {
namespace {

using ::testing::HasSubstr;

// Reads `bytes`, at most `step` at a time, then the end of the stream;
// `*taken` counts what was read.
ReadSome From(const std::string& bytes, size_t* taken, size_t step = 7) {
  return [&bytes, taken, step](char* out, size_t n) -> ssize_t {
    const size_t k = std::min({n, step, bytes.size() - *taken});
    std::memcpy(out, bytes.data() + *taken, k);
    *taken += k;
    return static_cast<ssize_t>(k);
  };
}

TEST(ChunkedBodyTest, ChunksWithExtensionsAndTrailersAreJoinedAndNothingPastTheBodyIsRead) {
  const std::string wire = "5;a=b\r\nhello\r\n1 ;x\r\n \r\n00006\r\nworld!\r\n0\r\nX-Sum: 1\r\n\r\nGET / HTTP/1.1\r\n";
  size_t taken = 0;
  std::string body;
  ASSERT_TRUE(ReadChunkedBody(From(wire, &taken), 100, &body).ok());
  EXPECT_EQ(body, "hello world!");
  EXPECT_EQ(wire.substr(taken), "GET / HTTP/1.1\r\n");
}

TEST(ChunkedBodyTest, AnEmptyBodyIsTheLastChunkAlone) {
  const std::string wire = "0\r\n\r\n";
  size_t taken = 0;
  std::string body;
  ASSERT_TRUE(ReadChunkedBody(From(wire, &taken), 100, &body).ok());
  EXPECT_EQ(body, "");
  EXPECT_EQ(taken, wire.size());
}

TEST(ChunkedBodyTest, WhatIsNotAChunkedBodyIsNamed) {
  struct Case {
    std::string wire;
    StatusCode code;
    std::string says;
  };
  const Case cases[] = {
      {"-5\r\nhello\r\n0\r\n\r\n", StatusCode::kInvalidArgument, "the chunk size \"-5\" of the chunked body is not a hexadecimal number"},
      {"0x5\r\nhello\r\n0\r\n\r\n", StatusCode::kInvalidArgument, "\"0x5\""},
      {"\r\nhello\r\n", StatusCode::kInvalidArgument, "\"\" of the chunked body is not a hexadecimal number"},
      {"5\nhello\r\n", StatusCode::kInvalidArgument, "ends with a bare LF"},
      {"5\r\nhello!\r\n", StatusCode::kInvalidArgument, "not followed by CRLF where its size (5 bytes) says it ends"},
      {"5\r\nhello\n0\r\n\r\n", StatusCode::kInvalidArgument, "not followed by CRLF"},
      {"5;\x01\r\nhello\r\n", StatusCode::kInvalidArgument, "holds a control character"},
      {"10000000000000000\r\n", StatusCode::kInvalidArgument, "too large"},
      {std::string(5000, '0') + "\r\n", StatusCode::kInvalidArgument, "chunk-size line of the chunked body is over 4096 bytes"},
      {"0\r\nno colon\r\n\r\n", StatusCode::kInvalidArgument, "is not a header field"},
      {"0\r\n folded: x\r\n\r\n", StatusCode::kInvalidArgument, "is not a header field"},
      {std::string("0\r\nX\0: y\r\n\r\n", 12), StatusCode::kInvalidArgument, "in trailer 1 of the chunked body is malformed"},
      {"0\r\nX: a\rb\r\n\r\n", StatusCode::kInvalidArgument, "in trailer 1 of the chunked body holds a control character"},
      {"0\r\nA: b\r\nX : y\r\n\r\n", StatusCode::kInvalidArgument, "the header name \"X \" in trailer 2"},
      {"0\r\n: y\r\n\r\n", StatusCode::kInvalidArgument, "the header name \"\" in trailer 1"},
      {"2 \r\n{}\r\n0\r\n\r\n", StatusCode::kInvalidArgument, "\"2 \" of the chunked body is not a hexadecimal number"},
      {"2\t\r\n{}\r\n0\r\n\r\n", StatusCode::kInvalidArgument, "is not a hexadecimal number"},
      {"65\r\n", StatusCode::kResourceExhausted, "over 100 bytes"},
      {"32\r\n" + std::string(50, 'a') + "\r\n33\r\n", StatusCode::kResourceExhausted, "over 100 bytes"},
      {"5\r\nhel", StatusCode::kUnavailable, "ended inside a chunk"},
      {"5\r\nhello", StatusCode::kUnavailable, "ended after a chunk's data"},
      {"5", StatusCode::kUnavailable, "ended inside a chunk-size line"},
      {"0\r\nX: y\r\n", StatusCode::kUnavailable, "ended inside a trailer line"},
  };
  for (const Case& c : cases) {
    size_t taken = 0;
    std::string body;
    Status st = ReadChunkedBody(From(c.wire, &taken), 100, &body);
    ASSERT_FALSE(st.ok()) << c.wire;
    EXPECT_EQ(st.code(), c.code) << c.wire << ": " << st.ToString();
    EXPECT_THAT(st.message(), HasSubstr(c.says)) << c.wire;
  }
}

TEST(ChunkedBodyTest, AChunkOverTheLimitIsRefusedBeforeItsDataIsRead) {
  const std::string wire = "ffffffff\r\n";
  size_t taken = 0;
  std::string body;
  EXPECT_EQ(ReadChunkedBody(From(wire, &taken), 1 << 20, &body).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(taken, wire.size());
}

TEST(ChunkedBodyTest, TrailersPastTheirLimitAreRefused) {
  std::string wire = "0\r\n";
  for (int i = 0; i < 400; ++i) wire += "X-Trailer-" + std::to_string(i) + ": " + std::string(40, 'v') + "\r\n";
  wire += "\r\n";
  size_t taken = 0;
  std::string body;
  Status st = ReadChunkedBody(From(wire, &taken), 100, &body);
  EXPECT_THAT(st.message(), HasSubstr("trailers of the chunked body are over 16384 bytes"));
}

}  // namespace
}  // namespace tau::server
