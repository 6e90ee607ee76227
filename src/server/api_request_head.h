#pragma once

// A request head as the client sent it, checked before httplib's reading
// of it is trusted. httplib 0.11 silently drops header lines it cannot
// parse (no colon, a bare LF for an end, an empty value) and decodes %XX in
// values, so "Content-Length:" or "Transfer-Encoding: %63hunked" would
// frame a body otherwise than a proxy in front reads it (request
// smuggling). The API refuses such a head at once.

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tau::server {


// OK when `head` (the request line, the header lines and the empty line
// that ends them, as received) is well formed: every line ends with CRLF;
// each header line is a token, ':' at once, and a value without control
// characters (tabs aside); no line is folded (begins with white space);
// Content-Length and Transfer-Encoding have a value, with no '%' in it.
// InvalidArgument otherwise, naming the line (its number, from 1 for the
// request line) and what is wrong with it.
Status CheckRequestHead(std::string_view head);

// OK when `line` (without its CRLF) is a header field as above: a token,
// ':' at once, a value without control characters, a framing header with
// a plain value. InvalidArgument otherwise; `where` ("on line 3 of the
// request head") goes into the message after the header's name.
Status CheckHeaderLine(std::string_view line, std::string_view where);

// The start of `text` (40 bytes) for a message: printable ASCII as it is,
// other bytes as \xNN, "..." when cut.
std::string ShownBytes(std::string_view text);

}  // namespace tau::server
