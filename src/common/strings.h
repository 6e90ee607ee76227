#pragma once

#include <optional>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tau {

// Levenshtein distance (insert, delete, substitute each cost 1).
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` when it is plausibly a typo of it (distance
// at most max(1, len/3)), or nullopt. Ties go to the earliest candidate.
std::optional<std::string> ClosestMatch(std::string_view word,
                                        std::span<const std::string_view> candidates);

std::string Join(std::span<const std::string> parts, std::string_view sep);
std::string Join(std::span<const std::string_view> parts, std::string_view sep);
std::vector<std::string> Split(std::string_view text, char sep);

// Quotes a word for POSIX sh only when needed: `train.py` stays as is,
// `a b` becomes `'a b'`, `it's` becomes `'it'"'"'s'`.
std::string ShellQuote(std::string_view word);

// Quoted list for messages: `"job", "rayjob"`.
std::string QuotedList(std::span<const std::string_view> items);

// A byte count for people: "512 B", "12.3 MiB".
std::string FormatBytes(int64_t bytes);

// The longest prefix of `text` of at most `max_bytes` bytes that does not
// end inside a UTF-8 sequence (bytes that are not valid UTF-8 count as one
// character each).
std::string_view Utf8Prefix(std::string_view text, size_t max_bytes);
// `text` when it has at most `max_bytes` bytes, else its Utf8Prefix of
// `max_bytes - 3` bytes followed by "...".
std::string ShortenUtf8(std::string_view text, size_t max_bytes);

}  // namespace tau
