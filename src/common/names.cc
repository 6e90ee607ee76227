#include "common/names.h"

#include <fmt/format.h>

namespace tau {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

// How many bytes the UTF-8 sequence at `s[i]` takes, 0 when it is not one.
size_t Utf8Length(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return n;
}

uint32_t CodePoint(std::string_view s, size_t i, size_t n) {
  uint32_t code = static_cast<unsigned char>(s[i]) & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) code = (code << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return code;
}

// U+200E/F, U+202A to U+202E, U+2066 to U+2069: the bidirectional controls.
bool IsBidiControl(std::string_view s, size_t i) {
  const uint32_t c = CodePoint(s, i, 3);
  return c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

// `s` for an error message: control characters and bytes that are not
// UTF-8 written as \xNN, so the message shows what was given.
std::string Shown(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = Utf8Length(s, i);
    if (n == 0 || b < 0x20 || b == 0x7F) {
      out += fmt::format("\\x{:02X}", b);
      i += 1;
    } else if (n == 3 && b == 0xE2 && IsBidiControl(s, i)) {
      // Would reorder what a terminal shows of the message.
      out += fmt::format("\\u{:04X}", CodePoint(s, i, n));
      i += n;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

// The character at byte `i` of `s` for an error message ('_', 'é' (U+00E9),
// byte 0xC3, U+000A) and its position counted in characters from 1.
std::string CharacterAt(std::string_view s, size_t i, size_t* position) {
  *position = 1;
  for (size_t k = 0; k < i;) {
    size_t n = Utf8Length(s, k);
    k += n == 0 ? 1 : n;
    ++*position;
  }
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n = Utf8Length(s, i);
  if (n == 0) return fmt::format("byte 0x{:02X} (not UTF-8)", b);
  if (n == 1) return b < 0x20 || b == 0x7F ? fmt::format("U+{:04X}", b) : fmt::format("'{}'", s[i]);
  const uint32_t code = CodePoint(s, i, n);
  if (n == 3 && IsBidiControl(s, i)) return fmt::format("U+{:04X}", code);
  return fmt::format("'{}' (U+{:04X})", s.substr(i, n), code);
}

}  // namespace

Status CheckDns1123Label(std::string_view s) {
  if (s.empty()) return InvalidArgumentError("must not be empty");
  // The characters first: a long name with a wrong one is told about it.
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') {
      return InvalidArgumentError(fmt::format(
          "\"{}\" has an uppercase letter; use lowercase letters, digits and '-'", Shown(s)));
    }
    if (!IsLowerAlnum(c) && c != '-') {
      size_t position = 0;
      std::string shown = CharacterAt(s, i, &position);
      return InvalidArgumentError(fmt::format(
          "\"{}\" contains {} at position {}; use lowercase letters, digits and '-'", Shown(s), shown, position));
    }
  }
  if (s.size() > 63) {
    return InvalidArgumentError(fmt::format("\"{}\" is {} characters; at most 63 are allowed", s, s.size()));
  }
  if (!IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) {
    return InvalidArgumentError(
        fmt::format("\"{}\" must start and end with a lowercase letter or digit", s));
  }
  return Status::Ok();
}

Status CheckDns1123Subdomain(std::string_view s) {
  if (s.empty()) return InvalidArgumentError("must not be empty");
  if (s.size() > 253) {
    return InvalidArgumentError(fmt::format("\"{}\" is {} characters; at most 253 are allowed", s, s.size()));
  }
  if (s.find('.') == std::string_view::npos && s.size() <= 63) return CheckDns1123Label(s);
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty()) return InvalidArgumentError(fmt::format("\"{}\" has an empty part between dots", s));
    Status st = CheckDns1123Label(label);
    if (!st.ok()) {
      return InvalidArgumentError(fmt::format("\"{}\": part {}", s, st.message()));
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return Status::Ok();
}

Status CheckEnvVarName(std::string_view s) {
  if (s.empty()) return InvalidArgumentError("an environment variable name must not be empty");
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) {
      return InvalidArgumentError(fmt::format(
          "\"{}\" is not a valid environment variable name: use letters, digits and '_', not "
          "starting with a digit",
          Shown(s)));
    }
  }
  return Status::Ok();
}

Status CheckLabelValue(std::string_view s) {
  if (s.empty()) return Status::Ok();
  if (s.size() > 63) {
    return InvalidArgumentError(fmt::format("\"{}\" is {} characters; a label value has at most 63", s, s.size()));
  }
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') {
      size_t position = 0;
      std::string shown = CharacterAt(s, i, &position);
      return InvalidArgumentError(fmt::format(
          "\"{}\" contains {} at position {}; a label value uses letters, digits, '-', '_' and '.'", Shown(s), shown,
          position));
    }
  }
  if (!IsAlnum(s.front()) || !IsAlnum(s.back())) {
    return InvalidArgumentError(fmt::format("\"{}\" must start and end with a letter or digit", s));
  }
  return Status::Ok();
}

Status CheckRequestId(std::string_view text) {
  if (text.empty() || text.size() > 128) {
    return InvalidArgumentError(fmt::format("request_id must be 1 to 128 characters long, not {}", text.size()));
  }
  for (char c : text) {
    if (!IsAlnum(c) && c != '.' && c != '_' && c != ':' && c != '-') {
      return InvalidArgumentError(fmt::format("request_id \"{}\" may hold only letters, digits and . _ : -", Shown(text)));
    }
  }
  return Status::Ok();
}

}  // namespace tau
