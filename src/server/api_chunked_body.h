#pragma once

// Chunked request bodies (RFC 9112, 7.1), read strictly: httplib 0.11
// reads a chunk size with strtoul, so "-5" is a size near 2^64 it then
// waits for until the read timeout, and it takes a bare LF for a line's
// end. This reader refuses, as soon as it sees it, anything that is not a
// chunked body, and a body over its limit as soon as a chunk's size says
// so.

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>

#include "common/status.h"

namespace tau::server {

// Reads up to `size` bytes into `buffer`: the count read, 0 at the end of
// the stream, < 0 on an error or timeout (as httplib::Stream::read).
using ReadSome = std::function<ssize_t(char* buffer, size_t size)>;

// The longest chunk-size line (with its extensions) and trailer section.
inline constexpr size_t kMaxChunkLine = 4096;
inline constexpr size_t kMaxChunkTrailers = 16 * 1024;

// Reads one chunked body from `read` into `*body`, up to and including the
// empty line after its trailers (which are read and dropped), and nothing
// past it. Errors:
// - InvalidArgument: the bytes are not a chunked body (the message says
//   what is wrong: a chunk size that is not hexadecimal, a line that does
//   not end with CRLF, data longer than its chunk, a line too long);
// - ResourceExhausted: the body would be over `max` bytes (known from a
//   chunk's size, before its data is read);
// - Unavailable: the stream ended or failed before the body did.
// After an error, where the body ends is unknown: the connection must end.
Status ReadChunkedBody(const ReadSome& read, size_t max, std::string* body);

}  // namespace tau::server
