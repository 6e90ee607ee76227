#pragma once

// Request bodies as JSON objects, with errors that say what is wrong and
// where (for every API route that takes one).

#include <nlohmann/json_fwd.hpp>
#include <string_view>

#include "common/result.h"

namespace tau::server {

// `body` parsed as a JSON object. Errors (InvalidArgument) name the
// problem and where it is:
// - bytes that are not UTF-8: the byte, its offset in the body, and the
//   field it is in ("spec.name", "spec.env[2]", "a key of spec");
// - other JSON syntax errors: the parser's message with line and column;
// - JSON that is not an object: what it is instead.
// The details of the UTF-8 error are also given as `*details` (offset,
// byte, field) when `details` is not null.
// Deeper bodies are refused before they are parsed (no spec or manifest
// nests anywhere near it).
inline constexpr int kMaxJsonBodyDepth = 64;
Result<nlohmann::json> ParseJsonObjectBody(std::string_view body, nlohmann::json* details = nullptr);

// The offset of the first byte of `text` that does not start or continue
// a well-formed UTF-8 character (overlong forms, surrogates and code points
// past U+10FFFF are not), or npos when all of it is well formed.
size_t FirstInvalidUtf8Byte(std::string_view text);

}  // namespace tau::server
