#include "common/duration.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>
#include <limits>

namespace tau {
namespace {

constexpr int64_t kMs = 1;
constexpr int64_t kSec = 1000 * kMs;
constexpr int64_t kMin = 60 * kSec;
constexpr int64_t kHour = 60 * kMin;
constexpr int64_t kDay = 24 * kHour;

Status Invalid(std::string_view text, std::string_view why) {
  return InvalidArgumentError(fmt::format(
      "\"{}\" is not a duration: {} (examples: 30s, 5m, 1h30m, 7d)", text, why));
}

}  // namespace

Result<Duration> ParseDuration(std::string_view text) {
  if (text.empty()) return Invalid(text, "it is empty");
  if (text == "0") return Duration(0);
  if (text[0] == '-') return Invalid(text, "it is negative");
  std::string_view s = text;
  if (s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return Invalid(text, "no number");
  __int128 total_ms = 0;
  while (!s.empty()) {
    // <int>[.<frac>]
    int64_t whole = 0;
    int whole_digits = 0;
    while (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) {
      if (whole > std::numeric_limits<int64_t>::max() / 10 - 10) return Invalid(text, "too large");
      whole = whole * 10 + (s[0] - '0');
      ++whole_digits;
      s.remove_prefix(1);
    }
    std::string frac;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      while (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) {
        frac += s[0];
        s.remove_prefix(1);
      }
    }
    if (whole_digits == 0 && frac.empty()) return Invalid(text, "expected a number before each unit");
    size_t unit_len = 0;
    while (unit_len < s.size() && std::isalpha(static_cast<unsigned char>(s[unit_len]))) ++unit_len;
    std::string_view unit = s.substr(0, unit_len);
    s.remove_prefix(unit_len);
    int64_t scale;
    if (unit == "ms") scale = kMs;
    else if (unit == "s") scale = kSec;
    else if (unit == "m") scale = kMin;
    else if (unit == "h") scale = kHour;
    else if (unit == "d") scale = kDay;
    else if (unit.empty()) return Invalid(text, "missing unit (ms, s, m, h or d)");
    else return Invalid(text, fmt::format("unknown unit \"{}\"; use ms, s, m, h or d", unit));
    __int128 value = static_cast<__int128>(whole) * scale;
    if (!frac.empty()) {
      __int128 num = 0, den = 1;
      for (char c : frac) {
        if (den > (__int128{1} << 80)) break;  // beyond any millisecond precision
        num = num * 10 + (c - '0');
        den *= 10;
      }
      __int128 part = num * scale;
      if (part % den != 0) return Invalid(text, "it is finer than a millisecond");
      value += part / den;
    }
    total_ms += value;
    if (total_ms > std::numeric_limits<int64_t>::max()) return Invalid(text, "too large");
  }
  return Duration(static_cast<int64_t>(total_ms));
}

std::string FormatDuration(Duration d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  static constexpr struct { int64_t scale; const char* unit; } kUnits[] = {
      {kDay, "d"}, {kHour, "h"}, {kMin, "m"}, {kSec, "s"}, {kMs, "ms"}};
  for (const auto& u : kUnits) {
    if (ms >= u.scale) {
      out += fmt::format("{}{}", ms / u.scale, u.unit);
      ms %= u.scale;
    }
  }
  return out;
}

std::string FormatDurationShort(Duration d) {
  int64_t ms = d.count();
  if (ms < 0) ms = 0;
  if (ms < kSec) return fmt::format("{}ms", ms);
  int64_t s = ms / kSec;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return s % 60 ? fmt::format("{}m{}s", s / 60, s % 60) : fmt::format("{}m", s / 60);
  if (s < 86400) {
    int64_t m = (s % 3600) / 60;
    return m ? fmt::format("{}h{}m", s / 3600, m) : fmt::format("{}h", s / 3600);
  }
  int64_t h = (s % 86400) / 3600;
  return h ? fmt::format("{}d{}h", s / 86400, h) : fmt::format("{}d", s / 86400);
}

}  // namespace tau
