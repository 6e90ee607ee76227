#include "common/strings.h"

#include <fmt/format.h>
#include <iterator>

#include <algorithm>
#include <numeric>

namespace tau {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string> ClosestMatch(std::string_view word,
                                        std::span<const std::string_view> candidates) {
  size_t best = SIZE_MAX;
  std::optional<std::string> match;
  size_t limit = std::max<size_t>(1, word.size() / 3);
  for (std::string_view c : candidates) {
    size_t d = EditDistance(word, c);
    // A prefix or suffix match ("gpu" for "gpus", "memory_gb" for "memory")
    // is a likely intent even when the distance is larger.
    bool affix = word.size() >= 3 && (c.starts_with(word) || word.starts_with(c));
    if ((d <= limit || affix) && d < best) {
      best = d;
      match = std::string(c);
    }
  }
  return match;
}

template <typename S>
static std::string JoinImpl(std::span<const S> parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string Join(std::span<const std::string> parts, std::string_view sep) { return JoinImpl(parts, sep); }
std::string Join(std::span<const std::string_view> parts, std::string_view sep) { return JoinImpl(parts, sep); }

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(sep, start);
    out.emplace_back(text.substr(start, pos == std::string_view::npos ? text.npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string ShellQuote(std::string_view word) {
  if (word.empty()) return "''";
  bool safe = std::all_of(word.begin(), word.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-' || c == '.' || c == '/' || c == ':' || c == '=' || c == ',' ||
           c == '+' || c == '@' || c == '%';
  });
  if (safe) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\"'\"'";
    else out += c;
  }
  out += "'";
  return out;
}

std::string QuotedList(std::span<const std::string_view> items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += '"';
    out += items[i];
    out += '"';
  }
  return out;
}

std::string FormatBytes(int64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", n) : fmt::format("{:.1f} {}", v, units[u]);
}

std::string_view Utf8Prefix(std::string_view text, size_t max_bytes) {
  auto continuation = [&](size_t i) { return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80; };
  if (text.size() <= max_bytes || !continuation(max_bytes)) return text.substr(0, max_bytes);
  // text[max_bytes] continues a character: find its lead byte (at most 3
  // bytes back) and cut before it when the character crosses the cut.
  size_t lead = max_bytes;
  while (lead > 0 && max_bytes - lead < 3 && continuation(lead)) --lead;
  const auto b = static_cast<unsigned char>(text[lead]);
  const size_t length = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 && b < 0xF0 ? 3 : b >= 0xC2 && b < 0xE0 ? 2 : 1;
  return text.substr(0, lead + length > max_bytes ? lead : max_bytes);
}

std::string ShortenUtf8(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  return std::string(Utf8Prefix(text, max_bytes < 3 ? 0 : max_bytes - 3)) + "...";
}

}  // namespace tau
