#include "server/api_chunked_body.h"

#include "server/api_request_head.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>

namespace tau::server {
namespace {

// Reads one line (up to `limit` bytes with its CRLF) into `*line`, without
// the CRLF. The bytes are read one at a time: nothing past the line is
// taken from the stream.
Status ReadLine(const ReadSome& read, size_t limit, const char* what, std::string* line) {
  line->clear();
  for (;;) {
    char c;
    ssize_t n = read(&c, 1);
    if (n <= 0) return UnavailableError(fmt::format("the chunked body ended inside a {}", what));
    if (c == '\n') {
      if (line->empty() || line->back() != '\r') {
        return InvalidArgumentError(fmt::format("a {} of the chunked body ends with a bare LF; lines end with CRLF", what));
      }
      line->pop_back();
      return Status::Ok();
    }
    if (line->size() + 1 >= limit) {
      return InvalidArgumentError(fmt::format("a {} of the chunked body is over {} bytes", what, limit));
    }
    line->push_back(c);
  }
}

// The size a chunk-size line gives: hexadecimal digits (at most 64 bits of
// them), then
// nothing or extensions (";name=value", white space before the ';').
Status ParseChunkSize(const std::string& line, uint64_t* size) {
  size_t i = 0;
  uint64_t value = 0;
  while (i < line.size() && std::isxdigit(static_cast<unsigned char>(line[i]))) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(line[i])));
    const uint64_t digit = c <= '9' ? static_cast<uint64_t>(c - '0') : static_cast<uint64_t>(c - 'a' + 10);
    if (value > (UINT64_MAX >> 4)) {
      return InvalidArgumentError("a chunk size of the chunked body is too large");
    }
    value = value * 16 + digit;
    ++i;
  }
  if (i == 0) {
    return InvalidArgumentError(fmt::format("the chunk size \"{}\" of the chunked body is not a hexadecimal number",
                                            ShownBytes(line)));
  }
  size_t rest = i;
  while (rest < line.size() && (line[rest] == ' ' || line[rest] == '\t')) ++rest;
  // White space only before a ';' (RFC 9112, 7.1.1: BWS ";" ...).
  if ((rest < line.size() && line[rest] != ';') || (rest == line.size() && rest != i)) {
    return InvalidArgumentError(fmt::format("the chunk size \"{}\" of the chunked body is not a hexadecimal number",
                                            ShownBytes(line)));
  }
  for (size_t k = rest; k < line.size(); ++k) {
    const unsigned char c = static_cast<unsigned char>(line[k]);
    if ((c < 0x20 && c != '\t') || c == 0x7F) {
      return InvalidArgumentError("a chunk extension of the chunked body holds a control character");
    }
  }
  *size = value;
  return Status::Ok();
}

}  // namespace

Status ReadChunkedBody(const ReadSome& read, size_t max, std::string* body) {
  std::string line;
  char buffer[16 * 1024];
  for (;;) {
    if (Status st = ReadLine(read, kMaxChunkLine, "chunk-size line", &line); !st.ok()) return st;
    uint64_t size = 0;
    if (Status st = ParseChunkSize(line, &size); !st.ok()) return st;
    if (size == 0) break;
    if (size > max || body->size() + size > max) {
      return ResourceExhaustedError(fmt::format("the request body is over {} bytes, the most this route takes", max));
    }
    for (uint64_t left = size; left > 0;) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(left, sizeof buffer));
      ssize_t n = read(buffer, want);
      if (n <= 0) return UnavailableError("the chunked body ended inside a chunk");
      body->append(buffer, static_cast<size_t>(n));
      left -= static_cast<uint64_t>(n);
    }
    char end[2];
    for (size_t got = 0; got < 2;) {
      ssize_t n = read(end + got, 1);
      if (n <= 0) return UnavailableError("the chunked body ended after a chunk's data");
      got += static_cast<size_t>(n);
    }
    if (end[0] != '\r' || end[1] != '\n') {
      return InvalidArgumentError(fmt::format("a chunk's data of the chunked body is not followed by CRLF where its "
                                              "size ({} bytes) says it ends",
                                              size));
    }
  }
  // The trailer section, up to its empty line: checked as header lines
  // are (a token, ':', a value without control characters), then dropped.
  size_t trailers = 0;
  for (int number = 1;; ++number) {
    if (Status st = ReadLine(read, kMaxChunkLine, "trailer line", &line); !st.ok()) return st;
    if (line.empty()) return Status::Ok();
    trailers += line.size() + 2;
    if (trailers > kMaxChunkTrailers) {
      return InvalidArgumentError(fmt::format("the trailers of the chunked body are over {} bytes", kMaxChunkTrailers));
    }
    if (line.find(':') == std::string::npos || line[0] == ' ' || line[0] == '\t') {
      return InvalidArgumentError("a trailer line of the chunked body is not a header field (name: value)");
    }
    if (Status st = CheckHeaderLine(line, fmt::format("in trailer {} of the chunked body", number)); !st.ok()) return st;
  }
}

}  // namespace tau::server
